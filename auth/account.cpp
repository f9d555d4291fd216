#include "auth/account.hpp"

#include <grp.h>
#include <pwd.h>
#include <unistd.h>

#include <cerrno>

namespace gpuq::auth {

namespace {

std::vector<char> buffer_for(int name) {
  const long n = ::sysconf(name);
  return std::vector<char>(n > 0 ? static_cast<std::size_t>(n) : 16384);
}

Account account_from(const passwd& pw) {
  Account a;
  a.name = pw.pw_name;
  a.uid = pw.pw_uid;
  a.gid = pw.pw_gid;
  a.home = pw.pw_dir ? pw.pw_dir : "";
  a.shell = pw.pw_shell ? pw.pw_shell : "";
  int n = 32;
  a.groups.resize(static_cast<std::size_t>(n));
  while (::getgrouplist(pw.pw_name, pw.pw_gid, a.groups.data(), &n) < 0) a.groups.resize(static_cast<std::size_t>(n));
  a.groups.resize(static_cast<std::size_t>(n));
  return a;
}

template <typename Lookup>
std::optional<Account> find_with(Lookup lookup) {
  std::vector<char> buf = buffer_for(_SC_GETPW_R_SIZE_MAX);
  passwd pw{};
  passwd* found = nullptr;
  while (lookup(&pw, buf, &found) == ERANGE) buf.resize(buf.size() * 2);
  if (!found) return std::nullopt;
  return account_from(*found);
}

}  // namespace

std::optional<Account> find_account(const std::string& name) {
  if (name.empty()) return std::nullopt;
  return find_with([&](passwd* pw, std::vector<char>& buf, passwd** found) {
    return ::getpwnam_r(name.c_str(), pw, buf.data(), buf.size(), found);
  });
}

std::optional<Account> find_account(uid_t uid) {
  return find_with([&](passwd* pw, std::vector<char>& buf, passwd** found) {
    return ::getpwuid_r(uid, pw, buf.data(), buf.size(), found);
  });
}

std::string group_name(gid_t gid) {
  std::vector<char> buf = buffer_for(_SC_GETGR_R_SIZE_MAX);
  group g{};
  group* found = nullptr;
  while (::getgrgid_r(gid, &g, buf.data(), buf.size(), &found) == ERANGE) buf.resize(buf.size() * 2);
  return found ? std::string(found->gr_name) : "gid:" + std::to_string(gid);
}

Account own_account() {
  if (auto a = find_account(::geteuid())) return *a;
  Account a;
  a.uid = ::geteuid();
  a.gid = ::getegid();
  a.name = "uid:" + std::to_string(a.uid);
  a.groups = {a.gid};
  return a;
}

}  // namespace gpuq::auth
