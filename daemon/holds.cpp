// Core::hold, Core::release and Core::update (core.hpp): the engine's holds and updates, for
// jobs gpuqd knows, with the job's record kept in step.
#include "daemon/core.hpp"
#include "spec/guardrails.hpp"
#include "spec/values.hpp"

namespace gpuq::daemon {

namespace {

// Why a job that is not live cannot be held: it ended, or there is none.
Error not_live(storage::Store& store, const std::string& id, bool restoring) {
  if (restoring)
    return Error{"job \"" + id + "\" is being restored: gpuqd has just started and waits for the cluster to list its "
                 "pods; try again in a moment",
                 ErrorCode::kUnavailable};
  auto on_disk = store.job(id);
  if (!on_disk) return Error{on_disk.error(), ErrorCode::kUnavailable};
  if (on_disk.value())
    return Error{"job \"" + id + "\" already ended (" + to_string(on_disk.value()->state) + ")",
                 ErrorCode::kFailedPrecondition};
  return Error{"job \"" + id + "\" does not exist", ErrorCode::kNotFound};
}

}  // namespace

// An array's id holds (releases) each of its pending (held) members; refused when none is.
Result<void> Core::hold_or_release(const std::string& id, Time now, const std::string& by, bool hold) {
  auto one = [&](const std::string& job) {
    return hold ? engine_->hold(JobId(job), now, "held by " + by) : engine_->release_hold(JobId(job), now, "released by " + by);
  };
  if (is_live(id)) return one(id);
  const auto members = array_members(id);
  if (!members) return not_live(*store_, id, restoring(id));
  bool any = false;
  auto each = [&](const std::string& m) {
    if (const Job* j = engine_->job(JobId(m));
        j && is_live(m) && j->state == JobState::kPending && j->held != hold)
      any = one(m).ok() || any;
  };
  // The members waiting in the array's engine block at once (when they take it), the others
  // one by one, in member order.
  if (auto took = engine_->array_command(id, *members,
                                         hold ? Engine::ArrayCommand::kHold : Engine::ArrayCommand::kRelease, now,
                                         (hold ? "held by " : "released by ") + by, [&](const JobId& m) { each(m.value); }))
    any = any || *took > 0;
  else
    for (const std::string& m : *members) each(m);
  if (!any)
    return Error{"array \"" + id + "\" has no " + (hold ? "pending member to hold" : "held member to release"),
                 ErrorCode::kFailedPrecondition};
  return Ok();
}

Result<void> Core::hold(const std::string& id, Time now, const std::string& by) {
  return hold_or_release(id, now, by, true);
}

Result<void> Core::release(const std::string& id, Time now, const std::string& by) {
  return hold_or_release(id, now, by, false);
}

Result<void> Core::update(const std::string& id, const JobChange& change, Time now, const std::string& by,
                          bool beyond_guardrails) {
  storage::JobRecord* live_rec = live(id);
  if (live_rec == nullptr) return not_live(*store_, id, restoring(id));
  storage::JobRecord& rec = *live_rec;
  if (!change.priority && !change.max_runtime && !change.queue)
    return Error{"nothing to update: give --priority, --max-runtime or --queue", ErrorCode::kInvalidArgument};
  // The job as it would be, checked as a submission to its (new) queue.
  Submission sub;
  sub.job = rec.spec;
  sub.priority = rec.priority_text;
  std::string what;
  if (change.priority) {
    sub.priority = *change.priority;
    spec::Path at;
    spec::Path::Key k(at, "priority");
    try {
      sub.job.priority = spec::priority_value(*change.priority, config_.priority_classes, at);
    } catch (const spec::SpecError& e) {
      return Error{e.what(), ErrorCode::kInvalidArgument};
    }
    what += " priority " + std::to_string(rec.spec.priority) + " -> " + std::to_string(sub.job.priority) + ";";
  }
  if (change.max_runtime) {
    if (*change.max_runtime < 0) return Error{"maxRuntime: must be >= 0 seconds (0: no limit)", ErrorCode::kInvalidArgument};
    sub.job.max_runtime = *change.max_runtime > 0 ? std::optional<Time>(*change.max_runtime) : std::nullopt;
    what += " maxRuntime " + std::to_string(*change.max_runtime) + " s;";
  }
  if (change.queue) {
    sub.job.queue = QueueName(*change.queue);
    what += " queue " + rec.spec.queue.value + " -> " + *change.queue + ";";
  }
  auto queue = queue_specs_.find(sub.job.queue.value);
  if (queue == queue_specs_.end())
    return Error{"queue: queue \"" + sub.job.queue.value + "\" does not exist", ErrorCode::kNotFound};
  if (!beyond_guardrails) {
    // As for a submission: a job asking no maxRuntime gets the queue's default or ceiling.
    if (auto r = spec::apply_guardrails(queue->second, config_.priority_classes, sub); !r)
      return Error{r.error() + " (an admin may go beyond it)", r.code()};
  }
  Engine::JobUpdate u;
  if (change.priority) u.priority = sub.job.priority;
  if (change.max_runtime || sub.job.max_runtime != rec.spec.max_runtime) u.max_runtime = sub.job.max_runtime;
  if (change.queue) u.queue = sub.job.queue;
  what.pop_back();
  if (auto r = engine_->update(JobId(id), u, now, "updated by " + by + ":" + what); !r) return r;
  rec.spec.priority = sub.job.priority;
  rec.spec.max_runtime = sub.job.max_runtime;
  rec.spec.queue = sub.job.queue;
  rec.priority_text = sub.priority;
  return Ok();
}

}  // namespace gpuq::daemon
