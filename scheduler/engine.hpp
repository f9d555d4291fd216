#pragma once
// The scheduling engine: commands in, decisions and events out. Pure and deterministic: no
// clock (time is an argument), no I/O, no threads. The same commands in the same order give the
// same decisions and events, byte for byte.
#include <algorithm>
#include <array>
#include <cstdint>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "preemption/victims.hpp"
#include "scheduler/cluster.hpp"
#include "scheduler/explanation.hpp"
#include "scheduler/flavor_list.hpp"
#include "scheduler/fragmentation.hpp"
#include "scheduler/job_index.hpp"
#include "scheduler/model.hpp"
#include "scheduler/placement.hpp"
#include "scheduler/quota.hpp"
#include "spec/rare.hpp"
#include "spec/result.hpp"
#include "scheduler/topology.hpp"
#include "scheduler/usage_history.hpp"

namespace gpuq {

// The engine's settings: the cluster-wide policy users declare (spec/types.hpp), and what the
// front end running it knows.
struct EngineConfig : SchedulingPolicy {
  // No nodes are modelled: only quotas constrain admission (as in Kueue, which leaves placement
  // to kube-scheduler). Used by scenarios without `nodes`.
  bool quota_only = false;
  // A binder with real processes (the local executor): a cancelled job that holds a placement is
  // Cancelled at once, but its nodes and GPUs stay taken ("draining") until the binder reports
  // that its processes are gone (JobStopped or JobFinished). Off (scenarios, the none binder):
  // they are free at once.
  bool stops_confirmed = false;
  // The admission walk's shortcuts (admission.cpp): head keys memoized by request, jumping over
  // the jobs whose request already failed in the pass instead of visiting each to pass it over,
  // and failures kept across cycles while nothing they depend on changed. The same decisions and
  // events without them, only slower (tests compare the two).
  bool admission_memo = true;
  // Job arrays kept as one pending entry while their members wait (submit_array; arrays.cpp):
  // a member becomes a job of its own when a cycle decides it or a command names it. The same
  // decisions and events either way (tests compare the two).
  bool lazy_arrays = true;
};

// Why a pending job is still waiting after the last cycle that looked at it: what stopped it on
// each flavor it tried (the first few; fixed size, so recording it never allocates).
struct WaitReason {
  struct OnFlavor {
    bool quota = false;           // stopped by quota; otherwise by room on the nodes (or:)
    // Not preemptible and would borrow: it runs only within its queue's nominal quota
    // (QueueSpec::non_preemptible_may_borrow).
    bool nominal_only = false;
    QuotaShortfall shortfall;     // when quota
    FlavorId flavor = kNoFlavor;  // when room
  };
  static constexpr std::size_t kKept = 3;
  std::array<OnFlavor, kKept> on_flavor{};
  std::uint8_t kept = 0;
  std::uint8_t flavors_tried = 0;
  std::uint64_t cycle = 0;  // the schedule() call that last tried the job
  bool preemption_found_nothing = false;  // its queue may preempt, but no victim set made room
  bool user_limit = false;  // passed over: its owner is at the queue's maxRunningJobsPerUser

  void add(const OnFlavor& why) {
    if (kept < kKept) on_flavor[kept++] = why;
  }
};

// What a job has only while it takes part in a preemption, as a preemptor (waiting_on) or as a
// victim (the rest): out of line in Job (Rare), as most jobs never do.
struct JobPreemption {
  // As a preemptor: while Job::reserved, the victims it waits for.
  std::vector<std::uint32_t> waiting_on;
  // As a victim, while Preempting: its quota is already released, `slots` hold only what its
  // preemptors did not need (so nothing else lands where it still runs), and preemptors wait.
  std::vector<std::uint32_t> preemptors;
  JobId preempted_by;
  PreemptReason preempt_reason = PreemptReason::kInQueue;
  Time preempted_at = 0;  // in memory only: 0 after a restart
  // While Preempting: where it ran and in which state, to run on there if its stop is refused
  // (StopRefused); after a refusal, no victim before this time.
  std::vector<PodSlot> slots_before;
  JobState state_before = JobState::kRunning;
  Time unevictable_until = 0;
};

// One job as the engine keeps it. A pending job is most of them (a million at a large site), so
// what only some jobs use is out of line (Rare): the reasons of a job a cycle tried, the
// preemption fields, the end reason, what a dependent job waits for.
struct Job {
  JobSpec spec;
  JobState state = JobState::kPending;
  QueueIdx queue = kNoQueue;
  std::uint64_t order = 0;  // submission sequence; FIFO tie-break after priority and time
  ResourceVec total;        // sum over pods
  std::uint64_t shape = 0;  // hash of the pod sets, for the per-cycle placement memo
  Quantity smallest_gpu_pod = 0;  // milli-GPU of its smallest pod that asks for GPUs; 0: none
  std::uint64_t pending_since = 0;  // cycles that had run when it last became pending
  FlavorList candidates;  // flavors to try, in order (shared with the jobs that have the same)
  std::uint64_t request = 0;         // while pending: Engine::request_hash, its by_request key
  std::vector<PodSlot> slots;        // while admitted (empty in quota-only mode)
  Time admitted_at = 0;
  std::uint64_t admitted_cycle = 0;  // the schedule() call that admitted it
  std::int32_t attempts = 0;     // times requeued after losing its place
  std::int32_t preemptions = 0;  // times preempted
  std::int32_t retried = 0;      // failed runs requeued (JobSpec::retries)
  FlavorId flavor = kNoFlavor;   // while admitted
  bool constrained = false;      // some pod set has node constraints (PodSet::where)
  // Cancelled (or ended) while its processes still run: its slots stay taken until the binder
  // says they are gone (EngineConfig::stops_confirmed). Holds no quota and is no victim.
  bool draining = false;
  // As a preemptor: while `reserved`, it is still Pending but its quota is charged and its
  // placement (slots, flavor) booked; it is admitted there once every job in
  // preemption->waiting_on stopped.
  bool reserved = false;
  // Held (Engine::hold): Pending, counted as pending, but out of its queue's order until released:
  // by a user (held), or by its front end while it waits for other jobs to end (dependent, with
  // what it waits for in waiting_for). Either keeps it out until both are released.
  bool held = false;
  bool dependent = false;
  Rare<WaitReason> wait;         // written when a cycle tries it (explain derives it otherwise)
  Rare<std::string> end_reason;
  Rare<std::string> waiting_for;
  bool off_order() const { return held || dependent; }
  Rare<JobPreemption> preemption;

  // Admitted, Running or Preempting: it holds slots on the nodes (quota too, unless Preempting).
  bool holds_resources() const {
    return state == JobState::kAdmitted || state == JobState::kRunning ||
           state == JobState::kPreempting;
  }
};

// Where an already-running job is (restored from a scenario or, later, from storage).
struct RunningPlacement {
  Time admitted_at = 0;
  std::optional<std::string> flavor;
  std::vector<std::string> nodes;  // one per pod, or empty to let the engine place them
  // Per pod (with `nodes`), the GPU indices it holds on its node: taken exactly these, so a
  // process that runs on them keeps them across a restart. Empty (or a pod's list empty): the
  // engine chooses them again.
  std::vector<std::vector<int>> gpus;
};

// What the last schedule() call did, for metrics and benchmarks. A decision is one pending job
// offered by its queue and then admitted or passed over; a cycle can make several passes.
struct CycleStats {
  std::uint32_t passes = 0;
  std::uint64_t queues_dropped = 0;  // queues left early: none of their jobs could fit
  std::uint64_t decisions = 0;
  std::uint64_t admitted = 0;
  std::uint64_t passed_over = 0;  // decisions answered by the pass's memo of failed requests
  std::uint64_t kept = 0;  // decisions answered by a failure kept from an earlier cycle
};

class Engine {
 public:
  explicit Engine(EngineConfig config = {});

  ResourceNames& resource_names() { return resources_; }
  const ResourceNames& resource_names() const { return resources_; }
  const EngineConfig& config() const { return config_; }

  // Commands.
  Result<void> apply_queue(const QueueSpec& spec);
  Result<void> remove_queue(const QueueName& name);
  Result<void> upsert_node(const NodeSpec& spec, Time now);
  Result<void> set_node_state(const std::string& node, NodeState state, Time now);
  // Errors: kInvalidArgument (malformed), kAlreadyExists (id in use), kRejected (can never fit
  // as the cluster and quotas stand; the job is not kept). `hold`: held at once with that reason,
  // the same state and events as submit() then hold() (never in the queue's order meanwhile).
  Result<void> submit(JobSpec spec, Time now, std::optional<std::string> hold = std::nullopt);
  // A job array's members (a front end's `submit --array`), the same job but for their ids and
  // indices: the job is made and checked once (array_template, given the first member's spec,
  // so that a refusal reads as that member's submit() would), then each member is a copy of it
  // (submit_member: refused only for an id in use). The same jobs, orders and events as submit()
  // of each member in turn.
  Result<Job> array_template(JobSpec first) const;
  Result<void> submit_member(const Job& tmpl, JobId id, std::int32_t index, Time now,
                             std::optional<std::string> hold = std::nullopt);
  // All of an array's members "<tmpl.spec.array_id>_<index>", indices sorted and distinct: the
  // same jobs and events as submit_member of each in turn. With EngineConfig::lazy_arrays the
  // members that wait are kept as one entry (a block, arrays.cpp): job() finds a member only
  // once it is a job of its own; view() finds every one. Refused (nothing entered) when a
  // member's id is in use.
  // The events each member of an array kept as one block would have had (submit_array's
  // `quiet`): member p's t-th has seq first_seq + p * each.size() + t and the member's id.
  struct MemberEvents {
    std::uint64_t first_seq = 0;
    std::vector<Event> each;  // empty: the members' events were emitted one by one
  };
  Result<void> submit_array(const Job& tmpl, const std::vector<std::int32_t>& indices, Time now,
                            std::optional<std::string> hold = std::nullopt, MemberEvents* quiet = nullptr);
  // A command on every member of an array (`members`: their ids, in member order), as a front
  // end's loop over them would give it (hold or release: each pending member not held, or held;
  // cancel: each unfinished one): the members in the array's blocks are changed at once, and
  // for each other member `each` is called to do what the loop would, in turn (so the events
  // come in member order). Returns how many of the blocks' members took it; nullopt, calling
  // nothing, when the array has no block: the front end loops. A cancelled block's members stay
  // (Cancelled) until each is forgotten.
  enum class ArrayCommand : std::uint8_t { kHold, kRelease, kCancel };
  std::optional<std::size_t> array_command(const std::string& array, const std::vector<std::string>& members,
                                           ArrayCommand command, Time now, const std::string& reason,
                                           const std::function<void(const JobId&)>& each);
  Result<void> restore_running(JobSpec spec, const RunningPlacement& where, Time now);
  // A restored job's counts as the front end kept them (requeues, preemptions): they go on from
  // there. An unknown id changes nothing.
  void restore_counts(const JobId& id, std::int32_t attempts, std::int32_t preemptions, std::int32_t retried = 0);
  // Room for this many more jobs (a restart restoring a million jobs rehashes nothing).
  void reserve_jobs(std::size_t more);
  // Drops a job that ended and holds nothing any more from memory, so that the engine's memory
  // is bounded by its live jobs: job() no longer finds it, its slot is used again, and its id is
  // free again here (a front end that keeps finished jobs elsewhere refuses the id itself). False,
  // changing nothing, for an unknown or unfinished job, or one whose processes still stop
  // (draining: ask again once they have).
  bool forget(const JobId& id);
  std::size_t job_slots() const { return jobs_.size(); }  // live and free, for tests
  // Where a job is kept (< job_slots()): the same while it lives, and in a copy of the engine
  // (a per-job table beside the engine, as the start-time estimates are, keyed with Job::order,
  // which no other job shares, to tell a slot's later job apart).
  std::uint32_t slot_of(const Job& job) const { return static_cast<std::uint32_t>(&job - jobs_.data()); }
  // `reason`: the job's end reason (a front end's policy may say why it cancelled it); `to`:
  // Cancelled, or Failed for a job its front end fails (a dependency that can never be met).
  Result<void> cancel(const JobId& id, Time now, std::string reason = "cancelled",
                      JobState to = JobState::kCancelled);
  // A pending job out of its queue's order (still counted as pending) until release_hold puts it
  // back in its place; `reason` is the event's. Holding a held job changes nothing. Errors:
  // kNotFound, kFailedPrecondition (not pending, being admitted, or, releasing, not held).
  enum class HoldKind : std::uint8_t { kUser, kDependency };
  // `quiet`: no event (a front end restoring its holds).
  Result<void> hold(const JobId& id, Time now, std::string reason, HoldKind kind = HoldKind::kUser,
                    bool quiet = false);
  Result<void> release_hold(const JobId& id, Time now, std::string reason, HoldKind kind = HoldKind::kUser);
  // A pending job's priority, maxRuntime or queue changed (gpuq update; scheduler/update.cpp):
  // it takes its new place (its submission time and order kept), checked as a submission is
  // against its new queue. Errors: kNotFound, kFailedPrecondition (not pending, or being
  // admitted), kRejected (it could never fit its new queue), kInvalidArgument.
  struct JobUpdate {
    std::optional<std::int32_t> priority;
    std::optional<std::optional<Time>> max_runtime;  // a value of nullopt: no limit
    std::optional<QueueName> queue;
  };
  Result<void> update(const JobId& id, const JobUpdate& u, Time now, std::string reason);
  Result<void> observe(const BinderFact& fact, Time now);
  // Declares a queue's decayed average usage as of `now` (restored state, or a scenario's).
  Result<void> set_usage_history(const QueueName& queue, const ResourceVec& average, Time now);
  std::vector<Decision> schedule(Time now);
  std::vector<Event> take_events();

  // Queries.
  // A job kept as a job of its own: an array's member that waits in its block is not (view()).
  const Job* job(const JobId& id) const;
  // Any job, an array's member in its block too, as a copy: what job() would show of it if it
  // were a job of its own (pending_reason and explain take it as they take a kept job).
  std::optional<Job> view(const JobId& id) const;
  // The job, or for an array's member in its block that block's entry: what the member shares
  // with the block (state, holds, reasons, queue, owner, counts), but not its id, index or order.
  const Job* entry(const JobId& id) const;
  // A job's order (Job::order), an array's member in its block too; nullopt: no such job.
  std::optional<std::uint64_t> order_of(const JobId& id) const;
  // The orders of the members an array's block stands for, as ranges [from, to); empty for any
  // other job.
  std::vector<std::pair<std::uint64_t, std::uint64_t>> block_orders(const Job& entry) const;
  // How many jobs a pending entry stands for: an array's block, its members that wait in it;
  // any other job, 1.
  std::uint32_t members_of(const Job& job) const;
  std::string pending_reason(const Job& job) const;
  // What `gpuq explain` shows of an unfinished job (scheduler/explain_job.cpp).
  JobExplanation explain(const Job& job) const;
  std::vector<const Job*> pending_in_submission_order() const;
  // Each pending job with its place in its queue's order (priority, then submission; 1-based)
  // out of how many wait there; a preemptor holding a booking is at 0 of 0 (it goes next).
  struct Queued {
    const Job* job;
    std::size_t position, of;
  };
  std::vector<Queued> pending_in_queue_order() const;
  std::optional<QueueIdx> queue_index(const QueueName& name) const;
  const QueueSpec& queue_spec(QueueIdx q) const { return queues_[q].spec; }
  std::size_t queue_count() const { return queues_.size(); }  // removed ones included
  std::size_t pending_count(QueueIdx q) const {
    return queues_[q].pending.size() + queues_[q].in_blocks + queues_[q].held;
  }
  // A job owner's jobs in queue q: pending (a booked preemptor not counted, as pending_count),
  // and admitted or running (a booked preemptor counted: maxRunningJobsPerUser).
  struct OwnerJobs {
    std::uint32_t pending = 0, running = 0;
  };
  OwnerJobs owner_jobs(QueueIdx q, const std::string& owner) const;
  // A queue's unfinished jobs by state, from the engine's indexes (no walk over pending jobs).
  struct QueueJobCounts {
    std::size_t pending = 0, admitted = 0, running = 0, preempting = 0;
  };
  QueueJobCounts job_counts(QueueIdx q) const;
  // Removes a queue that holds no job and has no node dedicated to it (FAILED_PRECONDITION
  // otherwise, NOT_FOUND when there is none). Its index stays, with no quota and no cohort, so
  // no index moves; the name is free for a new queue.
  const QuotaBook& quotas() const { return quota_; }
  const UsageHistory& usage_history() const { return history_; }
  // q's decayed average usage brought up to `now` with what it uses now, changing nothing.
  UsageHistory::Average usage_average(QueueIdx q, Time now) const {
    return history_.projected(q, queues_[q].usage_all_flavors, now);
  }
  const Cluster& cluster() const { return cluster_; }
  const Topology& topology() const { return topology_; }
  const std::string& flavor_name(FlavorId f) const { return flavor_names_[f]; }
  std::optional<FlavorId> flavor_id(const std::string& name) const;
  const CycleStats& last_cycle() const { return last_cycle_; }
  // Whether job (pending) could be admitted right now: quota and placement, changing nothing.
  bool admissible_now(const JobId& id);
  // Preemptors whose booking is held while their victims stop, in job order.
  std::vector<const Job*> reserved_jobs() const;
  // The nodes kept for a pending job by a node reservation (claims.cpp); empty when none.
  std::vector<std::string> claimed_nodes(const JobId& id) const;
  std::size_t claim_count() const { return claims_.size(); }
  // Jobs that hold resources now (admitted, running, preempting or draining), in submission order.
  std::vector<const Job*> holding_jobs() const;

 private:
  // A queue's order: priority, then submission time, order and slot. The members are laid out
  // for size (24 bytes, so a set's node is 56 and takes a 64-byte block, not 80: two per pending
  // job); the comparison keeps that order.
  struct PendingKey {
    PendingKey(std::int32_t neg_priority_, Time submitted_, std::uint64_t order_, std::uint32_t job_)
        : submitted(submitted_), order(order_), neg_priority(neg_priority_), job(job_) {}
    Time submitted;
    std::uint64_t order;
    std::int32_t neg_priority;
    std::uint32_t job;
    auto operator<=>(const PendingKey& o) const {
      return std::tie(neg_priority, submitted, order, job) <=> std::tie(o.neg_priority, o.submitted, o.order, o.job);
    }
    bool operator==(const PendingKey&) const = default;
  };
  // (priority, -admitted_at, id, job): the victim order in a queue (Kueue's: lower priority, most
  // recently admitted, then the workload's UID).
  using HoldingKey = std::tuple<std::int32_t, std::int64_t, std::string, std::uint32_t>;
  struct QueueRec {
    QueueSpec spec;
    std::set<PendingKey> pending;
    // The same jobs by request (Engine::request_hash), each in queue order: a pass jumps over
    // the jobs of a request that already failed in it (admission.cpp).
    std::unordered_map<std::uint64_t, std::set<PendingKey>> by_request;
    ResourceVec usage_all_flavors;  // for the classic DRF share of quota-less queues
    std::size_t admitted = 0;
    // What the pending jobs need at the least, so a cycle can leave the queue as soon as none of
    // them could fit: counts by total GPU and by smallest GPU pod, and jobs that ask for no GPU.
    std::map<Quantity, std::uint32_t> by_total_gpu;
    std::map<Quantity, std::uint32_t> by_smallest_gpu_pod;
    std::uint32_t without_gpu = 0;
    std::uint32_t held = 0;  // pending jobs on hold (not in `pending`)
    // Pending members in `pending` besides the one key of their array's block (weight - 1 each).
    std::size_t in_blocks = 0;
    // Pending jobs with node constraints: one of them may find victims where a job before it
    // found none, so a queue that may preempt and holds any is not left early.
    std::uint32_t constrained = 0;
    // Jobs by owner (an owner with none has no entry), for the per-user limits.
    std::unordered_map<std::string, OwnerJobs> owners;
    // Admitted and Running jobs, in the order victims are taken within a queue: lower priority,
    // then most recently admitted, then id, so a preemption walks only as far as it needs to
    // (holding_key).
    std::set<HoldingKey> holding;
    // The pending job of this queue that holds a node reservation (claims.cpp), or kNoClaim.
    std::uint32_t claimant = UINT32_MAX;
  };
  struct HeadKey;
  // Ties are broken by the jobs' ids, read where the jobs are kept (a block's id changes as its
  // members leave it, and a split may move the jobs).
  struct HeadKeyLess {
    const std::vector<Job>* jobs;
    bool operator()(const HeadKey& a, const HeadKey& b) const;
  };

  Result<void> validate_job(const JobSpec& spec) const;
  Result<Job> make_job(JobSpec spec) const;
  std::uint32_t store_job(Job job);  // with the next order
  std::uint32_t keep_job(Job job);   // in a slot (a free one first), found by its id
  void enter_job(Job job, Time now, std::optional<std::string> hold);
  static std::optional<std::string> gpu_shape_error(const JobSpec& spec);
  std::optional<std::string> never_fits(const Job& job) const;
  std::string never_fits_on(const Job& job, FlavorId f) const;
  std::string too_big_for_nodes(const Job& job, FlavorId f) const;
  std::string explain_wait(const Job& job, const WaitReason::OnFlavor& why) const;
  std::string explain_room(const Job& job, FlavorId f) const;
  std::vector<FlavorId> candidate_flavors(QueueIdx q, const JobSpec& spec) const;
  FlavorId intern_flavor(const std::string& name);
  Result<QueueIdx> resolve_dedicated(const NodeSpec& spec);

  class VictimWorld;  // preemption.cpp: the engine's state as preemption/ sees it
  class QueueRun;     // preemption.cpp: one queue's candidates, walked lazily
  bool try_preempt(std::uint32_t j, Time now, std::vector<Decision>& out);
  preemption::Candidate describe_candidate(std::uint32_t v, bool preempting) const;
  std::vector<preemption::Candidate> stopping_candidates(const std::vector<QueueIdx>& sources,
                                                         FlavorId f,
                                                         const preemption::Preemptor& p) const;
  void commit_preemption(std::uint32_t j, FlavorId f, const std::vector<preemption::Target>& targets,
                         Time now, std::vector<Decision>& out);
  std::vector<PodSlot> retake_residual(const std::vector<PodSlot>& held);
  void victim_stopped(std::uint32_t v, Time now);
  Result<void> stop_refused(std::uint32_t v, const StopRefused& fact, Time now);
  bool quota_lost(std::uint32_t v);
  static bool same_room(const std::vector<PodSlot>& a, const std::vector<PodSlot>& b);
  void drop_reservation(std::uint32_t j, Time now);
  void admit_booked(std::uint32_t j, Time now, std::vector<Decision>& out);
  HoldingKey holding_key(std::uint32_t j) const;
  bool borrowing_on(QueueIdx q, FlavorId f, const ResourceVec& need) const;
  ResourceVec contested(const Job& job, FlavorId f) const;
  drf::Share unlimited_share(QueueIdx q, const ResourceVec* extra) const;
  double history_share(QueueIdx q) const;

  enum class AdmitOutcome { kAdmitted, kDidNotFitQuota, kDidNotFit, kGangDidNotFit };
  HeadKey head_key(QueueIdx q, const Job& job) const;
  void explain_order(const Job& job, JobExplanation& e) const;
  bool run_pass(Time now, std::vector<Decision>& out);
  AdmitOutcome try_admit(std::uint32_t j, Time now, bool commit);
  // Node reservations (claims.cpp): the placement request for job j on flavor f, seeing the
  // claims; after j failed to fit, keep (or make, or drop) the nodes claimed for it.
  PlacementRequest placement_request(std::uint32_t j, FlavorId f) const;
  bool update_claim(std::uint32_t j, AdmitOutcome outcome);
  void drop_claim(std::uint32_t j);
  bool owed(QueueIdx q, FlavorId f) const;
  std::vector<NodeIdx> choose_claim(const Job& job, FlavorId f) const;
  bool claim_holds(const Job& job, const std::vector<NodeIdx>& nodes) const;
  void admit(std::uint32_t j, FlavorId f, std::vector<PodSlot> slots, Time now);
  void release(Job& job, Time now);
  void release_quota(Job& job, Time now);
  void release_slots(Job& job);
  void start_draining(std::uint32_t j, Time now);
  void drained(std::uint32_t j);
  ResourceVec history_basis() const;
  void requeue(std::uint32_t j, Time now, const std::string& reason);
  bool retry(std::uint32_t j, Time now, const std::string& reason);
  void finish(std::uint32_t j, JobState to, Time now, std::string reason);
  void emit(const Job& job, std::optional<JobState> from, Time now, std::string reason = {});
  PendingKey pending_key(std::uint32_t j) const;
  void add_pending(std::uint32_t j);
  // Holds' bookkeeping for slot j standing for w jobs (an array's block: its weight): a job
  // just stored that enters held; one that leaves its queue's order, or goes back into it; one
  // held that ends (its flags cleared).
  void enter_held(std::uint32_t j, std::uint32_t w);
  void leave_order(std::uint32_t j, std::uint32_t w);
  void rejoin_order(std::uint32_t j, std::uint32_t w);
  void drop_hold(Job& job, std::uint32_t w = 1);
  void remove_pending(std::uint32_t j);
  bool none_can_fit(QueueIdx q) const;
  // Per-queue rules on a job (guardrails.cpp): its owner is at maxRunningJobsPerUser; it is not
  // preemptible and may not borrow; the grace period its queue gives it as a victim.
  bool at_user_limit(const Job& job) const;
  // Or at its array's throttle, or a singleton whose owner runs a job of its name (run_limits.cpp):
  // passed over as at maxRunningJobsPerUser.
  bool at_run_limit(const Job& job) const;
  std::string run_limit_reason(const Job& job) const;
  void count_groups(const Job& job, int running);
  bool nominal_only(const Job& job) const;
  Time victim_grace(const Job& job) const;
  void count_owner(const Job& job, int pending, int running);
  std::string user_limit_reason(const Job& job) const;
  std::string nominal_only_reason(const Job& job, FlavorId f) const;
  bool room_for_gpu_pod(FlavorId f, Quantity milli) const;
  Admission describe_admission(const Job& job) const;
  void lose_node(NodeIdx n, Time now);
  void lose_job(std::uint32_t j, Time now, const std::string& reason);
  void rebuild_topology_if_needed();
  Result<std::vector<PodSlot>> place_restored(const Job& job, const RunningPlacement& where,
                                              FlavorId f);
  Result<PodSlot> exact_slot(NodeIdx n, const ResourceVec& pod, const std::vector<int>& gpus,
                             const Job& job) const;

  EngineConfig config_;
  ResourceNames resources_;
  Cluster cluster_;
  Topology topology_;
  bool topology_dirty_ = false;
  QuotaBook quota_;
  ResourceVec capacity_all_;  // over all nodes, for the classic DRF share
  UsageHistory history_;
  ResourceVec basis_;  // history_basis() as of the current cycle

  std::vector<std::string> flavor_names_;
  std::unordered_map<std::string, FlavorId> flavor_ids_;
  // Node capacity by (flavor, dedicated queue or kNoQueue): what a queue could ever use, for the
  // never-fits checks. Shapes are the distinct node capacities, counted so updates can remove one.
  struct NodeShape {
    ResourceVec capacity;
    QueueIdx dedicated = kNoQueue;
    std::uint32_t count = 0;
  };
  std::vector<std::vector<NodeShape>> flavor_shapes_;
  std::map<std::pair<FlavorId, QueueIdx>, ResourceVec> capacity_by_owner_;
  void count_node(FlavorId f, QueueIdx dedicated, const ResourceVec& capacity, int delta);
  ResourceVec usable_capacity(FlavorId f, QueueIdx q) const;

  // Jobs holding resources by array ("a" + array id) and by owner and name ("s" + owner + '\x1f'
  // + name), for array throttles and singletons; a key with none has no entry.
  std::unordered_map<std::string, std::uint32_t> running_groups_;
  std::uint32_t running_in(const std::string& key) const {
    auto it = running_groups_.find(key);
    return it == running_groups_.end() ? 0 : it->second;
  }

  std::vector<QueueRec> queues_;
  std::unordered_map<std::string, QueueIdx> queue_ids_;

  std::vector<Job> jobs_;
  std::vector<std::uint32_t> free_jobs_;  // slots of forgotten jobs, used again (last freed first)
  JobIndex job_ids_;  // by id (a table of the ids' hashes: scheduler/job_index.hpp)
  static constexpr std::uint32_t kNoJob = JobIndex::kNone;
  std::uint32_t find_job(std::string_view id) const {
    return job_ids_.find(id, [this](std::uint32_t j) -> std::string_view { return jobs_[j].spec.id.value; });
  }
  bool forget_id(std::string_view id) {
    return job_ids_.erase(id, [this](std::uint32_t j) -> std::string_view { return jobs_[j].spec.id.value; });
  }
  std::set<std::pair<std::uint64_t, std::uint32_t>> active_;  // (admission seq, job) holding resources
  // Slots walked in the jobs' submission order (Job::order, fixed for a job's life), so that
  // what a walk decides never depends on which slot a job was given.
  class SlotsByOrder {
   public:
    void insert(const Job& job, std::uint32_t j) { s_.emplace(job.order, j); }
    void erase(const Job& job, std::uint32_t j) { s_.erase({job.order, j}); }
    bool contains(const Job& job, std::uint32_t j) const { return s_.count({job.order, j}) > 0; }
    struct iterator {
      std::set<std::pair<std::uint64_t, std::uint32_t>>::const_iterator it;
      std::uint32_t operator*() const { return it->second; }
      iterator& operator++() {
        ++it;
        return *this;
      }
      bool operator!=(const iterator& o) const { return it != o.it; }
    };
    iterator begin() const { return {s_.begin()}; }
    iterator end() const { return {s_.end()}; }

   private:
    std::set<std::pair<std::uint64_t, std::uint32_t>> s_;
  };
  SlotsByOrder preempting_;  // victims still stopping
  SlotsByOrder reserved_;    // preemptors holding a booking
  SlotsByOrder draining_;    // cancelled, processes still stopping (stops_confirmed)
  // Node reservations: the nodes claimed for each claimant, and by node the claimant (kNoClaim).
  std::map<std::uint32_t, std::vector<NodeIdx>> claims_;
  std::vector<std::uint32_t> claimed_by_;
  std::uint64_t claims_dropped_ = 0;  // claims given up so far (a pass tries again after one)
  static constexpr std::uint32_t kClaimRepasses = 4;
  std::uint32_t claim_repasses_ = 0;  // passes run again in this cycle for a claim given up
  std::vector<std::uint64_t> admission_seq_;                 // by job
  std::uint64_t next_order_ = 0;
  std::uint64_t next_admission_ = 0;
  std::uint64_t next_seq_ = 1;
  std::uint64_t cycle_ = 0;  // schedule() calls so far
  std::vector<Event> events_;

  // The fragmentation-aware placement's workload: the pod shapes of every job submitted (or
  // restored), as counted; the model is rebuilt at the next cycle after they changed.
  std::map<PodShape, std::size_t> shape_counts_;
  std::vector<NodeConstraints> frag_where_;  // the shapes' constraint sets (intern_where)
  FragModel frag_;
  bool frag_dirty_ = false;
  void count_shapes(const Job& job, std::size_t times = 1);

  // Lazy arrays (arrays.cpp). A block is a pending job (its carrier) standing for the members
  // of one array that wait unchanged: its spec, id, index and order are its lowest such
  // member's, and the pending indexes count it with its weight (members_of). The carrier is not
  // in job_ids_: a member's id is found through block_of_.
  struct ArrayBlock {
    std::shared_ptr<const std::vector<std::int32_t>> indices;  // every member's, by position
    std::uint64_t first_order = 0;  // the order of the member at position 0
    std::vector<std::pair<std::uint32_t, std::uint32_t>> unsplit;  // positions [lo, hi), sorted
    std::uint32_t count = 0;  // members in the block (always 2 or more)
  };
  boost::unordered_flat_map<std::uint32_t, ArrayBlock> blocks_;  // by carrier slot
  // Array id -> its blocks' carrier slots: one from a submission; after a restart, one per run
  // of members restored alike (Core::restore_members).
  std::unordered_map<std::string, std::vector<std::uint32_t>> block_of_;
  struct InBlock {
    std::uint32_t carrier;
    std::uint32_t pos;
  };
  std::optional<InBlock> in_block(std::string_view id) const;
  // A job's slot; an array's member in its block is split out of it first (kNoJob: none).
  std::uint32_t resolve(std::string_view id);
  std::uint32_t split(std::uint32_t carrier, std::uint32_t pos);
  void take_out(std::uint32_t carrier, std::uint32_t pos);
  Job member_of_block(std::uint32_t carrier, std::uint32_t pos) const;
  // Of the members pending entry j stands for, how many come before `job` in its queue's order
  // (j's key comes before job's).
  std::size_t members_before(std::uint32_t j, const Job& job) const;
  std::uint32_t weight(std::uint32_t j) const {
    if (blocks_.empty()) return 1;
    auto it = blocks_.find(j);
    return it == blocks_.end() ? 1 : it->second.count;
  }
  // The slot of a job kept in jobs_; kNoJob for a view (a copy).
  std::uint32_t stored_slot(const Job& job) const;
  void index_pending(std::uint32_t j);
  void unindex_pending(std::uint32_t j);

  // Per pass: (flavor, queue, shape) combinations that failed placement, so the same shape is not
  // searched for again while the pass only takes capacity. (A gang can still fit later in the
  // same cycle; the extra pass that schedule() runs for that starts with an empty memo.)
  std::unordered_set<std::uint64_t> placement_failed_;
  // Per pass: (queue, shape) -> the highest priority whose victim search found nothing. A job of
  // the same shape and no higher priority has no more candidates, so it would find nothing too.
  // What a failed victim search's answer depends on besides the world (world_stamp): the
  // candidates it passed over for a time (minRuntime, a refused stop's retry) or for having been
  // admitted in this cycle. It holds until `until`, and not past this cycle unless `keep`.
  struct SearchLimit {
    Time until = std::numeric_limits<Time>::max();
    bool keep = true;
    void merge(const SearchLimit& o) {
      until = std::min(until, o.until);
      keep = keep && o.keep;
    }
  };
  SearchLimit search_limit_;  // of the last try_preempt
  struct FailedSearch {
    std::int32_t priority;
    SearchLimit limit;
  };
  std::unordered_map<std::uint64_t, FailedSearch> preemption_failed_;
  // Per pass, memos of the admission walk over a queue's backlog (admission.cpp): the head key
  // of a request (queue, total, flavors) at a quota version, and the first job that failed
  // (admission and victim search) with a request, so a later job of the same queue with the same
  // request and no higher priority is passed over as it was, untried (the next pass tries it
  // again).
  struct KeyMemo {
    std::uint32_t job;
    std::uint64_t version;
    std::uint8_t tier;
    drf::Share share;
  };
  mutable std::unordered_map<std::uint64_t, KeyMemo> key_memo_;
  std::unordered_map<std::uint64_t, std::uint32_t> failed_requests_;
  bool same_request(const Job& a, const Job& b) const;
  std::uint64_t request_hash(const Job& job) const;
  CycleStats last_cycle_;

  // Across cycles (admission.cpp, "Kept failures"): a pending job's last failure (admission and
  // victim search), kept with the world it failed in. The world is the quota book, the nodes and
  // what else decides admissions (epoch_); a failed attempt changes them and undoes its changes,
  // and undone_ counts those, so world_stamp() moves exactly when something real changed.
  struct KeptFailure {
    std::uint64_t stamp = 0;
    Time until = 0;
    AdmitOutcome outcome = AdmitOutcome::kDidNotFit;
    WaitReason wait;
  };
  boost::unordered_flat_map<std::uint32_t, KeptFailure> kept_failures_;
  std::uint64_t epoch_ = 0;
  std::uint64_t undone_ = 0;
  std::uint64_t raw_stamp() const { return quota_.version() + cluster_.changes() + epoch_; }
  std::uint64_t world_stamp() const { return raw_stamp() - undone_; }
  const KeptFailure* kept_failure(std::uint32_t j, Time now) const;
  void keep_failure(std::uint32_t j, AdmitOutcome outcome);
};

}  // namespace gpuq
