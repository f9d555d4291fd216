#pragma once
// The REST API without HTTP: an authenticated request's method, path, query and body in, a
// status and JSON body (or a watch to stream) out. Routes the real URL paths (/api/v1/...,
// /apis/GROUP/VERSION/..., namespaced and cluster-wide, subresources, legacy /watch/ paths),
// parses list options (selectors, limit/continue, resourceVersion, timeoutSeconds,
// allowWatchBookmarks) and turns every refusal into a Status.
#include <chrono>
#include <memory>
#include <optional>
#include <string>

#include "tests/kubefake/status.hpp"
#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

struct ApiRequest {
  std::string method;
  std::string path;
  std::string query;  // raw, without '?'
  std::string content_type;
  std::string accept;
  std::string body;
  std::string user;
  bool forbidden = false;  // authenticated with the token RBAC grants nothing
};

// A watch the HTTP layer streams: the queue's events, bookmarks every interval when asked for,
// until timeoutSeconds. With `error` it sends that one ERROR event and ends.
struct WatchPlan {
  std::shared_ptr<WatchQueue> queue;
  std::optional<ApiError> error;
  std::optional<std::chrono::seconds> timeout;
  bool bookmarks = false;
  std::string kind;  // of the watched resource, for bookmark objects
  std::string api_version;
};

struct ApiResponse {
  int status = 200;
  std::string body;
  std::string content_type = "application/json";
  int retry_after = 0;
  std::optional<WatchPlan> watch;
};

ApiResponse error_response(const ApiError& e);

class Api {
 public:
  explicit Api(Store& store) : store_(store) {}
  ApiResponse serve(const ApiRequest& request);

 private:
  Store& store_;
};

}  // namespace gpuq::kubefake
