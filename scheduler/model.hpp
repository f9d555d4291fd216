#pragma once
// The engine's vocabulary: what callers hand in (specs), what comes out (decisions, events).
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "preemption/policy.hpp"
#include "scheduler/resources.hpp"

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

enum class NodeState { kReady, kCordoned, kDraining, kDown };
enum class QueueingStrategy { kBestEffortFIFO, kStrictFIFO };
enum class PlacementPolicy { kPack, kSpread, kFragAware };
enum class JobState { kPending, kAdmitted, kRunning, kPreempting, kSucceeded, kFailed, kCancelled };
enum class NodeLossPolicy { kRequeue, kFail };

const char* to_string(NodeState s);
const char* to_string(QueueingStrategy s);
const char* to_string(JobState s);
// Succeeded, Failed or Cancelled: the job will not run again.
inline bool is_finished(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}
const char* to_string(PlacementPolicy p);
// The names the scenario format and the API use ("LowerPriority", ...).
const char* to_string(WithinQueuePolicy p);
const char* to_string(ReclaimPolicy p);
const char* to_string(BorrowWithinCohortPolicy p);

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
};

struct NodeSpec {
  std::string name;
  std::string flavor;
  ResourceVec capacity;  // gpu in milli-GPU and always whole GPUs
  std::map<std::string, std::string> labels;
  NodeState state = NodeState::kReady;
  std::optional<QueueName> dedicated_to;
};

struct PodSet {
  std::string name;
  std::int32_t count = 1;
  ResourceVec per_pod;
};

struct JobSpec {
  JobId id;
  QueueName queue;
  std::string owner;
  std::string name;
  std::int32_t priority = 0;
  Time submitted_at = 0;
  std::vector<PodSet> pod_sets;
  std::vector<std::string> flavors;  // accepted flavors; empty: any the queue has
  std::optional<Time> max_runtime;
  bool preemptible = true;
  Time grace_period = 30;
  bool exclusive = false;  // no other queue's pods on the nodes this job uses
  NodeLossPolicy on_node_loss = NodeLossPolicy::kRequeue;
};

// Where one pod of an admitted job runs.
struct PodPlacement {
  std::uint32_t pod_set = 0;
  std::string node;            // empty in quota-only mode (no nodes modelled)
  std::vector<int> gpus;       // GPU indices on the node
  Quantity gpu_milli = 0;      // per GPU: 1000 for whole GPUs, less for a shared GPU
};

struct Admission {
  JobId job;
  QueueName queue;
  std::string flavor;  // empty when the queue has no quotas and no nodes are modelled
  std::vector<PodPlacement> pods;
};

// A running job chosen as a victim: the binder stops it, giving it grace_period seconds.
struct Preemption {
  JobId job;
  QueueName queue;
  JobId by;  // the preemptor
  PreemptReason reason = PreemptReason::kInQueue;
  Time grace_period = 0;
};

using Decision = std::variant<Admission, Preemption>;

struct Event {
  std::uint64_t seq = 0;  // strictly increasing across all events of one engine
  Time at = 0;
  JobId job;
  std::optional<JobState> from;  // nullopt on submit
  JobState to = JobState::kPending;
  std::string reason;
};

// What a binder observes and reports back.
struct JobStarted {
  JobId job;
};
struct JobFinished {
  JobId job;
  int exit_code = 0;
  std::string reason;
};
// A job the binder was asked to stop (preempted) has stopped: its resources are free.
struct JobStopped {
  JobId job;
};
struct NodeLost {
  std::string node;
};
// The job's processes vanished without a word (the local executor found them gone after a
// restart): handled as a loss of its node for that job alone (on_node_loss: requeued or Failed).
struct JobLost {
  JobId job;
  std::string reason;
};
using BinderFact = std::variant<JobStarted, JobFinished, JobStopped, NodeLost, JobLost>;
// The job a fact is about; nullptr for NodeLost.
const JobId* job_of(const BinderFact& fact);

}  // namespace gpuq

template <class Tag>
struct std::hash<gpuq::Name<Tag>> {
  std::size_t operator()(const gpuq::Name<Tag>& n) const noexcept {
    return std::hash<std::string>{}(n.value);
  }
};
