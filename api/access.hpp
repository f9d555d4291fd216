#pragma once
// Who calls, and whether they may (README: Security). A call through gpuqd's Unix socket is its
// caller's, as the kernel says, and is checked against the roles: only admins change queues and
// nodes or take backups; a job's owner is its submitter (another owner only for admins); only
// its owner or an admin cancels it. A call over TCP is anonymous (no tokens or certificates
// yet): it may read health and the queue summaries (Queues.List/Get, Admin.Usage), nothing
// else (UNAUTHENTICATED) — unless gpuqd's config says `insecure: true`, which trusts every TCP
// caller as before.
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "auth/roles.hpp"
#include "auth/unix_listener.hpp"

namespace gpuq::api {

struct Access {
  auth::Caller caller;
  bool checked = false;  // the roles apply (false: trusted, insecure TCP or no gate)
  bool admin = false;
};

class Gate {
 public:
  Gate() = default;  // every call trusted (until gpuqd guards its API)
  Gate(const auth::UnixListener* socket, auth::Admins admins, bool trust_tcp)
      : guarded_(true), trust_tcp_(trust_tcp), socket_(socket), admins_(std::move(admins)) {}

  Access of(const grpc::ServerContextBase& ctx) const;
  // PERMISSION_DENIED naming the user, the action and the role that would allow it.
  grpc::Status admin_only(const Access& a, std::string_view action) const;
  // The owner of a job `a` submits: its own name, or (admins only) the one it asked for.
  grpc::Status owner_for(const Access& a, std::string& owner) const;
  grpc::Status may_change_job(const Access& a, std::string_view action, const std::string& job,
                              const std::string& owner) const;
  // A job's details (spec, environment, output): its owner and admins.
  grpc::Status may_see_job(const Access& a, const std::string& job, const std::string& owner) const;
  // Jobs listed for `a`: `owner` as asked, or (a non-admin) its own only.
  grpc::Status list_owner(const Access& a, std::string& owner) const;
  // Any known caller (not an anonymous TCP one).
  grpc::Status known(const Access& a, std::string_view action) const;

 private:
  grpc::Status denied(const Access& a, std::string_view action, std::string_view who_may) const;
  bool guarded_ = false, trust_tcp_ = false;
  const auth::UnixListener* socket_ = nullptr;
  auth::Admins admins_;
};

}  // namespace gpuq::api
