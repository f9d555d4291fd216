// Holds (`gpuq hold`, `gpuq submit --hold`, like Slurm's scontrol hold): a held job stays
// Pending, counted as pending for its queue and its owner (maxPendingJobs and the per-user
// limits see it), but is not in its queue's order, so no cycle admits it, until it is released
// (it goes back to its place: its priority, submission time and order are unchanged).
#include "scheduler/engine.hpp"

namespace gpuq {

Result<void> Engine::hold(const JobId& id, Time now, std::string reason) {
  auto it = job_ids_.find(id.value);
  if (it == job_ids_.end()) return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it->second];
  if (job.state != JobState::kPending)
    return Error{"job \"" + id.value + "\" is " + to_string(job.state) + "; only a pending job can be held",
                 ErrorCode::kFailedPrecondition};
  if (job.held) return Ok();
  if (job.reserved)
    return Error{"job \"" + id.value + "\" is being admitted (jobs are stopping to make room for it); it can "
                 "no longer be held: cancel it instead",
                 ErrorCode::kFailedPrecondition};
  remove_pending(it->second);
  count_owner(job, +1, 0);  // still pending for its owner's limits
  ++queues_[job.queue].held;
  job.held = true;
  emit(job, JobState::kPending, now, std::move(reason));
  return Ok();
}

Result<void> Engine::release_hold(const JobId& id, Time now, std::string reason) {
  auto it = job_ids_.find(id.value);
  if (it == job_ids_.end()) return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it->second];
  if (!job.held)
    return Error{"job \"" + id.value + "\" is not held", ErrorCode::kFailedPrecondition};
  ++epoch_;  // kept failures (admission.cpp) are tried again
  drop_hold(job);
  add_pending(it->second);
  emit(job, JobState::kPending, now, std::move(reason));
  return Ok();
}

void Engine::drop_hold(Job& job) {
  count_owner(job, -1, 0);
  --queues_[job.queue].held;
  job.held = false;
}

}  // namespace gpuq
