#pragma once
// How much of a node's free GPU capacity the workload could not use: the fragmentation measure
// of FGD (Weng et al., USENIX ATC 2023; sim/FGD.md). Given the workload's typical pod shapes and
// their popularity, a node's fragmentation is the expected free milli-GPU that a pod drawn from
// that mix could not use there: all of its free GPU when the pod does not fit at all (or asks
// for no GPU), and the GPUs with less free than the pod asks per GPU when it does. The
// fragmentation-aware placement puts a pod where this grows least. Pure; memory is not part of
// the measure (as in FGD).
#include <array>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>
#include <vector>

#include "spec/resources.hpp"

namespace gpuq {

struct PodShape {
  Quantity cpu = 0;       // millicores
  int gpus = 0;           // GPUs asked for (1 for a share of one)
  std::int16_t milli = 0; // per GPU: 1000 for whole GPUs, 1..999 for a share, 0 for none
  double weight = 1;      // popularity (normalised by FragModel)
  auto operator<=>(const PodShape&) const = default;
};

// The shape of one pod: its CPU and how it asks for GPUs.
PodShape shape_of(const ResourceVec& pod);

// A node as the measure sees it: free CPU and its GPUs' free milli in ascending order (which GPU
// is which does not matter). Up to kMaxGpus GPUs; nodes with more are measured without it.
struct NodeFreeState {
  static constexpr int kMaxGpus = 16;
  Quantity cpu = 0;
  std::uint8_t gpus = 0;
  std::array<std::int16_t, kMaxGpus> free{};  // [0, gpus) ascending; the rest 0
  bool operator==(const NodeFreeState&) const = default;
  // From a node's GPUs (any order); false when it has more than kMaxGpus.
  bool assign(Quantity cpu_free, const std::vector<std::int16_t>& gpu_free);
};
struct NodeFreeStateHash {
  std::size_t operator()(const NodeFreeState& s) const noexcept;
};

class FragModel {
 public:
  FragModel() = default;
  // Shapes with their weights (counts or shares); weights are normalised to sum to 1.
  explicit FragModel(std::vector<PodShape> shapes);
  // The typical shapes of a list of pods (each counts its weight: 1 per pod, or a count): most
  // frequent first, kept until they cover `coverage` of the pods (FGD keeps 95%), normalised.
  static FragModel typical(const std::vector<PodShape>& pods, double coverage = 0.95);

  bool empty() const { return shapes_.empty(); }
  const std::vector<PodShape>& shapes() const { return shapes_; }
  // Expected free milli-GPU of a node that a pod of the mix could not use. gpu_free holds the
  // free milli of each GPU (0..1000).
  double fragmentation(Quantity cpu_free, const std::vector<std::int16_t>& gpu_free) const;
  // The same for a node state, remembered: nodes in the same state cost one evaluation. Not
  // thread-safe (one engine, one thread).
  double fragmentation(const NodeFreeState& state) const;

 private:
  double measure(Quantity cpu_free, const std::int16_t* gpu_free, int gpus) const;
  std::vector<PodShape> shapes_;
  mutable boost::unordered_flat_map<NodeFreeState, double, NodeFreeStateHash> memo_;
};

}  // namespace gpuq
