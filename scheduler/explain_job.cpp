// Engine::explain: `gpuq explain JOB`, read from the engine's state as it stands. A walk over
// the job's queue and flavors' nodes: only when a person asks, never in a cycle.
#include <algorithm>
#include <tuple>

#include "scheduler/engine.hpp"

namespace gpuq {
namespace {

const ResourceQuota* spec_quota(const QueueSpec& spec, const std::string& flavor, ResourceId r) {
  for (const FlavorQuota& fq : spec.quotas)
    if (fq.flavor == flavor)
      for (const auto& [res, q] : fq.resources)
        if (res == r) return &q;
  return nullptr;
}

// Whether one pod asking `gpu` milli could find its GPUs on node n (whole ones wholly free, or
// a share on one GPU), whatever else it asks.
bool gpus_fit(const Node& n, Quantity gpu) {
  const GpuAsk ask = GpuAsk::of(gpu);
  if (ask.fraction > 0)
    return std::any_of(n.gpu_free.begin(), n.gpu_free.end(), [&](std::int16_t f) { return f >= ask.fraction; });
  return n.whole_free >= ask.whole;
}

}  // namespace

JobExplanation Engine::explain(const Job& job) const {
  JobExplanation e;
  e.reason = pending_reason(job);
  e.preemptions = job.preemptions;
  e.attempts = job.attempts;
  if (!job.preemption->preempted_by.empty()) {
    JobExplanation::Preempted p;
    p.by = job.preemption->preempted_by.value;
    if (const Job* by = this->job(job.preemption->preempted_by)) p.by_queue = by->spec.queue.value;
    p.reason = job.preemption->preempt_reason;
    p.at = job.preemption->preempted_at;
    e.preempted = p;
  }
  const QueueRec& q = queues_[job.queue];
  const auto& qq = quota_.queue(job.queue);
  if (job.state == JobState::kPending) {
    if (job.reserved || job.off_order()) {  // held: in no order until released
      e.queue_position = e.queue_pending = 0;
    } else {
      // The members before it (job may be a view of an array's member in its block: its place
      // is among the block's members, by order).
      e.queue_pending = q.pending.size() + q.in_blocks;
      const auto me = std::make_tuple(-job.spec.priority, job.spec.submitted_at, job.order);
      for (const PendingKey& k : q.pending) {
        if (std::make_tuple(k.neg_priority, k.submitted, k.order) >= me) break;
        e.queue_position += members_before(k.job, job);
      }
      ++e.queue_position;
    }
  }
  if (job.state == JobState::kPending && !job.off_order() && (qq.unlimited || !job.candidates.empty())) {
    explain_order(job, e);
  }

  if (job.state != JobState::kPending) return e;  // the rest says what holds a waiting job

  // Quota: per flavor it may use, each resource it asks for or the queue lists there.
  const QuotaBook::Cohort* cohort = quota_.cohort_of(job.queue);
  for (FlavorId f : job.candidates) {
    if (f == kNoFlavor || qq.unlimited || f >= qq.rows.size() || !qq.rows[f].present) continue;
    const auto& row = qq.rows[f];
    for (ResourceId r = 0; r < resources_.size(); ++r) {
      if (job.total[r] == 0 && !row.listed[r]) continue;
      JobExplanation::Quota line;
      line.flavor = flavor_names_[f];
      line.resource = r;
      line.requested = job.total[r];
      line.nominal = row.listed[r] ? row.nominal[r] : 0;
      line.used = quota_.usage(job.queue, f)[r];
      line.borrowed = std::max<Quantity>(0, line.used - line.nominal);
      if (const ResourceQuota* rq = spec_quota(q.spec, line.flavor, r)) {
        line.borrowing_limit = rq->borrowing_limit;
        line.lending_limit = rq->lending_limit;
      }
      line.headroom = quota_.headroom(job.queue, f, r);
      line.reachable = quota_.reachable(job.queue, f, r);
      if (cohort != nullptr) {
        line.cohort = cohort->name;
        line.cohort_lendable = f < cohort->lendable.size() ? cohort->lendable[f][r] : 0;
        line.cohort_used = f < cohort->used.size() ? cohort->used[f][r] : 0;
      }
      e.quota.push_back(std::move(line));
    }
  }

  // Room: per flavor, its nodes and what is free on the open ones.
  Quantity gpu_per_pod = 0;
  Quantity smallest_gpu_pod = 0;
  for (const PodSet& s : job.spec.pod_sets) {
    gpu_per_pod = std::max(gpu_per_pod, s.per_pod[kGpu]);
    if (s.per_pod[kGpu] > 0) smallest_gpu_pod = smallest_gpu_pod == 0 ? s.per_pod[kGpu] : std::min(smallest_gpu_pod, s.per_pod[kGpu]);
  }
  for (FlavorId f : job.candidates) {
    if (f == kNoFlavor) continue;
    JobExplanation::Room room;
    room.flavor = flavor_names_[f];
    for (const PodSet& s : job.spec.pod_sets) room.pods += s.count;
    room.gpu_per_pod = gpu_per_pod;
    std::vector<std::size_t> fitting(job.spec.pod_sets.size(), 0);
    for (NodeIdx n = 0; n < cluster_.size(); ++n) {
      const Node& node = cluster_.node(n);
      if (node.flavor != f) continue;
      ++room.nodes;
      if (!node.schedulable()) continue;
      ++room.open;
      Quantity free = 0;
      for (std::int16_t g : node.gpu_free) free += g;
      room.gpu_free += free;
      room.largest_free_block = std::max(room.largest_free_block, node.whole_free);
      if (smallest_gpu_pod > 0 && !gpus_fit(node, smallest_gpu_pod)) room.gpu_stranded += free;
      for (std::size_t i = 0; i < job.spec.pod_sets.size(); ++i) {
        const PodSet& s = job.spec.pod_sets[i];
        if (cluster_.allows(n, s.where) && cluster_.can_host(n, s.per_pod, job.queue, job.spec.exclusive)) ++fitting[i];
      }
    }
    room.fitting = fitting.empty() ? 0 : *std::min_element(fitting.begin(), fitting.end());
    e.room.push_back(std::move(room));
  }
  return e;
}

}  // namespace gpuq
