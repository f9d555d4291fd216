// Dependencies (gpuq submit --after-ok|--after-any|--after-not-ok, Slurm's --dependency): a job
// that waits for others is held by the engine (HoldKind::kDependency: Pending, counted, out of
// its queue's order) until every job it names has ended as it asks; then it takes its place in
// its queue. One that can no longer be met (after-ok a job that failed) fails the job with a
// reason naming it, as Slurm's DependencyNeverSatisfied, and so on down a chain.
//
// A dependency must name a job that exists when the job is submitted (or an array this gpuqd
// knows: every one of its members), and a job's dependencies never change, so no cycle can form;
// a job naming itself is refused. The dependencies are kept in the job's record and its holds
// rebuilt from them at start (restored jobs are resolved in the first turn).
#include <algorithm>

#include "daemon/core.hpp"

namespace gpuq::daemon {
namespace {

enum class Met { kYes, kWaiting, kNever };

Met met(AfterKind kind, JobState s) {
  if (!is_finished(s)) return Met::kWaiting;
  switch (kind) {
    case AfterKind::kOk: return s == JobState::kSucceeded ? Met::kYes : Met::kNever;
    case AfterKind::kNotOk: return s == JobState::kSucceeded ? Met::kNever : Met::kYes;
    case AfterKind::kAny: break;
  }
  return Met::kYes;
}

const char* flag(AfterKind kind) {
  return kind == AfterKind::kOk ? "after-ok" : kind == AfterKind::kAny ? "after-any" : "after-not-ok";
}

const char* wanted(AfterKind kind) {
  return kind == AfterKind::kOk ? "succeed" : kind == AfterKind::kAny ? "end" : "fail";
}

}  // namespace

Result<DependencyView> Core::dependency_state(const std::string& id) {
  if (const Job* j = engine_->entry(JobId(id))) return DependencyView{j->state, *j->end_reason};
  if (const storage::JobRecord* rec = live(id)) return DependencyView{rec->state, rec->reason};
  auto on_disk = store_->job(id);
  if (!on_disk) return Error{on_disk.error(), ErrorCode::kUnavailable};
  if (!on_disk.value()) return DependencyView{};
  return DependencyView{on_disk.value()->state, on_disk.value()->reason};
}

namespace {

// "waiting for j1 to succeed (after-ok)", "... and 41 more".
std::string waiting_text(const std::vector<Awaited>& awaited) {
  std::string out = "waiting for " + awaited.front().job + " to " + wanted(awaited.front().kind) + " (" +
                    flag(awaited.front().kind) + ")";
  if (awaited.size() > 1) out += " and " + std::to_string(awaited.size() - 1) + " more";
  return out;
}

std::string never_text(AfterKind kind, const std::string& job, const DependencyView& s) {
  return std::string(flag(kind)) + " " + job + " can never be met: it ended " + to_string(*s.state) +
         (s.reason.empty() ? "" : " (" + s.reason + ")");
}

}  // namespace

// An array's id stands for each of its members.
Result<std::vector<Awaited>> Core::check_after(const Submission& sub) {
  std::vector<Awaited> awaited;
  for (std::size_t i = 0; i < sub.after.size(); ++i) {
    const Dependency& d = sub.after[i];
    const std::string at = "spec.after[" + std::to_string(i) + "]: ";
    if (d.job == sub.job.id.value || (!sub.job.array_id.empty() && d.job == sub.job.array_id))
      return Error{at + "a job cannot wait for itself", ErrorCode::kInvalidArgument};
    std::vector<std::string> ids{d.job};
    if (auto members = array_members(d.job)) ids = std::move(*members);
    for (const std::string& id : ids) {
      auto s = dependency_state(id);
      if (!s) return Error{s.error(), s.code()};
      if (!s.value().state)
        return Error{at + "job \"" + id + "\" does not exist; a dependency names a job already submitted",
                     ErrorCode::kNotFound};
      switch (met(d.kind, *s.value().state)) {
        case Met::kNever:
          return Error{at + never_text(d.kind, id, s.value()), ErrorCode::kFailedPrecondition};
        case Met::kWaiting:
          awaited.push_back({id, d.kind});
          break;
        case Met::kYes:
          break;
      }
    }
  }
  return awaited;
}

// Holds `id` on the jobs it still waits for, registered with each of them.
void Core::wait_for(const std::string& id, const std::vector<Awaited>& awaited, Time now, bool quiet) {
  if (awaited.empty()) return;
  for (const Awaited& a : awaited) dependents_[a.job].push_back({id, a.kind});
  awaiting_[id] = static_cast<std::uint32_t>(awaited.size());
  (void)engine_->hold(JobId(id), now, waiting_text(awaited), Engine::HoldKind::kDependency, quiet);  // pending
}

// A pending job from the state file that waits for others: held again on those still unfinished;
// one whose dependency can no longer be met is failed in the first turn.
void Core::restore_dependencies(const storage::JobRecord& rec, Time now) {
  Submission s;
  s.job.id = rec.spec.id;
  s.after = rec.after;
  auto awaited = check_after(s);
  if (awaited) {
    wait_for(rec.spec.id.value, awaited.value(), now, /*quiet=*/true);
    return;  // none awaited: all were met while the release was not yet written
  }
  // One can never be met (or the file could not be read): hold it on every job it names, and let
  // the first turn look at them again.
  std::vector<Awaited> all;
  for (const Dependency& d : rec.after) all.push_back({d.job, d.kind});
  wait_for(rec.spec.id.value, all, now, /*quiet=*/true);
  for (const Dependency& d : rec.after) ended_.push_back(d.job);
}

// The jobs that wait for those that ended: each such end counts down what they wait for, and
// releases them at none; one that can never be met fails the job, and so on down a chain in the
// same call. True when any job changed.
bool Core::resolve_dependencies(Time now) {
  bool changed = false;
  while (!ended_.empty()) {
    const std::vector<std::string> ended = std::exchange(ended_, {});
    for (const std::string& done : ended) {
      auto it = dependents_.find(done);
      if (it == dependents_.end()) continue;
      auto s = dependency_state(done);
      if (!s) {  // the state file could not be read: try again at the next turn
        ended_.push_back(done);
        return changed;
      }
      if (!s.value().state || !is_finished(*s.value().state)) continue;  // not ended after all
      const std::vector<Awaited> waiting = std::move(it->second);
      dependents_.erase(it);
      for (const Awaited& w : waiting) {
        const Job* job = engine_->entry(JobId(w.job));
        auto left = awaiting_.find(w.job);
        if (job == nullptr || !job->dependent || left == awaiting_.end()) {  // ended (cancelled) or failed already
          if (left != awaiting_.end()) awaiting_.erase(left);
          continue;
        }
        changed = true;
        switch (met(w.kind, *s.value().state)) {
          case Met::kNever:
            awaiting_.erase(left);
            (void)engine_->cancel(JobId(w.job), now, "dependency never satisfied: " + never_text(w.kind, done, s.value()),
                                  JobState::kFailed);
            ended_.push_back(w.job);
            break;
          case Met::kYes:
            if (--left->second == 0) {
              awaiting_.erase(left);
              (void)engine_->release_hold(JobId(w.job), now, "dependencies met", Engine::HoldKind::kDependency);
            } else {
              (void)engine_->hold(JobId(w.job), now,
                                  "waiting for " + std::to_string(left->second) + " more of the jobs it depends on",
                                  Engine::HoldKind::kDependency, /*quiet=*/true);
            }
            break;
          case Met::kWaiting:
            break;
        }
      }
    }
  }
  return changed;
}

}  // namespace gpuq::daemon
