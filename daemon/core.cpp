#include "daemon/core.hpp"

#include <algorithm>
#include <chrono>
#include <limits>
#include <set>
#include <utility>

#include <boost/json.hpp>
#include <spdlog/spdlog.h>

namespace gpuq::daemon {

Core::Core(const CoreConfig& config, std::unique_ptr<ResourceNames> names,
           std::unique_ptr<storage::Store> store)
    : config_(config), names_(std::move(names)), store_(std::move(store)) {
  if (config_.make_binder) {
    binder_ = config_.make_binder([this](const BinderFact& fact) { fact_post_(fact); });
  } else {
    binder_ = std::make_unique<binder::NoneBinder>([this](const BinderFact& fact) { observe(fact, bind_now_); });
  }
  binder_->errors().set([this](std::string_view kind) { metrics_.binder_error(kind); });
  config_.engine.stops_confirmed = binder_->confirms_stops();
  placing_ = !binder_->is_source();
}

void Core::start_binder(std::function<void(const BinderFact&)> post,
                        std::function<void(binder::SourceFact)> post_source, binder::GpuReport post_gpus,
                        std::function<void(const binder::PodUsage&)> post_usage) {
  fact_post_ = std::move(post);
  binder_->usage().set([this, post_usage = std::move(post_usage)](const binder::PodUsage& u) {
    metrics_.pod_usage(u.queue, u.cpu_usec >= 0 ? static_cast<double>(u.cpu_usec) / 1e6 : -1, u.memory_peak_bytes);
    if (post_usage) post_usage(u);
  });
  if (post_gpus) binder_->set_gpu_report(std::move(post_gpus));
  if (binder_->is_source()) binder_->set_source(std::move(post_source), *names_);
  binder_started_ = true;
  binder_->start();
}

void Core::observe(const BinderFact& fact, Time now) {
  if (std::holds_alternative<NodeLost>(fact)) metrics_.binder_error("node_lost");
  if (std::holds_alternative<JobLost>(fact)) metrics_.binder_error("job_lost");
  if (std::holds_alternative<StopRefused>(fact)) metrics_.binder_error("stop_refused");
  if (auto r = engine_->observe(fact, now); !r) {
    metrics_.binder_error("fact_refused");
    spdlog::warn("event=binder_fact_refused error=\"{}\"", r.error());
    if (const auto* refused = std::get_if<StopRefused>(&fact)) binder_->must_stop(refused->job);
    return;
  }
  if (const auto* done = std::get_if<JobFinished>(&fact))
    if (storage::JobRecord* rec = live(done->job.value)) rec->exit_code = done->exit_code;
  // Its last fact about the job (not a start or a refused stop): what the binder keeps can go once on disk.
  if (const JobId* job = job_of(fact);
      job && !std::holds_alternative<JobStarted>(fact) && !std::holds_alternative<StopRefused>(fact))
    facts_open_.push_back(*job);
}

bool Core::stopping(const JobId& id) const {
  const Job* job = engine_->job(id);
  return job != nullptr && job->draining;
}

std::vector<JobId> Core::stopping_jobs() const {
  std::vector<JobId> out;
  for (const JobId& id : forget_later_)
    if (stopping(id)) out.push_back(id);
  return out;
}

Result<void> Core::cancel(const std::string& id, Time now, bool force, std::string reason) {
  if (force && stopping(JobId(id))) {  // cancelled already, still stopping: kill it now
    binder_->stop_now(JobId(id));
    return Ok();
  }
  if (!is_live(id) && arrays_.count(id) > 0) {  // a whole array: its unfinished members
    std::vector<std::int32_t>& indices = arrays_[id];
    std::erase_if(indices, [&](std::int32_t i) {
      const std::string m = id + "_" + std::to_string(i);
      return !is_live(m) && !stopping(JobId(m));
    });
    if (indices.empty()) {
      arrays_.erase(id);
      return Error{"array \"" + id + "\" already ended (all its members did)", ErrorCode::kFailedPrecondition};
    }
    auto one = [&](const std::string& m) {
      if (is_live(m) || force) (void)cancel(m, now, force, reason);
    };
    // The members waiting in the array's engine block at once, the others one by one.
    const std::vector<std::string> all = *array_members(id);  // cancel() may change arrays_
    if (!engine_->array_command(id, all, Engine::ArrayCommand::kCancel, now, reason,
                                [&](const JobId& m) { one(m.value); }))
      for (const std::string& m : all) one(m);
    return Ok();
  }
  if (!is_live(id)) {
    if (restoring(id))
      return Error{"job \"" + id + "\" is being restored: gpuqd has just started and waits for the cluster to list "
                   "its pods; try again in a moment",
                   ErrorCode::kUnavailable};
    auto on_disk = store_->job(id);
    if (on_disk && on_disk.value())
      return Error{"job \"" + id + "\" already ended (" + std::string(to_string(on_disk.value()->state)) + ")",
                   ErrorCode::kFailedPrecondition};
    return Error{"job \"" + id + "\" does not exist", ErrorCode::kNotFound};
  }
  if (auto r = engine_->cancel(JobId(id), now, std::move(reason)); !r) return r;
  // Cancelled while it runs: its processes are stopped, and its GPUs free once they are gone.
  if (const Job* job = engine_->job(JobId(id)); job && job->draining) {
    if (force)
      binder_->stop_now(job->spec.id);
    else
      binder_->stop(job->spec.id, job->spec.grace_period);
  }
  return Ok();
}

Result<void> Core::apply_queue(const QueueSpec& spec) {
  if (binder_->queue_objects())
    return Error{"queues on this gpuqd are Kubernetes objects (queues.gpuq.io): kubectl apply -f the queue's "
                 "Queue object (gpuq queues export --format objects writes every queue so)",
                 ErrorCode::kFailedPrecondition};
  return put_queue(spec);
}

Result<void> Core::put_queue(const QueueSpec& spec) {
  if (auto r = check_classes(spec); !r) return r;
  if (auto no = notify_url_refusal(config_.notify, spec.notify, "spec.notify.url"); !no.empty())
    return Error{no, ErrorCode::kInvalidArgument};
  sync_names();
  if (auto r = engine_->apply_queue(spec); !r) return r;
  queue_specs_[spec.name.value] = spec;
  std::erase(batch_.deleted_queues, spec.name.value);
  batch_.queues.push_back(spec);
  binder_->queue_applied(spec);
  binder_->queues_changed();
  return Ok();
}

Result<void> Core::delete_queue(const std::string& name) {
  if (queue_specs_.count(name) == 0)
    return Error{"queue \"" + name + "\" does not exist", ErrorCode::kNotFound};
  if (binder_->queue_objects())
    return Error{"queues on this gpuqd are Kubernetes objects (queues.gpuq.io): kubectl delete queue " + name,
                 ErrorCode::kFailedPrecondition};
  if (config_queues_.count(name) > 0)
    return Error{"queue \"" + name + "\" is declared in gpuqd's config (queues:), which applies it at every "
                     "start; remove it there first",
                 ErrorCode::kFailedPrecondition};
  return remove_queue(name);
}

Result<void> Core::remove_queue(const std::string& name) {
  if (auto r = engine_->remove_queue(QueueName(name)); !r) return r;
  queue_specs_.erase(name);
  std::erase_if(batch_.queues, [&](const QueueSpec& q) { return q.name.value == name; });
  batch_.deleted_queues.push_back(name);
  return Ok();
}

namespace {

Error nodes_from_source(const std::string& node) {
  return Error{"node \"" + node + "\": with binder: kubernetes the nodes are the API server's; change them there "
               "(kubectl label, taint, cordon, drain)", ErrorCode::kFailedPrecondition};
}

}  // namespace

// A node from `gpuq apply`, or (from_source) as a source binder sees it. A source's nodes are
// read again from it at every start, so they are not written to the state file.
Result<void> Core::apply_node(const NodeSpec& spec, Time now, bool from_source) {
  if (binder_->is_source() && !from_source) return nodes_from_source(spec.name);
  sync_names();
  if (auto r = engine_->upsert_node(spec, now); !r) return r;
  node_specs_[spec.name] = spec;
  if (!from_source) batch_.nodes.push_back(spec);
  return Ok();
}

Result<void> Core::set_node_state(const std::string& node, NodeState state, Time now) {
  if (binder_->is_source()) return nodes_from_source(node);
  auto it = node_specs_.find(node);
  if (it == node_specs_.end()) return Error{"node \"" + node + "\" does not exist", ErrorCode::kNotFound};
  if (auto r = engine_->set_node_state(node, state, now); !r) return r;
  it->second.state = state;
  batch_.nodes.push_back(it->second);
  return Ok();
}

// The engine's decisions to the binder (config `binder`; only `none` so far), whose facts go
// back to the engine at this turn's time.
void Core::bind(const std::vector<Decision>& decisions, Time now) {
  bind_now_ = now;
  for (const Decision& d : decisions) {
    if (const auto* a = std::get_if<Admission>(&d)) {
      if (const storage::JobRecord* rec = live(a->job.value)) binder_->bind(*a, *rec);
    } else {
      const auto& p = std::get<Preemption>(d);
      binder_->preempting(p);
      binder_->stop(p.job, p.grace_period);
    }
  }
}

void Core::record_changes(const std::vector<Event>& events, Time now) {
  std::set<std::string> changed;
  for (const Event& ev : events) {
    storage::EventRecord e;
    e.seq = ++last_event_seq_;
    e.at = ev.at;
    e.job = ev.job.value;
    e.from = ev.from;
    e.to = ev.to;
    e.reason = ev.reason;
    e.flavor = ev.flavor;
    const Job* job = engine_->entry(ev.job);  // an array's member in its block: its block's
    if (job) {
      e.queue = job->spec.queue.value;
      e.owner = job->spec.owner;
    }
    batch_.events.push_back(std::move(e));
    changed.insert(ev.job.value);
    if (job && ev.to == JobState::kAdmitted) {
      metrics_.admitted(job->spec.queue.value, static_cast<double>(ev.at - job->spec.submitted_at));
    } else if (job && ev.to == JobState::kPreempting) {
      const Job* by = engine_->job(job->preemption->preempted_by);
      metrics_.preempted(job->spec.queue.value, by ? by->spec.queue.value : std::string(),
                         to_string(job->preemption->preempt_reason));
    } else if (job && is_finished(ev.to)) {
      metrics_.finished(job->spec.queue.value, to_string(ev.to));
    }
    spdlog::info("event=job_state job={} from={} to={} reason=\"{}\"", ev.job.value,
                 ev.from ? to_string(*ev.from) : "-", to_string(ev.to), ev.reason);
  }
  for (const std::string& id : changed) {
    const Job* j = engine_->entry(JobId(id));
    storage::JobRecord* live_rec = j == nullptr ? nullptr : live(id);
    if (live_rec == nullptr) continue;
    storage::JobRecord& rec = *live_rec;
    refresh(rec, *j);
    if (is_finished(j->state)) {
      if (rec.finished_at == 0) {  // it ends now: those waiting for it are looked at, its array counts down
        if (dependents_.count(id) > 0) ended_.push_back(id);
        if (!rec.spec.array_id.empty()) array_member_ended(rec.spec.array_id);
      }
      rec.finished_at = now;
    }
    batch_.jobs.push_back(rec);
  }
}

// A job's record as the engine has it now.
void Core::refresh(storage::JobRecord& rec, const Job& j) const {
  rec.state = j.state;
  rec.attempts = j.attempts;
  rec.preemptions = j.preemptions;
  rec.preempted_by = j.preemption->preempted_by.value;
  rec.reason = *j.end_reason;
  rec.held = j.held;
  rec.retried = j.retried;
  if (j.holds_resources()) {
    rec.admitted_at = j.admitted_at;
    rec.flavor = j.flavor == kNoFlavor ? std::string() : engine_->flavor_name(j.flavor);
    rec.placement.clear();
    std::size_t pod = 0;
    for (std::uint32_t set = 0; set < j.spec.pod_sets.size(); ++set)
      for (std::int32_t i = 0; i < j.spec.pod_sets[set].count && pod < j.slots.size(); ++i, ++pod) {
        const PodSlot& s = j.slots[pod];
        PodPlacement p;
        p.pod_set = set;
        p.node = engine_->cluster().node(s.node).name;
        for (auto g : s.gpus) p.gpus.push_back(g);
        p.gpu_milli = s.milli_per_gpu;
        rec.placement.push_back(std::move(p));
      }
  } else {
    rec.placement.clear();
    // A finished job keeps its flavor and admission time (usage counts its GPU-hours); a
    // requeued one waits again with neither.
    if (!is_finished(j.state)) {
      rec.flavor.clear();
      rec.admitted_at = 0;
    }
  }
}

storage::Batch Core::close_turn(Time now) {
  // Admit; with the none binder admitted jobs start and victims stop at once, which can let
  // booked preemptors in: a few rounds until nothing more happens.
  double cycle_seconds = 0;
  // Jobs that ended release or fail those waiting for them (daemon/dependencies.cpp), which can
  // be admitted in the same turn: a few passes until nothing more happens.
  for (int pass = 0; pass < 4 && (pass == 0 || resolve_dependencies(now)); ++pass) {
    const auto started = std::chrono::steady_clock::now();
    for (int round = 0; round < 8 && placing_; ++round) {
      auto decisions = engine_->schedule(now);
      if (decisions.empty()) break;
      bind(decisions, now);
    }
    cycle_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    record_changes(engine_->take_events(), now);
  }
  metrics_.cycle(cycle_seconds);
  add_history_checkpoint(now);  // when one is due (daemon/history.cpp)
  if (config_.job_retention > 0 && now >= next_job_prune_) {
    batch_.jobs_prune_before = now - config_.job_retention;
    next_job_prune_ = now + 60;
  }
  if (config_.audit_retention > 0 && now >= next_audit_prune_) {
    batch_.audit_prune_before = now - config_.audit_retention;
    next_audit_prune_ = now + 3600;
  }
  tell_waiting(now);
  binder_->turn_closed();
  facts_closed_ = std::exchange(facts_open_, {});
  storage::Batch batch = std::exchange(batch_, storage::Batch{});
  if (batch.empty()) turn_done(true);  // nothing to write: as good as written
  return batch;
}

void Core::audit(storage::AuditRecord record, Time now) {
  auto cut = [](std::string& s, std::size_t max) {
    if (s.size() <= max) return;
    std::size_t end = max - 3;
    while (end > 0 && (static_cast<unsigned char>(s[end]) & 0xC0) == 0x80) --end;  // whole UTF-8 characters
    s.resize(end);
    s += "...";
  };
  cut(record.target, 256);
  cut(record.result, 1024);
  cut(record.user, 256);
  cut(record.origin, 256);
  // A refusal costs its caller nothing, so refusals are recorded at most kAuditRefusalsPerMinute
  // a minute per user (a bucket, as the submit rate): beyond that they go to the log only, and
  // the user's next recorded refusal says how many were left out. Changes are always recorded.
  if (record.result != "OK") {
    constexpr std::int32_t kAuditRefusalsPerMinute = 60;
    if (audit_refusals_.wait("", record.user, kAuditRefusalsPerMinute, now) > 0) {
      ++audit_refusals_left_out_[record.user];
      spdlog::warn("event=audit_refusal_not_recorded user={} action={} result=\"{}\"", record.user, record.action,
                   record.result);
      return;
    }
    audit_refusals_.take("", record.user, kAuditRefusalsPerMinute, now);
    if (auto left = audit_refusals_left_out_.extract(record.user))
      record.result += " (and " + std::to_string(left.mapped()) + " earlier refusals of " + record.user +
                       " not recorded: over " + std::to_string(kAuditRefusalsPerMinute) + " a minute)";
  }
  record.at = now;
  batch_.audit.push_back(std::move(record));
}

// The binder acts on the turn's decisions once they are on disk, and drops what it kept for jobs
// whose last fact is.
void Core::turn_done(bool written) {
  if (written)
    for (const JobId& id : facts_closed_) binder_->forget(id);
  facts_closed_.clear();
  binder_->turn_written(written);
}

Core::TurnResult Core::write(const storage::Batch& batch) {
  TurnResult out;
  if (batch.empty()) return out;
  out.jobs_written = storage::jobs_in(batch);
  const auto started = std::chrono::steady_clock::now();
  auto r = store_->commit(batch);
  out.commit_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  if (!r) {
    out.ok = false;
    out.error = r.error();
  }
  metrics_.commit(out.commit_seconds, out.ok);
  return out;
}

void Core::notify(const storage::Batch& batch) {
  for (const storage::EventRecord& e : batch.events) {
    if (e.from && *e.from == e.to) continue;  // a note (the idle warning), not a transition
    const auto event = notify_event(e.to);
    if (!event) continue;
    const storage::JobRecord* rec = live(e.job);  // finished jobs of this batch are still here
    if (rec == nullptr) continue;
    const storage::JobRecord& r = *rec;
    const auto q = queue_specs_.find(r.spec.queue.value);
    // The job's own URL and its queue's, once each.
    std::vector<const std::string*> urls;
    const NotifySpec* queue_notify = q == queue_specs_.end() ? nullptr : &q->second.notify;
    for (const NotifySpec* n : {&r.notify, queue_notify})
      if (n != nullptr && wants(*n, *event) &&
          std::none_of(urls.begin(), urls.end(), [&](const std::string* u) { return *u == n->url; }))
        urls.push_back(&n->url);
    if (urls.empty()) continue;
    const std::string body = boost::json::serialize(boost::json::object{{"job", e.job},
                                                                        {"queue", r.spec.queue.value},
                                                                        {"owner", r.spec.owner},
                                                                        {"name", r.spec.name},
                                                                        {"event", *event},
                                                                        {"state", to_string(e.to)},
                                                                        {"reason", e.reason},
                                                                        {"at", e.at},
                                                                        {"seq", e.seq}});
    for (const std::string* url : urls) notify_(Notification{*url, body});
  }
}

void Core::committed(const storage::Batch& batch, const TurnResult& result, Time now) {
  if (!batch.empty()) turn_done(result.ok);
  if (!result.ok) {
    spdlog::error("event=commit_failed error=\"{}\" action=\"state rebuilt from the file\"", result.error);
    // The usage history is not job state, and the engine's is newer than the file's checkpoint:
    // it is kept across the rebuild and written with the next turn.
    auto history = history_snapshot(now);
    if (auto rb = rebuild(now); !rb) spdlog::critical("event=rebuild_failed error=\"{}\"", rb.error());
    else apply_history(history, now);
    return;
  }
  if (sink_ && (batch.arrays.empty() || !watched_ || watched_()))
    storage::for_each_event(batch, sink_);
  else if (sink_)
    for (const auto& e : batch.events) sink_(e);
  if (notify_) notify(batch);  // batch.arrays: no Pending event notifies
  // A finished job, once written, lives on in the state file alone: the engine's memory is
  // bounded by the unfinished jobs (Jobs.Get and List read finished ones from the file). Only
  // jobs of this batch: one that ended in the turn running now is not written yet, and its
  // events still need it.
  std::erase_if(forget_later_, [&](const JobId& id) {
    return engine_->forget(id) || engine_->entry(id) == nullptr;
  });
  for (const auto& rec : batch.jobs) {
    if (!is_finished(rec.state)) continue;
    unfinished_.erase(rec.spec.id.value);
    packed_.erase(rec.spec.id.value);
    if (!engine_->forget(rec.spec.id))
      if (const Job* live = engine_->job(rec.spec.id); live != nullptr && live->draining &&
          std::find(forget_later_.begin(), forget_later_.end(), rec.spec.id) == forget_later_.end())
        forget_later_.push_back(rec.spec.id);  // once, however often it is written while it stops
  }
}

Core::TurnResult Core::end_turn(Time now) {
  storage::Batch batch = close_turn(now);
  TurnResult r = write(batch);
  committed(batch, r, now);
  pack_idle();
  return r;
}

std::string Core::reason(const storage::JobRecord& r) const {
  if (r.state == JobState::kPending) {
    if (const Job* live = engine_->job(r.spec.id)) return engine_->pending_reason(*live);
    if (auto member = engine_->view(r.spec.id)) return engine_->pending_reason(*member);  // in its array's block
  }
  if (r.state == JobState::kPreempting) return "preempted by " + r.preempted_by;
  return r.reason;
}

Result<storage::JobRecord> Core::job(const std::string& id) {
  if (const storage::JobRecord* rec = live(id)) return *rec;
  auto on_disk = store_->job(id);
  if (!on_disk) return Error{on_disk.error(), ErrorCode::kUnavailable};
  if (!on_disk.value()) return Error{"job \"" + id + "\" does not exist", ErrorCode::kNotFound};
  return std::move(*on_disk.value());
}

Result<JobExplanation> Core::explain(const std::string& id) {
  if (const Job* j = engine_->job(JobId(id)); j != nullptr && !is_finished(j->state)) return engine_->explain(*j);
  if (auto member = engine_->view(JobId(id)); member && !is_finished(member->state)) return engine_->explain(*member);
  auto rec = job(id);
  if (!rec) return Error{rec.error(), rec.code()};
  JobExplanation e;
  e.reason = reason(rec.value());
  e.preemptions = rec.value().preemptions;
  e.attempts = rec.value().attempts;
  if (!rec.value().preempted_by.empty()) e.preempted = JobExplanation::Preempted{rec.value().preempted_by, {}, {}, 0};
  return e;
}

const storage::JobRecord& Core::listed(const storage::JobRecord& stored) const {
  if (!is_finished(stored.state))
    if (auto it = unfinished_.find(stored.spec.id.value); it != unfinished_.end()) return it->second;
  return stored;
}

Quantity Core::lent(QueueIdx q, FlavorId f, ResourceId r) const {
  const QuotaBook& book = engine_->quotas();
  const QuotaBook::Cohort* cohort = book.cohort_of(q);
  if (cohort == nullptr) return 0;
  // What member m could lend now: its unused nominal, within its lendingLimit.
  auto idle = [&](QueueIdx m) -> Quantity {
    const auto& quota = book.queue(m);
    if (f >= quota.rows.size() || !quota.rows[f].present || f >= quota.usage.size()) return 0;
    const auto& row = quota.rows[f];
    return std::min(row.lendable[r], std::max<Quantity>(0, row.nominal[r] - quota.usage[f][r]));
  };
  Quantity borrowed = 0, lendable = 0;
  for (QueueIdx m : cohort->members) {
    const auto& quota = book.queue(m);
    const Quantity nominal = f < quota.rows.size() && quota.rows[f].present ? quota.rows[f].nominal[r] : 0;
    if (f < quota.usage.size()) borrowed += std::max<Quantity>(0, quota.usage[f][r] - nominal);
    lendable += idle(m);
  }
  if (lendable == 0 || borrowed == 0) return 0;
  return static_cast<Quantity>(static_cast<long double>(idle(q)) * static_cast<long double>(std::min(borrowed, lendable)) /
                               static_cast<long double>(lendable));
}

QueueStatus Core::queue_status(QueueIdx q) const {
  QueueStatus s;
  s.spec = engine_->queue_spec(q);
  const auto& quota = engine_->quotas().queue(q);
  for (std::size_t f = 0; f < quota.rows.size() && f < quota.usage.size(); ++f) {
    const auto& row = quota.rows[f];
    const ResourceVec& used = quota.usage[f];
    for (ResourceId r = 0; r < engine_->resource_names().size(); ++r) {
      const bool listed = row.present && row.listed[r];
      if (!listed && used[r] == 0) continue;
      QueueStatus::Usage u;
      u.flavor = engine_->flavor_name(static_cast<FlavorId>(f));
      u.resource = r;
      u.used = used[r];
      u.nominal = listed ? row.nominal[r] : 0;
      u.borrowed = std::max<Quantity>(0, u.used - u.nominal);
      u.lent = lent(q, static_cast<FlavorId>(f), r);
      s.usage.push_back(std::move(u));
    }
  }
  if (!quota.unlimited) {
    // Shown as a fraction of what the cohort lends (the engine's is per mille, as Kueue's).
    const drf::Share share = engine_->quotas().borrowing_share(q, kNoFlavor, nullptr);
    s.share = share.infinite ? std::numeric_limits<double>::infinity() : share.value / 1000.0;
  }
  s.counts = engine_->job_counts(q);
  return s;
}

std::vector<QueueStatus> Core::queues() const {
  std::vector<QueueStatus> out;
  for (const auto& [name, spec] : queue_specs_)
    if (auto q = engine_->queue_index(spec.name)) out.push_back(queue_status(*q));
  return out;
}

Result<QueueStatus> Core::queue(const std::string& name) const {
  auto q = engine_->queue_index(QueueName(name));
  if (!q || queue_specs_.count(name) == 0) return Error{"queue \"" + name + "\" does not exist", ErrorCode::kNotFound};
  return queue_status(*q);
}

std::vector<NodeStatus> Core::nodes() const {
  std::vector<NodeStatus> out;
  for (const auto& [name, spec] : node_specs_)
    if (auto n = node(name)) out.push_back(std::move(n.value()));
  return out;
}

Result<NodeStatus> Core::node(const std::string& name) const {
  auto it = node_specs_.find(name);
  auto idx = engine_->cluster().find(name);
  if (it == node_specs_.end() || !idx) return Error{"node \"" + name + "\" does not exist", ErrorCode::kNotFound};
  const Node& n = engine_->cluster().node(*idx);
  NodeStatus s;
  s.spec = it->second;
  s.capacity = n.capacity;
  s.used = n.used;
  s.gpus = n.gpu_count();
  s.gpus_free = n.whole_free;
  for (const auto& [q, count] : n.tenants) s.pods += static_cast<int>(count);
  return s;
}

}  // namespace gpuq::daemon
