#include "api/access.hpp"

#include <spdlog/spdlog.h>

namespace gpuq::api {

Access Gate::of(const grpc::ServerContextBase& ctx) const {
  Access a;
  const std::string peer = ctx.peer();
  if (socket_ == nullptr) {
    a.caller = auth::anonymous_caller(peer);
    return a;
  }
  if (auto cred = socket_->peer(peer)) {
    a.caller = auth::local_caller(*cred);
    a.checked = true;
    a.admin = admins_.admits(a.caller);
  } else {
    a.caller = auth::anonymous_caller(peer);
  }
  return a;
}

grpc::Status Gate::denied(const Access& a, std::string_view action, std::string_view who_may) const {
  const std::string message = "user " + a.caller.user + " may not " + std::string(action) + ": " + std::string(who_may);
  spdlog::warn("event=permission_denied user={} from={} error=\"{}\"", a.caller.user, a.caller.from, message);
  return {grpc::StatusCode::PERMISSION_DENIED, message};
}

grpc::Status Gate::admin_only(const Access& a, std::string_view action) const {
  if (!a.checked || a.admin) return grpc::Status::OK;
  return denied(a, action, "only gpuqd's admins may (" + admins_.describe() + "; admins: in gpuqd's config)");
}

grpc::Status Gate::owner_for(const Access& a, std::string& owner) const {
  if (!a.checked) return grpc::Status::OK;
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
  if (!a.checked || a.admin || owner == a.caller.user) return grpc::Status::OK;
  return denied(a, std::string(action) + " job " + job + " of user " + owner,
                "only its owner or gpuqd's admins may (" + admins_.describe() + ")");
}

}  // namespace gpuq::api
