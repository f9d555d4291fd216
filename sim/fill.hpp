#pragma once
// `gpuq sim fill`: the fill experiment of the FGD paper (Weng et al., USENIX ATC 2023; sim/FGD.md)
// on gpuq's own placement code. The pod list, shuffled with the seed and extended by pods drawn
// from it at random (with replacement) until the GPU requested reaches `target` times the
// cluster's GPU capacity, is placed pod by pod in that order with no departures; a pod that fits
// nowhere (GPU, CPU and memory all count) is failed and skipped.
#include <cstdint>
#include <string>
#include <vector>

#include "spec/resources.hpp"
#include "spec/types.hpp"
#include "sim/openb.hpp"

namespace gpuq::sim {

struct FillRun {
  std::uint64_t seed = 0;
  std::size_t pods = 0;      // placed or failed, the originals and the drawn ones
  std::size_t failed = 0;
  Quantity capacity_milli = 0;   // the cluster's GPU capacity
  Quantity arrived_milli = 0;    // GPU asked for by all pods, failed ones included
  Quantity allocated_milli = 0;  // GPU allocated at the end
  double alloc_ratio = 0;        // allocated / capacity
  double frag_ratio = 0;         // the workload's expected unusable free GPU / capacity
  double seconds = 0;            // wall time of the placement loop
};

struct FillSummary {
  std::string policy;
  double target = 0;
  std::vector<FillRun> runs;  // one per seed, in the order given
  double alloc_ratio_mean = 0, alloc_ratio_min = 0, alloc_ratio_max = 0;
  double frag_ratio_mean = 0;
  double failed_pods_mean = 0;
};

// Throws std::invalid_argument for a pod the fill cannot model (a GPU model constraint) or an
// empty cluster.
FillRun run_fill(const std::vector<OpenbNode>& nodes, const std::vector<OpenbPod>& pods, PlacementPolicy policy,
                 double target, std::uint64_t seed);
FillSummary summarize(PlacementPolicy policy, double target, std::vector<FillRun> runs);
// {"policy", "target", "seeds", "alloc_ratio_mean", "alloc_ratio_min", "alloc_ratio_max",
//  "frag_ratio_mean", "failed_pods_mean", "runs": [...]}, pretty-printed.
std::string to_json(const std::vector<FillSummary>& summaries);
// A table for people: one row per policy.
std::string to_table(const std::vector<FillSummary>& summaries);

// "42-51", "42,45,47" or "7": the seeds, in order. Throws std::invalid_argument naming the text.
std::vector<std::uint64_t> parse_seeds(const std::string& text);

}  // namespace gpuq::sim
