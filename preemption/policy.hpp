#pragma once
// Preemption policies, with Kueue's names and meanings (see README.md). The engine's model
// (scheduler/model.hpp) keeps a PreemptionSpec per queue; the victim search reads it.
#include <cstdint>
#include <optional>
#include <vector>

namespace gpuq {

enum class WithinQueuePolicy { kNever, kLowerPriority, kLowerOrNewerEqualPriority };
enum class ReclaimPolicy { kNever, kLowerPriority, kAny };
enum class BorrowWithinCohortPolicy { kNever, kLowerPriority };

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

// Fair-sharing preemption strategies, tried in the configured order.
enum class FairShareStrategy { kLessThanOrEqualToFinalShare, kLessThanInitialShare };

struct FairSharingConfig {
  bool enabled = false;
  std::vector<FairShareStrategy> strategies = {FairShareStrategy::kLessThanOrEqualToFinalShare,
                                               FairShareStrategy::kLessThanInitialShare};
};

// Why a job was chosen as a victim (Kueue: InClusterQueue, InCohortReclamation,
// InCohortReclaimWhileBorrowing, InCohortFairSharing).
enum class PreemptReason : std::uint8_t { kInQueue, kReclaim, kReclaimWhileBorrowing, kFairShare };

inline const char* to_string(PreemptReason r) {
  switch (r) {
    case PreemptReason::kInQueue: return "InQueue";
    case PreemptReason::kReclaim: return "Reclaim";
    case PreemptReason::kReclaimWhileBorrowing: return "ReclaimWhileBorrowing";
    case PreemptReason::kFairShare: return "FairShare";
  }
  return "?";
}

}  // namespace gpuq
