#include "scheduler/model.hpp"

#include <type_traits>

namespace gpuq {

const char* to_string(NodeState s) {
  switch (s) {
    case NodeState::kReady: return "Ready";
    case NodeState::kCordoned: return "Cordoned";
    case NodeState::kDraining: return "Draining";
    case NodeState::kDown: return "Down";
  }
  return "?";
}

const char* to_string(QueueingStrategy s) {
  return s == QueueingStrategy::kStrictFIFO ? "StrictFIFO" : "BestEffortFIFO";
}

const JobId* job_of(const BinderFact& fact) {
  return std::visit(
      [](const auto& f) -> const JobId* {
        if constexpr (std::is_same_v<std::decay_t<decltype(f)>, NodeLost>)
          return nullptr;
        else
          return &f.job;
      },
      fact);
}

const char* to_string(PlacementPolicy p) {
  switch (p) {
    case PlacementPolicy::kPack: return "pack";
    case PlacementPolicy::kSpread: return "spread";
    case PlacementPolicy::kFragAware: return "frag-aware";
  }
  return "?";
}

const char* to_string(WithinQueuePolicy p) {
  switch (p) {
    case WithinQueuePolicy::kNever: return "Never";
    case WithinQueuePolicy::kLowerPriority: return "LowerPriority";
    case WithinQueuePolicy::kLowerOrNewerEqualPriority: return "LowerOrNewerEqualPriority";
  }
  return "?";
}

const char* to_string(ReclaimPolicy p) {
  switch (p) {
    case ReclaimPolicy::kNever: return "Never";
    case ReclaimPolicy::kLowerPriority: return "LowerPriority";
    case ReclaimPolicy::kAny: return "Any";
  }
  return "?";
}

const char* to_string(BorrowWithinCohortPolicy p) {
  return p == BorrowWithinCohortPolicy::kLowerPriority ? "LowerPriority" : "Never";
}

const char* to_string(JobState s) {
  switch (s) {
    case JobState::kPending: return "Pending";
    case JobState::kAdmitted: return "Admitted";
    case JobState::kRunning: return "Running";
    case JobState::kPreempting: return "Preempting";
    case JobState::kSucceeded: return "Succeeded";
    case JobState::kFailed: return "Failed";
    case JobState::kCancelled: return "Cancelled";
  }
  return "?";
}

}  // namespace gpuq
