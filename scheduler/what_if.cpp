#include "scheduler/what_if.hpp"

#include <algorithm>
#include <iterator>
#include <limits>
#include <queue>
#include <tuple>
#include <unordered_set>
#include <vector>

namespace gpuq {

std::optional<Time> expected_runtime(const Engine& engine, const Job& job, WhatIfOptions::Runtime runtime) {
  const std::optional<Time>& limit = job.spec.max_runtime;
  std::optional<Time> run;
  if (runtime == WhatIfOptions::Runtime::kExpected) {
    run = job.spec.expected_runtime;
    if (!run)
      if (auto q = engine.queue_index(job.spec.queue)) run = engine.queue_spec(*q).runtime_estimate;
  }
  if (!run) run = limit;
  if (run && limit) run = std::min(*run, *limit);
  return run;
}

namespace {

// What happens to a job at a time: it ends (its run is over) or it has stopped (a victim or a
// cancelled job whose grace period is over).
struct Happening {
  Time at = 0;
  std::uint64_t seq = 0;  // insertion order: ties are applied as they were planned
  bool stop = false;
  std::string job;
  Time admitted_at = 0;  // an end belongs to this admission only (a requeued job runs again)
  bool operator>(const Happening& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

class Run {
 public:
  Run(Engine& e, Time now, const WhatIfOptions& o) : e_(e), now_(now), o_(o) {}

  WhatIfResult go() {
    for (const Job* j : e_.pending_in_submission_order()) {
      if (const std::uint32_t w = e_.members_of(*j); w > 1) {  // an array's block
        for (const auto& r : e_.block_orders(*j)) in_blocks_.push_back(r);
        in_blocks_left_ += w;
      } else {
        waiting_.insert(j->spec.id.value);
      }
    }
    std::sort(in_blocks_.begin(), in_blocks_.end());
    out_.pending = waiting_.size() + in_blocks_left_;
    for (const Job* j : e_.holding_jobs()) {
      if (j->draining || j->state == JobState::kPreempting)
        plan(now_ + (j->draining ? 0 : j->spec.grace_period), true, *j);
      else
        plan_end(*j, j->admitted_at);
    }
    cycle(now_);
    while ((!waiting_.empty() || in_blocks_left_ > 0) && !plan_.empty() && out_.steps < o_.max_steps) {
      const Time t = plan_.top().at;
      if (t > now_ + o_.horizon) break;
      while (!plan_.empty() && plan_.top().at == t) {
        const Happening h = plan_.top();
        plan_.pop();
        apply(h);
      }
      cycle(t);
      ++out_.steps;
    }
    return std::move(out_);
  }

 private:
  void plan(Time at, bool stop, const Job& j) {
    plan_.push(Happening{std::max(at, now_), seq_++, stop, j.spec.id.value, j.admitted_at});
  }

  void plan_end(const Job& j, Time admitted_at) {
    std::optional<Time> run = o_.runtime_of ? o_.runtime_of(j) : expected_runtime(e_, j, o_.runtime);
    if (!run) return;
    // Running past its estimate: it has run as long again before it ends (runtimes are heavy-
    // tailed: the longer a job has run, the longer it still runs), within its limit.
    const Time ran = now_ - admitted_at;
    if (!o_.runtime_of && o_.runtime == WhatIfOptions::Runtime::kExpected && ran >= *run) {
      run = 2 * ran;
      if (j.spec.max_runtime) run = std::min(*run, *j.spec.max_runtime);
    }
    plan(admitted_at + *run, false, j);
  }

  void apply(const Happening& h) {
    const Job* j = e_.job(JobId(h.job));
    if (j == nullptr) return;
    if (h.stop) {
      (void)e_.observe(JobStopped{j->spec.id}, h.at);  // refused when it was released already
    } else if ((j->state == JobState::kRunning || j->state == JobState::kAdmitted) && !j->draining &&
               j->admitted_at == h.admitted_at) {
      (void)e_.observe(JobFinished{j->spec.id, 0, {}}, h.at);
    }
  }

  // A cycle at t as gpuqd's turn runs it: admitted jobs start at once, and a few rounds let
  // booked preemptors in.
  void cycle(Time t) {
    for (int round = 0; round < 8; ++round) {
      const std::vector<Decision> decisions = e_.schedule(t);
      if (decisions.empty()) break;
      for (const Decision& d : decisions) {
        if (const auto* a = std::get_if<Admission>(&d)) {
          (void)e_.observe(JobStarted{a->job}, t);
          const Job* j = e_.job(a->job);
          if (waiting_.erase(a->job.value) > 0) {
            out_.starts.emplace(a->job.value, t);
            if (j) out_.slot_starts.emplace_back(e_.slot_of(*j), t);
          } else if (j && was_in_block(j->order) && started_.insert(j->order).second) {
            out_.starts.emplace(a->job.value, t);
            out_.order_starts.emplace_back(j->order, t);
            --in_blocks_left_;
          }
          if (j) plan_end(*j, j->admitted_at);
        } else if (const auto* p = std::get_if<Preemption>(&d)) {
          if (const Job* v = e_.job(p->job)) plan(t + p->grace_period, true, *v);
        }
      }
    }
    (void)e_.take_events();  // nobody reads them; keep the copy's memory flat
  }

  Engine& e_;
  const Time now_;
  const WhatIfOptions& o_;
  WhatIfResult out_;
  // Whether a job's order was one of a block's members' when the what-if began.
  bool was_in_block(std::uint64_t order) const {
    auto it = std::upper_bound(in_blocks_.begin(), in_blocks_.end(),
                               std::make_pair(order, std::numeric_limits<std::uint64_t>::max()));
    return it != in_blocks_.begin() && order < std::prev(it)->second;
  }

  std::unordered_set<std::string> waiting_;
  std::vector<std::pair<std::uint64_t, std::uint64_t>> in_blocks_;  // orders [from, to), sorted
  std::size_t in_blocks_left_ = 0;
  std::unordered_set<std::uint64_t> started_;  // of those, the ones admitted
  std::priority_queue<Happening, std::vector<Happening>, std::greater<>> plan_;
  std::uint64_t seq_ = 0;
};

}  // namespace

WhatIfResult estimate_starts(Engine engine, Time now, const WhatIfOptions& options) {
  return Run(engine, now, options).go();
}

}  // namespace gpuq
