// The engine's per-queue rules on jobs (QueueSpec): maxRunningJobsPerUser (a job whose owner has
// that many admitted or running jobs in the queue waits; the queue's next job may go, as Slurm's
// QOS MaxJobsPerUser), nonPreemptibleMayBorrow (a job that cannot be preempted would never give
// lent quota back, so it is admitted only within its queue's nominal quota unless the queue says
// it may borrow), and maxGracePeriod (a victim of the queue is never given longer to stop).
#include <algorithm>

#include "scheduler/engine.hpp"
#include "spec/guardrails.hpp"
#include "spec/quantity.hpp"

namespace gpuq {

Engine::OwnerJobs Engine::owner_jobs(QueueIdx q, const std::string& owner) const {
  const auto& owners = queues_[q].owners;
  auto it = owners.find(owner);
  return it == owners.end() ? OwnerJobs{} : it->second;
}

// Jobs without an owner (scenarios may leave it out) are nobody's: no per-user limit applies.
void Engine::count_owner(const Job& job, int pending, int running) {
  if (running != 0) count_groups(job, running);
  if (job.spec.owner.empty()) return;
  auto& owners = queues_[job.queue].owners;
  OwnerJobs& c = owners[job.spec.owner];
  c.pending = static_cast<std::uint32_t>(static_cast<int>(c.pending) + pending);
  c.running = static_cast<std::uint32_t>(static_cast<int>(c.running) + running);
  if (c.pending == 0 && c.running == 0) owners.erase(job.spec.owner);
}

bool Engine::at_user_limit(const Job& job) const {
  const std::int32_t limit = queues_[job.queue].spec.max_running_jobs_per_user;
  return limit > 0 && !job.spec.owner.empty() &&
         owner_jobs(job.queue, job.spec.owner).running >= static_cast<std::uint32_t>(limit);
}

// Borrowing is only possible in a cohort: a queue without one uses exactly its nominal already,
// and a queue without quotas has no nominal to stay within (and lends nothing).
bool Engine::nominal_only(const Job& job) const {
  if (job.spec.preemptible || queues_[job.queue].spec.non_preemptible_may_borrow) return false;
  const auto& qq = quota_.queue(job.queue);
  return !qq.unlimited && qq.cohort >= 0;
}

Time Engine::victim_grace(const Job& job) const {
  const auto& cap = queues_[job.queue].spec.max_grace_period;
  return cap ? std::min(job.spec.grace_period, *cap) : job.spec.grace_period;
}

std::string Engine::user_limit_reason(const Job& job) const {
  const QueueSpec& q = queues_[job.queue].spec;
  const std::uint32_t n = owner_jobs(job.queue, job.spec.owner).running;
  return "user " + job.spec.owner + " has " + std::to_string(n) + " admitted or running job" + (n == 1 ? "" : "s") +
         " in queue " + q.name.value + ", its maxRunningJobsPerUser (" + std::to_string(q.max_running_jobs_per_user) +
         "); it waits until one of them ends";
}

std::string Engine::nominal_only_reason(const Job& job, FlavorId f) const {
  const std::string& qname = queues_[job.queue].spec.name.value;
  std::string out = "it is not preemptible, so it runs only within queue " + qname +
                    "'s nominal quota (its nonPreemptibleMayBorrow is false)";
  const auto& row = quota_.queue(job.queue).rows[f];
  const ResourceVec& used = quota_.usage(job.queue, f);
  for (ResourceId r = 0; r < resources_.size(); ++r) {
    if (!row.listed[r] || job.total[r] <= 0 || used[r] + job.total[r] <= row.nominal[r]) continue;
    const auto show = [&](Quantity v) {
      return r == kGpu ? spec::gpus_text(v) : format_quantity(v, r);
    };
    out += ": it needs " + show(job.total[r]) + " " + resources_.name(r) + " of flavor " + flavor_names_[f] +
           " and the queue uses " + show(used[r]) + " of its nominal " + show(row.nominal[r]);
    break;
  }
  return out;
}

}  // namespace gpuq
