#include "auth/caller.hpp"

#include <algorithm>

#include "auth/account.hpp"

namespace gpuq::auth {

bool Caller::in_group(const std::string& group) const {
  return std::find(groups.begin(), groups.end(), group) != groups.end();
}

Caller local_caller(const PeerCred& peer) {
  Caller c;
  c.anonymous = false;
  c.uid = peer.uid;
  c.gid = peer.gid;
  c.from = "unix:uid=" + std::to_string(peer.uid) + ",pid=" + std::to_string(peer.pid);
  const auto account = find_account(peer.uid);
  if (!account) {
    c.user = "uid:" + std::to_string(peer.uid);
    c.groups.push_back(group_name(peer.gid));
    return c;
  }
  c.user = account->name;
  std::vector<gid_t> gids = account->groups;
  if (std::find(gids.begin(), gids.end(), peer.gid) == gids.end()) gids.push_back(peer.gid);
  for (gid_t g : gids) c.groups.push_back(group_name(g));
  return c;
}

Caller anonymous_caller(const std::string& peer) {
  Caller c;
  c.from = peer;
  return c;
}

Caller named_caller(const std::string& user, const std::string& from) {
  Caller c;
  c.anonymous = false;
  c.user = user;
  c.from = from;
  if (const auto account = find_account(user)) {
    c.uid = account->uid;
    c.gid = account->gid;
    for (gid_t g : account->groups) c.groups.push_back(group_name(g));
  }
  return c;
}

}  // namespace gpuq::auth
