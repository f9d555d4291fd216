#include "storage/usage.hpp"

#include <algorithm>
#include <cmath>

namespace gpuq::storage {

namespace {

bool holding(JobState s) {
  return s == JobState::kAdmitted || s == JobState::kRunning || s == JobState::kPreempting;
}

// The walk's state: the attempt open, if any, and whether it is being preempted.
struct Walk {
  JobAttempts& out;
  const JobFacts& job;
  std::optional<Attempt> open;
  bool preempting = false;

  void start(Time at, const std::string& flavor, bool being_preempted) {
    open = Attempt{at, at, flavor.empty() ? job.flavor : flavor, false};
    preempting = being_preempted;
  }
  void end(Time at, bool preempted) {
    open->end = std::max(at, open->start);
    open->preempted = preempted;
    out.attempts.push_back(*open);
    open.reset();
    preempting = false;
  }
};

// Nearest rank over sorted values (as the simulator's report: sim/replay_stats.cpp).
Time rank(const std::vector<Time>& sorted, double p) {
  if (sorted.empty()) return 0;
  auto k = static_cast<std::size_t>(std::ceil(p / 100.0 * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(k, 1, sorted.size()) - 1];
}

}  // namespace

JobAttempts attempts_of(const JobFacts& job, std::span<const StateChange> events, Time now) {
  JobAttempts out;
  const bool never_requeued = job.attempts == 0 && job.preemptions == 0;
  if (events.empty()) {
    // Nothing kept but the row: its one admission, as the row says.
    if (job.admitted_at > 0 && job.state != JobState::kPending) {
      const Time end = is_finished(job.state) ? job.finished_at : now;
      out.attempts.push_back({job.admitted_at, std::max(end, job.admitted_at), job.flavor, false});
    }
    if (job.admitted_at > 0 && never_requeued) out.first_admitted = job.admitted_at;
    out.last_flavor = job.flavor;
    return out;
  }
  Walk w{out, job, std::nullopt, false};
  const bool complete = !events.front().from.has_value();  // the submission is kept
  if (!complete && holding(*events.front().from)) {
    // Held since before the first kept event: since the row's admission when that is earlier.
    const StateChange& first = events.front();
    const Time since =
        job.admitted_at > 0 && job.admitted_at <= first.at ? job.admitted_at : first.at;
    w.start(since, first.flavor, *first.from == JobState::kPreempting);
  }
  Time last_at = events.front().at;
  for (const StateChange& e : events) {
    const bool from_holds = e.from && holding(*e.from);
    if (w.open && !from_holds) {
      // It stopped holding without an event (gpuqd restarted while it was being preempted: it
      // waited again from there): the attempt ends where the events last showed it.
      w.end(last_at, w.preempting && !(e.from && is_finished(*e.from)));
    } else if (!w.open && from_holds) {
      w.start(e.at, e.flavor, *e.from == JobState::kPreempting);  // admitted without an event
    }
    if (holding(e.to)) {
      if (!w.open) {
        w.start(e.at, e.flavor, e.to == JobState::kPreempting);
      } else if (e.to == JobState::kPreempting) {
        w.preempting = true;
      } else if (e.from == JobState::kPreempting) {
        w.preempting = false;  // its stop was refused: it runs on where it was
      }
      if (w.open->flavor.empty()) w.open->flavor = e.flavor;
    } else if (w.open) {
      // A preempted job goes back to wait; one that ends (even while being preempted) is done.
      w.end(e.at, w.preempting && e.to == JobState::kPending);
    }
    last_at = e.at;
  }
  if (w.open) {
    if (is_finished(job.state)) {
      w.end(std::max(last_at, job.finished_at), false);  // ended without an event (restore failed)
    } else if (holding(job.state)) {
      w.open->end = std::max(now, w.open->start);  // still holding
      out.attempts.push_back(*w.open);
    } else {
      w.end(last_at, w.preempting);  // waits again without an event (requeued at a restart)
    }
  }
  if (complete && !out.attempts.empty())
    out.first_admitted = out.attempts.front().start;
  else if (!complete && never_requeued && job.admitted_at > 0)
    out.first_admitted = job.admitted_at;
  out.last_flavor = out.attempts.empty() ? job.flavor : out.attempts.back().flavor;
  return out;
}

UsageRow& UsageTally::row(const std::string& key, const JobFacts& job) {
  if (q_.by == UsageBy::kJob) {
    if (jobs_.empty() || jobs_.back().number != job.number) {
      UsageRow r;
      r.key = job.id;
      r.number = job.number;
      r.queue = job.queue;
      r.user = job.owner;
      r.state = job.state;
      jobs_.push_back(std::move(r));
    }
    return jobs_.back();
  }
  auto [it, added] = groups_.try_emplace(key);
  if (added) it->second.key = key;
  return it->second;
}

bool UsageTally::add(const JobFacts& job, const JobAttempts& a) {
  auto key = [&](const std::string& flavor) {
    switch (q_.by) {
      case UsageBy::kQueue:
        return job.queue;
      case UsageBy::kUser:
        return job.owner;
      case UsageBy::kFlavor:
        return flavor;
      case UsageBy::kJob:
        break;
    }
    return job.id;
  };
  bool counted = false;
  for (const Attempt& t : a.attempts) {
    const Time s = std::max(t.start, q_.since), e = std::min(t.end, q_.until);
    if (e <= s || job.gpu_milli <= 0) continue;
    const std::int64_t held = (e - s) * job.gpu_milli;
    UsageRow& r = row(key(t.flavor), job);
    r.held[t.flavor] += held;
    if (t.preempted) r.lost += held;
    if (job.gpu_samples > 0) {  // the job's one mean stands for each of its attempts
      r.sampled_held += held;
      r.util_held += static_cast<double>(held) * static_cast<double>(job.gpu_util_sum) /
                     static_cast<double>(job.gpu_samples);
    }
    counted = true;
  }
  const bool ended_within =
      is_finished(job.state) && job.finished_at >= q_.since && job.finished_at < q_.until;
  const bool open_at_end =
      job.submitted_at < q_.until && (!is_finished(job.state) || job.finished_at >= q_.until);
  if (ended_within || open_at_end) {
    UsageRow& r = row(key(a.last_flavor), job);
    if (!ended_within)
      ++r.unfinished;
    else if (job.state == JobState::kSucceeded)
      ++r.succeeded;
    else if (job.state == JobState::kFailed)
      ++r.failed;
    else
      ++r.cancelled;
    counted = true;
  }
  if (a.first_admitted && *a.first_admitted >= q_.since && *a.first_admitted < q_.until) {
    const std::string& flavor = a.attempts.empty() ? a.last_flavor : a.attempts.front().flavor;
    UsageRow& r = row(key(flavor), job);
    ++r.waited;
    waits_[r.key].push_back(std::max<Time>(*a.first_admitted - job.submitted_at, 0));
    counted = true;
  }
  if (counted && q_.by == UsageBy::kJob) jobs_.back().flavor = a.last_flavor;
  return counted;
}

std::vector<UsageRow> UsageTally::rows() {
  std::vector<UsageRow> out;
  if (q_.by == UsageBy::kJob) {
    out = std::move(jobs_);
  } else {
    out.reserve(groups_.size());
    for (auto& [key, r] : groups_) out.push_back(std::move(r));
  }
  for (UsageRow& r : out) {
    auto it = waits_.find(r.key);
    if (it == waits_.end()) continue;
    std::sort(it->second.begin(), it->second.end());
    r.wait_p50 = rank(it->second, 50);
    r.wait_p90 = rank(it->second, 90);
  }
  groups_.clear();
  waits_.clear();
  return out;
}

}  // namespace gpuq::storage
