#include "auth/caller.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <algorithm>

namespace gpuq::auth {

namespace {

std::vector<char> buffer_for(int name) {
  const long n = ::sysconf(name);
  return std::vector<char>(n > 0 ? static_cast<std::size_t>(n) : 16384);
}

std::string group_name(gid_t gid) {
  std::vector<char> buf = buffer_for(_SC_GETGR_R_SIZE_MAX);
  group g{};
  group* found = nullptr;
  while (::getgrgid_r(gid, &g, buf.data(), buf.size(), &found) == ERANGE) buf.resize(buf.size() * 2);
  return found ? std::string(found->gr_name) : "gid:" + std::to_string(gid);
}

}  // namespace

bool Caller::in_group(const std::string& group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

Caller local_caller(const PeerCred& peer) {
  Caller c;
  c.anonymous = false;
  c.uid = peer.uid;
  c.gid = peer.gid;
  c.from = "unix:uid=" + std::to_string(peer.uid) + ",pid=" + std::to_string(peer.pid);
  std::vector<char> buf = buffer_for(_SC_GETPW_R_SIZE_MAX);
  passwd pw{};
  passwd* found = nullptr;
  while (::getpwuid_r(peer.uid, &pw, buf.data(), buf.size(), &found) == ERANGE) buf.resize(buf.size() * 2);
  if (!found) {
    c.user = "uid:" + std::to_string(peer.uid);
    c.groups.push_back(group_name(peer.gid));
    return c;
  }
  c.user = found->pw_name;
  int n = 32;
  std::vector<gid_t> gids(static_cast<std::size_t>(n));
  while (::getgrouplist(found->pw_name, found->pw_gid, gids.data(), &n) < 0) gids.resize(static_cast<std::size_t>(n));
  gids.resize(static_cast<std::size_t>(n));
  if (std::find(gids.begin(), gids.end(), peer.gid) == gids.end()) gids.push_back(peer.gid);
  for (gid_t g : gids) c.groups.push_back(group_name(g));
  return c;
}

Caller anonymous_caller(const std::string& peer) {
  Caller c;
  c.from = peer;
  return c;
}

}  // namespace gpuq::auth
