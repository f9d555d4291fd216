#pragma once
// Start-time estimates for pending jobs (README: Start-time estimates). Every `interval` seconds
// a thread of its own has the engine thread copy the engine (the only work done there: a copy,
// never a cycle), runs the what-if (scheduler/what_if.hpp) on the copy and publishes the result;
// the API shows it with each pending job, with when it was computed.
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>

#include "spec/types.hpp"

namespace gpuq::daemon {

class Loop;
class Metrics;

// The last estimates (thread-safe: the estimator writes, the API's turns read).
class Estimates {
 public:
  struct Estimate {
    std::optional<Time> start;  // nullopt: not admitted within the horizon (or never, as known)
    Time computed_at = 0;
  };
  // nullopt: the job was not pending when the last estimates were computed.
  std::optional<Estimate> of(const std::string& job) const;
  void publish(std::unordered_map<std::string, std::optional<Time>> starts, Time computed_at);

 private:
  mutable std::mutex mu_;
  std::unordered_map<std::string, std::optional<Time>> starts_;
  Time computed_at_ = 0;
};

class Estimator {
 public:
  // interval: seconds between two runs (> 0).
  Estimator(Loop& loop, Estimates& out, Metrics& metrics, Time interval);
  ~Estimator();
  Estimator(const Estimator&) = delete;
  Estimator& operator=(const Estimator&) = delete;
  void start();
  void stop();
  // One run now, on the caller's thread (start-up, tests).
  void run_once();

 private:
  void run();

  Loop& loop_;
  Estimates& out_;
  Metrics& metrics_;
  const Time interval_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuq::daemon
