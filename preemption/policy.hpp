#pragma once
// What preemption adds to the spec's policies (spec/types.hpp: PreemptionSpec, the fair-sharing
// strategies, with Kueue's names and meanings; see README.md in this folder): why a victim was chosen.
#include <cstdint>


namespace gpuq {

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
