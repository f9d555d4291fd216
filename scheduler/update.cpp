// Engine::update (gpuq update, like scontrol update): a pending job's priority, maxRuntime or
// queue. The job leaves its queue's order and its counts and comes back with the new values:
// its submission time and order are kept, so among jobs of its new priority it is where its
// submission puts it. A job held stays held (out of the order) and is counted in its new queue.
#include "scheduler/engine.hpp"

namespace gpuq {

Result<void> Engine::update(const JobId& id, const JobUpdate& u, Time now, std::string reason) {
  const std::uint32_t it = resolve(id.value);
  if (it == kNoJob) return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  const std::uint32_t j = it;
  Job& job = jobs_[j];
  if (job.state != JobState::kPending)
    return Error{"job \"" + id.value + "\" is " + to_string(job.state) + "; only a pending job can be updated",
                 ErrorCode::kFailedPrecondition};
  if (job.reserved)
    return Error{"job \"" + id.value + "\" is being admitted (jobs are stopping to make room for it); it can no "
                 "longer be updated",
                 ErrorCode::kFailedPrecondition};
  JobSpec spec = job.spec;
  if (u.priority) spec.priority = *u.priority;
  if (u.max_runtime) spec.max_runtime = *u.max_runtime;
  if (u.queue) spec.queue = *u.queue;
  if (auto v = validate_job(spec); !v) return Error{v.error(), v.code()};
  Job moved = job;  // what it would be: checked before anything changes
  if (u.queue) {
    auto q = queue_index(*u.queue);
    if (!q) return Error{"queue \"" + u.queue->value + "\" does not exist", ErrorCode::kNotFound};
    moved.queue = *q;
    moved.candidates = FlavorList(candidate_flavors(*q, spec));
  }
  moved.spec = spec;
  if (auto why = never_fits(moved)) return Error{*why, ErrorCode::kRejected};
  ++epoch_;  // kept failures (admission.cpp) are tried again
  if (job.off_order()) {
    count_owner(job, -1, 0);
    --queues_[job.queue].held;
  } else {
    remove_pending(j);
  }
  job.spec = std::move(spec);
  job.queue = moved.queue;
  job.candidates = std::move(moved.candidates);
  job.wait.reset();
  if (job.off_order()) {
    count_owner(job, +1, 0);
    ++queues_[job.queue].held;
  } else {
    add_pending(j);
  }
  emit(job, JobState::kPending, now, std::move(reason));
  return Ok();
}

}  // namespace gpuq
