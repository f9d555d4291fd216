#include "tests/kubefake/control.hpp"

#include <algorithm>

namespace gpuq::kubefake {

void Faults::fail_next(const std::string& method, const std::string& path_substring, int code,
                       int count, int retry_after) {
  if (count <= 0) return;
  std::lock_guard lock(mutex_);
  rules_.push_back({method, path_substring, code, count, retry_after});
}

std::optional<ApiError> Faults::take(const std::string& method, const std::string& path) {
  std::lock_guard lock(mutex_);
  for (auto it = rules_.begin(); it != rules_.end(); ++it) {
    if (!it->method.empty() && it->method != method) continue;
    if (path.find(it->path_substring) == std::string::npos) continue;
    ApiError e = for_code(it->code, it->retry_after);
    if (--it->remaining == 0) rules_.erase(it);
    return e;
  }
  return std::nullopt;
}

void RequestLog::add(Request r) {
  std::lock_guard lock(mutex_);
  requests_.push_back(std::move(r));
}

std::vector<Request> RequestLog::copy() const {
  std::lock_guard lock(mutex_);
  return requests_;
}

void RequestLog::clear() {
  std::lock_guard lock(mutex_);
  requests_.clear();
}

}  // namespace gpuq::kubefake
