#pragma once
// Unix accounts from the system's account database (passwd, group, NSS): who a caller is
// (auth/caller.hpp) and whom a job runs as (binder/local). Plain POSIX, no gRPC: the local
// executor links it too.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

namespace gpuq::auth {

struct Account {
  std::string name;
  uid_t uid = 0;
  gid_t gid = 0;                // primary group
  std::vector<gid_t> groups;    // primary and supplementary (getgrouplist), the primary first
  std::string home;
  std::string shell;
};

// nullopt: no passwd entry.
std::optional<Account> find_account(const std::string& name);
std::optional<Account> find_account(uid_t uid);
// The group's name, or "gid:N" when it has none.
std::string group_name(gid_t gid);
// The account this process runs as (its effective uid); its name is "uid:N" when it has none.
Account own_account();

}  // namespace gpuq::auth
