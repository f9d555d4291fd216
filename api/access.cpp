#include "api/access.hpp"

#include <spdlog/spdlog.h>

namespace gpuq::api {

Access Gate::of(const grpc::ServerContextBase& ctx) const {
  Access a;
  const std::string peer = ctx.peer();
  if (auto cred = socket_ ? socket_->peer(peer) : std::nullopt) {
    a.caller = auth::local_caller(*cred);
    a.checked = true;
    a.admin = admins_.admits(a.caller);
    return a;
  }
  a.caller = auth::anonymous_caller(peer);
  a.checked = guarded_ && !trust_tcp_;
  return a;
}

grpc::Status Gate::known(const Access& a, std::string_view action) const {
  if (!a.checked || !a.caller.anonymous) return grpc::Status::OK;
  const std::string message =
      "gpuqd does not know who calls from " + a.caller.from + ": over TCP only health and the queue summaries are "
      "open; to " + std::string(action) + ", use gpuqd's Unix socket (gpuq --server unix:" +
      (socket_ ? socket_->path() : std::string("PATH")) + ", or GPUQ_SERVER)";
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

grpc::Status Gate::may_see_job(const Access& a, const std::string& job, const std::string& owner) const {
  if (!a.checked || a.admin || (!a.caller.anonymous && owner == a.caller.user)) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, "see jobs");
  return denied(a, "see job " + job + " of user " + owner,
                "a job's details are its owner's and gpuqd's admins' (" + admins_.describe() + ")");
}

grpc::Status Gate::list_owner(const Access& a, std::string& owner) const {
  if (!a.checked || a.admin) return grpc::Status::OK;
  if (a.caller.anonymous) return known(a, "see jobs");
  if (owner.empty()) owner = a.caller.user;
  if (owner == a.caller.user) return grpc::Status::OK;
  return denied(a, "see the jobs of user " + owner,
                "a job's details are its owner's and gpuqd's admins' (" + admins_.describe() + ")");
}

}  // namespace gpuq::api
