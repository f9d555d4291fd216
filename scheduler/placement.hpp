#pragma once
// Placing a job's pods on nodes: all of them or none (a gang). Policies choose among the nodes
// that fit and that each pod set's node constraints allow (PodSet::where against the nodes'
// labels and taints); the free-capacity index keeps the search from scanning every node.
#include <optional>
#include <vector>

#include "scheduler/cluster.hpp"
#include "scheduler/fragmentation.hpp"
#include "scheduler/topology.hpp"

namespace gpuq {

struct PlacementRequest {
  FlavorId flavor = kNoFlavor;
  QueueIdx queue = kNoQueue;
  bool exclusive = false;
  const std::vector<PodSet>* pod_sets = nullptr;
  PlacementPolicy policy = PlacementPolicy::kPack;
  // kFragAware: the workload whose fragmentation a placement should grow least (FGD). Without
  // one (or an empty one) it places as kPack does.
  const FragModel* frag = nullptr;
  // Node reservations (the engine's claims, claims.cpp): claimed_by[n] is the queue whose job
  // node n is kept for, or kNoClaim. Pods go only on nodes unclaimed or claimed for this
  // request's queue. nullptr: no node is claimed.
  const std::vector<std::uint32_t>* claimed_by = nullptr;
};
inline constexpr std::uint32_t kNoClaim = UINT32_MAX;

// On success the pods are taken in the cluster and their slots returned (pod sets in order, pods
// of a set in order); on failure the cluster is left exactly as it was.
std::optional<std::vector<PodSlot>> place(Cluster& cluster, const Topology& topology,
                                          const PlacementRequest& request);

}  // namespace gpuq
