#pragma once
// The nodes, their GPUs one by one, and an index of free capacity so that finding a node for a
// pod does not scan every node. Pure bookkeeping: no policy beyond "does it fit".
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "spec/resources.hpp"
#include "spec/types.hpp"
#include "scheduler/node_set.hpp"
#include "spec/result.hpp"

namespace gpuq {

using NodeIdx = std::uint32_t;
using FlavorId = std::uint16_t;
using QueueIdx = std::uint32_t;
inline constexpr QueueIdx kNoQueue = UINT32_MAX;
inline constexpr FlavorId kNoFlavor = UINT16_MAX;

struct Node {
  std::string name;
  FlavorId flavor = kNoFlavor;
  ResourceVec capacity;
  ResourceVec used;                    // sum over the pods placed here (gpu in milli)
  std::vector<std::int16_t> gpu_free;  // free milli per GPU index; invariant: 0 <= x <= 1000
  int whole_free = 0;                  // GPUs with all 1000 milli free
  std::map<std::string, std::string> labels;
  std::vector<Taint> taints;
  // Some taint is NoSchedule or NoExecute: a pod set without tolerations never goes here, which
  // placement learns from this flag without looking at the taints.
  bool blocking_taints = false;
  NodeState state = NodeState::kReady;
  QueueIdx dedicated = kNoQueue;
  std::vector<std::pair<QueueIdx, std::uint32_t>> tenants;  // pods per queue on this node
  QueueIdx exclusive_queue = kNoQueue;  // set while an exclusive job of that queue runs here
  std::uint32_t exclusive_pods = 0;
  bool indexed = false;  // in its flavor's FreeIndex (exactly when schedulable)

  bool schedulable() const { return state == NodeState::kReady; }
  int gpu_count() const { return static_cast<int>(gpu_free.size()); }
};

// One pod as placed: which node, which GPUs, and what it holds there.
struct PodSlot {
  NodeIdx node = 0;
  std::vector<std::uint8_t> gpus;
  std::int16_t milli_per_gpu = 0;
  ResourceVec resources;
  QueueIdx queue = kNoQueue;
  bool exclusive = false;
};

// Which GPUs a pod asks for: none, a share of one, or whole ones.
struct GpuAsk {
  int whole = 0;              // number of wholly free GPUs
  std::int16_t fraction = 0;  // 1..999 milli on a single GPU
  static GpuAsk of(Quantity gpu_milli) {
    if (gpu_milli > 0 && gpu_milli < kMilliPerGpu) return {0, static_cast<std::int16_t>(gpu_milli)};
    return {static_cast<int>(gpu_milli / kMilliPerGpu), 0};
  }
};

class Cluster {
 public:
  // Adds a node or updates one; fails (changing nothing) when the new capacity would be below
  // what its pods already hold.
  Result<NodeIdx> upsert(const NodeSpec& spec, FlavorId flavor, QueueIdx dedicated);
  void set_state(NodeIdx n, NodeState s);

  std::optional<NodeIdx> find(const std::string& name) const;
  // Changes whenever a node is added or its spec (labels, taints) is replaced; unique across
  // clusters, so a cache keyed by it is never taken for another cluster's.
  std::uint64_t nodes_version() const { return nodes_version_; }
  // Counts every change to the nodes (pods taken and released included), so that the engine can
  // tell that the cluster is as it was: equal counts, nothing changed in between.
  std::uint64_t changes() const { return changes_; }
  const Node& node(NodeIdx n) const { return nodes_[n]; }
  std::size_t size() const { return nodes_.size(); }
  const std::vector<Node>& nodes() const { return nodes_; }

  // Whether pod could go on node n right now (state, free resources, GPUs, tenancy rules).
  // Node constraints are the caller's (allows() below).
  bool can_host(NodeIdx n, const ResourceVec& pod, QueueIdx q, bool exclusive) const;
  // Whether a pod set with these constraints may go on node n (labels and taints only). Without
  // constraints this is one flag, inline: placement asks it of every node it considers.
  bool allows(NodeIdx n, const NodeConstraints& where) const {
    return where.empty() ? !nodes_[n].blocking_taints : matches_constraints(n, where);
  }
  // Only whether the pod's resources and GPUs are free on n, whatever its state or tenancy.
  bool fits_physically(NodeIdx n, const ResourceVec& pod) const;
  // Places pod on node n, choosing GPUs by policy. Requires can_host(n, ...).
  PodSlot take(NodeIdx n, const ResourceVec& pod, QueueIdx q, bool exclusive,
               PlacementPolicy policy, std::optional<std::uint8_t> gpu_hint = std::nullopt);
  void release(const PodSlot& slot);
  // Takes exactly this slot again (its GPUs, milli and resources), after release(slot) or for a
  // slot built from free room. Requires that room to be free; state and tenancy are not checked.
  void retake(const PodSlot& slot);

  // The free-capacity index of one flavor, over schedulable nodes only.
  struct FreeIndex {
    std::vector<NodeSet> by_whole_free;  // [k] = nodes with k wholly free GPUs
    std::set<std::tuple<std::int16_t, NodeIdx, std::uint8_t>> partial;  // (free milli, node, gpu)
  };
  const FreeIndex* index(FlavorId f) const { return f < index_.size() ? &index_[f] : nullptr; }

  // Free milli-GPU of the schedulable nodes of each topology domain, by flavor, kept with the
  // index so that ranking domains for a gang costs O(domains) rather than O(nodes). Nodes
  // dedicated to a queue are left out (placement adds the requesting queue's own).
  // node_domain[level][node] is the node's domain at that level (UINT32_MAX: none).
  void set_domains(std::vector<std::vector<std::uint32_t>> node_domain,
                   const std::vector<std::size_t>& domains_per_level);
  Quantity domain_free(std::size_t level, std::uint32_t domain, FlavorId f) const;

 private:
  bool matches_constraints(NodeIdx n, const NodeConstraints& where) const;
  void index_add(NodeIdx n);
  void index_remove(NodeIdx n);
  // After a pod was taken or released on n: moves only the entries that changed (its whole-free
  // bucket; the given GPUs, each of which changed by delta milli), leaving the index exactly as
  // index_remove + index_add would, at a fraction of the set operations.
  void index_moved(NodeIdx n, int whole_before, const std::vector<std::uint8_t>& gpus,
                   std::int16_t delta);
  FreeIndex& index_for(FlavorId f);
  static void add_tenant(Node& node, QueueIdx q, int delta);
  void count_domain_free(NodeIdx n, Quantity delta);

  static std::uint64_t next_nodes_version();
  std::vector<Node> nodes_;
  std::uint64_t nodes_version_ = next_nodes_version();
  std::uint64_t changes_ = 0;
  std::unordered_map<std::string, NodeIdx> by_name_;
  std::vector<FreeIndex> index_;
  std::vector<std::vector<std::uint32_t>> node_domain_;                          // [level][node]
  std::vector<std::vector<std::vector<std::pair<FlavorId, Quantity>>>> domain_free_;  // [level][domain]
};

}  // namespace gpuq
