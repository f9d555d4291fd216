#pragma once
// Decayed usage history for fair share (Slurm's PriorityDecayHalfLife, Kueue's admission fair
// sharing): per queue, the exponentially decayed average of its usage over time,
//   A(t1) = A(t0) * d + u * (1 - d),   d = 2^(-(t1 - t0) / halfLife)
// which is exact for usage held constant between t0 and t1. A team that just ran a week of
// 64-GPU jobs carries a high average and waits behind one that ran nothing, until it decays.
#include <array>
#include <cmath>
#include <vector>

#include "scheduler/cluster.hpp"
#include "scheduler/model.hpp"

namespace gpuq {

class UsageHistory {
 public:
  using Average = std::array<double, kMaxResources>;

  explicit UsageHistory(Time half_life = 0) : half_life_(half_life) {}
  bool enabled() const { return half_life_ > 0; }
  Time half_life() const { return half_life_; }

  // Brings q's average up to `now`, given that its usage has been `usage` since the last call.
  void advance(QueueIdx q, const ResourceVec& usage, Time now) {
    if (!enabled()) return;
    Entry& e = entry(q);
    if (!e.started) {
      e.started = true;
      e.at = now;
      return;
    }
    if (now <= e.at) return;
    e.average = decayed(e, usage, now);
    e.at = now;
  }

  // q's average as advance(q, usage, now) would make it, changing nothing (a checkpoint of the
  // history taken between cycles); zero for a queue whose history has not started.
  Average projected(QueueIdx q, const ResourceVec& usage, Time now) const {
    if (!enabled() || q >= entries_.size() || !entries_[q].started) return Average{};
    const Entry& e = entries_[q];
    return now <= e.at ? e.average : decayed(e, usage, now);
  }

  // Sets q's average as of `now` (a restored or declared history).
  void set(QueueIdx q, const Average& average, Time now) {
    Entry& e = entry(q);
    e.average = average;
    e.at = now;
    e.started = true;
  }

  const Average& average(QueueIdx q) const {
    static const Average kZero{};
    return q < entries_.size() ? entries_[q].average : kZero;
  }

  // max_r average[r] / basis[r] / weight: the share of `basis` the queue has used on average.
  double share(QueueIdx q, const ResourceVec& basis, double weight) const {
    if (!enabled()) return 0;
    const Average& a = average(q);
    double best = 0;
    for (std::size_t r = 0; r < kMaxResources; ++r)
      if (a[r] > 0 && basis.v[r] > 0) best = std::max(best, a[r] / static_cast<double>(basis.v[r]));
    return best / weight;
  }

 private:
  struct Entry {
    Average average{};
    Time at = 0;
    bool started = false;
  };
  // The one formula, so that projected() and advance() agree to the last bit.
  Average decayed(const Entry& e, const ResourceVec& usage, Time now) const {
    const double d = std::exp2(-static_cast<double>(now - e.at) / static_cast<double>(half_life_));
    Average out{};
    for (std::size_t r = 0; r < kMaxResources; ++r)
      out[r] = e.average[r] * d + static_cast<double>(usage.v[r]) * (1.0 - d);
    return out;
  }
  Entry& entry(QueueIdx q) {
    if (q >= entries_.size()) entries_.resize(q + 1);
    return entries_[q];
  }

  Time half_life_;
  std::vector<Entry> entries_;
};

}  // namespace gpuq
