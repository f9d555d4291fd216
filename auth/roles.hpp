#pragma once
// Who may do what in gpuqd (docs/tasks/tenants-and-security.md). Admins (users or Unix groups) may do everything:
// queues, nodes, backups, other users' jobs, submitting as another owner. root and the account
// gpuqd runs as are always admins (they can read the state file anyway); gpuqd's config
// (`admins: {users: [...], groups: [...]}`) adds to them.
#include <string>
#include <vector>

#include "auth/caller.hpp"

namespace gpuq::auth {

struct Admins {
  std::vector<std::string> users;
  std::vector<std::string> groups;

  bool admits(const Caller& c) const;
  // "root, gpuq and the group wheel": for messages.
  std::string describe() const;
};

// root and the account this process runs as, plus `users` and `groups`.
Admins admins_with(std::vector<std::string> users, std::vector<std::string> groups);

}  // namespace gpuq::auth
