#pragma once
// Terse constructors for engine specs in tests. Quantities are in base units: gpu and cpu in
// thousandths (gpus(2) == 2000), memory in bytes.
#include <string>
#include <vector>

#include "scheduler/engine.hpp"

namespace gpuq::test {

inline EngineConfig engine_config(PlacementPolicy placement, bool quota_only,
                                  std::vector<std::string> topology_levels = {}) {
  EngineConfig c;
  c.placement = placement;
  c.quota_only = quota_only;
  c.topology_levels = std::move(topology_levels);
  return c;
}


inline Quantity gpus(double n) { return static_cast<Quantity>(n * 1000); }
inline Quantity cores(double n) { return static_cast<Quantity>(n * 1000); }
inline Quantity gib(std::int64_t n) { return n << 30; }

inline ResourceVec res(Quantity gpu, Quantity cpu = 0, Quantity memory = 0) {
  ResourceVec v;
  v[kGpu] = gpu;
  v[kCpu] = cpu;
  v[kMemory] = memory;
  return v;
}

struct QuotaLine {
  QuotaLine(ResourceId r, Quantity nominal_, std::optional<Quantity> borrowing = std::nullopt,
            std::optional<Quantity> lending = std::nullopt)
      : resource(r), nominal(nominal_), borrowing_limit(borrowing), lending_limit(lending) {}
  ResourceId resource;
  Quantity nominal;
  std::optional<Quantity> borrowing_limit;
  std::optional<Quantity> lending_limit;
};

inline QueueSpec queue(const std::string& name, const std::string& cohort,
                       const std::string& flavor, std::vector<QuotaLine> lines,
                       double weight = 1.0) {
  QueueSpec q;
  q.name = QueueName(name);
  q.cohort = cohort;
  q.weight = weight;
  FlavorQuota fq;
  fq.flavor = flavor;
  for (const auto& l : lines)
    fq.resources.emplace_back(l.resource, ResourceQuota{l.nominal, l.borrowing_limit, l.lending_limit});
  q.quotas.push_back(fq);
  return q;
}

inline QueueSpec unlimited_queue(const std::string& name, double weight = 1.0) {
  QueueSpec q;
  q.name = QueueName(name);
  q.weight = weight;
  return q;
}

inline NodeSpec node(const std::string& name, const std::string& flavor, ResourceVec capacity,
                     std::map<std::string, std::string> labels = {}) {
  NodeSpec n;
  n.name = name;
  n.flavor = flavor;
  n.capacity = capacity;
  n.labels = std::move(labels);
  return n;
}

inline JobSpec job(const std::string& id, const std::string& queue, ResourceVec per_pod,
                   std::int32_t count = 1, std::int32_t priority = 0, Time submitted = 0) {
  JobSpec j;
  j.id = JobId(id);
  j.queue = QueueName(queue);
  j.priority = priority;
  j.submitted_at = submitted;
  j.pod_sets.push_back(PodSet{"main", count, per_pod});
  return j;
}

inline std::vector<std::string> admitted_ids(const std::vector<Decision>& ds) {
  std::vector<std::string> out;
  for (const auto& d : ds)
    if (const auto* a = std::get_if<Admission>(&d)) out.push_back(a->job.value);
  return out;
}

inline const Admission& admission(const Decision& d) { return std::get<Admission>(d); }

// Events as lines "seq job from->to reason", to compare two engines' in one CHECK that shows both.
inline std::string events_text(const std::vector<Event>& events) {
  std::string out;
  for (const Event& e : events)
    out += std::to_string(e.seq) + " " + e.job.value + " " + (e.from ? to_string(*e.from) : "-") + "->" +
           to_string(e.to) + " " + e.reason + "\n";
  return out;
}

// "VICTIM by PREEMPTOR" (and " REASON" with `with_reason`) for each Preemption decision.
inline std::vector<std::string> preempted_ids(const std::vector<Decision>& ds, bool with_reason = true) {
  std::vector<std::string> out;
  for (const auto& d : ds)
    if (const auto* p = std::get_if<Preemption>(&d))
      out.push_back(p->job.value + " by " + p->by.value + (with_reason ? std::string(" ") + to_string(p->reason) : ""));
  return out;
}

// Queue `q` (16 GPUs of h100, preempting lower priorities within it) and queue `other` (8 GPUs)
// on one 8-GPU h100 node `n1`. False if the engine refused any of it.
inline bool one_node_two_queues(Engine& e) {
  QueueSpec q = queue("q", "", "h100", {{kGpu, gpus(16)}});
  q.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
  return e.apply_queue(q).ok() && e.apply_queue(queue("other", "", "h100", {{kGpu, gpus(8)}})).ok() &&
         e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok();
}

}  // namespace gpuq::test
