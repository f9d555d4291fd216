#include "daemon/loop.hpp"

#include <future>

#include <boost/asio/post.hpp>

namespace gpuq::daemon {

Loop::Loop(Core& core) : core_(core), timer_(io_) {}

Loop::~Loop() { stop(); }

Time Loop::now() {
  return std::chrono::duration_cast<std::chrono::seconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

void Loop::start() {
  guard_.emplace(io_.get_executor());
  arm_timer();
  thread_ = std::thread([this] { io_.run(); });
}

void Loop::stop() {
  if (!thread_.joinable()) return;
  boost::asio::post(io_, [this] {
    timer_.cancel();
    guard_.reset();
  });
  thread_.join();
}

void Loop::arm_timer() {
  timer_.expires_after(std::chrono::seconds(1));
  timer_.async_wait([this](const boost::system::error_code& ec) {
    if (ec) return;
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
  Core::TurnResult result = core_.end_turn(now());
  std::vector<Done> done;
  done.swap(done_);
  {
    std::lock_guard lock(stats_mu_);
    ++stats_.turns;
    if (result.committed) {
      ++stats_.commits;
      stats_.last_commit_seconds = result.commit_seconds;
      stats_.commit_seconds_total += result.commit_seconds;
      stats_.last_batch_requests = done.size();
    }
    if (!result.ok) ++stats_.commit_failures;
    stats_.jobs_written += result.jobs_written;
    stats_.events_written += result.events_written;
  }
  for (Done& d : done) d(result);
}

TurnStats Loop::stats() const {
  std::lock_guard lock(stats_mu_);
  return stats_;
}

}  // namespace gpuq::daemon
