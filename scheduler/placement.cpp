#include "scheduler/placement.hpp"

#include <algorithm>
#include <numeric>

namespace gpuq {
namespace {

// Restricts a search to one topology domain (or to nothing when level is unset).
struct DomainFilter {
  const Topology* topology = nullptr;
  std::size_t level = 0;
  std::uint32_t domain = Topology::kNoDomain;
  bool admits(NodeIdx n) const {
    return domain == Topology::kNoDomain || topology->domain_of(n, level) == domain;
  }
};

struct Choice {
  NodeIdx node;
  std::optional<std::uint8_t> gpu;
};

class Finder {
 public:
  Finder(const Cluster& c, const PlacementRequest& r, DomainFilter f)
      : cluster_(c), req_(r), filter_(f), ix_(c.index(r.flavor)) {}

  std::optional<Choice> find(const ResourceVec& pod) const {
    if (ix_ == nullptr) return std::nullopt;
    GpuAsk ask = GpuAsk::of(pod[kGpu]);
    const int top = static_cast<int>(ix_->by_whole_free.size()) - 1;
    if (ask.fraction == 0) return req_.policy == PlacementPolicy::kPack
                                      ? scan_up(pod, ask.whole, top)
                                      : scan_down(pod, top, ask.whole);
    if (req_.policy == PlacementPolicy::kPack) {
      // The fullest shared GPU that still has room, then a fresh GPU on the fullest node.
      for (auto it = ix_->partial.lower_bound({ask.fraction, 0, 0}); it != ix_->partial.end(); ++it)
        if (ok(std::get<1>(*it), pod)) return Choice{std::get<1>(*it), std::get<2>(*it)};
      return scan_up(pod, 1, top);
    }
    if (auto c = scan_down(pod, top, 1)) return c;
    for (auto it = ix_->partial.rbegin(); it != ix_->partial.rend(); ++it) {
      if (std::get<0>(*it) < ask.fraction) break;
      if (ok(std::get<1>(*it), pod)) return Choice{std::get<1>(*it), std::get<2>(*it)};
    }
    return std::nullopt;
  }

 private:
  bool ok(NodeIdx n, const ResourceVec& pod) const {
    return filter_.admits(n) && cluster_.can_host(n, pod, req_.queue, req_.exclusive);
  }
  std::optional<Choice> scan_bucket(int k, const ResourceVec& pod) const {
    for (NodeIdx n : ix_->by_whole_free[k])
      if (ok(n, pod)) return Choice{n, std::nullopt};
    return std::nullopt;
  }
  std::optional<Choice> scan_up(const ResourceVec& pod, int from, int to) const {
    for (int k = from; k <= to; ++k)
      if (auto c = scan_bucket(k, pod)) return c;
    return std::nullopt;
  }
  std::optional<Choice> scan_down(const ResourceVec& pod, int from, int to) const {
    for (int k = from; k >= to; --k)
      if (auto c = scan_bucket(k, pod)) return c;
    return std::nullopt;
  }

  const Cluster& cluster_;
  const PlacementRequest& req_;
  DomainFilter filter_;
  const Cluster::FreeIndex* ix_;
};

std::optional<std::vector<PodSlot>> place_within(Cluster& cluster, const PlacementRequest& req,
                                                 DomainFilter filter) {
  std::vector<PodSlot> slots;
  Finder finder(cluster, req, filter);
  for (std::uint32_t s = 0; s < req.pod_sets->size(); ++s) {
    const PodSet& set = (*req.pod_sets)[s];
    for (std::int32_t i = 0; i < set.count; ++i) {
      auto choice = finder.find(set.per_pod);
      if (!choice) {
        for (auto it = slots.rbegin(); it != slots.rend(); ++it) cluster.release(*it);
        return std::nullopt;
      }
      slots.push_back(cluster.take(choice->node, set.per_pod, req.queue, req.exclusive,
                                   req.policy, choice->gpu));
    }
  }
  return slots;
}

// Free milli-GPU a domain offers this request, for ordering candidate domains: its shared
// nodes' free GPU (kept by the cluster) plus that of its nodes dedicated to this queue.
Quantity domain_free_gpu(const Cluster& cluster, std::size_t level, std::uint32_t d,
                         const Domain& domain, const PlacementRequest& req) {
  Quantity free = cluster.domain_free(level, d, req.flavor);
  for (NodeIdx n : domain.dedicated) {
    const Node& node = cluster.node(n);
    if (node.dedicated == req.queue && node.flavor == req.flavor && node.schedulable())
      free += node.capacity[kGpu] - node.used[kGpu];
  }
  return free;
}

}  // namespace

std::optional<std::vector<PodSlot>> place(Cluster& cluster, const Topology& topology,
                                          const PlacementRequest& req) {
  std::int64_t pods = 0;
  Quantity gpu_needed = 0;
  for (const PodSet& s : *req.pod_sets) {
    pods += s.count;
    gpu_needed += s.per_pod[kGpu] * s.count;
  }
  if (pods > 1 && topology.enabled()) {
    // Narrowest level first; within a level, pack tries the domain with the least room that
    // might still hold the gang (best fit), spread the one with the most.
    for (std::size_t l = topology.level_count(); l-- > 0;) {
      const auto& domains = topology.domains(l);
      std::vector<std::pair<Quantity, std::uint32_t>> order;
      for (std::uint32_t d = 0; d < domains.size(); ++d) {
        Quantity free = domain_free_gpu(cluster, l, d, domains[d], req);
        if (free >= gpu_needed && !domains[d].nodes.empty()) order.emplace_back(free, d);
      }
      if (req.policy == PlacementPolicy::kPack)
        std::sort(order.begin(), order.end());
      else
        std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) {
          return a.first != b.first ? a.first > b.first : a.second < b.second;
        });
      for (const auto& [free, d] : order)
        if (auto slots = place_within(cluster, req, DomainFilter{&topology, l, d})) return slots;
    }
  }
  return place_within(cluster, req, DomainFilter{});
}

}  // namespace gpuq
