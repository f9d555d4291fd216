#pragma once
// Start-time estimates for pending jobs (docs/tasks/batch.md, Start-time estimates). Every `interval` seconds
// a thread of its own has the engine thread copy the engine (the only work done there: a copy,
// never a cycle), runs the what-if (scheduler/what_if.hpp) on the copy and publishes the result;
// the API shows it with each pending job, with when it was computed.
#include <condition_variable>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <cstdint>
#include <vector>

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
  // By the job's engine slot and order (Engine::slot_of, Job::order), which a copy of the engine
  // keeps: 16 bytes a pending job, not a map by id (BENCHMARKS.md, Memory per pending job).
  // `engine`: which engine the slot is of (Core::engine_generation: a rebuilt engine reuses slots
  // and orders). nullopt: the job was not pending when the last estimates were computed.
  std::optional<Estimate> of(std::uint32_t slot, std::uint64_t order, std::uint64_t engine) const;
  struct Slot {
    std::uint64_t order = kNoOrder;  // the pending job's; kNoOrder: none there
    Time start = kNoStart;
  };
  static constexpr std::uint64_t kNoOrder = UINT64_MAX;
  static constexpr Time kNoStart = INT64_MIN;  // pending, and not admitted within the horizon
  // An array's members waiting in its engine block (no slot of their own): the blocks' orders
  // as ranges [from, to), sorted, and the starts of those admitted, by order (sorted).
  struct InBlocks {
    std::vector<std::pair<std::uint64_t, std::uint64_t>> orders;
    std::vector<std::pair<std::uint64_t, Time>> starts;
  };
  void publish(std::vector<Slot> by_slot, Time computed_at, std::uint64_t engine, InBlocks in_blocks = {});

 private:
  mutable std::mutex mu_;
  std::vector<Slot> by_slot_;
  InBlocks in_blocks_;
  Time computed_at_ = 0;
  std::uint64_t engine_ = 0;
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
