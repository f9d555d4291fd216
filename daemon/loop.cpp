#include "daemon/loop.hpp"

#include <future>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace gpuq::daemon {

Loop::Loop(Core& core) : core_(core), timer_(io_) {}

Loop::~Loop() { stop(); }

Time Loop::now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Loop::start() {
  guard_.emplace(io_.get_executor());
  store_guard_.emplace(store_io_.get_executor());
  reply_guard_.emplace(reply_io_.get_executor());
  arm_timer();
  thread_ = std::thread([this] { io_.run(); });
  store_thread_ = std::thread([this] { store_io_.run(); });
  reply_thread_ = std::thread([this] { reply_io_.run(); });
}

void Loop::stop() {
  if (!thread_.joinable()) return;
  // The engine thread ends once no write is in flight and nothing is left to run; then the
  // store and reply threads, with nothing left on them but what the engine thread posted last.
  // With a usage history, one more turn writes it as of now (daemon/history.cpp).
  boost::asio::post(io_, [this] {
    if (core_.checkpoint_history() && !end_posted_) {
      end_posted_ = true;
      boost::asio::post(io_, [this] { end_turn(); });
    }
    stopping_ = true;
    timer_.cancel();
    guard_.reset();
  });
  thread_.join();
  store_guard_.reset();
  store_thread_.join();
  reply_guard_.reset();
  reply_thread_.join();
}

void Loop::arm_timer() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec || stopping_) return;
    if (!end_posted_) {
      end_posted_ = true;
      boost::asio::post(io_, [this] { end_turn(); });
    }
    arm_timer();
  });
}

void Loop::post(Work work) {
  boost::asio::post(io_, [this, work = std::move(work)] {
    if (Done d = work(core_, now())) done_.push_back(std::move(d));
    if (!end_posted_) {
      end_posted_ = true;
      boost::asio::post(io_, [this] { end_turn(); });
    }
  });
}

void Loop::run_sync(const std::function<void(Core&)>& f) {
  std::promise<void> done;
  boost::asio::post(io_, [&] {
    f(core_);
    done.set_value();
  });
  done.get_future().wait();
}

void Loop::end_turn() {
  end_posted_ = false;
  if (writing_) {
    turn_waiting_ = true;
    return;
  }
  turn_waiting_ = false;
  auto batch = std::make_shared<storage::Batch>(core_.close_turn(now()));
  std::vector<Send> sends;
  for (Done& d : done_)
    if (Send s = d(core_)) sends.push_back(std::move(s));
  const std::size_t requests = done_.size();
  done_.clear();
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.turns;
  }
  if (batch->empty()) {
    for (Send& s : sends) s(Core::TurnResult{});
    return;
  }
  writing_ = true;
  // Keep the engine thread's io_context running until the write is back.
  auto work = boost::asio::make_work_guard(io_);
  boost::asio::post(store_io_, [this, batch, requests, sends = std::move(sends), work]() mutable {
    const Core::TurnResult result = core_.write(*batch);
    {
      std::lock_guard lock(stats_mu_);
      ++stats_.commits;
      stats_.last_commit_seconds = result.commit_seconds;
      stats_.commit_seconds_total += result.commit_seconds;
      stats_.last_batch_requests = requests;
      if (!result.ok) ++stats_.commit_failures;
      stats_.jobs_written += result.jobs_written;
    }
    // Back to the engine thread: the Core takes the outcome, then the replies go out (so a
    // client's next request always finds the Core past this write).
    boost::asio::post(io_, [this, batch, result, sends = std::move(sends), work = std::move(work)]() mutable {
      written(batch, result, std::move(sends));
    });
  });
}

void Loop::written(const std::shared_ptr<storage::Batch>& batch, const Core::TurnResult& result,
                   std::vector<Send> sends) {
  writing_ = false;
  core_.committed(*batch, result, now());
  if (!result.ok) {
    for (Send& s : sends) s(result);
    // The open turn's requests changed the state that was just dropped: they fail too.
    for (Done& d : done_)
      if (Send s = d(core_)) s(result);
    done_.clear();
    turn_waiting_ = false;
    return;
  }
  // The next write first, so that it is on its way while these replies go out.
  if (turn_waiting_ || !done_.empty()) end_turn();
  boost::asio::post(reply_io_, [sends = std::move(sends), result]() mutable {
    for (Send& s : sends) s(result);
  });
  // The pending records the turns touched, packed again once the answers are on their way. A
  // turn started just above is being written: a record it changed is packed as it is in memory,
  // and Jobs.List shows its stored row, the one before, until that write is in (as a list made
  // before the change would).
  core_.pack_idle();
}

TurnStats Loop::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

}  // namespace gpuq::daemon
