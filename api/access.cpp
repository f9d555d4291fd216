#include "api/access.hpp"

#include <ctime>

#include <grpcpp/security/auth_context.h>
#include <spdlog/spdlog.h>

#include "auth/tokens.hpp"

namespace gpuq::api {

namespace {

// The secret of an `authorization: Bearer <secret>` header; nullopt without one, "" when the
// header is there but not of that form.
std::optional<std::string> bearer(const grpc::ServerContextBase& ctx) {
  const auto& md = ctx.client_metadata();
  auto it = md.find("authorization");
  if (it == md.end()) return std::nullopt;
  const std::string value(it->second.data(), it->second.size());
  constexpr std::string_view kScheme = "Bearer ";
  if (value.size() <= kScheme.size() || value.compare(0, kScheme.size(), kScheme) != 0) return std::string();
  return value.substr(kScheme.size());
}

grpc::Status unauthenticated(const std::string& from, const std::string& message) {
  spdlog::warn("event=unauthenticated from={} error=\"{}\"", from, message);
  return {grpc::StatusCode::UNAUTHENTICATED, message};
}

}  // namespace

Access Gate::of(const grpc::ServerContextBase& ctx) const {
  Access a;
  const std::string peer = ctx.peer();
  if (auto cred = socket_ ? socket_->peer(peer) : std::nullopt) {
    a.caller = auth::local_caller(*cred);  // a token sent here too is not looked at
    a.checked = true;
    a.admin = admins_.admits(a.caller);
    return a;
  }
  return tcp_caller(ctx, peer);
}

// Over TCP: the verified client certificate's CN, else the bearer token's user, else anonymous.
Access Gate::tcp_caller(const grpc::ServerContextBase& ctx, const std::string& peer) const {
  Access a;
  a.caller = auth::anonymous_caller(peer);
  a.checked = guarded_ && !trust_tcp_;
  if (!guarded_) return a;
  if (client_certs_) {
    // gRPC verified the chain against tls.clientCA during the handshake (a certificate it could
    // not verify never gets here); an authenticated peer is one that presented one.
    const auto auth = ctx.auth_context();
    if (auth && auth->IsPeerAuthenticated()) {
      const auto cn = auth->FindPropertyValues(GRPC_X509_CN_PROPERTY_NAME);
      const std::string user = cn.empty() ? std::string() : std::string(cn.front().data(), cn.front().size());
      a.checked = true;
      if (const std::string bad = bad_token_user(user); !bad.empty()) {
        // The CN as bad_token_user quotes it, with the rule; escaped for the log and the caller.
        std::string shown;
        for (char c : bad)
          shown += static_cast<unsigned char>(c) < 0x20 || c == 0x7f ? std::string("?") : std::string(1, c);
        a.refusal = unauthenticated(peer, "the client certificate from " + peer + " has no usable CN: " +
                                              shown.substr(std::string("user: ").size()));
        return a;
      }
      a.caller = auth::named_caller(user, peer + ";cert");
      a.admin = admins_.admits(a.caller);
      return a;
    }
  }
  const auto secret = bearer(ctx);
  if (!secret) return a;
  a.checked = true;  // a credential that does not hold is refused even where TCP is trusted
  const auto token = tokens_ && !secret->empty() ? tokens_->find_secret(*secret) : std::nullopt;
  if (secret->empty()) {
    a.refusal = unauthenticated(peer, "the authorization metadata from " + peer +
                                          " is not 'Bearer <token>'; send the token gpuq admin token create printed");
  } else if (!auth::token_id(*secret)) {
    a.refusal = unauthenticated(peer, "the bearer token from " + peer +
                                          " is not a gpuq token (gpuq_ID_SECRET, as gpuq admin token create prints "
                                          "it): check what GPUQ_TOKEN or the token file holds");
  } else if (!token) {
    a.refusal = unauthenticated(peer, "the bearer token from " + peer +
                                          " is not one gpuqd issued (unknown token): ask an admin for one "
                                          "(gpuq admin token create)");
  } else if (token->revoked_at > 0) {
    a.refusal = unauthenticated(peer, "bearer token " + token->id + " of user " + token->user + " was revoked at " +
                                          utc_time(token->revoked_at) + ": ask an admin for a new one");
  } else if (const Time now = std::time(nullptr); now >= token->expires_at) {
    a.refusal = unauthenticated(peer, "bearer token " + token->id + " of user " + token->user + " expired at " +
                                          utc_time(token->expires_at) + ": ask an admin for a new one");
  } else {
    a.caller = auth::named_caller(token->user, peer + ";token=" + token->id);
    a.admin = admins_.admits(a.caller);
    a.token_id = token->id;
  }
  return a;
}

grpc::Status Gate::known(const Access& a, std::string_view action) const {
  if (!a.refusal.ok()) return a.refusal;
  if (!a.checked || !a.caller.anonymous) return grpc::Status::OK;
  const std::string message =
      "gpuqd does not know who calls from " + a.caller.from + ": over TCP only health and the queue summaries are "
      "open; to " + std::string(action) + ", use gpuqd's Unix socket (gpuq --server unix:" +
      (socket_ ? socket_->path() : std::string("PATH")) + ", or GPUQ_SERVER)" +
      (tokens_ ? ", or over TCP a token from gpuq admin token create (GPUQ_TOKEN_FILE)" : "") +
      (client_certs_ ? " or a client certificate (--tls-cert)" : "");
  spdlog::warn("event=unauthenticated from={} error=\"{}\"", a.caller.from, message);
  return {grpc::StatusCode::UNAUTHENTICATED, message};
}

grpc::Status Gate::denied(const Access& a, std::string_view action, std::string_view who_may) const {
  const std::string message = "user " + a.caller.user + " may not " + std::string(action) + ": " + std::string(who_may);
  spdlog::warn("event=permission_denied user={} from={} error=\"{}\"", a.caller.user, a.caller.from, message);
  return {grpc::StatusCode::PERMISSION_DENIED, message};
}

grpc::Status Gate::admin_only(const Access& a, std::string_view action) const {
  if (!a.checked || a.admin) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, action);
  return denied(a, action, "only gpuqd's admins may (" + admins_.describe() + "; admins: in gpuqd's config)");
}

grpc::Status Gate::owner_for(const Access& a, std::string& owner) const {
  if (!a.checked) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, "submit a job");
  if (owner.empty() || owner == a.caller.user) {
    owner = a.caller.user;
    return grpc::Status::OK;
  }
  if (a.admin) return grpc::Status::OK;
  return denied(a, "submit a job owned by " + owner, "a job is its submitter's; --owner is for gpuqd's admins (" +
                                                         admins_.describe() + ")");
}

grpc::Status Gate::may_change_job(const Access& a, std::string_view action, const std::string& job,
                                  const std::string& owner) const {
  if (!a.checked || a.admin || (!a.caller.anonymous && owner == a.caller.user)) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, std::string(action) + " a job");
  return denied(a, std::string(action) + " job " + job + " of user " + owner,
                "only its owner or gpuqd's admins may (" + admins_.describe() + ")");
}

grpc::Status Gate::may_see_job(const Access& a, const std::string& job, const std::string& owner,
                               const QueueSpec* queue) const {
  if (!a.checked || a.admin || (!a.caller.anonymous && owner == a.caller.user)) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, "see jobs");
  if (views(a, queue)) return grpc::Status::OK;
  return denied(a, "see job " + job + " of user " + owner, details_are(queue));
}

grpc::Status Gate::list_owner(const Access& a, std::string& owner, const QueueSpec* queue) const {
  if (!a.checked || a.admin) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, "see jobs");
  if (views(a, queue)) return grpc::Status::OK;  // every job of the queue, or the owner asked for
  if (owner.empty()) owner = a.caller.user;
  if (owner == a.caller.user) return grpc::Status::OK;
  return denied(a, "see the jobs of user " + owner, details_are(queue));
}

// ---------------------------------------------------------------------------------------------
// Per-queue roles (QueueSpec::submitters, viewers).

namespace {

bool has_member(const Members& m, const auth::Caller& c) {
  for (const std::string& u : m.users)
    if (u == "*" || u == c.user) return true;
  for (const std::string& g : m.groups)
    if (g == "*" || c.in_group(g)) return true;
  return false;
}

// "alice, bob and the group ml", "everyone", "nobody (only gpuqd's admins)".
std::string describe(const Members& m) {
  std::vector<std::string> parts;
  for (const std::string& u : m.users) parts.push_back(u == "*" ? "every user" : u);
  for (const std::string& g : m.groups) parts.push_back(g == "*" ? "every group" : "the group " + g);
  if (parts.empty()) return "nobody";
  std::string out;
  for (std::size_t i = 0; i < parts.size(); ++i)
    out += (i == 0 ? "" : i + 1 == parts.size() ? " and " : ", ") + parts[i];
  return out;
}

}  // namespace

bool Gate::views(const Access& a, const QueueSpec* queue) const {
  if (!a.checked || a.admin) return true;
  return queue != nullptr && !a.caller.anonymous && has_member(queue->viewers, a.caller);
}

bool Gate::may_see_env(const Access& a, const std::string& owner) const {
  return !a.checked || a.admin || (!a.caller.anonymous && owner == a.caller.user);
}

std::string Gate::details_are(const QueueSpec* queue) const {
  std::string who = "a job's details are its owner's";
  if (queue != nullptr && !queue->viewers.empty())
    who += ", queue " + queue->name.value + "'s viewers' (" + describe(queue->viewers) + ")";
  return who + " and gpuqd's admins' (" + admins_.describe() + ")";
}

grpc::Status Gate::may_submit(const Access& a, const QueueSpec& queue) const {
  if (!a.checked || a.admin || !queue.submitters) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, "submit a job");
  if (has_member(*queue.submitters, a.caller)) return grpc::Status::OK;
  return denied(a, "submit to queue " + queue.name.value,
                "its submitters are " + describe(*queue.submitters) + " (submitters in the queue's spec), and gpuqd's "
                "admins (" + admins_.describe() + ")");
}

}  // namespace gpuq::api
