#pragma once
// What users declare, as plain values: queues (with cohort, quotas and preemption policy), nodes,
// jobs (pod sets, and what the binder runs), priority classes and the cluster-wide scheduling
// settings. Every front end produces these (YAML files: spec/yaml_read.hpp; the gRPC API:
// api/from_proto.hpp; traces: sim/; Kubernetes pods and nodes: binder/kubernetes), checks them
// with spec/validate.hpp, and hands them to the engine, which consumes them.
//
// Quantities are integers in base units (spec/resources.hpp): milli-GPU, millicores, bytes.
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "spec/rare.hpp"
#include "spec/resources.hpp"

namespace gpuq {

using Time = std::int64_t;  // seconds; the engine never reads a clock, time is always an argument

// A string that means one thing only, so a queue name cannot be passed where a job id is wanted.
template <class Tag>
struct Name {
  std::string value;
  Name() = default;
  explicit Name(std::string v) : value(std::move(v)) {}
  auto operator<=>(const Name&) const = default;
  bool empty() const { return value.empty(); }
};
using JobId = Name<struct JobIdTag>;
using QueueName = Name<struct QueueNameTag>;

// Each enum's names (the ones the YAML keys, the API and the stored state use) are in
// spec/enums.hpp.
enum class NodeState { kReady, kCordoned, kDraining, kDown };
enum class QueueingStrategy { kBestEffortFIFO, kStrictFIFO };
enum class PlacementPolicy { kPack, kSpread, kFragAware };
enum class NodeLossPolicy { kRequeue, kFail };

// Preemption policies, with Kueue's names and meanings (preemption/README.md).
enum class WithinQueuePolicy { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
enum class ReclaimPolicy { kNever, kLowerPriority, kAny };
enum class BorrowWithinCohortPolicy { kNever, kLowerPriority };
// Fair-sharing preemption strategies, tried in the configured order.
enum class FairShareStrategy { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

struct PreemptionSpec {
  WithinQueuePolicy within_queue = WithinQueuePolicy::kNever;
  ReclaimPolicy reclaim_within_cohort = ReclaimPolicy::kNever;
  BorrowWithinCohortPolicy borrow_within_cohort = BorrowWithinCohortPolicy::kNever;
  std::optional<std::int32_t> borrow_max_priority_threshold;  // unset: no cap beyond "lower"
  std::int64_t min_runtime = 0;  // seconds a job of this queue runs before it may be preempted

  bool enabled() const {
    return within_queue != WithinQueuePolicy::kNever ||
           reclaim_within_cohort != ReclaimPolicy::kNever;
  }
};

struct FairSharingConfig {
  bool enabled = false;
  std::vector<FairShareStrategy> strategies = {FairShareStrategy::kLessThanOrEqualToFinalShare,
                                               FairShareStrategy::kLessThanInitialShare};
};

// The cluster-wide settings a scenario or gpuqd's config declares at its top level.
struct SchedulingPolicy {
  PlacementPolicy placement = PlacementPolicy::kPack;
  std::vector<std::string> topology_levels;  // node label keys, widest domain first
  // Decayed usage history in the fair share (seconds; 0: off): a queue's share is raised by the
  // share of the cluster it used on average lately, decaying with this half-life.
  Time usage_half_life = 0;
  // Kueue's fair-sharing preemption (strategies); off: the classic rules.
  FairSharingConfig fair_sharing;
  // Node reservations: a pending job whose queue is below its nominal quota and that fits its
  // quota but finds no room keeps nodes for itself (scheduler/claims.cpp).
  bool node_reservation = true;
};

// Named priorities, as Kubernetes' PriorityClass: a job may give a class name instead of an
// integer. A configuration that lists classes replaces these defaults.
struct PriorityClasses {
  std::map<std::string, std::int32_t> by_name = {
      {"low", -100}, {"normal", 0}, {"high", 100}, {"critical", 1000}};
};

struct ResourceQuota {
  Quantity nominal = 0;
  std::optional<Quantity> borrowing_limit;  // unset: unlimited
  std::optional<Quantity> lending_limit;    // unset: all of nominal may be lent
};

struct FlavorQuota {
  std::string flavor;
  std::vector<std::pair<ResourceId, ResourceQuota>> resources;
};

// Users and Unix groups named for a role; "*" in either list: everyone.
struct Members {
  std::vector<std::string> users;
  std::vector<std::string> groups;
  bool empty() const { return users.empty() && groups.empty(); }
  bool operator==(const Members&) const = default;
};

// Where gpuqd tells of a job's state changes (docs/tasks/batch.md, Notifications): an HTTP POST of JSON to
// `url` on each of the events in `on` (started, finished, failed, preempted, cancelled; empty:
// finished and failed). Not the engine's concern: gpuqd sends them once the change is on disk.
struct NotifySpec {
  std::string url;  // empty: none
  std::vector<std::string> on;
  bool empty() const { return url.empty(); }
  bool operator==(const NotifySpec&) const = default;
};

// A queue's policy for jobs whose GPUs sit idle (the local executor samples them; docs/tasks/standalone.md, GPU
// idleness): once every GPU of a running job has been idle this long, an event warns (once per
// idle stretch), and then the job is cancelled. Unset: never. Both > 0; cancel_after >= warn_after.
struct IdlePolicy {
  std::optional<Time> warn_after;    // seconds
  std::optional<Time> cancel_after;  // seconds
  bool empty() const { return !warn_after && !cancel_after; }
  bool operator==(const IdlePolicy&) const = default;
};

// Where and how a job submitted through gpuqd's API becomes pods on Kubernetes (binder:
// kubernetes; docs/tasks/kubernetes.md, "Jobs from the command line on Kubernetes"). The admin's: a submitter
// gives the image (within `allowed_images`), command, environment, working directory and
// resources, never the namespace or what the template sets. Empty `ns`: the queue takes no
// submitted jobs on Kubernetes (pods that users create themselves still queue in it).
struct QueueKubernetes {
  std::string ns;             // the namespace its jobs' pods are made in (a DNS-1123 label)
  std::string default_image;  // for a job that names none; "" : every job must name one
  std::vector<std::string> allowed_images;  // prefixes an image must start with; empty: any
  // A pod template (keys `metadata` and `spec`, as a PodTemplateSpec), as canonical JSON text;
  // "" : none. Its spec gives the pods their service account, runtime class, node selector,
  // tolerations, security context, volumes, image pull secrets; its first container (if any)
  // gives the job's container what it lists (volume mounts, env, resources' limits, ...).
  std::string pod_template;
  bool empty() const { return ns.empty() && default_image.empty() && allowed_images.empty() && pod_template.empty(); }
  bool operator==(const QueueKubernetes&) const = default;
};

struct QueueSpec {
  QueueName name;
  std::string cohort;  // empty: no cohort (the queue uses exactly its nominal)
  double weight = 1.0;
  QueueingStrategy strategy = QueueingStrategy::kBestEffortFIFO;
  // In the order flavors are tried. Empty: no quota at all; the queue is limited only by free
  // capacity and ordered by the classic DRF share.
  std::vector<FlavorQuota> quotas;
  PreemptionSpec preemption;
  // At most this many Pending jobs; a submission beyond it is refused (gpuqd: RESOURCE_EXHAUSTED).
  // Jobs already pending stay when the limit is lowered. 0: no limit.
  std::int32_t max_pending_jobs = 0;

  // Guardrails on one job (spec/guardrails.hpp checks a submission against them; unset or 0: no
  // limit). GPUs are the job's total over all its pods, in milli-GPU.
  std::optional<Quantity> max_gpus_per_job;
  std::int32_t max_pods_per_job = 0;
  std::optional<Time> max_runtime;          // ceiling; a job asking none gets it (or the default)
  std::optional<Time> default_max_runtime;  // for a job that asks none; <= max_runtime
  // How long its jobs run when they do not say (JobSpec::expected_runtime): only for start-time
  // estimates (scheduler/what_if.hpp), never enforced.
  std::optional<Time> runtime_estimate;
  // Told of every job of the queue (besides each job's own NotifySpec).
  NotifySpec notify;
  // A job asking a longer grace period is refused; a victim of this queue is never given longer
  // (also one submitted before the cap was lowered: the engine caps its Preemption decision).
  std::optional<Time> max_grace_period;
  std::vector<std::string> allowed_priority_classes;  // empty: any priority, named or not
  // A non-preemptible job is admitted only within its queue's nominal quota unless this is set:
  // lent quota must come back, and such a job would never give it back (engine rule).
  bool non_preemptible_may_borrow = false;
  // Per job owner (JobSpec::owner): admitted or running jobs (engine rule: the next job waits),
  // pending jobs and submissions per minute (gpuqd refuses the submission).
  std::int32_t max_running_jobs_per_user = 0;
  std::int32_t max_pending_jobs_per_user = 0;
  std::int32_t max_submits_per_user_per_minute = 0;
  // The most retries a job may ask (JobSpec::retries); 0: the global limit only.
  std::int32_t max_retries = 0;
  IdlePolicy idle;

  // Roles (gpuqd's API gate, api/access.hpp): who may submit (unset: every local user, as a
  // Slurm partition) and who may see all of the queue's jobs, not only their own.
  std::optional<Members> submitters;
  Members viewers;

  // Binder kubernetes: the namespace and pod template of the queue's submitted jobs.
  QueueKubernetes kubernetes;
};

// Where a pod may run, as Kubernetes says it (spec/constraints.hpp has the matching): node
// labels chosen by a nodeSelector and required node affinity, node taints a pod must tolerate.
enum class LabelOperator { kIn, kNotIn, kExists, kDoesNotExist, kGt, kLt };
enum class TaintEffect { kNoSchedule, kPreferNoSchedule, kNoExecute };

// The node label that names a node's GPU model ("V100M32", "NVIDIA-H100-80GB-HBM3"): the local
// executor sets it from nvidia-smi, the openb node lists from their model column, and a job's
// gpuModels is a required node affinity on it.
inline constexpr const char* kGpuModelLabel = "gpuq.io/gpu-model";
// On the local executor's node: "v2", "v1" or "none", the cgroups that hold its jobs to what they
// were given (binder/local/CGROUPS.md); "none" is a warning that they are not.
inline constexpr const char* kCgroupsLabel = "gpuq.io/cgroups";

struct NodeRequirement {  // one of a term's matchExpressions
  std::string key;
  LabelOperator op = LabelOperator::kIn;
  std::vector<std::string> values;  // In/NotIn: one or more; Gt/Lt: one integer; else none
  bool operator==(const NodeRequirement&) const = default;
};

struct Taint {
  std::string key;
  std::string value;
  TaintEffect effect = TaintEffect::kNoSchedule;
  bool operator==(const Taint&) const = default;
};

struct Toleration {
  std::string key;      // empty (with exists): every taint
  bool exists = false;  // operator Exists (any value); otherwise Equal
  std::string value;
  std::optional<TaintEffect> effect;  // unset: every effect
  bool operator==(const Toleration&) const = default;
};

// A pod set's node constraints; empty: any node of its flavor that has room.
struct NodeConstraints {
  std::map<std::string, std::string> node_selector;  // every pair must be a label of the node
  std::vector<std::vector<NodeRequirement>> affinity;  // terms ORed; a term's requirements ANDed
  std::vector<Toleration> tolerations;
  bool empty() const { return node_selector.empty() && affinity.empty() && tolerations.empty(); }
  bool operator==(const NodeConstraints&) const = default;
};

struct NodeSpec {
  std::string name;
  std::string flavor;
  ResourceVec capacity;  // gpu in milli-GPU and always whole GPUs
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;  // NoSchedule and NoExecute keep off pods that do not tolerate them
  NodeState state = NodeState::kReady;
  std::optional<QueueName> dedicated_to;
};

struct PodSet {
  std::string name;
  std::int32_t count = 1;
  ResourceVec per_pod;
  // The nodes its pods may go on (empty: any), out of line (spec/rare.hpp): most pod sets have
  // none, and a million pending jobs each hold one. `{}`: PodSet{name, count, per_pod} stays a
  // complete initializer (-Wmissing-field-initializers).
  Rare<NodeConstraints> where{};
  bool operator==(const PodSet&) const = default;
};

struct JobSpec {  // members laid out for size: a million pending jobs each hold one
  JobId id;
  QueueName queue;
  std::string owner;
  std::string name;
  // A member of a job array (gpuq submit --array): the array's id, its index, and how many of
  // the array's members may hold resources at once (0: no cap; Slurm's %N), which admission
  // honours as it does maxRunningJobsPerUser.
  std::string array_id;
  std::vector<PodSet> pod_sets;
  std::vector<std::string> flavors;  // accepted flavors; empty: any the queue has
  std::optional<Time> max_runtime;
  // How long it expects to run (<= max_runtime): only for start-time estimates, never enforced.
  std::optional<Time> expected_runtime;
  Time submitted_at = 0;
  Time grace_period = 30;
  std::int32_t priority = 0;
  // Times a failed run (non-zero exit, or its node lost with on_node_loss Fail) is requeued
  // before the job fails (gpuq submit --retries); preemption uses none of them.
  std::int32_t retries = 0;
  std::int32_t array_index = -1;
  std::int32_t array_throttle = 0;
  NodeLossPolicy on_node_loss = NodeLossPolicy::kRequeue;
  bool preemptible = true;
  bool exclusive = false;  // no other queue's pods on the nodes this job uses
  // Admitted only while no other job of the same owner and name holds resources (Slurm's
  // --dependency=singleton).
  bool singleton = false;
  bool operator==(const JobSpec&) const = default;
};

// What a binder runs for a job (the local executor: one process per pod). Not the engine's
// concern: it is kept beside the JobSpec, not in it.
struct RunSpec {
  std::vector<std::string> command;
  std::map<std::string, std::string> env;
  std::string working_dir;
  // On a terminal (gpuq run): its one pod's stdin, stdout and stderr are a pseudo-terminal whose
  // output is the log and whose input comes through Jobs.Input; its size "ROWSxCOLS" (empty: 24x80).
  bool tty = false;
  std::string tty_size;
  // Binder kubernetes: the container image (`gpuq submit --image`; empty: the queue's
  // defaultImage), and whether working_dir is only where the submitter happened to be (the
  // command line sends its current directory when --workdir is not given): a pod then starts in
  // its image's working directory.
  std::string image;
  bool working_dir_implicit = false;
  bool operator==(const RunSpec&) const = default;
};

// A job as a user submits it: the spec, what runs, and the priority as written ("high", "100",
// or empty), which the front end that knows the priority classes resolves into job.priority.
// A job waits for another to end (gpuq submit --after-ok|--after-any|--after-not-ok, Slurm's
// --dependency=afterok|afterany|afternotok): ok, once it Succeeded; not_ok, once it Failed or
// was Cancelled; any, once it ended at all. A dependency that can no longer be met fails the job.
enum class AfterKind : std::uint8_t { kOk, kAny, kNotOk };
struct Dependency {
  AfterKind kind = AfterKind::kOk;
  std::string job;  // a job id, or an array's id for every one of its members
  bool operator==(const Dependency&) const = default;
};

struct Submission {
  JobSpec job;
  RunSpec run;
  NotifySpec notify;
  std::string priority;
  bool hold = false;  // submitted held (gpuq submit --hold): pending, not scheduled until released
  std::vector<Dependency> after;
  // gpuq submit --array: the indices of its members (empty: not an array); job.array_throttle
  // caps how many run at once.
  std::vector<std::int32_t> array;
};

}  // namespace gpuq

template <class Tag>
struct std::hash<gpuq::Name<Tag>> {
  std::size_t operator()(const gpuq::Name<Tag>& n) const noexcept {
    return std::hash<std::string>{}(n.value);
  }
};
