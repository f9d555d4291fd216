#pragma once
// The engine thread: one boost::asio::io_context run by one thread, the only thread that touches
// the Core. Work posted from any thread runs in order; the first work of a turn also posts the
// turn's end, so everything posted before it shares one transaction and one fsync (group commit),
// and the turn's replies are sent only once it is on disk. A timer ends a turn every second even
// when idle, so that time alone can move things (the none binder, minRuntime).
//
// The write runs on a second thread (the store thread) while the engine thread goes on with the
// next turn; one write at a time, so a turn that ends while the last one is being written waits
// for it and then goes out as one batch with everything that came in meanwhile. Replies are
// filled at the end of their turn (the state the write holds) and, once the commit is back,
// sent by a third thread (the reply thread: gRPC does the sending in the caller's thread), so
// the engine thread goes straight on with the next turn. A failed write fails its turn and the open one (it was built on the state
// that did not reach the disk) with UNAVAILABLE, and the Core rebuilds from the file.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
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
  double last_commit_seconds = 0;
  double commit_seconds_total = 0;
  std::uint64_t last_batch_requests = 0;
};

class Loop {
 public:
  // Sends a reply once its turn is on disk (or failed); runs on the reply thread.
  using Send = std::function<void(const Core::TurnResult&)>;
  // At the end of the turn, before the write (engine thread): fills the reply, returns its Send.
  using Done = std::function<Send(Core&)>;
  // Runs on the engine thread; returns what to do at the end of the turn (or nothing).
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
  void written(const std::shared_ptr<storage::Batch>& batch, const Core::TurnResult& result,
               std::vector<Send> sends);
  void arm_timer();

  Core& core_;
  boost::asio::io_context io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> guard_;
  boost::asio::steady_timer timer_;
  std::thread thread_;
  boost::asio::io_context store_io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> store_guard_;
  std::thread store_thread_;
  boost::asio::io_context reply_io_;
  std::optional<boost::asio::executor_work_guard<boost::asio::io_context::executor_type>> reply_guard_;
  std::thread reply_thread_;
  std::vector<Done> done_;
  bool end_posted_ = false;
  // Set by stop() on the engine thread: the 1 s timer is not armed again. (Its cancel does not
  // reach a wait that has already completed and is queued: that handler armed it again, and
  // the engine thread never ran out of work; seen once as gpuqd hanging in stop.)
  bool stopping_ = false;
  bool writing_ = false;      // a batch is on the store thread
  bool turn_waiting_ = false;  // a turn ended while writing_: end it when the write is done
  mutable std::mutex stats_mu_;
  TurnStats stats_;
};

}  // namespace gpuq::daemon
