#include "daemon/estimates.hpp"

#include <chrono>

#include <spdlog/spdlog.h>

#include "daemon/heap.hpp"
#include "daemon/loop.hpp"
#include "scheduler/what_if.hpp"

namespace gpuq::daemon {

std::optional<Estimates::Estimate> Estimates::of(const std::string& job) const {
  std::lock_guard lock(mu_);
  auto it = starts_.find(job);
  if (it == starts_.end()) return std::nullopt;
  return Estimate{it->second, computed_at_};
}

void Estimates::publish(std::unordered_map<std::string, std::optional<Time>> starts, Time computed_at) {
  std::lock_guard lock(mu_);
  starts_ = std::move(starts);
  computed_at_ = computed_at;
}

Estimator::Estimator(Loop& loop, Estimates& out, Metrics& metrics, Time interval)
    : loop_(loop), out_(out), metrics_(metrics), interval_(interval) {}

Estimator::~Estimator() { stop(); }

void Estimator::start() { thread_ = std::thread([this] { run(); }); }

void Estimator::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Estimator::run() {
  for (;;) {
    run_once();
    std::unique_lock lock(mu_);
    if (cv_.wait_for(lock, std::chrono::seconds(interval_), [this] { return stopping_; })) return;
  }
}

void Estimator::run_once() {
  using clock = std::chrono::steady_clock;
  std::optional<Engine> copy;
  Time now = 0;
  const auto t0 = clock::now();
  loop_.run_sync([&](Core& c) {
    now = Loop::now();
    // Nothing pending: nothing to estimate, and no copy made on the engine thread.
    const Engine& e = c.engine();
    std::size_t pending = e.reserved_jobs().size();
    for (QueueIdx q = 0; q < e.queue_count() && pending == 0; ++q) pending += e.pending_count(q);
    if (pending > 0) copy.emplace(e);
  });
  const auto t1 = clock::now();
  std::unordered_map<std::string, std::optional<Time>> starts;
  if (copy) {
    for (const Job* j : copy->pending_in_submission_order()) starts.emplace(j->spec.id.value, std::nullopt);
    WhatIfResult w = estimate_starts(std::move(*copy), now);
    for (auto& [id, at] : w.starts) starts[id] = at;
  }
  copy.reset();
  if (!starts.empty()) trim_heap("estimates");  // the engine's copy: a Job per pending job
  const auto t2 = clock::now();
  const double copy_s = std::chrono::duration<double>(t1 - t0).count();
  const double what_if_s = std::chrono::duration<double>(t2 - t1).count();
  metrics_.estimate(copy_s, what_if_s);
  spdlog::debug("event=start_estimates pending={} copy_s={:.4f} what_if_s={:.4f}", starts.size(), copy_s, what_if_s);
  out_.publish(std::move(starts), now);
}

}  // namespace gpuq::daemon
