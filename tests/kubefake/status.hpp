#pragma once
// API errors as the real server reports them: a meta/v1 Status body with the same code, reason,
// message and details as apimachinery's errors package builds (NewNotFound, NewConflict, ...).
//
// Request handling throws ApiError and one place (Api::serve) turns it into the response: the
// request is the edge where the real server, too, turns every failure into a Status.
#include <boost/json.hpp>
#include <string>
#include <string_view>

namespace gpuq::kubefake {

// A group and a plural resource name, as the messages name them ("leases.coordination.k8s.io").
struct GroupResource {
  std::string group;
  std::string resource;
  std::string qualified() const { return group.empty() ? resource : resource + "." + group; }
};

struct ApiError {
  int code = 500;
  std::string reason;
  std::string message;
  boost::json::object details;
  int retry_after = 0;           // seconds; sent as Retry-After when > 0
  boost::json::object metadata;  // the Status's ListMeta (a continue token after a 410)
};

boost::json::object status_body(const ApiError& e);
// {"kind":"Status",...,"status":"Success"} with `code` (0: no code field) and `details`.
boost::json::object success_body(int code, boost::json::object details = {});

ApiError not_found(const GroupResource& gr, std::string_view name);
ApiError already_exists(const GroupResource& gr, std::string_view name);
ApiError conflict(const GroupResource& gr, std::string_view name, std::string_view why);
// The optimistic-concurrency conflict: "... the object has been modified; ...".
ApiError stale_conflict(const GroupResource& gr, std::string_view name);
ApiError bad_request(std::string message);
// 422 Invalid: `Kind "name" is invalid: field: detail` with one cause.
ApiError invalid(std::string_view kind, const GroupResource& gr, std::string_view name,
                 std::string_view field, std::string_view cause_reason, std::string_view detail);
ApiError unprocessable(std::string server_message);  // 422 from a patch that cannot apply
ApiError unauthorized();
ApiError forbidden(std::string_view user, std::string_view verb, const GroupResource& gr,
                   std::string_view subresource, std::string_view ns, std::string_view name);
// An admission plugin's refusal: `kind "name" is forbidden: why`.
ApiError admission_forbidden(const GroupResource& gr, std::string_view name, std::string_view why);
ApiError too_many_requests(std::string message, int retry_after);
ApiError expired(std::string message);  // 410 Expired
ApiError method_not_allowed();
ApiError unsupported_media_type(std::string_view accepted);
ApiError not_acceptable();
ApiError internal_error(std::string_view what);
ApiError service_unavailable();
ApiError resource_not_found();  // a path the server has no handler for
// The Status the real server sends for a bare HTTP code (fault injection).
ApiError for_code(int code, int retry_after);

}  // namespace gpuq::kubefake
