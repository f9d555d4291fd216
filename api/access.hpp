#pragma once
// Who calls, and whether they may (docs/tasks/tenants-and-security.md). A call through gpuqd's Unix socket is its
// caller's, as the kernel says, and is checked against the roles: only admins change queues and
// nodes or take backups; a job's owner is its submitter (another owner only for admins); only
// its owner or an admin cancels it. A call over TCP is its client certificate's (CN; only when
// gpuqd verifies them: tls.clientCA) or else its bearer token's user (api/tokens.hpp), checked
// against the same roles; with neither it is anonymous: it may read health and the queue
// summaries (Queues.List/Get, Admin.Usage by queue or flavor), nothing else (UNAUTHENTICATED) — unless gpuqd's
// config says `insecure: true`, which trusts every TCP caller without credentials as before. A
// token or certificate on the Unix socket changes nothing: the kernel's word wins. A wrong,
// expired or revoked token makes every gated call UNAUTHENTICATED, saying which.
#include <string>
#include <string_view>

#include <grpcpp/grpcpp.h>

#include "api/tokens.hpp"
#include "auth/roles.hpp"
#include "auth/unix_listener.hpp"
#include "spec/types.hpp"

namespace gpuq::api {

struct Access {
  auth::Caller caller;
  bool checked = false;  // the roles apply (false: trusted, insecure TCP or no gate)
  bool admin = false;
  // Not OK when the call carried a token that is not valid (unknown, expired, revoked): the
  // caller is anonymous and every gated call answers this.
  grpc::Status refusal;
  std::string token_id;  // the bearer token the caller is known by ("": none), for long calls
};

class Gate {
 public:
  Gate() = default;  // every call trusted (until gpuqd guards its API)
  Gate(const auth::UnixListener* socket, auth::Admins admins, bool trust_tcp)
      : guarded_(true), trust_tcp_(trust_tcp), socket_(socket), admins_(std::move(admins)) {}

  // TCP callers may also be known by a bearer token in `tokens` (nullptr: none) and, when
  // `client_certs` (gpuqd verifies them against tls.clientCA), by their certificate's CN.
  void identify_tcp(const TokenTable* tokens, bool client_certs) {
    tokens_ = tokens;
    client_certs_ = client_certs;
  }

  Access of(const grpc::ServerContextBase& ctx) const;
  // PERMISSION_DENIED naming the user, the action and the role that would allow it.
  grpc::Status admin_only(const Access& a, std::string_view action) const;
  // The owner of a job `a` submits: its own name, or (admins only) the one it asked for.
  grpc::Status owner_for(const Access& a, std::string& owner) const;
  grpc::Status may_change_job(const Access& a, std::string_view action, const std::string& job,
                              const std::string& owner) const;
  // A job's details (spec, output): its owner, its queue's viewers and admins; its environment
  // only its owner's and admins' (may_see_env).
  grpc::Status may_see_job(const Access& a, const std::string& job, const std::string& owner,
                           const QueueSpec* queue = nullptr) const;
  bool may_see_env(const Access& a, const std::string& owner) const;
  // Jobs listed for `a`: `owner` as asked (empty: all) when `a` views `queue` (the queue a
  // listing is limited to), else a non-admin's own only.
  grpc::Status list_owner(const Access& a, std::string& owner, const QueueSpec* queue = nullptr) const;
  // Whether `a` sees every job of `queue`: an admin, or one of its viewers.
  bool views(const Access& a, const QueueSpec* queue) const;
  // Submitting to `queue`: its submitters (unset: every known caller) and admins.
  grpc::Status may_submit(const Access& a, const QueueSpec& queue) const;
  // Any known caller (not an anonymous TCP one).
  grpc::Status known(const Access& a, std::string_view action) const;

 private:
  grpc::Status denied(const Access& a, std::string_view action, std::string_view who_may) const;
  std::string details_are(const QueueSpec* queue) const;
  bool guarded_ = false, trust_tcp_ = false;
  Access tcp_caller(const grpc::ServerContextBase& ctx, const std::string& peer) const;
  const auth::UnixListener* socket_ = nullptr;
  auth::Admins admins_;
  const TokenTable* tokens_ = nullptr;
  bool client_certs_ = false;
};

}  // namespace gpuq::api
