#include "daemon/estimates.hpp"

#include <algorithm>
#include <chrono>
#include <iterator>
#include <limits>

#include <spdlog/spdlog.h>

#include "daemon/heap.hpp"
#include "daemon/loop.hpp"
#include "scheduler/what_if.hpp"

namespace gpuq::daemon {

std::optional<Estimates::Estimate> Estimates::of(std::uint32_t slot, std::uint64_t order,
                                                 std::uint64_t engine) const {
  std::lock_guard lock(mu_);
  if (engine != engine_) return std::nullopt;
  auto estimate = [&](Time start) {
    return Estimate{start == kNoStart ? std::nullopt : std::optional<Time>(start), computed_at_};
  };
  if (slot < by_slot_.size() && by_slot_[slot].order == order) return estimate(by_slot_[slot].start);
  // A member that waited in its array's block then (the slot is its block's, or its own now).
  const auto& ranges = in_blocks_.orders;
  auto r = std::upper_bound(ranges.begin(), ranges.end(), std::make_pair(order, kNoOrder));
  if (r == ranges.begin() || order >= std::prev(r)->second) return std::nullopt;
  const auto& starts = in_blocks_.starts;
  auto s = std::lower_bound(starts.begin(), starts.end(), std::make_pair(order, std::numeric_limits<Time>::min()));
  return estimate(s != starts.end() && s->first == order ? s->second : kNoStart);
}

void Estimates::publish(std::vector<Slot> by_slot, Time computed_at, std::uint64_t engine, InBlocks in_blocks) {
  std::lock_guard lock(mu_);
  engine_ = engine;
  in_blocks_ = std::move(in_blocks);
  by_slot_ = std::move(by_slot);
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
  std::uint64_t engine = 0;
  const auto t0 = clock::now();
  loop_.run_sync([&](Core& c) {
    now = Loop::now();
    engine = c.engine_generation();
    // Nothing pending: nothing to estimate, and no copy made on the engine thread.
    const Engine& e = c.engine();
    std::size_t pending = e.reserved_jobs().size();
    for (QueueIdx q = 0; q < e.queue_count() && pending == 0; ++q) pending += e.pending_count(q);
    if (pending > 0) copy.emplace(e);
  });
  const auto t1 = clock::now();
  std::vector<Estimates::Slot> by_slot;
  Estimates::InBlocks in_blocks;
  std::size_t pending = 0;
  if (copy) {
    by_slot.resize(copy->job_slots());
    for (const Job* j : copy->pending_in_submission_order()) {
      if (const std::uint32_t w = copy->members_of(*j); w > 1) {  // an array's block
        for (const auto& r : copy->block_orders(*j)) in_blocks.orders.push_back(r);
        pending += w;
        continue;
      }
      by_slot[copy->slot_of(*j)].order = j->order;
      ++pending;
    }
    std::sort(in_blocks.orders.begin(), in_blocks.orders.end());
    WhatIfResult w = estimate_starts(std::move(*copy), now);
    for (const auto& [slot, at] : w.slot_starts)
      if (slot < by_slot.size()) by_slot[slot].start = at;
    in_blocks.starts = std::move(w.order_starts);
    std::sort(in_blocks.starts.begin(), in_blocks.starts.end());
  }
  copy.reset();
  if (pending > 0) trim_heap("estimates");  // the engine's copy: a Job per pending job
  const auto t2 = clock::now();
  const double copy_s = std::chrono::duration<double>(t1 - t0).count();
  const double what_if_s = std::chrono::duration<double>(t2 - t1).count();
  metrics_.estimate(copy_s, what_if_s);
  spdlog::debug("event=start_estimates pending={} copy_s={:.4f} what_if_s={:.4f}", pending, copy_s, what_if_s);
  out_.publish(std::move(by_slot), now, engine, std::move(in_blocks));
}

}  // namespace gpuq::daemon
