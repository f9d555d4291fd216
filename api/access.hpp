#pragma once
// Who calls, and whether they may (README: Security). A call through gpuqd's Unix socket is its
// caller's, as the kernel says, and is checked against the roles: only admins change queues and
// nodes or take backups; a job's owner is its submitter (another owner only for admins); only
// its owner or an admin cancels it. A call over TCP is not checked yet: TCP callers are trusted
// as before, until gpuqd can tell who they are (tokens, mutual TLS; issue [3/6]).
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "auth/roles.hpp"
#include "auth/unix_listener.hpp"

namespace gpuq::api {

struct Access {
  auth::Caller caller;
  bool checked = false;  // through the socket: the roles apply
  bool admin = false;
};

class Gate {
 public:
  Gate() = default;  // no socket: every call is trusted (the API's tests without gpuqd)
  Gate(const auth::UnixListener* socket, auth::Admins admins) : socket_(socket), admins_(std::move(admins)) {}

  Access of(const grpc::ServerContextBase& ctx) const;
  // PERMISSION_DENIED naming the user, the action and the role that would allow it.
  grpc::Status admin_only(const Access& a, std::string_view action) const;
  // The owner of a job `a` submits: its own name, or (admins only) the one it asked for.
  grpc::Status owner_for(const Access& a, std::string& owner) const;
  grpc::Status may_change_job(const Access& a, std::string_view action, const std::string& job,
                              const std::string& owner) const;

 private:
  grpc::Status denied(const Access& a, std::string_view action, std::string_view who_may) const;
  const auth::UnixListener* socket_ = nullptr;
  auth::Admins admins_;
};

}  // namespace gpuq::api
