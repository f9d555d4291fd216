#pragma once
// How much of a node's free GPU capacity the workload could not use: the fragmentation measure
// of FGD (Weng et al., USENIX ATC 2023; sim/FGD.md). Given the workload's typical pod shapes and
// their popularity, a node's fragmentation is the expected free milli-GPU that a pod drawn from
// that mix could not use there: all of its free GPU when the pod does not fit at all (or asks
// for no GPU), and the GPUs with less free than the pod asks per GPU when it does. gpuq adds the
// free GPU that the node's free CPU cannot feed at the mix's average CPU per GPU (FGD's measure
// does not see CPU running out while GPUs are free; fragmentation.cpp). The
// fragmentation-aware placement puts a pod where this grows least. Pure; memory is not part of
// the measure (as in FGD).
#include <array>
#include <cstdint>
#include <vector>

#include <boost/unordered/unordered_flat_map.hpp>

#include "spec/resources.hpp"
#include "spec/types.hpp"

namespace gpuq {

struct PodShape {
  Quantity cpu = 0;       // millicores
  int gpus = 0;           // GPUs asked for (1 for a share of one)
  std::int16_t milli = 0; // per GPU: 1000 for whole GPUs, 1..999 for a share, 0 for none
  double weight = 1;      // popularity (normalised by FragModel)
  // Where the pod may go: an index into its FragModel's where() (0: anywhere its resources fit),
  // e.g. the GPU models it accepts (FGD's pod type has the model).
  std::uint8_t where = 0;
  auto operator<=>(const PodShape&) const = default;
};

// The constraint sets a model can tell apart: index 0 (none) and 63 others.
inline constexpr std::size_t kFragWhereSets = 64;

// The shape of one pod: its CPU and how it asks for GPUs.
PodShape shape_of(const ResourceVec& pod);
// The index of `where` in `sets` (sets[0] is none; made so when `sets` is empty), added when
// new: a PodShape's `where`. 0 when `where` is empty, or when kFragWhereSets are taken (the pod
// then counts as one that may go anywhere its resources fit).
std::uint8_t intern_where(std::vector<NodeConstraints>& sets, const NodeConstraints& where);

// A node as the measure sees it: free CPU and its GPUs' free milli in ascending order (which GPU
// is which does not matter). Up to kMaxGpus GPUs; nodes with more are measured without it.
struct NodeFreeState {
  static constexpr int kMaxGpus = 16;
  Quantity cpu = 0;
  std::uint8_t gpus = 0;
  std::array<std::int16_t, kMaxGpus> free{};  // [0, gpus) ascending; the rest 0
  std::uint64_t allowed = ~std::uint64_t{0};  // bit i: the node meets the model's where()[i]
  bool operator==(const NodeFreeState&) const = default;
  // From a node's GPUs (any order); false when it has more than kMaxGpus.
  bool assign(Quantity cpu_free, const std::vector<std::int16_t>& gpu_free,
              std::uint64_t allowed_sets = ~std::uint64_t{0});
};
struct NodeFreeStateHash {
  std::size_t operator()(const NodeFreeState& s) const noexcept;
};

class FragModel {
 public:
  FragModel() = default;
  // Shapes with their weights (counts or shares); weights are normalised to sum to 1. `where`:
  // the constraint sets the shapes' `where` index (where[0], if given, is ignored: anywhere).
  explicit FragModel(std::vector<PodShape> shapes, std::vector<NodeConstraints> where = {});
  // The typical shapes of a list of pods (each counts its weight: 1 per pod, or a count): most
  // frequent first, kept until they cover `coverage` of the pods (FGD keeps 95%), normalised.
  static FragModel typical(const std::vector<PodShape>& pods, std::vector<NodeConstraints> where = {},
                           double coverage = 0.95);

  // The same mix measured as the FGD paper does, without the CPU term (for reports that compare
  // with the paper's fragmentation numbers).
  FragModel as_published() const {
    FragModel m = *this;
    m.cpu_per_milli_ = 0;
    m.memo_.clear();
    return m;
  }

  bool empty() const { return shapes_.empty(); }
  const std::vector<PodShape>& shapes() const { return shapes_; }
  // The constraint sets of the shapes; [0] is none. A node's `allowed` mask says which it meets.
  const std::vector<NodeConstraints>& where() const { return where_; }
  // Expected free milli-GPU of a node that a pod of the mix could not use: all of it for a pod
  // whose constraints the node does not meet (bit s.where of `allowed` clear); plus the free
  // milli-GPU beyond what cpu_free feeds at the mix's CPU per milli-GPU. gpu_free holds the free
  // milli of each GPU (0..1000).
  double fragmentation(Quantity cpu_free, const std::vector<std::int16_t>& gpu_free,
                       std::uint64_t allowed = ~std::uint64_t{0}) const;
  // The same for a node state, remembered: nodes in the same state cost one evaluation. Not
  // thread-safe (one engine, one thread).
  double fragmentation(const NodeFreeState& state) const;
  // Keeps what `old` learned of which nodes meet which sets, when both have the same where():
  // a model rebuilt for a new mix (the engine's, every cycle after a submit) need not ask the
  // cluster again.
  void keep_allowed(FragModel&& old) {
    if (old.where_ != where_) return;
    allowed_ = std::move(old.allowed_);
    allowed_version_ = old.allowed_version_;
  }
  // The where() sets node `n` meets (bit i: where()[i]; bit 0 always), remembered per node while
  // `nodes_version` (the cluster's, which changes with its nodes' labels and taints) stays the
  // same; meets(c) says whether the node meets constraint set c.
  template <class Meets>
  std::uint64_t allowed(std::uint32_t n, std::uint64_t nodes_version, Meets meets) const {
    if (where_.size() <= 1) return ~std::uint64_t{0};
    if (nodes_version != allowed_version_) {
      allowed_.clear();
      allowed_version_ = nodes_version;
    }
    if (n < allowed_.size() && allowed_[n] != 0) return allowed_[n];
    std::uint64_t mask = 1;
    for (std::size_t i = 1; i < where_.size(); ++i)
      if (meets(where_[i])) mask |= std::uint64_t{1} << i;
    if (allowed_.size() <= n) allowed_.resize(n + 1, 0);
    allowed_[n] = mask;  // never 0 (bit 0): 0 marks a node not asked yet
    return mask;
  }

 private:
  double measure(Quantity cpu_free, const std::int16_t* gpu_free, int gpus, std::uint64_t allowed) const;
  std::vector<PodShape> shapes_;
  double cpu_per_milli_ = 0;  // CPU milli per milli-GPU the mix's GPU pods ask (0: none ask CPU)
  std::vector<NodeConstraints> where_{NodeConstraints{}};
  mutable boost::unordered_flat_map<NodeFreeState, double, NodeFreeStateHash> memo_;
  mutable std::vector<std::uint64_t> allowed_;  // by node; 0: not asked
  mutable std::uint64_t allowed_version_ = ~std::uint64_t{0};
};

}  // namespace gpuq
