#pragma once
// Random worlds for the preemption property test (queues with random preemption policies,
// cohorts with borrowing and lending limits, nodes, fractional-GPU jobs and gangs), and what the
// test recomputes from the specs alone: nominal quotas, borrowing, Kueue's borrowing share.
#include <array>
#include <cstdint>
#include <map>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "scheduler/engine.hpp"

namespace gpuq::test {

struct Rng {
  std::mt19937_64 rng;
  explicit Rng(std::uint64_t seed) : rng(seed) {}
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool chance(int percent) { return pick(1, 100) <= percent; }
};

extern const std::vector<std::string> kFlavors;

PreemptionSpec random_policy(Rng& w);
std::vector<QueueSpec> random_queues(Rng& w);
std::vector<NodeSpec> random_nodes(Rng& w, int queues);
JobSpec random_job(Rng& w, int id, int queues, Time now);

bool same_slot(const PodSlot& a, const PodSlot& b);
bool same_slots(const std::vector<PodSlot>& a, const std::vector<PodSlot>& b);
std::string describe_slots(const std::vector<PodSlot>& slots);

// A queue's nominal on one flavor, from its spec (gpu is always limited under a listed flavor).
struct Nominal {
  bool unlimited = false;  // no quotas at all: nominal 0, everything it uses is borrowed
  bool present = false;
  ResourceVec nominal;
  std::array<bool, kMaxResources> listed{};
};

Nominal nominal_of(const QueueSpec& spec, const std::string& flavor);
// Whether a queue using `used` on a flavor borrows a resource that `need` asks for.
bool borrowing(const Nominal& n, const ResourceVec& used, const ResourceVec& need);
// Whether `used` (the preemptor included) is within the nominal on every listed resource that
// `need` asks for.
bool within_nominal(const Nominal& n, const ResourceVec& used, const ResourceVec& need);

// The policies allow victim v, admitted at `admitted_at`, for preemptor `by` (REQUIREs).
void check_policy(const Engine& e, const Preemption& p, const Job& v, const Job& by, Time now,
                  Time admitted_at);

// One cycle's decisions and events as text (the determinism check compares these).
std::string serialize(Time now, const std::vector<Decision>& ds, const std::vector<Event>& events);

// The run's configuration, queues and nodes, and every job with its state: a reproduction.
std::string describe_world(const Engine& e, const std::vector<std::string>& ids);

using UsageMap = std::map<std::pair<QueueIdx, FlavorId>, ResourceVec>;
// Kueue's borrowing share of queue q under fair sharing, recomputed from the specs.
drf::Share borrowing_share(const Engine& e, QueueIdx q, const UsageMap& usage);
// Whether q uses more than its nominal of anything, on any flavor (Kueue's DRS.IsBorrowing).
bool borrowing_anything(const Engine& e, QueueIdx q, const UsageMap& usage);
// Usage per (queue, flavor) summed over the jobs holding quota.
UsageMap quota_usage(const std::vector<const Job*>& js);

}  // namespace gpuq::test
