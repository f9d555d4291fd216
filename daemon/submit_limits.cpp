// What Core::submit checks against the submission's queue once the queue is known: the
// guardrails on the job itself (spec/guardrails.hpp), maxPendingJobs, maxPendingJobsPerUser and
// maxSubmitsPerUserPerMinute. Nothing is changed here: a refused submission leaves no trace.
#include "daemon/submit_limits.hpp"

#include <algorithm>
#include <cmath>

#include "daemon/core.hpp"
#include "spec/guardrails.hpp"

namespace gpuq::daemon {

double SubmitRate::tokens(const Bucket& b, std::int32_t limit, Time now) const {
  const double refill = static_cast<double>(std::max<Time>(0, now - b.at)) * limit / 60.0;
  return std::min<double>(limit, b.tokens + refill);
}

Time SubmitRate::wait(const std::string& queue, const std::string& user, std::int32_t limit, Time now) const {
  auto it = buckets_.find({queue, user});
  if (it == buckets_.end()) return 0;
  const double t = tokens(it->second, limit, now);
  if (t >= 1) return 0;
  return std::max<Time>(1, static_cast<Time>(std::ceil((1 - t) * 60.0 / limit)));
}

void SubmitRate::take(const std::string& queue, const std::string& user, std::int32_t limit, Time now) {
  auto [it, fresh] = buckets_.try_emplace({queue, user}, Bucket{static_cast<double>(limit), now});
  it->second.tokens = tokens(it->second, limit, now) - 1;
  it->second.at = now;
  // A full bucket says nothing: forget those now and then, so the map holds only recent users.
  if (buckets_.size() > 4096)
    std::erase_if(buckets_, [&](const auto& b) { return b.second.at + 60 <= now; });
}

Result<void> Core::check_queue_limits(const QueueSpec& q, Submission& sub, Time now, std::size_t jobs) const {
  if (queues_going_.count(q.name.value) > 0)
    return Error{"spec.queue: queue \"" + q.name.value +
                     "\" is being deleted (its Queue object is gone; it goes once its jobs have ended): it takes no new jobs",
                 ErrorCode::kFailedPrecondition};
  // May fill sub's maxRuntime and priority class; on a refusal the submission is dropped anyway.
  if (auto r = spec::apply_guardrails(q, config_.priority_classes, sub); !r) return r;
  const std::string& owner = sub.job.owner;
  const auto qi = engine_->queue_index(q.name);
  // One job: "already has N, its limit"; an array: what its members would add.
  if (const std::int32_t limit = q.max_pending_jobs;
      limit > 0 && qi && engine_->pending_count(*qi) + jobs > static_cast<std::size_t>(limit)) {
    const std::size_t n = engine_->pending_count(*qi);
    return Error{"queue \"" + q.name.value + "\" already has " + std::to_string(n) + " pending jobs" +
                     (jobs == 1 ? ", its maxPendingJobs limit"
                                : ", and this array's " + std::to_string(jobs) + " more would pass its maxPendingJobs (" +
                                      std::to_string(limit) + ")") +
                     "; submit again once some are admitted",
                 ErrorCode::kResourceExhausted};
  }
  // A job without an owner (an ungated caller that named none) is nobody's: no per-user limit.
  if (const std::int32_t limit = q.max_pending_jobs_per_user; limit > 0 && qi && !owner.empty()) {
    const std::uint32_t n = engine_->owner_jobs(*qi, owner).pending;
    if (n + jobs > static_cast<std::size_t>(limit))
      return Error{"user " + owner + " already has " + std::to_string(n) + " pending jobs in queue \"" +
                       q.name.value + "\", " +
                       (jobs == 1 ? "its maxPendingJobsPerUser (" + std::to_string(limit) + ")"
                                  : "and this array's " + std::to_string(jobs) +
                                        " more would pass its maxPendingJobsPerUser (" + std::to_string(limit) + ")") +
                       "; submit again once some are admitted",
                   ErrorCode::kResourceExhausted};
  }
  if (const std::int32_t limit = q.max_submits_per_user_per_minute; limit > 0 && !owner.empty())
    if (const Time wait = submit_rate_.wait(q.name.value, owner, limit, now); wait > 0)
      return Error{"user " + owner + " has used up queue \"" + q.name.value + "\"'s maxSubmitsPerUserPerMinute (" +
                       std::to_string(limit) + " submissions a minute); retry in " + std::to_string(wait) + " s",
                   ErrorCode::kResourceExhausted};
  return Ok();
}

Result<void> Core::check_classes(const QueueSpec& q) const {
  return spec::check_allowed_classes(q, config_.priority_classes);
}

}  // namespace gpuq::daemon
