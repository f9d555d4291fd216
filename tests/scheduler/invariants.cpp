#include "tests/scheduler/invariants.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <tuple>

namespace gpuq::test {

std::vector<const Job*> jobs_of(const Engine& e, const std::vector<std::string>& ids) {
  std::vector<const Job*> out;
  out.reserve(ids.size());
  for (const auto& id : ids) {
    out.push_back(e.job(JobId(id)));
    REQUIRE(out.back() != nullptr);
  }
  return out;
}

bool holds_slots(const Job& j) { return j.holds_resources() || j.reserved; }

bool holds_quota(const Job& j) {
  return j.state == JobState::kAdmitted || j.state == JobState::kRunning || j.reserved;
}

void check_nodes(const Engine& e, const std::vector<const Job*>& jobs) {
  const auto& nodes = e.cluster().nodes();
  std::vector<ResourceVec> used(nodes.size());
  std::vector<std::vector<Quantity>> gpu_used(nodes.size());
  for (std::size_t n = 0; n < nodes.size(); ++n) gpu_used[n].assign(nodes[n].gpu_free.size(), 0);
  for (const Job* j : jobs) {
    if (!holds_slots(*j)) continue;
    CAPTURE(j->spec.id.value);
    if (j->state == JobState::kPreempting) {
      // A residual: any part of what it held, never exclusive.
      for (const PodSlot& s : j->slots) GPUQ_REQUIRE_EACH(!s.exclusive);
    } else if (e.config().quota_only) {
      GPUQ_REQUIRE_EACH(j->slots.empty());
    } else {
      // Gangs are all or nothing: every pod has a slot.
      std::int64_t pods = 0;
      for (const auto& s : j->spec.pod_sets) pods += s.count;
      GPUQ_REQUIRE_EACH(static_cast<std::int64_t>(j->slots.size()) == pods);
    }
    if (j->state != JobState::kPreempting && !j->slots.empty()) {
      // Each pod on a node its pod set's constraints allow (slots are in pod set order).
      std::size_t slot = 0;
      for (const PodSet& set : j->spec.pod_sets)
        for (std::int32_t i = 0; i < set.count; ++i, ++slot)
          GPUQ_REQUIRE_EACH(e.cluster().allows(j->slots[slot].node, set.where));
    }
    for (const PodSlot& s : j->slots) {
      GPUQ_REQUIRE_EACH(s.node < nodes.size());
      GPUQ_REQUIRE_EACH(nodes[s.node].flavor == j->flavor);  // on a node of the job's flavor
      used[s.node] += s.resources;
      for (auto g : s.gpus) {
        GPUQ_REQUIRE_EACH(g < gpu_used[s.node].size());
        gpu_used[s.node][g] += s.milli_per_gpu;
      }
    }
  }
  for (std::size_t n = 0; n < nodes.size(); ++n) {
    CAPTURE(nodes[n].name);
    GPUQ_REQUIRE_EACH(used[n] == nodes[n].used);
    GPUQ_REQUIRE_EACH(used[n].fits_in(nodes[n].capacity));
    for (std::size_t g = 0; g < gpu_used[n].size(); ++g) {
      GPUQ_REQUIRE_EACH(gpu_used[n][g] <= 1000);
      GPUQ_REQUIRE_EACH(gpu_used[n][g] + nodes[n].gpu_free[g] == 1000);
    }
  }
}

void check_domains(const Engine& e, std::size_t flavor_count) {
  const Topology& t = e.topology();
  const auto& nodes = e.cluster().nodes();
  for (std::size_t l = 0; l < t.level_count(); ++l)
    for (std::uint32_t d = 0; d < t.domains(l).size(); ++d)
      for (FlavorId f = 0; f < flavor_count; ++f) {
        Quantity free = 0;
        for (NodeIdx n : t.domains(l)[d].nodes)
          if (nodes[n].flavor == f && nodes[n].schedulable() && nodes[n].dedicated == kNoQueue)
            free += nodes[n].capacity[kGpu] - nodes[n].used[kGpu];
        GPUQ_REQUIRE_EACH(e.cluster().domain_free(l, d, f) == free);
      }
}

void check_quotas(const Engine& e, const std::vector<const Job*>& jobs) {
  std::map<std::pair<QueueIdx, FlavorId>, ResourceVec> usage;
  for (const Job* j : jobs)
    if (holds_quota(*j)) usage[{j->queue, j->flavor}] += j->total;
  const QuotaBook& qb = e.quotas();
  for (QueueIdx q = 0; q < e.queue_count(); ++q) {
    const auto& spec = e.queue_spec(q);
    for (const FlavorQuota& fq : spec.quotas) {
      FlavorId f = *e.flavor_id(fq.flavor);
      ResourceVec u = usage[{q, f}];
      CAPTURE(spec.name.value);
      CAPTURE(fq.flavor);
      GPUQ_REQUIRE_EACH(u == qb.usage(q, f));
      for (const auto& [r, quota] : fq.resources) {
        Quantity cap = spec.cohort.empty() ? quota.nominal
                       : quota.borrowing_limit ? quota.nominal + *quota.borrowing_limit
                                               : kUnbounded;
        GPUQ_REQUIRE_EACH(u[r] <= cap);
      }
    }
  }
  for (const auto& c : qb.cohorts())
    for (std::size_t f = 0; f < c.used.size(); ++f)
      for (ResourceId r = 0; r < kMaxResources; ++r) {
        Quantity drawn = 0;
        for (QueueIdx q : c.members) {
          const auto& row = qb.queue(q).rows[f];
          if (row.present && row.listed[r])
            drawn += std::max<Quantity>(0, usage[{q, static_cast<FlavorId>(f)}][r] - row.guaranteed[r]);
        }
        GPUQ_REQUIRE_EACH(drawn == c.used[f][r]);
        GPUQ_REQUIRE_EACH(drawn <= c.lendable[f][r]);
      }
}

std::string describe_cluster(const Engine& e) {
  std::ostringstream out;
  for (const Node& n : e.cluster().nodes()) {
    out << n.name << " " << e.flavor_name(n.flavor) << " state=" << to_string(n.state)
        << " ded=" << n.dedicated << " excl=" << n.exclusive_queue << " cpu=" << n.used[kCpu] << "/"
        << n.capacity[kCpu] << " mem=" << n.used[kMemory] << "/" << n.capacity[kMemory] << " gpus=";
    for (auto g : n.gpu_free) out << g << ",";
    out << " tenants=";
    for (auto [q, c] : n.tenants) out << q << ":" << c << ",";
    out << "\n";
  }
  return out.str();
}

std::string describe_job(const Job& j) {
  std::ostringstream out;
  out << j.spec.id.value << " q=" << j.queue << " excl=" << j.spec.exclusive << " sets=";
  for (const auto& s : j.spec.pod_sets)
    out << s.count << "x{gpu " << s.per_pod[kGpu] << " cpu " << s.per_pod[kCpu] << " mem " << s.per_pod[kMemory] << "} ";
  return out.str();
}

void check_maximal(Engine& e) {
  // A preemptor holding a booking has left its queue's pending list: it is no queue's head.
  std::vector<const Job*> pending;
  for (const Job* j : e.pending_in_submission_order())
    if (!j->reserved) pending.push_back(j);
  std::map<QueueIdx, const Job*> head;
  for (const Job* j : pending) {
    auto it = head.find(j->queue);
    auto key = [](const Job* x) { return std::tuple(-x->spec.priority, x->spec.submitted_at, x->order); };
    if (it == head.end() || key(j) < key(it->second)) head[j->queue] = j;
  }
  for (const Job* j : pending) {
    bool strict = e.queue_spec(j->queue).strategy == QueueingStrategy::kStrictFIFO;
    if (strict && head[j->queue] != j) continue;
    if (!e.admissible_now(j->spec.id)) continue;
    CAPTURE(j->spec.id.value);
    CAPTURE(e.pending_reason(*j));
    CAPTURE(describe_job(*j));
    CAPTURE(describe_cluster(e));
    FAIL("a pending job could be admitted now: the cycle stopped too early");
  }
}

}  // namespace gpuq::test
