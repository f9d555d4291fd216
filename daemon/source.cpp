// The Core's side of a source binder (binder.hpp, SourceFact; the kubernetes binder): nodes as
// the source sees them, jobs that arrive (pending, or running already after a restart) and
// jobs withdrawn, and the first sync that lets placing begin.
#include <utility>

#include <spdlog/spdlog.h>

#include "daemon/core.hpp"
#include "spec/error.hpp"
#include "spec/guardrails.hpp"
#include "spec/validate.hpp"

namespace gpuq::daemon {

void Core::observe_source(binder::SourceFact fact, Time now) {
  if (auto* n = std::get_if<binder::NodeSeen>(&fact)) {
    sync_names();
    try {
      spec::Path at("node");
      spec::validate(n->spec, at, *names_);
    } catch (const spec::SpecError& e) {
      spdlog::warn("event=source_node_refused node={} error=\"{}\"", n->spec.name, e.what());
      return;
    }
    if (auto r = apply_node(n->spec, now, /*from_source=*/true); !r)
      spdlog::warn("event=source_node_refused node={} error=\"{}\"", n->spec.name, r.error());
  } else if (auto* a = std::get_if<binder::JobArrived>(&fact)) {
    source_arrived(*a, now);
  } else if (auto* w = std::get_if<binder::JobWithdrawn>(&fact)) {
    source_withdrawn(*w, now);
  } else if (auto* h = std::get_if<binder::HistorySeen>(&fact)) {
    // The last leader's checkpoint is newer than this replica's own file (it was a standby).
    spdlog::info("event=usage_history_taken_over from={} queues={}", h->from, h->records.size());
    apply_history(h->records, now);
  } else if (auto* q = std::get_if<binder::QueueSeen>(&fact)) {
    queue_object_seen(q->spec);
  } else if (auto* g = std::get_if<binder::QueueGone>(&fact)) {
    queue_object_gone(g->name);
  } else if (auto* l = std::get_if<binder::QueuesListed>(&fact)) {
    queue_objects_listed(l->names);
  } else {
    source_synced(now);
  }
}

void Core::source_arrived(binder::JobArrived& a, Time now) {
  JobSpec& spec = a.sub.job;
  const std::string id = spec.id.value;
  if (is_live(id)) return;  // reported again (a relist)
  auto stale = stale_.extract(id);
  if (stale.empty()) {
    auto on_disk = store_->has_job(id);
    if (!on_disk || on_disk.value()) return;  // it ended before (its pod lingers) or the file cannot say
  }
  auto refuse = [&](const std::string& why) {
    binder_->refused(spec.id, why);
    if (!stale.empty()) {  // the file's record ends, with the reason
      storage::JobRecord& rec = stale.mapped();
      rec.state = JobState::kFailed;
      rec.reason = why;
      rec.finished_at = now;
      batch_.jobs.push_back(std::move(rec));
    }
  };
  sync_names();
  try {
    spec::Path at("pod");
    spec::validate(spec, at, *names_);
  } catch (const spec::SpecError& e) {
    refuse(e.what());
    return;
  }
  const auto queue = queue_specs_.find(spec.queue.value);
  if (queue == queue_specs_.end()) {
    refuse("queue \"" + spec.queue.value + "\" does not exist in gpuq (gpuq queues lists them)");
    return;
  }
  if (a.nodes.empty() && queues_going_.count(spec.queue.value) > 0) {
    refuse("queue \"" + spec.queue.value + "\" is being deleted (its Queue object is gone): it takes no new jobs");
    return;
  }
  // A new pod meets its queue's guardrails on the job (maxGpusPerJob, maxRuntime, ...) as a
  // submit does; one already running is taken as it is. The per-user counts (maxPendingJobs-
  // PerUser, the submit rate) are for gpuqd's own callers: Kubernetes has ResourceQuota for pods.
  if (a.nodes.empty())
    if (auto g = spec::apply_guardrails(queue->second, config_.priority_classes, a.sub); !g) {
      refuse(g.error());
      return;
    }
  spec.submitted_at = stale.empty() ? now : stale.mapped().spec.submitted_at;
  Result<void> r = Ok();
  if (!a.nodes.empty()) {
    RunningPlacement where;
    where.admitted_at = stale.empty() || stale.mapped().admitted_at == 0 ? now : stale.mapped().admitted_at;
    where.nodes = a.nodes;
    where.gpus = a.gpus;
    r = engine_->restore_running(spec, where, now);
  } else {
    r = engine_->submit(spec, now);
  }
  if (!r) {
    refuse(r.error());
    return;
  }
  storage::JobRecord rec;
  if (!stale.empty()) {
    rec = std::move(stale.mapped());
  } else {
    rec.number = ++last_job_number_;
  }
  rec.spec = std::move(spec);
  rec.run = std::move(a.sub.run);
  rec.priority_text = std::move(a.sub.priority);
  if (!a.nodes.empty()) rec.state = JobState::kRunning;
  enter_live(std::move(rec));  // written with the turn (its event)
}

void Core::source_withdrawn(const binder::JobWithdrawn& w, Time now) {
  if (!is_live(w.job.value)) return;
  // A cancelled job whose pods were stopped has ended already (or is ending) as cancelled.
  if (const Job* job = engine_->entry(w.job); !job || is_finished(job->state) || job->draining) return;
  if (auto r = cancel(w.job.value, now, /*force=*/false, w.reason); !r)
    spdlog::warn("event=source_withdraw_failed job={} error=\"{}\"", w.job.value, r.error());
  else
    spdlog::info("event=job_withdrawn job={} reason=\"{}\"", w.job.value, w.reason);
}

// Every job the source holds was reported once: what the state file had and the source did not
// is gone (its pods were deleted while gpuqd was not watching); placing begins.
void Core::source_synced(Time now) {
  // Jobs submitted through the API that were placed: where they run is known now.
  if (!deferred_.empty()) {
    record_changes(engine_->take_events(), now);  // this turn's transitions so far are kept
    std::size_t failures = 0;
    std::vector<BinderFact> adopted;
    for (storage::JobRecord& rec : deferred_) restore(rec, now, failures, adopted);
    deferred_.clear();
    (void)engine_->take_events();  // restoring is not a transition
    for (const BinderFact& fact : adopted) observe(fact, now);
  }
  binder_->stop_strays();  // what still runs of submitted jobs that hold no placement now
  for (auto& [id, rec] : stale_) {
    rec.state = JobState::kCancelled;
    rec.reason = "its pods were gone when gpuqd started again";
    rec.finished_at = now;
    batch_.jobs.push_back(std::move(rec));
  }
  spdlog::info("event=source_synced gone_jobs={} placing=true", stale_.size());
  stale_.clear();
  placing_ = true;
}

// Why each pending job waits, in the engine's words, to a source that shows them (the
// kubernetes binder: PodScheduled=False), every status_interval().
void Core::tell_waiting(Time now) {
  const Time every = binder_->status_interval();
  if (!placing_ || every <= 0 || now - last_status_ < every) return;
  last_status_ = now;
  std::vector<std::pair<JobId, std::string>> reasons;
  for (const Engine::Queued& q : engine_->pending_in_queue_order()) {
    const Job& j = *q.job;
    const std::string place =
        q.of == 0 ? std::string() : " (" + std::to_string(q.position) + " of " + std::to_string(q.of) + ")";
    reasons.emplace_back(j.spec.id, "gpuq job " + j.spec.id.value + " waits in queue " + j.spec.queue.value + place +
                                        ": " + engine_->pending_reason(j));
  }
  binder_->waiting(std::move(reasons));
  report_queues();
}

}  // namespace gpuq::daemon
