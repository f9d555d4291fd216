// Holds (`gpuq hold`, `gpuq submit --hold`, like Slurm's scontrol hold): a held job stays
// Pending, counted as pending for its queue and its owner (maxPendingJobs and the per-user
// limits see it), but is not in its queue's order, so no cycle admits it, until it is released
// (it goes back to its place: its priority, submission time and order are unchanged). A front
// end holds a job the same way while it waits for others to end (HoldKind::kDependency): a
// user's release does not lift that, nor the front end's a user's hold.
#include "scheduler/engine.hpp"

namespace gpuq {

Result<void> Engine::hold(const JobId& id, Time now, std::string reason, HoldKind kind, bool quiet) {
  const std::uint32_t it = resolve(id.value);
  if (it == kNoJob) return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it];
  if (job.state != JobState::kPending)
    return Error{"job \"" + id.value + "\" is " + to_string(job.state) + "; only a pending job can be held",
                 ErrorCode::kFailedPrecondition};
  bool& flag = kind == HoldKind::kUser ? job.held : job.dependent;
  if (kind == HoldKind::kDependency) job.waiting_for = reason;
  if (flag) return Ok();
  if (job.reserved)
    return Error{"job \"" + id.value + "\" is being admitted (jobs are stopping to make room for it); it can "
                 "no longer be held: cancel it instead",
                 ErrorCode::kFailedPrecondition};
  if (!job.off_order()) leave_order(it, 1);
  flag = true;
  if (!quiet) emit(job, JobState::kPending, now, std::move(reason));
  return Ok();
}

Result<void> Engine::release_hold(const JobId& id, Time now, std::string reason, HoldKind kind) {
  const std::uint32_t it = resolve(id.value);
  if (it == kNoJob) return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it];
  bool& flag = kind == HoldKind::kUser ? job.held : job.dependent;
  if (!flag) return Error{"job \"" + id.value + "\" is not held", ErrorCode::kFailedPrecondition};
  flag = false;
  if (kind == HoldKind::kDependency) job.waiting_for.reset();
  if (!job.off_order()) rejoin_order(it, 1);
  emit(job, JobState::kPending, now, std::move(reason));
  return Ok();
}

void Engine::enter_held(std::uint32_t j, std::uint32_t w) {
  // add_pending() then leave_order()'s remove_pending(), without the queue's indexes in between.
  Job& job = jobs_[j];
  kept_failures_.erase(j);
  job.request = request_hash(job);
  job.pending_since = cycle_;
  count_owner(job, static_cast<int>(w), 0);
  queues_[job.queue].held += w;
  job.held = true;
}

void Engine::leave_order(std::uint32_t j, std::uint32_t w) {
  Job& job = jobs_[j];
  remove_pending(j);
  count_owner(job, static_cast<int>(w), 0);  // still pending for its owner's limits
  queues_[job.queue].held += w;
}

void Engine::rejoin_order(std::uint32_t j, std::uint32_t w) {
  ++epoch_;  // kept failures (admission.cpp) are tried again
  Job& job = jobs_[j];
  count_owner(job, -static_cast<int>(w), 0);
  queues_[job.queue].held -= w;
  add_pending(j);
}

void Engine::drop_hold(Job& job, std::uint32_t w) {
  count_owner(job, -static_cast<int>(w), 0);
  queues_[job.queue].held -= w;
  job.held = false;
  job.dependent = false;
}

}  // namespace gpuq
