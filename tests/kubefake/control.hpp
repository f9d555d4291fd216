#pragma once
// What tests steer and read besides the API: injected faults (failed requests, pauses, slow
// bindings) and the log of every request. Both thread-safe.
#include <atomic>
#include <chrono>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "tests/kubefake/server.hpp"
#include "tests/kubefake/status.hpp"

namespace gpuq::kubefake {

class Faults {
 public:
  void fail_next(const std::string& method, const std::string& path_substring, int code, int count,
                 int retry_after);
  // The Status for this request when a rule matches it (and uses up one of its count).
  std::optional<ApiError> take(const std::string& method, const std::string& path);

  void set_pause(std::chrono::milliseconds d) { pause_ = d.count(); }
  std::chrono::milliseconds pause() const { return std::chrono::milliseconds(pause_.load()); }
  void set_bind_delay(std::chrono::milliseconds d) { bind_delay_ = d.count(); }
  std::chrono::milliseconds bind_delay() const {
    return std::chrono::milliseconds(bind_delay_.load());
  }

 private:
  struct Rule {
    std::string method;
    std::string path_substring;
    int code;
    int remaining;
    int retry_after;
  };
  std::mutex mutex_;
  std::vector<Rule> rules_;
  std::atomic<std::int64_t> pause_{0};
  std::atomic<std::int64_t> bind_delay_{0};
};

class RequestLog {
 public:
  void add(Request r);
  std::vector<Request> copy() const;
  void clear();

 private:
  mutable std::mutex mutex_;
  std::vector<Request> requests_;
};

}  // namespace gpuq::kubefake
