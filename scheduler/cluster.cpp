#include "scheduler/cluster.hpp"

#include <algorithm>
#include <atomic>

#include "spec/constraints.hpp"
#include "spec/quantity.hpp"

namespace gpuq {

Cluster::FreeIndex& Cluster::index_for(FlavorId f) {
  if (f >= index_.size()) index_.resize(f + 1);
  return index_[f];
}

void Cluster::index_add(NodeIdx n) {
  Node& node = nodes_[n];
  if (!node.schedulable()) return;
  node.indexed = true;
  count_domain_free(n, node.capacity[kGpu] - node.used[kGpu]);
  FreeIndex& ix = index_for(node.flavor);
  if (ix.by_whole_free.size() <= static_cast<std::size_t>(node.gpu_count()))
    ix.by_whole_free.resize(node.gpu_count() + 1);
  ix.by_whole_free[node.whole_free].insert(n);
  for (std::size_t g = 0; g < node.gpu_free.size(); ++g) {
    auto f = node.gpu_free[g];
    if (f > 0 && f < kMilliPerGpu) ix.partial.emplace(f, n, static_cast<std::uint8_t>(g));
  }
}

void Cluster::index_remove(NodeIdx n) {
  Node& node = nodes_[n];
  if (!node.indexed) return;
  node.indexed = false;
  count_domain_free(n, -(node.capacity[kGpu] - node.used[kGpu]));
  FreeIndex& ix = index_for(node.flavor);
  ix.by_whole_free[node.whole_free].erase(n);
  for (std::size_t g = 0; g < node.gpu_free.size(); ++g) {
    auto f = node.gpu_free[g];
    if (f > 0 && f < kMilliPerGpu) ix.partial.erase({f, n, static_cast<std::uint8_t>(g)});
  }
}

Result<NodeIdx> Cluster::upsert(const NodeSpec& spec, FlavorId flavor, QueueIdx dedicated) {
  ++changes_;
  if (spec.capacity[kGpu] % kMilliPerGpu != 0)
    return Error{"node \"" + spec.name + "\": gpu capacity " +
                 format_quantity(spec.capacity[kGpu], UnitScale::kMilli) +
                 " is not a whole number of GPUs"};
  const auto gpus = static_cast<std::size_t>(spec.capacity[kGpu] / kMilliPerGpu);
  if (gpus > 255) return Error{"node \"" + spec.name + "\": at most 255 GPUs per node"};

  auto it = by_name_.find(spec.name);
  if (it == by_name_.end()) {
    Node node;
    node.name = spec.name;
    node.gpu_free.assign(gpus, static_cast<std::int16_t>(kMilliPerGpu));
    node.whole_free = static_cast<int>(gpus);
    nodes_.push_back(std::move(node));
    it = by_name_.emplace(spec.name, static_cast<NodeIdx>(nodes_.size() - 1)).first;
  } else {
    const Node& old = nodes_[it->second];
    for (std::size_t r = 1; r < kMaxResources; ++r)
      if (old.used.v[r] > spec.capacity.v[r])
        return Error{"node \"" + spec.name + "\": the new capacity is below what its pods hold"};
    for (std::size_t g = gpus; g < old.gpu_free.size(); ++g)
      if (old.gpu_free[g] != kMilliPerGpu)
        return Error{"node \"" + spec.name + "\": GPU " + std::to_string(g) +
                     " is in use; it cannot be removed from the node's capacity"};
    if (old.flavor != flavor && !old.used.is_zero())
      return Error{"node \"" + spec.name + "\": its flavor cannot change while pods run on it"};
  }
  NodeIdx n = it->second;
  index_remove(n);
  Node& node = nodes_[n];
  node.flavor = flavor;
  node.capacity = spec.capacity;
  node.labels = spec.labels;
  node.taints = spec.taints;
  node.blocking_taints = std::any_of(spec.taints.begin(), spec.taints.end(), [](const Taint& t) {
    return t.effect != TaintEffect::kPreferNoSchedule;
  });
  node.state = spec.state;
  node.dedicated = dedicated;
  while (node.gpu_free.size() < gpus) {
    node.gpu_free.push_back(static_cast<std::int16_t>(kMilliPerGpu));
    ++node.whole_free;
  }
  if (node.gpu_free.size() > gpus) {  // the removed GPUs were checked to be free above
    node.whole_free -= static_cast<int>(node.gpu_free.size() - gpus);
    node.gpu_free.resize(gpus);
  }
  index_add(n);
  nodes_version_ = next_nodes_version();
  return n;
}

std::uint64_t Cluster::next_nodes_version() {
  // Process-wide, so two clusters never share a version (the value decides nothing).
  static std::atomic<std::uint64_t> last{0};
  return ++last;
}

void Cluster::set_state(NodeIdx n, NodeState s) {
  ++changes_;
  index_remove(n);
  nodes_[n].state = s;
  index_add(n);
}

std::optional<NodeIdx> Cluster::find(const std::string& name) const {
  auto it = by_name_.find(name);
  if (it == by_name_.end()) return std::nullopt;
  return it->second;
}

bool Cluster::can_host(NodeIdx n, const ResourceVec& pod, QueueIdx q, bool exclusive) const {
  const Node& node = nodes_[n];
  if (!node.schedulable()) return false;
  if (node.dedicated != kNoQueue && node.dedicated != q) return false;
  if (node.exclusive_queue != kNoQueue && node.exclusive_queue != q) return false;
  if (exclusive)
    for (const auto& [tq, pods] : node.tenants)
      if (tq != q && pods > 0) return false;
  return fits_physically(n, pod);
}

bool Cluster::matches_constraints(NodeIdx n, const NodeConstraints& where) const {
  return spec::allows(where, nodes_[n].labels, nodes_[n].taints);
}

bool Cluster::fits_physically(NodeIdx n, const ResourceVec& pod) const {
  const Node& node = nodes_[n];
  for (std::size_t r = 1; r < kMaxResources; ++r)
    if (pod.v[r] > node.capacity.v[r] - node.used.v[r]) return false;
  GpuAsk ask = GpuAsk::of(pod[kGpu]);
  if (ask.whole > node.whole_free) return false;
  if (ask.fraction > 0)
    return std::any_of(node.gpu_free.begin(), node.gpu_free.end(),
                       [&](std::int16_t f) { return f >= ask.fraction; });
  return true;
}

void Cluster::add_tenant(Node& node, QueueIdx q, int delta) {
  for (auto it = node.tenants.begin(); it != node.tenants.end(); ++it) {
    if (it->first != q) continue;
    it->second += delta;
    if (it->second == 0) node.tenants.erase(it);
    return;
  }
  node.tenants.emplace_back(q, static_cast<std::uint32_t>(delta));
}

void Cluster::index_moved(NodeIdx n, int whole_before, const std::vector<std::uint8_t>& gpus,
                          std::int16_t delta) {
  const Node& node = nodes_[n];
  if (!node.indexed) return;
  count_domain_free(n, Quantity{delta} * static_cast<Quantity>(gpus.size()));
  FreeIndex& ix = index_[node.flavor];
  if (node.whole_free != whole_before) {
    ix.by_whole_free[whole_before].erase(n);
    ix.by_whole_free[node.whole_free].insert(n);
  }
  for (auto g : gpus) {
    const auto now = node.gpu_free[g];
    const auto before = static_cast<std::int16_t>(now - delta);
    if (before > 0 && before < kMilliPerGpu) ix.partial.erase({before, n, g});
    if (now > 0 && now < kMilliPerGpu) ix.partial.emplace(now, n, g);
  }
}

PodSlot Cluster::take(NodeIdx n, const ResourceVec& pod, QueueIdx q, bool exclusive,
                      PlacementPolicy policy, std::optional<std::uint8_t> gpu_hint) {
  ++changes_;
  Node& node = nodes_[n];
  const int whole_before = node.whole_free;
  PodSlot slot;
  slot.node = n;
  slot.resources = pod;
  slot.queue = q;
  slot.exclusive = exclusive;
  GpuAsk ask = GpuAsk::of(pod[kGpu]);
  if (ask.fraction > 0) {
    // The GPU the index chose, else: pack onto the fullest GPU that still has room, spread
    // onto the emptiest. can_host() guaranteed that one has room.
    int best = -1;
    if (gpu_hint && node.gpu_free[*gpu_hint] >= ask.fraction) {
      best = *gpu_hint;
    } else {
      for (int g = 0; g < node.gpu_count(); ++g) {
        const auto f = node.gpu_free[g];
        if (f < ask.fraction) continue;
        if (best < 0 || (policy != PlacementPolicy::kSpread ? f < node.gpu_free[best]
                                                           : f > node.gpu_free[best]))
          best = g;
      }
    }
    if (node.gpu_free[best] == kMilliPerGpu) --node.whole_free;
    node.gpu_free[best] = static_cast<std::int16_t>(node.gpu_free[best] - ask.fraction);
    slot.gpus.push_back(static_cast<std::uint8_t>(best));
    slot.milli_per_gpu = ask.fraction;
  } else {
    for (int g = 0; g < node.gpu_count() && static_cast<int>(slot.gpus.size()) < ask.whole; ++g) {
      if (node.gpu_free[g] != kMilliPerGpu) continue;
      node.gpu_free[g] = 0;
      slot.gpus.push_back(static_cast<std::uint8_t>(g));
    }
    node.whole_free -= ask.whole;
    slot.milli_per_gpu = ask.whole > 0 ? static_cast<std::int16_t>(kMilliPerGpu) : 0;
  }
  node.used += pod;
  add_tenant(node, q, 1);
  if (exclusive) {
    node.exclusive_queue = q;
    ++node.exclusive_pods;
  }
  index_moved(n, whole_before, slot.gpus, static_cast<std::int16_t>(-slot.milli_per_gpu));
  return slot;
}

void Cluster::release(const PodSlot& slot) {
  ++changes_;
  Node& node = nodes_[slot.node];
  const int whole_before = node.whole_free;
  for (auto g : slot.gpus) {
    node.gpu_free[g] = static_cast<std::int16_t>(node.gpu_free[g] + slot.milli_per_gpu);
    if (node.gpu_free[g] == kMilliPerGpu) ++node.whole_free;
  }
  node.used -= slot.resources;
  add_tenant(node, slot.queue, -1);
  if (slot.exclusive && --node.exclusive_pods == 0) node.exclusive_queue = kNoQueue;
  index_moved(slot.node, whole_before, slot.gpus, slot.milli_per_gpu);
}

void Cluster::retake(const PodSlot& slot) {
  ++changes_;
  Node& node = nodes_[slot.node];
  const int whole_before = node.whole_free;
  for (auto g : slot.gpus) {
    if (node.gpu_free[g] == kMilliPerGpu) --node.whole_free;
    node.gpu_free[g] = static_cast<std::int16_t>(node.gpu_free[g] - slot.milli_per_gpu);
  }
  node.used += slot.resources;
  add_tenant(node, slot.queue, 1);
  if (slot.exclusive) {
    node.exclusive_queue = slot.queue;
    ++node.exclusive_pods;
  }
  index_moved(slot.node, whole_before, slot.gpus, static_cast<std::int16_t>(-slot.milli_per_gpu));
}

void Cluster::count_domain_free(NodeIdx n, Quantity delta) {
  const Node& node = nodes_[n];
  if (delta == 0 || node.dedicated != kNoQueue) return;
  for (std::size_t l = 0; l < node_domain_.size(); ++l) {
    if (n >= node_domain_[l].size() || node_domain_[l][n] == UINT32_MAX) continue;
    auto& by_flavor = domain_free_[l][node_domain_[l][n]];
    auto it = std::find_if(by_flavor.begin(), by_flavor.end(),
                           [&](const auto& e) { return e.first == node.flavor; });
    if (it == by_flavor.end()) it = by_flavor.insert(by_flavor.end(), {node.flavor, 0});
    it->second += delta;
  }
}

void Cluster::set_domains(std::vector<std::vector<std::uint32_t>> node_domain,
                          const std::vector<std::size_t>& domains_per_level) {
  ++changes_;
  node_domain_ = std::move(node_domain);
  domain_free_.assign(domains_per_level.size(), {});
  for (std::size_t l = 0; l < domains_per_level.size(); ++l) domain_free_[l].resize(domains_per_level[l]);
  for (NodeIdx n = 0; n < nodes_.size(); ++n)
    if (nodes_[n].indexed) count_domain_free(n, nodes_[n].capacity[kGpu] - nodes_[n].used[kGpu]);
}

Quantity Cluster::domain_free(std::size_t level, std::uint32_t domain, FlavorId f) const {
  if (level >= domain_free_.size() || domain >= domain_free_[level].size()) return 0;
  for (const auto& [flavor, free] : domain_free_[level][domain])
    if (flavor == f) return free;
  return 0;
}

}  // namespace gpuq
