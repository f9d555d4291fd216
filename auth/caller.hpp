#pragma once
// Who is calling gpuqd (issue [3/6], docs/tasks/tenants-and-security.md). A local caller comes through the Unix
// socket, its account from the kernel (auth/unix_listener.hpp) and its name and groups from the
// system's account database; a TCP caller without a certificate or token is anonymous.
#include <sys/types.h>

#include <optional>
#include <string>
#include <vector>

#include "auth/unix_listener.hpp"

namespace gpuq::auth {

struct Caller {
  std::string user;                 // the account name ("" when anonymous)
  uid_t uid = static_cast<uid_t>(-1);
  gid_t gid = static_cast<gid_t>(-1);
  std::vector<std::string> groups;  // names of its primary and supplementary groups
  bool anonymous = true;
  std::string from;                 // "unix:uid=1000,pid=4242", "ipv4:127.0.0.1:51234"

  bool in_group(const std::string& group) const;
};

// The caller with this uid (and gid, pid): its name and groups from the account database. An
// account with no passwd entry keeps its uid as its name ("uid:1234") and only its gid's group.
Caller local_caller(const PeerCred& peer);
// An unauthenticated caller from `peer` (gRPC's peer string).
Caller anonymous_caller(const std::string& peer);
// A caller known by name over TCP (a bearer token's user, a client certificate's CN): its uid
// and groups from the account database when the name has a passwd entry, else none.
Caller named_caller(const std::string& user, const std::string& from);

}  // namespace gpuq::auth
