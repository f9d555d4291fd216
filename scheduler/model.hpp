#pragma once
// The engine's vocabulary: what callers hand in are the specs (spec/types.hpp); what comes out
// are decisions and events, and what binders report back are facts.
#include <compare>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "preemption/policy.hpp"
#include "spec/enums.hpp"
#include "spec/types.hpp"

namespace gpuq {

enum class JobState { kPending, kAdmitted, kRunning, kPreempting, kSucceeded, kFailed, kCancelled };

const char* to_string(JobState s);
// Succeeded, Failed or Cancelled: the job will not run again.
inline bool is_finished(JobState s) {
  return s == JobState::kSucceeded || s == JobState::kFailed || s == JobState::kCancelled;
}

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
  // The flavor the job holds when `to` is Admitted, Running or Preempting (accounting charges
  // each admission to its own flavor); empty otherwise, and when no flavor is modelled.
  std::string flavor;
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
// A preemption victim the binder could not stop now (Kubernetes: a PodDisruptionBudget refused
// its first eviction, so nothing of it was disrupted): it runs on where it was, its preemptors
// give their bookings back and look again, and it is no candidate for preemption until
// `retry_after` seconds have passed. The engine refuses it (FAILED_PRECONDITION) when the room
// the victim held went to another job meanwhile; the binder must then stop it after all.
struct StopRefused {
  JobId job;
  std::string reason;
  Time retry_after = 0;
};
using BinderFact = std::variant<JobStarted, JobFinished, JobStopped, NodeLost, JobLost, StopRefused>;
// The job a fact is about; nullptr for NodeLost.
const JobId* job_of(const BinderFact& fact);

}  // namespace gpuq
