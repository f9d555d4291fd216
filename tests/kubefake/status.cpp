#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

namespace json = boost::json;

namespace {

std::string quoted(std::string_view s) { return "\"" + std::string(s) + "\""; }

json::object details_of(const GroupResource& gr, std::string_view name) {
  json::object d;
  if (!name.empty()) d["name"] = name;
  if (!gr.group.empty()) d["group"] = gr.group;
  d["kind"] = gr.resource;
  return d;
}

ApiError make(int code, std::string reason, std::string message, json::object details = {}) {
  return ApiError{code, std::move(reason), std::move(message), std::move(details), 0, {}};
}

}  // namespace

json::object status_body(const ApiError& e) {
  json::object s;
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = e.metadata;
  s["status"] = "Failure";
  s["message"] = e.message;
  s["reason"] = e.reason;
  if (!e.details.empty()) s["details"] = e.details;
  s["code"] = e.code;
  return s;
}

json::object success_body(int code, json::object details) {
  json::object s;
  s["kind"] = "Status";
  s["apiVersion"] = "v1";
  s["metadata"] = json::object();
  s["status"] = "Success";
  if (!details.empty()) s["details"] = std::move(details);
  if (code != 0) s["code"] = code;
  return s;
}

ApiError not_found(const GroupResource& gr, std::string_view name) {
  return make(404, "NotFound", gr.qualified() + " " + quoted(name) + " not found",
              details_of(gr, name));
}

ApiError already_exists(const GroupResource& gr, std::string_view name) {
  return make(409, "AlreadyExists", gr.qualified() + " " + quoted(name) + " already exists",
              details_of(gr, name));
}

ApiError conflict(const GroupResource& gr, std::string_view name, std::string_view why) {
  return make(409, "Conflict",
              "Operation cannot be fulfilled on " + gr.qualified() + " " + quoted(name) + ": " +
                  std::string(why),
              details_of(gr, name));
}

ApiError stale_conflict(const GroupResource& gr, std::string_view name) {
  return conflict(gr, name,
                  "the object has been modified; please apply your changes to the latest version "
                  "and try again");
}

ApiError bad_request(std::string message) { return make(400, "BadRequest", std::move(message)); }

ApiError invalid(std::string_view kind, const GroupResource& gr, std::string_view name,
                 std::string_view field, std::string_view cause_reason, std::string_view detail) {
  std::string cause = std::string(field) + ": " + std::string(detail);
  json::object d;
  d["name"] = name;
  if (!gr.group.empty()) d["group"] = gr.group;
  d["kind"] = kind;
  d["causes"] =
      json::array{json::object{{"reason", cause_reason}, {"message", detail}, {"field", field}}};
  return make(422, "Invalid", std::string(kind) + " " + quoted(name) + " is invalid: " + cause,
              std::move(d));
}

ApiError unprocessable(std::string server_message) {
  json::object d;
  d["causes"] = json::array{
      json::object{{"reason", "UnexpectedServerResponse"}, {"message", server_message}}};
  return make(422, "Invalid", "the server rejected our request due to an error in our request",
              std::move(d));
}

ApiError unauthorized() { return make(401, "Unauthorized", "Unauthorized"); }

ApiError forbidden(std::string_view user, std::string_view verb, const GroupResource& gr,
                   std::string_view subresource, std::string_view ns, std::string_view name) {
  // RBAC's wording (k8s.io/apiserver authorizer): what, who, which verb, and the scope.
  std::string resource = gr.resource;
  if (!subresource.empty()) resource += "/" + std::string(subresource);
  std::string why = "User " + quoted(user) + " cannot " + std::string(verb) + " resource " +
                    quoted(resource) + " in API group " + quoted(gr.group);
  why += ns.empty() ? std::string(" at the cluster scope") : " in the namespace " + quoted(ns);
  std::string what = gr.qualified();
  if (!subresource.empty()) what += "/" + std::string(subresource);
  std::string message = name.empty() ? what + " is forbidden: " + why
                                     : what + " " + quoted(name) + " is forbidden: " + why;
  return make(403, "Forbidden", message, details_of({gr.group, resource}, name));
}

ApiError admission_forbidden(const GroupResource& gr, std::string_view name, std::string_view why) {
  return make(403, "Forbidden", gr.qualified() + " " + quoted(name) + " is forbidden: " + std::string(why),
              details_of(gr, name));
}

ApiError too_many_requests(std::string message, int retry_after) {
  json::object d;
  if (retry_after > 0) d["retryAfterSeconds"] = retry_after;
  ApiError e = make(429, "TooManyRequests", std::move(message), std::move(d));
  e.retry_after = retry_after;
  return e;
}

ApiError expired(std::string message) { return make(410, "Expired", std::move(message)); }

ApiError method_not_allowed() {
  return make(405, "MethodNotAllowed",
              "the server does not allow this method on the requested resource");
}

ApiError unsupported_media_type(std::string_view accepted) {
  return make(415, "UnsupportedMediaType",
              "the body of the request was in an unknown format - accepted media types include: " +
                  std::string(accepted));
}

ApiError not_acceptable() {
  return make(406, "NotAcceptable",
              "only the following media types are accepted: application/json, application/yaml");
}

ApiError internal_error(std::string_view what) {
  json::object d;
  d["causes"] = json::array{json::object{{"message", what}}};
  return make(500, "InternalError", "Internal error occurred: " + std::string(what), std::move(d));
}

ApiError service_unavailable() {
  return make(503, "ServiceUnavailable", "the server is currently unable to handle the request");
}

ApiError resource_not_found() {
  return make(404, "NotFound", "the server could not find the requested resource");
}

ApiError for_code(int code, int retry_after) {
  ApiError e;
  switch (code) {
    case 400:
      e = bad_request("the server rejected our request for an unknown reason");
      break;
    case 401:
      e = unauthorized();
      break;
    case 403:
      e = make(403, "Forbidden",
               "forbidden: the server does not allow access to the requested resource");
      break;
    case 404:
      e = resource_not_found();
      break;
    case 405:
      e = method_not_allowed();
      break;
    case 409:
      e = make(409, "Conflict", "the server reported a conflict");
      break;
    case 410:
      e = expired("the resource version requested is too old");
      break;
    case 422:
      e = make(422, "Invalid", "the server rejected our request due to an error in our request");
      break;
    case 429:
      e = too_many_requests("Too many requests, please try again later.", 0);
      break;
    case 500:
      e = internal_error("injected fault");
      break;
    case 503:
      e = service_unavailable();
      break;
    case 504:
      e = make(504, "Timeout",
               "the server was unable to return a response in the time allotted, but may still be "
               "processing the request");
      break;
    default:
      e = make(code, "InternalError",
               "the server responded with the status code " + std::to_string(code));
      break;
  }
  if (retry_after > 0) {
    e.retry_after = retry_after;
    e.details["retryAfterSeconds"] = retry_after;
  }
  return e;
}

}  // namespace gpuq::kubefake
