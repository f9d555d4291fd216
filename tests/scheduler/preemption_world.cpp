// Random worlds for the preemption property test, and what it recomputes from specs.
#include <doctest/doctest.h>

#include "tests/scheduler/preemption_world.hpp"

#include <algorithm>
#include <sstream>

#include "tests/scheduler/invariants.hpp"
#include "tests/support/builders.hpp"

namespace gpuq::test {

const std::vector<std::string> kFlavors = {"h100", "a100"};

// ---------------------------------------------------------------------------------------------
// Random worlds.

PreemptionSpec random_policy(Rng& w) {
  PreemptionSpec p;
  const int within = w.pick(0, 9);
  p.within_queue = within < 4   ? WithinQueuePolicy::kNever
                   : within < 7 ? WithinQueuePolicy::kLowerPriority
                                : WithinQueuePolicy::kLowerOrNewerEqualPriority;
  const int reclaim = w.pick(0, 9);
  p.reclaim_within_cohort = reclaim < 2   ? ReclaimPolicy::kNever
                            : reclaim < 6 ? ReclaimPolicy::kLowerPriority
                                          : ReclaimPolicy::kAny;
  if (p.reclaim_within_cohort != ReclaimPolicy::kNever && w.chance(40)) {
    p.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
    if (w.chance(60)) p.borrow_max_priority_threshold = w.pick(0, 3);
  }
  if (w.chance(35)) p.min_runtime = w.pick(1, 4);
  return p;
}

std::vector<QueueSpec> random_queues(Rng& w) {
  std::vector<QueueSpec> out;
  const int n = w.pick(1, 4);
  for (int i = 0; i < n; ++i) {
    QueueSpec q;
    q.name = QueueName("q" + std::to_string(i));
    q.weight = w.pick(1, 3);
    q.strategy = w.chance(15) ? QueueingStrategy::kStrictFIFO : QueueingStrategy::kBestEffortFIFO;
    q.preemption = random_policy(w);
    if (w.chance(92)) {
      if (w.chance(90)) q.cohort = w.chance(85) ? "c0" : "c1";
      const int flavors = w.pick(1, 2);
      const int first = w.pick(0, 1);
      for (int f = 0; f < flavors; ++f) {
        FlavorQuota fq;
        fq.flavor = kFlavors[(first + f) % 2];
        ResourceQuota gpu{gpus(w.pick(0, 8)), std::nullopt, std::nullopt};
        if (!q.cohort.empty() && w.chance(40)) gpu.borrowing_limit = gpus(w.pick(0, 4));
        if (!q.cohort.empty() && w.chance(30)) gpu.lending_limit = gpus(w.pick(0, 6));
        fq.resources.emplace_back(kGpu, gpu);
        if (w.chance(40)) {
          ResourceQuota cpu{cores(w.pick(8, 64)), std::nullopt, std::nullopt};
          if (!q.cohort.empty() && w.chance(30)) cpu.borrowing_limit = cores(w.pick(0, 32));
          fq.resources.emplace_back(kCpu, cpu);
        }
        if (w.chance(15)) fq.resources.emplace_back(kMemory, ResourceQuota{gib(w.pick(32, 256)), std::nullopt, std::nullopt});
        q.quotas.push_back(fq);
      }
    }
    out.push_back(q);
  }
  return out;
}

std::vector<NodeSpec> random_nodes(Rng& w, int queues) {
  std::vector<NodeSpec> out;
  const int n = w.pick(1, 4);
  for (int i = 0; i < n; ++i) {
    NodeSpec s = node("n" + std::to_string(i), kFlavors[w.pick(0, 1)],
                      res(gpus(w.pick(1, 8)), cores(w.pick(16, 64)), gib(w.pick(64, 256))),
                      {{"zone", "z" + std::to_string(i % 2)}, {"rack", "r" + std::to_string(i % 3)}});
    if (w.chance(5)) s.state = w.chance(50) ? NodeState::kCordoned : NodeState::kDraining;
    if (w.chance(8)) s.dedicated_to = QueueName("q" + std::to_string(w.pick(0, queues - 1)));
    if (w.chance(10)) s.taints.push_back({"gpu", "broken", TaintEffect::kNoSchedule});
    out.push_back(s);
  }
  return out;
}

JobSpec random_job(Rng& w, int id, int queues, Time now) {
  JobSpec j;
  j.id = JobId("j" + std::to_string(id));
  j.queue = QueueName("q" + std::to_string(w.pick(0, queues - 1)));
  j.priority = w.pick(0, 3);
  j.submitted_at = now;
  const int sets = w.chance(80) ? 1 : 2;
  for (int s = 0; s < sets; ++s) {
    Quantity gpu = 0;
    const int kind = w.pick(0, 9);
    if (kind < 3) gpu = 250 * w.pick(1, 3);       // a share of one GPU
    else if (kind < 9) gpu = gpus(w.pick(1, 4));  // whole GPUs
    j.pod_sets.push_back(PodSet{"s" + std::to_string(s), w.chance(70) ? 1 : w.pick(2, 3),
                                res(gpu, cores(w.pick(0, 16)), gib(w.pick(0, 32)))});
    // Node constraints on some pod sets, so victims on nodes a preemptor may not use occur.
    if (w.chance(15))
      j.pod_sets.back().where.mut().node_selector = {{"zone", "z" + std::to_string(w.pick(0, 1))}};
    if (w.chance(10)) j.pod_sets.back().where.mut().tolerations = {{"gpu", true, "", std::nullopt}};
  }
  if (j.pod_sets[0].per_pod.is_zero()) j.pod_sets[0].per_pod[kCpu] = cores(1);
  j.preemptible = !w.chance(10);
  j.grace_period = w.pick(0, 3);
  j.exclusive = w.chance(5);
  if (w.chance(10)) j.flavors = {kFlavors[w.pick(0, 1)]};
  j.on_node_loss = w.chance(50) ? NodeLossPolicy::kRequeue : NodeLossPolicy::kFail;
  return j;
}

// ---------------------------------------------------------------------------------------------
// Helpers over the engine's state.

bool same_slot(const PodSlot& a, const PodSlot& b) {
  return a.node == b.node && a.gpus == b.gpus && a.milli_per_gpu == b.milli_per_gpu &&
         a.resources == b.resources && a.queue == b.queue && a.exclusive == b.exclusive;
}

bool same_slots(const std::vector<PodSlot>& a, const std::vector<PodSlot>& b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(), same_slot);
}

std::string describe_slots(const std::vector<PodSlot>& slots) {
  std::ostringstream out;
  for (const PodSlot& s : slots) {
    out << "n" << s.node << ":[";
    for (auto g : s.gpus) out << int{g} << ",";
    out << "]x" << s.milli_per_gpu << " cpu=" << s.resources[kCpu] << (s.exclusive ? " excl" : "")
        << "; ";
  }
  return out.str();
}

Nominal nominal_of(const QueueSpec& spec, const std::string& flavor) {
  Nominal n;
  n.unlimited = spec.quotas.empty();
  for (const FlavorQuota& fq : spec.quotas) {
    if (fq.flavor != flavor) continue;
    n.present = true;
    n.listed[kGpu] = true;
    for (const auto& [r, q] : fq.resources) {
      n.listed[r] = true;
      n.nominal[r] = q.nominal;
    }
  }
  return n;
}

// Whether a queue using `used` on a flavor borrows a resource that `need` asks for.
bool borrowing(const Nominal& n, const ResourceVec& used, const ResourceVec& need) {
  for (ResourceId r = 0; r < kMaxResources; ++r) {
    if (need[r] <= 0) continue;
    if (n.unlimited ? used[r] > 0 : n.present && n.listed[r] && used[r] > n.nominal[r]) return true;
  }
  return false;
}

// Whether `used` (the preemptor included) is within the nominal on every listed resource that
// `need` asks for.
bool within_nominal(const Nominal& n, const ResourceVec& used, const ResourceVec& need) {
  if (n.unlimited) return false;
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (n.listed[r] && need[r] > 0 && used[r] > n.nominal[r]) return false;
  return true;
}

std::string serialize(Time now, const std::vector<Decision>& ds, const std::vector<Event>& events) {
  std::ostringstream out;
  out << "T " << now << "\n";
  for (const auto& d : ds) {
    if (const auto* a = std::get_if<Admission>(&d)) {
      out << "A " << a->job.value << " " << a->queue.value << " " << a->flavor;
      for (const auto& p : a->pods) {
        out << " " << p.pod_set << "@" << p.node << ":";
        for (int g : p.gpus) out << g << ",";
        out << p.gpu_milli;
      }
    } else {
      const auto& p = std::get<Preemption>(d);
      out << "P " << p.job.value << " " << p.queue.value << " by " << p.by.value << " "
          << to_string(p.reason) << " grace " << p.grace_period;
    }
    out << "\n";
  }
  for (const auto& ev : events)
    out << "E " << ev.seq << " " << ev.at << " " << ev.job.value << " "
        << (ev.from ? to_string(*ev.from) : "-") << ">" << to_string(ev.to) << " " << ev.reason << "\n";
  return out.str();
}

// The run's configuration, queues and nodes, and every job with its state: a reproduction.
std::string describe_world(const Engine& e, const std::vector<std::string>& ids) {
  std::ostringstream out;
  const EngineConfig& c = e.config();
  out << "\nconfig: placement=" << to_string(c.placement) << " quota_only=" << c.quota_only
      << " topology=" << c.topology_levels.size() << " fair=" << c.fair_sharing.enabled;
  if (c.fair_sharing.enabled)
    for (auto s : c.fair_sharing.strategies)
      out << (s == FairShareStrategy::kLessThanInitialShare ? " LessThanInitialShare" : " LessThanOrEqualToFinalShare");
  out << "\n";
  for (QueueIdx q = 0; q < e.queue_count(); ++q) {
    const QueueSpec& s = e.queue_spec(q);
    const PreemptionSpec& p = s.preemption;
    out << "queue " << q << " " << s.name.value << " cohort=" << s.cohort << " weight=" << s.weight
        << " " << to_string(s.strategy) << " within=" << to_string(p.within_queue)
        << " reclaim=" << to_string(p.reclaim_within_cohort) << " borrowWithin="
        << to_string(p.borrow_within_cohort);
    if (p.borrow_max_priority_threshold) out << "(<=" << *p.borrow_max_priority_threshold << ")";
    out << " minRuntime=" << p.min_runtime << " quotas:";
    for (const FlavorQuota& fq : s.quotas) {
      out << " " << fq.flavor << "{";
      for (const auto& [r, quota] : fq.resources) {
        out << e.resource_names().name(r) << " " << quota.nominal;
        if (quota.borrowing_limit) out << " b" << *quota.borrowing_limit;
        if (quota.lending_limit) out << " l" << *quota.lending_limit;
        out << ", ";
      }
      out << "}";
    }
    out << "\n";
  }
  out << describe_cluster(e);
  for (const auto& id : ids) {
    const Job* j = e.job(JobId(id));
    out << describe_job(*j) << " prio=" << j->spec.priority << " at=" << j->spec.submitted_at
        << " preemptible=" << j->spec.preemptible << " grace=" << j->spec.grace_period << " total{gpu "
        << j->total[kGpu] << " cpu " << j->total[kCpu] << " mem " << j->total[kMemory] << "} "
        << to_string(j->state) << (j->reserved ? " reserved" : "")
        << (j->flavor != kNoFlavor ? " on " + e.flavor_name(j->flavor) : std::string())
        << " slots " << describe_slots(j->slots) << "\n";
  }
  return out.str();
}

// Kueue's DominantResourceShare of queue q (fair sharing), recomputed from the specs: per
// resource, what q uses above its nominal summed over its flavors, per mille of what the cohort's
// queues lend of it over all flavors; the largest, over q's weight. Only for queues with quotas
// in a cohort.
drf::Share borrowing_share(const Engine& e, QueueIdx q, const UsageMap& usage) {
  const QueueSpec& spec = e.queue_spec(q);
  ResourceVec borrowed, lendable;
  for (const FlavorQuota& fq : spec.quotas) {
    const FlavorId f = *e.flavor_id(fq.flavor);
    const Nominal nom = nominal_of(spec, fq.flavor);
    auto it = usage.find({q, f});
    const ResourceVec used = it == usage.end() ? ResourceVec{} : it->second;
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (nom.listed[r] && used[r] > nom.nominal[r]) borrowed[r] += used[r] - nom.nominal[r];
  }
  for (QueueIdx m = 0; m < e.queue_count(); ++m) {
    const QueueSpec& ms = e.queue_spec(m);
    if (ms.cohort != spec.cohort) continue;
    for (const FlavorQuota& mq : ms.quotas)
      for (const auto& [r, quota] : mq.resources)
        lendable[r] += quota.lending_limit ? std::min(quota.nominal, *quota.lending_limit) : quota.nominal;
  }
  double best = 0;
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (borrowed[r] > 0 && lendable[r] > 0)
      best = std::max(best, static_cast<double>(borrowed[r]) * 1000.0 / static_cast<double>(lendable[r]));
  return drf::weighted(best, spec.weight);
}

bool borrowing_anything(const Engine& e, QueueIdx q, const UsageMap& usage) {
  const QueueSpec& spec = e.queue_spec(q);
  for (const auto& [key, used] : usage) {
    if (key.first != q) continue;
    if (spec.quotas.empty()) {
      if (used != ResourceVec{}) return true;
      continue;
    }
    const Nominal nom = nominal_of(spec, e.flavor_name(key.second));
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (nom.present && nom.listed[r] && used[r] > nom.nominal[r]) return true;
  }
  return false;
}

UsageMap quota_usage(const std::vector<const Job*>& js) {
  UsageMap out;
  for (const Job* j : js)
    if (holds_quota(*j)) out[{j->queue, j->flavor}] += j->total;
  return out;
}

// The policies allow this victim for this preemptor (the property test's check 8).
void check_policy(const Engine& e, const Preemption& p, const Job& v, const Job& by, Time now,
                  Time admitted_at) {
  const QueueSpec& vq = e.queue_spec(v.queue);
  const QueueSpec& pq = e.queue_spec(by.queue);
  const PreemptionSpec& pol = pq.preemption;
  REQUIRE(v.spec.preemptible);
  REQUIRE(now - admitted_at >= vq.preemption.min_runtime);
  REQUIRE(v.admitted_at == admitted_at);
  if (v.queue == by.queue) {
    REQUIRE(p.reason == PreemptReason::kInQueue);
    switch (pol.within_queue) {
      case WithinQueuePolicy::kNever: FAIL("withinQueue: Never, yet a job of the queue was taken"); break;
      case WithinQueuePolicy::kLowerPriority: REQUIRE(v.spec.priority < by.spec.priority); break;
      case WithinQueuePolicy::kLowerOrNewerEqualPriority:
        REQUIRE((v.spec.priority < by.spec.priority ||
                 (v.spec.priority == by.spec.priority &&
                  std::tie(by.spec.submitted_at, by.order) < std::tie(v.spec.submitted_at, v.order))));
        break;
    }
    return;
  }
  REQUIRE(p.reason != PreemptReason::kInQueue);
  REQUIRE_FALSE(pq.cohort.empty());
  REQUIRE(vq.cohort == pq.cohort);
  switch (pol.reclaim_within_cohort) {
    case ReclaimPolicy::kNever: FAIL("reclaimWithinCohort: Never, yet another queue's job was taken"); break;
    case ReclaimPolicy::kLowerPriority: REQUIRE(v.spec.priority < by.spec.priority); break;
    case ReclaimPolicy::kAny: break;
  }
  if (p.reason == PreemptReason::kReclaimWhileBorrowing) {
    REQUIRE(pol.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority);
    REQUIRE(v.spec.priority < by.spec.priority);
    if (pol.borrow_max_priority_threshold) REQUIRE(v.spec.priority <= *pol.borrow_max_priority_threshold);
  }
  if (p.reason == PreemptReason::kFairShare) REQUIRE(e.config().fair_sharing.enabled);
}

}  // namespace gpuq::test
