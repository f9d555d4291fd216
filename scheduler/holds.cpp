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
  if (!job.off_order()) {
    remove_pending(it);
    count_owner(job, +1, 0);  // still pending for its owner's limits
    ++queues_[job.queue].held;
  }
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
  if (!job.off_order()) {
    ++epoch_;  // kept failures (admission.cpp) are tried again
    drop_hold(job);
    add_pending(it);
  }
  emit(job, JobState::kPending, now, std::move(reason));
  return Ok();
}

void Engine::drop_hold(Job& job) {
  count_owner(job, -1, 0);
  --queues_[job.queue].held;
  job.held = false;
  job.dependent = false;
}

}  // namespace gpuq
