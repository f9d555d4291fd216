#include "auth/roles.hpp"

#include <algorithm>

#include "auth/account.hpp"

namespace gpuq::auth {

bool Admins::admits(const Caller& c) const {
  if (c.anonymous) return false;
  if (std::find(users.begin(), users.end(), c.user) != users.end()) return true;
  return std::any_of(groups.begin(), groups.end(), [&](const std::string& g) { return c.in_group(g); });
}

std::string Admins::describe() const {
  std::string out;
  for (const std::string& u : users) out += (out.empty() ? "" : ", ") + u;
  if (!groups.empty()) out += std::string(out.empty() ? "" : " and ") + "the group" + (groups.size() > 1 ? "s " : " ");
  for (std::size_t i = 0; i < groups.size(); ++i) out += (i > 0 ? ", " : "") + groups[i];
  return out;
}

Admins admins_with(std::vector<std::string> users, std::vector<std::string> groups) {
  Admins a;
  a.users = {"root"};
  const std::string self = own_account().name;
  if (self != "root") a.users.push_back(self);
  for (std::string& u : users)
    if (std::find(a.users.begin(), a.users.end(), u) == a.users.end()) a.users.push_back(std::move(u));
  a.groups = std::move(groups);
  return a;
}

}  // namespace gpuq::auth
