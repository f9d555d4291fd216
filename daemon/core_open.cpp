// Core's start (core.hpp): opening the state file, rebuilding the engine from it, the queues
// and nodes of the configuration, and each unfinished job's restore, with the binder's adoption
// of what is still running. Split from core.cpp.
#include "daemon/core.hpp"

#include <algorithm>
#include <chrono>
#include <set>
#include <utility>

#include <spdlog/spdlog.h>

#include "daemon/heap.hpp"
#include "storage/codec.hpp"

namespace gpuq::daemon {

Result<std::unique_ptr<Core>> Core::open(const CoreConfig& config, Time now) {
  const auto t0 = std::chrono::steady_clock::now();
  auto names = std::make_unique<ResourceNames>();
  auto store = storage::Store::open(config.state_file, *names, storage::Store::Check::kInBackground);
  if (!store) return Error{store.error(), store.code()};
  const auto t1 = std::chrono::steady_clock::now();
  std::unique_ptr<Core> core(new Core(config, std::move(names), std::move(store.value())));
  auto rebuilt = core->rebuild(now);
  // A corrupt file is refused with what the integrity check found, also when loading failed.
  if (auto c = core->store_->checked(); !c) return Error{c.error(), c.code()};
  if (!rebuilt) return Error{rebuilt.error(), rebuilt.code()};
  const auto seconds = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  spdlog::info("event=state_loaded file={} unfinished_jobs={} open_s={:.2f} load_and_rebuild_s={:.2f}",
               config.state_file, core->live_count(), seconds(t0, t1),
               seconds(t1, std::chrono::steady_clock::now()));
  return core;
}

// The engine from the file: queues, nodes, then unfinished jobs in submission order. Jobs that
// held a placement are restored where they were; a job stopping for a preemptor is taken as
// stopped (the preemptor's booking is not kept: it asks again). What is derived (usage, shares)
// is recomputed by the engine.
Result<void> Core::rebuild(Time now) {
  engine_ = std::make_unique<Engine>(config_.engine);
  ++engine_generation_;  // the estimates of the old one no longer apply (Estimates::of)
  sync_names();
  queue_specs_.clear();
  node_specs_.clear();
  unfinished_.clear();
  packed_.clear();
  unpacked_.clear();
  templates_.clear();  // and the arrays' members, read again below
  arrays_.clear();
  array_unfinished_.clear();
  forget_later_.clear();
  stale_.clear();
  deferred_.clear();
  batch_ = {};
  std::vector<QueueSpec> config_queues;
  std::vector<NodeSpec> config_nodes;
  if (config_.start_specs) {
    config_.start_specs(*names_, config_queues, config_nodes);
    sync_names();
  }
  std::size_t restore_failures = 0;
  std::vector<BinderFact> adopted;  // what ended while gpuqd was not watching, applied once all are in
  // Pending members of one array read one after the other (the file gives them in number order),
  // alike but for their ids and indices: restored together (restore_members).
  std::vector<storage::JobRecord> members;
  auto joins = [&](const storage::JobRecord& rec) {
    if (binder_->is_source() || rec.state != JobState::kPending || rec.spec.array_id.empty() || !rec.after.empty() ||
        rec.attempts != 0 || rec.preemptions != 0 || rec.retried != 0 ||
        rec.spec.id.value != rec.spec.array_id + "_" + std::to_string(rec.spec.array_index))
      return false;
    if (members.empty()) return true;
    const storage::JobRecord& first = members.front();
    // Alike as records too, so that the first stands for all (ArrayTemplate): a pending member
    // that never ran has no placement, flavor, exit code or use of its own.
    if (rec.spec.array_id != first.spec.array_id || rec.held != first.held ||
        rec.spec.array_index <= members.back().spec.array_index || !(rec.run == first.run) ||
        !(rec.notify == first.notify) || rec.priority_text != first.priority_text || rec.reason != first.reason ||
        rec.admitted_at != first.admitted_at || rec.flavor != first.flavor || rec.exit_code != first.exit_code ||
        rec.preempted_by != first.preempted_by || !rec.placement.empty())
      return false;
    JobSpec alike = rec.spec;
    alike.id = first.spec.id;
    alike.array_index = first.spec.array_index;
    return alike == first.spec;
  };
  auto flush = [&] {
    if (!members.empty()) restore_members(members, now, restore_failures, adopted);
    members.clear();
  };
  auto each_chunk = [&](std::vector<storage::JobRecord>& chunk) -> Result<void> {
    sync_names();  // the reader may have met a resource name in a job
    for (storage::JobRecord& rec : chunk) {
      if (binder_->is_source() && !binder_started_ && !binder_->adopts(rec)) {
        std::string id = rec.spec.id.value;
        stale_.emplace(std::move(id), std::move(rec));
        continue;
      }
      // A job submitted through the API that held a placement waits for the source's nodes
      // (restored once it has reported them: source_synced); the others are restored now.
      if (binder_->is_source() && !binder_started_ &&
          (rec.state == JobState::kAdmitted || rec.state == JobState::kRunning)) {
        deferred_.push_back(std::move(rec));
        continue;
      }
      if (joins(rec)) {
        members.push_back(std::move(rec));
        continue;
      }
      flush();
      if (joins(rec)) {  // the first of another array's run
        members.push_back(std::move(rec));
        continue;
      }
      restore(rec, now, restore_failures, adopted);
    }
    return Ok();
  };
  auto loaded = store_->load(
      [&](storage::Loaded& meta) -> Result<void> {
        sync_names();
        if (auto r = apply_start_specs(meta, config_queues, config_nodes, now); !r) return r;
        keep_stored_history(meta);  // set once the jobs are restored (daemon/history.cpp)
        // Members still in their arrays' rows come as runs: no slot or record of their own.
        engine_->reserve_jobs(meta.unfinished_count - meta.unfinished_in_rows);
        packed_.reserve(meta.unfinished_count - meta.unfinished_in_rows);
        last_event_seq_ = meta.last_event_seq;
        last_job_number_ = meta.last_job_number;
        return Ok();
      },
      each_chunk,
      [&](storage::MemberRun& run) -> Result<void> {
        sync_names();
        flush();
        storage::JobRecord& first = run.first;
        const bool whole = !binder_->is_source() && run.indices.size() > 1 && first.state == JobState::kPending &&
                           first.after.empty() && first.attempts == 0 && first.preemptions == 0 && first.retried == 0;
        if (whole && restore_run(run, now)) return Ok();
        // Member by member, as any records of the file.
        std::vector<storage::JobRecord> records;
        for (std::size_t k = 0; k < run.indices.size(); ++k) {
          storage::JobRecord& m = records.emplace_back(first);
          m.spec.array_index = run.indices[k];
          m.spec.id = JobId(first.spec.array_id + "_" + std::to_string(run.indices[k]));
          m.number = first.number + k;
        }
        return each_chunk(records);
      });
  if (!loaded) return Error{loaded.error(), loaded.code()};
  flush();
  if (restore_failures > 10)
    spdlog::warn("event=restore_failed jobs={} note=\"the first 10 are logged above\"", restore_failures);
  restore_stored_history(now);
  (void)engine_->take_events();  // restoring is not a transition
  // What ended while gpuqd was not watching is a transition (written with the first turn).
  binder_->stop_strays();
  facts_open_.clear();
  facts_closed_.clear();
  for (const BinderFact& fact : adopted) observe(fact, now);
  trim_heap("restore");  // the file's records, read in chunks and moved from
  return Ok();
}

Result<void> Core::apply_start_specs(const storage::Loaded& loaded, const std::vector<QueueSpec>& config_queues,
                                     const std::vector<NodeSpec>& config_nodes, Time now) {
  for (const QueueSpec& q : loaded.queues) {
    if (auto r = engine_->apply_queue(q); !r)
      return Error{"state file: queue \"" + q.name.value + "\": " + r.error(), ErrorCode::kFailedPrecondition};
    queue_specs_[q.name.value] = q;
    binder_->queue_applied(q);
  }
  config_queues_.clear();
  for (const QueueSpec& q : config_queues) {
    config_queues_.insert(q.name.value);
    if (auto r = check_classes(q); !r)
      return Error{"config: queue \"" + q.name.value + "\": " + r.error(), ErrorCode::kInvalidArgument};
    if (auto r = engine_->apply_queue(q); !r)
      return Error{"config: queue \"" + q.name.value + "\": " + r.error(), ErrorCode::kInvalidArgument};
    queue_specs_[q.name.value] = q;
    binder_->queue_applied(q);
    batch_.queues.push_back(q);
  }
  for (const NodeSpec& n : loaded.nodes) {
    if (binder_->is_source()) break;  // the source reports the nodes there are now
    if (auto r = engine_->upsert_node(n, now); !r)
      return Error{"state file: node \"" + n.name + "\": " + r.error(), ErrorCode::kFailedPrecondition};
    node_specs_[n.name] = n;
  }
  for (const NodeSpec& n : config_nodes) {
    if (auto r = engine_->upsert_node(n, now); !r)
      return Error{"config: node \"" + n.name + "\": " + r.error(), ErrorCode::kInvalidArgument};
    node_specs_[n.name] = n;
    batch_.nodes.push_back(n);
  }
  return Ok();
}

// One unfinished job from the file. Jobs that held a placement are restored where they were; a
// job stopping for a preemptor is taken as stopped (the preemptor's booking is not kept: it asks
// again). One that no longer fits the cluster or the queues ends, with the reason, rather than
// blocking the start.
void Core::restore(storage::JobRecord& rec, Time now, std::size_t& failures, std::vector<BinderFact>& adopted) {
  Result<void> r = Ok();
  if (rec.state == JobState::kAdmitted || rec.state == JobState::kRunning) {
    RunningPlacement where;
    where.admitted_at = rec.admitted_at;
    if (!rec.flavor.empty()) where.flavor = rec.flavor;
    for (const PodPlacement& p : rec.placement)
      if (!p.node.empty()) {
        where.nodes.push_back(p.node);
        where.gpus.emplace_back(p.gpus.begin(), p.gpus.end());  // the same GPUs again
      }
    r = engine_->restore_running(rec.spec, where, now);
    if (r) {
      rec.state = JobState::kRunning;
      if (auto fact = binder_->adopt(rec)) adopted.push_back(*fact);
    }
  } else {
    if (rec.state == JobState::kPreempting) {
      rec.state = JobState::kPending;
      rec.reason = "requeued at start: it was being preempted when gpuqd stopped";
      ++rec.preemptions;
      rec.placement.clear();
      rec.flavor.clear();
      rec.admitted_at = 0;
      batch_.jobs.push_back(rec);
    }
    r = engine_->submit(rec.spec, now);
    if (r && rec.held) (void)engine_->hold(rec.spec.id, now, {}, Engine::HoldKind::kUser, /*quiet=*/true);
    if (r && !rec.after.empty()) restore_dependencies(rec, now);
  }
  if (!r) {
    rec.state = JobState::kFailed;
    rec.reason = "could not be restored at start: " + r.error();
    rec.finished_at = now;
    batch_.jobs.push_back(rec);
    if (++failures <= 10) spdlog::warn("event=restore_failed job={} reason=\"{}\"", rec.spec.id.value, r.error());
    return;
  }
  engine_->restore_counts(rec.spec.id, rec.attempts, rec.preemptions, rec.retried);  // they go on from the file's
  keep_restored(rec);
}

void Core::restore_members(std::vector<storage::JobRecord>& run, Time now, std::size_t& failures,
                           std::vector<BinderFact>& adopted) {
  std::optional<Result<Job>> tmpl;
  if (run.size() > 1) tmpl = engine_->array_template(run.front().spec);
  if (!tmpl || !tmpl->ok()) {  // one member, or one the queues refuse now: each as any job
    for (storage::JobRecord& rec : run) restore(rec, now, failures, adopted);
    return;
  }
  std::vector<std::int32_t> indices;
  indices.reserve(run.size());
  for (const storage::JobRecord& rec : run) indices.push_back(rec.spec.array_index);
  const std::optional<std::string> held = run.front().held ? std::optional<std::string>("") : std::nullopt;
  Engine::MemberEvents quiet;  // restoring is not a transition: no events kept
  if (!engine_->submit_array(tmpl->value(), indices, now, held, &quiet)) {
    for (storage::JobRecord& rec : run) restore(rec, now, failures, adopted);
    return;
  }
  // Numbered one after the other (as submitted): one record stands for them (ArrayTemplate).
  bool consecutive = true;
  for (std::size_t k = 0; k < run.size() && consecutive; ++k) consecutive = run[k].number == run.front().number + k;
  if (!consecutive) {
    for (storage::JobRecord& rec : run) keep_restored(rec);
    return;
  }
  keep_template(run.front(), std::move(indices));
}

bool Core::restore_run(storage::MemberRun& run, Time now) {
  auto tmpl = engine_->array_template(run.first.spec);
  if (!tmpl) return false;
  const std::optional<std::string> held = run.first.held ? std::optional<std::string>("") : std::nullopt;
  Engine::MemberEvents quiet;  // restoring is not a transition: no events kept
  if (!engine_->submit_array(tmpl.value(), run.indices, now, held, &quiet)) return false;
  keep_template(run.first, std::move(run.indices));
  return true;
}

void Core::keep_template(const storage::JobRecord& first, std::vector<std::int32_t> indices) {
  const std::string& array = first.spec.array_id;
  if (arrays_.count(array) == 0) note_suffixed(array, "");
  std::vector<std::int32_t>& ids = arrays_[array];
  ids.insert(ids.end(), indices.begin(), indices.end());
  array_unfinished_[array] += indices.size();
  templates_[array].push_back(ArrayTemplate{storage::pack_job(first, *names_),
                                            std::make_shared<const std::vector<std::int32_t>>(std::move(indices)),
                                            first.number});
}

void Core::keep_restored(storage::JobRecord& rec) {
  note_suffixed(rec.spec.id.value, rec.spec.array_id);
  if (!rec.spec.array_id.empty()) {
    if (arrays_.count(rec.spec.array_id) == 0) note_suffixed(rec.spec.array_id, "");
    arrays_[rec.spec.array_id].push_back(rec.spec.array_index);
    ++array_unfinished_[rec.spec.array_id];
  }
  std::string id = rec.spec.id.value;
  if (rec.state == JobState::kPending)  // at rest: packed (Core::live unpacks it when used)
    packed_.put(id, storage::pack_job(rec, *names_));
  else
    unfinished_.emplace(std::move(id), std::move(rec));
}

// A job of the state file a source binder's gpuqd has not restored yet (until the source's first
// sync: its pods, or for a job submitted through the API that was placed, its nodes).
bool Core::restoring(const std::string& id) const {
  return stale_.count(id) > 0 ||
         std::any_of(deferred_.begin(), deferred_.end(), [&](const storage::JobRecord& r) { return r.spec.id.value == id; });
}

}  // namespace gpuq::daemon
