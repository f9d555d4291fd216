#pragma once
// The daemon's state, owned by the engine thread alone (daemon/loop.hpp posts work to it): the
// engine, the store, and what the engine does not keep (ids, submission numbers, what the binder
// runs). Work runs in turns: handlers change the engine through Core, then end_turn() schedules,
// lets the binder act on the decisions, writes everything the turn changed in one transaction,
// and only then are the turn's requests answered. A failed write answers them UNAVAILABLE and
// rebuilds the engine from the file, so the state is exactly what is on disk.
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "binder/binder.hpp"
#include "daemon/estimates.hpp"
#include "daemon/metrics.hpp"
#include "daemon/notify.hpp"
#include "daemon/packed_jobs.hpp"
#include "daemon/submit_limits.hpp"
#include "scheduler/engine.hpp"
#include "storage/store.hpp"

namespace gpuq::daemon {

// Chargeback (config prices, currency): per flavor, the price of one GPU-hour, in `currency`.
// Admin.Usage turns each flavor's GPU-hours into cost with it; a flavor without a price has none.
struct Prices {
  std::map<std::string, double> per_gpu_hour;  // non-negative, finite
  std::string currency;                        // "" when unset
};

struct CoreConfig {
  EngineConfig engine;
  Prices prices;
  PriorityClasses priority_classes;
  std::string state_file = "gpuqd.db";
  // Seconds between checkpoints of the fair-share usage history into the state file (config
  // usageCheckpointInterval; only with engine.usage_half_life > 0). daemon/history.cpp.
  Time usage_checkpoint_interval = 60;
  // Seconds an audit record is kept (config auditRetention); older ones are deleted, checked
  // at most once an hour, in a turn's transaction.
  Time audit_retention = 90 * 86400;
  // Seconds a finished job's record (and events that old) stay in the state file (config
  // jobRetention); 0: for ever. Pruned at most once a minute, a bounded number per turn.
  Time job_retention = 0;
  // Queues and nodes from gpuqd's config, parsed into the Core's resource names: applied over
  // the file's before any job is restored (and written with the first turn). Throws on a bad
  // spec (the config was checked when loaded).
  std::function<void(ResourceNames&, std::vector<QueueSpec>&, std::vector<NodeSpec>&)> start_specs;
  // The binder (config `binder`); unset: the none binder. It is given the Report through which
  // it sends its facts from its own thread (they reach the engine through start_binder's post).
  std::function<std::unique_ptr<binder::Binder>(binder::Report)> make_binder;
  // Notifications (config `notifications`): the URLs allowed here; the Notifier sends them.
  NotifyConfig notify;
  // GPU idleness (config local.gpuIdleThreshold): a sampled GPU at most this busy (percent) is
  // idle. daemon/gpu_use.cpp.
  int gpu_idle_threshold = 1;
};

// A queue as the API shows it: its spec, and its live usage, share and job counts.
struct QueueStatus {
  struct Usage {
    std::string flavor;
    ResourceId resource = 0;
    Quantity used = 0;
    Quantity nominal = 0;
    Quantity borrowed = 0;  // max(0, used - nominal)
    // Its unused lendable quota that other members of its cohort use now: the cohort's
    // borrowing split over the members by what each could lend (unused, within lendingLimit).
    Quantity lent = 0;
  };
  QueueSpec spec;
  std::vector<Usage> usage;  // per (flavor, resource) with a quota or in use
  double share = 0;          // weighted dominant share (the fair-share order)
  Engine::QueueJobCounts counts;
};

// A node as the API shows it: its spec, and what its pods use now.
struct NodeStatus {
  NodeSpec spec;
  ResourceVec capacity;
  ResourceVec used;
  int gpus = 0;
  int gpus_free = 0;  // wholly free GPUs
  int pods = 0;
};

// Receives each committed event (for Watch), on the engine thread.
using EventSink = std::function<void(const storage::EventRecord&)>;

// A job that a waiting job waits for, and how (daemon/dependencies.cpp); in the Core's
// dependents_, the waiting job and how. A job as a dependency sees it.
struct Awaited {
  std::string job;
  AfterKind kind;
};
struct DependencyView {
  std::optional<JobState> state;  // nullopt: no such job
  std::string reason;
};

class Core {
 public:
  // Opens the state file, loads it and rebuilds the engine. Errors say what to do.
  static Result<std::unique_ptr<Core>> open(const CoreConfig& config, Time now);

  // The one resource-name registry: the store serializes with it, requests are parsed into it,
  // and the engine gets a copy before each command (names are only ever appended).
  ResourceNames& names() { return *names_; }
  const ResourceNames& names() const { return *names_; }
  const Engine& engine() const { return *engine_; }
  storage::Store& store() { return *store_; }
  const PriorityClasses& priority_classes() const { return config_.priority_classes; }
  const Prices& prices() const { return config_.prices; }

  // Commands, each checked before it changes anything; the change is durable after end_turn().
  // The submission was read and checked (spec/validate.hpp) before; this checks what needs the
  // state: the id, the queue and its pending limit, and what the binder can run.
  Result<std::string> submit(Submission sub, Time now);
  // force: its processes are killed now, not given its grace period; also for a job already
  // cancelled whose processes are still stopping.
  // `reason`: the job's end reason (the idle policy says why it cancelled a job).
  Result<void> cancel(const std::string& id, Time now, bool force = false, std::string reason = "cancelled");
  // Holds and releases (Engine::hold): `by` names who, in the job's event. daemon/holds.cpp.
  Result<void> hold(const std::string& id, Time now, const std::string& by);
  Result<void> release(const std::string& id, Time now, const std::string& by);
  // gpuq update (daemon/holds.cpp): a pending job's priority (an integer or a class name),
  // maxRuntime (0: none) or queue. Within the guardrails of its (new) queue unless
  // `beyond_guardrails` (an admin); `by` names who, in the job's event.
  struct JobChange {
    std::optional<std::string> priority;
    std::optional<Time> max_runtime;
    std::optional<std::string> queue;
  };
  Result<void> update(const std::string& id, const JobChange& change, Time now, const std::string& by,
                      bool beyond_guardrails);
  Result<void> hold_or_release(const std::string& id, Time now, const std::string& by, bool hold);
  // An array's members (ids, in member order), or nullopt when `id` names no array this gpuqd
  // knows; first_member: the first of them alone.
  std::optional<std::vector<std::string>> array_members(const std::string& id) const;
  std::optional<std::string> first_member(const std::string& id) const;
  // Cancelled while it ran, its processes not yet gone (it holds its GPUs until they are).
  bool stopping(const JobId& id) const;
  // The jobs stopping() is true of, in no order (written as cancelled: Jobs.List adds them to
  // the running ones).
  std::vector<JobId> stopping_jobs() const;
  Result<void> apply_queue(const QueueSpec& spec);
  Result<void> apply_node(const NodeSpec& spec, Time now, bool from_source = false);
  Result<void> set_node_state(const std::string& node, NodeState state, Time now);
  Result<void> delete_queue(const std::string& name);
  // A queue's spec (its guardrails and roles), or null when there is none.
  const QueueSpec* queue_spec(const std::string& name) const {
    auto it = queue_specs_.find(name);
    return it == queue_specs_.end() ? nullptr : &it->second;
  }
  // A bearer token created or revoked (api/tokens.hpp): written with this turn.
  void put_token(storage::TokenRecord token) { batch_.tokens.push_back(std::move(token)); }

  // A turn ends in three steps, so that the write (and its fsync) can run on another thread
  // while the engine thread goes on with the next turn (daemon/loop.cpp):
  //  close_turn(): schedule, let the binder act, gather everything the turn changed (engine thread);
  //  write(): commit it in one transaction (any one thread: it touches only the store's writer);
  //  committed(): take the outcome back (engine thread): events to the sink and finished jobs
  //  dropped from memory, or, when the write failed, the engine rebuilt from the file.
  // Until committed() the turn's jobs stay in memory, so reads never miss a job being written.
  struct TurnResult {
    bool ok = true;
    double commit_seconds = 0;  // the transaction alone
    std::string error;
    std::size_t jobs_written = 0;
  };
  storage::Batch close_turn(Time now);
  TurnResult write(const storage::Batch& batch);
  void notify(const storage::Batch& batch);  // the turn's notifications, once it is on disk
  void committed(const storage::Batch& batch, const TurnResult& result, Time now);
  // The three in line (start-up), then pack_idle().
  TurnResult end_turn(Time now);
  // After a written turn, once its answers are on their way (daemon/loop.cpp): the records the
  // turns touched that are pending are packed again (packed_ below). Off the answers' path:
  // packing a 1,000-member array's records takes about 0.7 ms.
  void pack_idle();

  // A binder's fact, in a turn on the engine thread (posted there by start_binder's `post`).
  void observe(const BinderFact& fact, Time now);

  // A call that changed or tried to change the state (docs/tasks/tenants-and-security.md, Audit): written with
  // this turn's changes, in its transaction. Long fields are cut (a target to 256 bytes, a
  // result to 1 KiB) so a caller cannot make the log grow faster than its calls.
  void audit(storage::AuditRecord record, Time now);
  // Starts the binder's own thread; its facts go to `post`, which must run observe() in a turn;
  // a source's (binder.hpp, SourceFact) go to `post_source`, which must run observe_source().
  // `post_usage` (each pod's use, counted in /metrics on the binder's thread) must run
  // observe_usage() in a turn, before the fact its pod's end brings.
  void start_binder(std::function<void(const BinderFact&)> post,
                    std::function<void(binder::SourceFact)> post_source = {},
                    binder::GpuReport post_gpus = {},
                    std::function<void(const binder::PodUsage&)> post_usage = {});
  // What a pod used (the local executor's cgroups), in a turn: added to its job's record while
  // the job is unfinished (a job cancelled while it ran has ended already: /metrics alone).
  void observe_usage(const binder::PodUsage& usage);
  // A sample of a node's GPUs (the local executor's; daemon/gpu_use.cpp), in a turn: each running
  // job placed on sampled GPUs gets its GPU use updated, and its queue's idle policy applied
  // (an event once its GPUs have been idle for idle.warnAfter, a cancel after idle.cancelAfter).
  void observe_gpus(const binder::GpuSample& sample, Time now);
  // A source's fact, in a turn (daemon/source.cpp): a node seen, a job arrived or withdrawn,
  // the source synced (placing begins; jobs of the state file it did not report end).
  void observe_source(binder::SourceFact fact, Time now);
  // Whether the engine places jobs yet: not before a source binder has reported what it holds.
  bool placing() const { return placing_; }
  void halt_binder() { binder_->halt(); }
  const binder::Binder& binder() const { return *binder_; }

  // Queries (engine thread). A job as it is now: an unfinished one from memory, a finished one as
  // stored. reason(): why it waits (the engine's live reason), who preempts it, or how it ended.
  Result<storage::JobRecord> job(const std::string& id);
  // `gpuq explain`: the engine's for an unfinished job; a finished one's reason alone.
  Result<JobExplanation> explain(const std::string& id);
  const storage::JobRecord& listed(const storage::JobRecord& stored) const;
  std::string reason(const storage::JobRecord& r) const;
  QueueStatus queue_status(QueueIdx q) const;
  Quantity lent(QueueIdx q, FlavorId f, ResourceId r) const;  // QueueStatus::Usage::lent
  std::vector<QueueStatus> queues() const;
  Result<QueueStatus> queue(const std::string& name) const;
  std::vector<NodeStatus> nodes() const;
  Result<NodeStatus> node(const std::string& name) const;
  std::uint64_t last_event_seq() const { return last_event_seq_; }
  // Recorded into on the engine thread (and the writer's: write()); rendered from any.
  Metrics& metrics() { return metrics_; }
  // The last start-time estimates (thread-safe; daemon/estimates.hpp computes them).
  Estimates& estimates() { return estimates_; }
  std::uint64_t engine_generation() const { return engine_generation_; }  // rebuilds so far
  const Estimates& estimates() const { return estimates_; }
  // `watched`: whether anyone takes them now (an array's members' events are made for the sink
  // only then); none: always.
  void set_event_sink(EventSink sink, std::function<bool()> watched = {}) {
    sink_ = std::move(sink);
    watched_ = std::move(watched);
  }
  // Receives each notification a written turn calls for (engine thread; must not block).
  void set_notify_sink(std::function<void(Notification)> sink) { notify_ = std::move(sink); }

  // The fair-share usage history (daemon/history.cpp; empty or no-ops when usageHalfLife is 0).
  // Each live queue's decayed averages brought up to `now` with what it uses now, by resource
  // name; the engine is not changed.
  std::vector<storage::HistoryRecord> history_snapshot(Time now) const;
  // Sets each record's queue's history, as of the record's `at` (a later `at` than `now` is
  // taken as `now`): the next cycle brings it up to its time with the queue's usage then. A
  // record of a queue this gpuqd does not have, or with a negative or non-finite value, is
  // skipped, and a resource name it does not know is left out, each with a warning. What was set
  // is written with the next turn.
  void apply_history(const std::vector<storage::HistoryRecord>& records, Time now);
  // The next turn writes a checkpoint, whatever the interval (a clean stop: Loop::stop). False
  // when there is no history to write.
  bool checkpoint_history();

 private:
  Core(const CoreConfig& config, std::unique_ptr<ResourceNames> names,
       std::unique_ptr<storage::Store> store);
  // Names are only ever appended: the same count is the same names, and nothing to copy.
  void sync_names() {
    if (engine_->resource_names().size() != names_->size()) engine_->resource_names() = *names_;
  }
  Result<void> rebuild(Time now);
  Result<void> apply_start_specs(const storage::Loaded& loaded, const std::vector<QueueSpec>& config_queues,
                                 const std::vector<NodeSpec>& config_nodes, Time now);
  void restore(storage::JobRecord& rec, Time now, std::size_t& failures, std::vector<BinderFact>& adopted);
  // Pending members of one array, alike but for their ids and indices, in member order: restored
  // as one engine block (EngineConfig::lazy_arrays), as they were submitted.
  void restore_members(std::vector<storage::JobRecord>& run, Time now, std::size_t& failures,
                       std::vector<BinderFact>& adopted);
  // A run of members still in their array's row (storage::MemberRun, numbered one after the
  // other): one engine block and one template, no record of their own. false: nothing done.
  bool restore_run(storage::MemberRun& run, Time now);
  // The members' template, and their indices in arrays_ (restore_members, restore_run).
  void keep_template(const storage::JobRecord& first, std::vector<std::int32_t> indices);
  void keep_restored(storage::JobRecord& rec);
  // daemon/submit_limits.cpp: the queue's guardrails on `sub` (which may fill its maxRuntime
  // and priority class), maxPendingJobs and the per-user limits; changes nothing else.
  // `jobs`: how many the submission adds (an array's members).
  Result<void> check_queue_limits(const QueueSpec& q, Submission& sub, Time now, std::size_t jobs) const;
  // daemon/submit.cpp: ids, arrays, and a taken submission's record.
  Result<bool> id_free(const std::string& id, bool on_disk_too = true);
  Result<std::string> next_id();
  Result<std::string> submit_array(Submission sub, Time now);
  void array_member_ended(const std::string& array);
  storage::JobRecord& enter(storage::JobRecord rec, const std::vector<Awaited>& awaited, Time now);
  static storage::JobRecord record_of(Submission sub);  // all but its number
  static std::optional<std::string> held_at_submission(const Submission& sub);
  // daemon/dependencies.cpp: the jobs `sub` still waits for (none: it may run), or why it can
  // never run (refused); holding a job on them; the jobs whose dependencies were met or broken by
  // jobs that ended (ended_).
  Result<std::vector<Awaited>> check_after(const Submission& sub);
  void wait_for(const std::string& id, const std::vector<Awaited>& awaited, Time now, bool quiet);
  bool resolve_dependencies(Time now);
  void restore_dependencies(const storage::JobRecord& rec, Time now);
  Result<DependencyView> dependency_state(const std::string& id);
  // Each of q's allowedPriorityClasses is one of gpuqd's priority classes.
  Result<void> check_classes(const QueueSpec& q) const;
  void bind(const std::vector<Decision>& decisions, Time now);
  void turn_done(bool written);
  void record_changes(const std::vector<Event>& events, Time now);
  void refresh(storage::JobRecord& rec, const Job& j) const;
  // The batch's row for a templated array (storage::ArrayRows): `first` stands for each member,
  // `each` the events every member had (Engine::MemberEvents).
  void record_array_rows(const std::string& array, const std::vector<std::int32_t>& indices,
                         const storage::JobRecord& first, const std::vector<Event>& each);
  // An array's members that all had the same events and wait (Pending) after them go to the
  // batch as one storage::ArrayRows; false (nothing done) for any other array. `recs`: the
  // members' records, in order; or none, and `first`: the template's record for all of them.
  bool record_array(const std::string& array, const std::vector<std::int32_t>& indices,
                    const std::vector<storage::JobRecord*>& recs, const std::vector<Event>& events,
                    const storage::JobRecord* first = nullptr);
  void source_arrived(binder::JobArrived& a, Time now);
  void source_withdrawn(const binder::JobWithdrawn& w, Time now);
  void source_synced(Time now);
  void tell_waiting(Time now);
  // daemon/queue_objects.cpp: queues as the source's objects (binder QueueSeen, QueueGone,
  // QueuesListed), their use reported for the objects' status.
  Result<void> put_queue(const QueueSpec& spec);  // apply_queue without the API's checks
  Result<void> remove_queue(const std::string& name);
  void queue_object_seen(const QueueSpec& spec);
  void queue_object_gone(const std::string& name);
  void queue_objects_listed(const std::vector<std::string>& names);
  void report_queues();
  // daemon/gpu_use.cpp: an event of a running job that is not a transition (Running -> Running).
  void record_note(const storage::JobRecord& rec, std::string reason, Time now);
  // daemon/history.cpp: what load() read, kept until the jobs are restored; the checkpoint that
  // close_turn() adds to the batch when one is due.
  void keep_stored_history(storage::Loaded& loaded);
  void restore_stored_history(Time now);
  std::size_t set_history(const std::vector<storage::HistoryRecord>& records, Time now);
  void add_history_checkpoint(Time now);

  CoreConfig config_;
  std::unique_ptr<ResourceNames> names_;
  std::unique_ptr<storage::Store> store_;
  std::unique_ptr<Engine> engine_;
  std::uint64_t engine_generation_ = 0;
  std::unique_ptr<binder::Binder> binder_;  // the none binder reports its facts at bind_now_
  Time bind_now_ = 0;
  std::function<void(const BinderFact&)> fact_post_;  // set before the binder's thread starts
  // Jobs whose last binder fact came in this turn / the turn being written: forgotten by the
  // binder once that turn is on disk.
  std::vector<JobId> facts_open_, facts_closed_;
  std::map<std::string, NodeSpec> node_specs_;
  std::map<std::string, QueueSpec> queue_specs_;
  SubmitRate submit_rate_;  // maxSubmitsPerUserPerMinute, per (queue, user)
  SubmitRate audit_refusals_;  // refusals recorded in the audit log, per user (Core::audit)
  std::map<std::string, std::uint64_t> audit_refusals_left_out_;  // per user, since the last recorded
  std::set<std::string> config_queues_;  // declared in gpuqd's config: not deleted over the API
  // Queues whose Queue object is gone (or that no object names) but that still hold jobs: they
  // take no new ones and go once the engine lets them (retried at each status report).
  std::set<std::string> queues_going_;
  // The unfinished jobs' records, by id, in one of two maps. unfinished_: whole records, of the
  // jobs that hold a placement or that this turn touched. packed_: the rest, the pending jobs at
  // rest (most of them, a million at a large site), each as storage::pack_job's string
  // (daemon/packed_jobs.hpp: about 200 bytes, where a JobRecord is 1,200 with its heap).
  // Code that reads or changes a record goes through live(), which unpacks it into unfinished_;
  // pack_idle() packs the touched ones that are still pending once the turn is written (a packed
  // record is then what the state file holds, or what the turn being written will: Jobs.List's
  // rows stand for it as they are).
  std::unordered_map<std::string, storage::JobRecord> unfinished_;
  PackedJobs packed_;
  std::vector<std::string> unpacked_;  // put in unfinished_ this turn: packed again if pending
  storage::JobRecord* live(const std::string& id);  // nullptr: not an unfinished job
  bool is_live(const std::string& id) const {
    return unfinished_.count(id) > 0 || packed_.contains(id) || in_template(id);
  }
  std::size_t live_count() const { return unfinished_.size() + packed_.size(); }  // members in templates not counted
  // An array whose waiting members the engine keeps as a block (EngineConfig::lazy_arrays) has
  // no record per member either while they wait as they were submitted: one packed record (the
  // first member's) stands for a run of them, and live() makes a member's record from it (its id,
  // index and number; its state from the engine) when asked; pack_idle() drops it again while it
  // is still what the template makes (daemon/LAZY_ARRAYS.md, stage 2).
  struct ArrayTemplate {
    std::string packed;
    std::shared_ptr<const std::vector<std::int32_t>> indices;  // the run's, sorted
    std::uint64_t first_number = 0;  // the member at position p has number first_number + p
  };
  std::unordered_map<std::string, std::vector<ArrayTemplate>> templates_;  // by array id
  // The template standing for member `id` and its position there, while the engine has the
  // member (whether or not it has a record of its own now; a member cancelled with its block is
  // still there until its end is written).
  std::optional<std::pair<const ArrayTemplate*, std::uint32_t>> template_of(const std::string& id) const;
  // Whether member `id` has no record of its own and its template stands for it.
  bool in_template(const std::string& id) const {
    return !templates_.empty() && unfinished_.count(id) == 0 && !packed_.contains(id) && template_of(id).has_value();
  }
  // Member `id`'s record as its template makes it (template_of); nullopt when none stands for it.
  std::optional<storage::JobRecord> from_template(const std::string& id) const;
  // A record put in unfinished_ (submitted, restored, reported by a source): packed at the
  // turn's end if it is pending then.
  storage::JobRecord& enter_live(storage::JobRecord rec);
  // Array id -> its members' indices (member "<array>_<index>"), for arrays submitted since start
  // or with members unfinished at start (cancel and dependencies by the array's id; no job may
  // take the id).
  std::unordered_map<std::string, std::vector<std::int32_t>> arrays_;
  // The <base> of every id "<base>_<digits>" a job or array took in this process other than as a
  // member of array <base> (never erased: it only says where to look). An array whose id is in
  // it, or has a job on disk named so, checks its members' ids one by one; any other needs not.
  std::unordered_set<std::string> suffixed_bases_;
  void note_suffixed(const std::string& id, const std::string& array_id);
  std::unordered_map<std::string, std::size_t> array_unfinished_;  // members; at 0 the array is forgotten
  // Job id -> the unfinished jobs that wait for it to end and how; per waiting job, how many it
  // still waits for; ids of jobs that ended since the last resolve_dependencies().
  std::unordered_map<std::string, std::vector<Awaited>> dependents_;
  std::unordered_map<std::string, std::uint32_t> awaiting_;
  std::vector<std::string> ended_;
  // Finished and written, but the engine still holds them (cancelled, processes still stopping):
  // dropped from the engine once they have stopped (committed()).
  std::vector<JobId> forget_later_;
  // A source binder's jobs as the state file had them at start, until the source reports them
  // again (they keep their number and times) or syncs without them (they end).
  std::unordered_map<std::string, storage::JobRecord> stale_;
  // A source binder's jobs submitted through the API that held a placement at start: restored
  // once the source has reported its nodes (source_synced).
  std::vector<storage::JobRecord> deferred_;
  bool restoring(const std::string& id) const;
  bool placing_ = true;
  Time last_status_ = 0;  // when a source was last told why its jobs wait
  bool binder_started_ = false;
  storage::Batch batch_;
  std::uint64_t last_event_seq_ = 0;
  std::uint64_t last_job_number_ = 0;
  EventSink sink_;
  std::function<bool()> watched_;
  std::function<void(Notification)> notify_;
  Metrics metrics_;
  Estimates estimates_;
  std::vector<storage::HistoryRecord> stored_history_;  // from load() to the end of rebuild()
  Time last_checkpoint_ = 0;  // of the usage history
  Time next_audit_prune_ = 0;
  Time next_job_prune_ = 0;
  bool checkpoint_due_ = false;
};

}  // namespace gpuq::daemon
