#pragma once
// The engine thread: one boost::asio::io_context run by one thread, the only thread that touches
// the Core. Work posted from any thread runs in order; the first work of a turn also posts the
// turn's end, so everything posted before it shares one end_turn() (one transaction, one fsync:
// group commit) and the turn's replies are sent only after it. A timer ends a turn every second
// even when idle, so that time alone can move things (the none binder, minRuntime).
#include <chrono>
#include <functional>
#include <optional>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>

#include "daemon/core.hpp"

namespace gpuq::daemon {

struct TurnStats {
  std::uint64_t turns = 0;
  std::uint64_t commits = 0;
  std::uint64_t commit_failures = 0;
  std::uint64_t jobs_written = 0;
  std::uint64_t events_written = 0;
  double last_commit_seconds = 0;
  double commit_seconds_total = 0;
  std::uint64_t last_batch_requests = 0;
};

class Loop {
 public:
  // What to do once the turn is on disk (or failed); runs on the engine thread.
  using Done = std::function<void(const Core::TurnResult&)>;
  // Runs on the engine thread; returns what to do after the commit (or nothing).
  using Work = std::function<Done(Core&, Time now)>;

  explicit Loop(Core& core);
  ~Loop();
  void start();
  void stop();
  void post(Work work);
  // Runs `f` on the engine thread and waits for it (start-up, tests, metrics).
  void run_sync(const std::function<void(Core&)>& f);
  TurnStats stats() const;

  static Time now();

 private:
  void end_turn();
  void arm_timer();

  Core& core_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  boost::asio::steady_timer timer_;
  std::thread thread_;
  std::vector<Done> done_;
  bool end_posted_ = false;
  mutable std::mutex stats_mu_;
  TurnStats stats_;
};

}  // namespace gpuq::daemon
