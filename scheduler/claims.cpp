// Node reservations ("claims"; "reserved" already names a booked preemptor). Without them a
// queue below its nominal quota whose next job needs a whole node (or more room on one node than
// any has free) can wait for ever: every GPU that frees goes to the smaller jobs of the queues
// after it in the fair order, and the free room stays in pieces too small for it. So a pending
// job that failed for room alone, that its quota admits, and whose queue holds less than its
// nominal quota (on the flavor it would use), claims nodes: the ones with the most wholly free
// GPUs that could hold its pods once they drain. No job of another queue is placed on a claimed node (in
// admission, in a victim search and in a booking) until the claimant runs, leaves, stops being
// owed (its queue at its nominal quota) or its nodes can no longer hold it; the claimant's own
// queue may still use them (its BestEffortFIFO order is its own: a claim keeps the queue's
// guarantee from the other queues, not the job from its queue-mates, whose GPUs count towards
// the same quota). One claimant per queue: the first job of the queue (in queue order) that
// failed so. A claim is kept while it
// can still hold the job (not moved to a node that happens to have more free a moment later),
// so a claimed node drains to it. As YuniKorn's reservations, or the nodes Slurm's backfill plans
// for its top job, a claim trades the idle room of the nodes draining for the guarantee.
#include <algorithm>

#include "scheduler/engine.hpp"

namespace gpuq {

std::vector<std::string> Engine::claimed_nodes(const JobId& id) const {
  std::vector<std::string> out;
  const std::uint32_t j = find_job(id.value);
  if (j == kNoJob) return out;
  if (auto it = claims_.find(j); it != claims_.end())
    for (NodeIdx n : it->second) out.push_back(cluster_.node(n).name);
  return out;
}

PlacementRequest Engine::placement_request(std::uint32_t j, FlavorId f) const {
  const Job& job = jobs_[j];
  PlacementRequest req{f, job.queue, job.spec.exclusive, &job.spec.pod_sets, config_.placement, &frag_};
  if (!claims_.empty()) req.claimed_by = &claimed_by_;
  return req;
}

// Whether q holds less GPU on f than its nominal quota there (a queue without quotas is owed
// nothing: it has no guarantee).
bool Engine::owed(QueueIdx q, FlavorId f) const {
  const auto& qq = quota_.queue(q);
  if (qq.unlimited || f == kNoFlavor || f >= qq.rows.size() || !qq.rows[f].present) return false;
  return qq.usage[f][kGpu] < qq.rows[f].nominal[kGpu];
}

namespace {

// Whether `pod` fits on a node of this capacity beside `planned` (the claimant's own pods
// planned there), counting GPUs whole: the node drained of every other job.
bool fits_drained(const Node& node, const ResourceVec& planned, const ResourceVec& pod) {
  for (std::size_t r = 0; r < kMaxResources; ++r)
    if (planned.v[r] + pod.v[r] > node.capacity.v[r]) return false;
  const GpuAsk ask = GpuAsk::of(pod[kGpu]);
  const Quantity whole_planned = (planned[kGpu] + kMilliPerGpu - 1) / kMilliPerGpu;
  return ask.whole + whole_planned + (ask.fraction > 0 ? 1 : 0) <= node.gpu_count();
}

}  // namespace

// The nodes to claim for `job` on flavor f: for each pod in order, a node already chosen that
// still holds it drained, else the unclaimed node with the most wholly free GPUs (then the
// lowest-numbered) that its pod set may use and that holds it drained. Empty when some pod has
// no such node.
std::vector<NodeIdx> Engine::choose_claim(const Job& job, FlavorId f) const {
  const Cluster::FreeIndex* ix = cluster_.index(f);
  if (ix == nullptr) return {};
  std::vector<NodeIdx> nodes;
  std::vector<ResourceVec> planned;
  auto usable = [&](NodeIdx n, const PodSet& set) {
    const Node& node = cluster_.node(n);
    const bool free = n >= claimed_by_.size() || claimed_by_[n] == kNoClaim || claimed_by_[n] == job.queue;
    // Not where another queue's exclusive job runs: the node is that queue's until it ends.
    return free && node.schedulable() && (node.dedicated == kNoQueue || node.dedicated == job.queue) &&
           (node.exclusive_queue == kNoQueue || node.exclusive_queue == job.queue) &&
           cluster_.allows(n, set.where);
  };
  for (const PodSet& set : job.spec.pod_sets)
    for (std::int32_t i = 0; i < set.count; ++i) {
      bool placed = false;
      for (std::size_t k = 0; k < nodes.size() && !placed; ++k)
        if (usable(nodes[k], set) && fits_drained(cluster_.node(nodes[k]), planned[k], set.per_pod)) {
          planned[k] += set.per_pod;
          placed = true;
        }
      for (int w = static_cast<int>(ix->by_whole_free.size()) - 1; w >= 0 && !placed; --w)
        for (NodeIdx n : ix->by_whole_free[static_cast<std::size_t>(w)]) {
          if (std::find(nodes.begin(), nodes.end(), n) != nodes.end() || !usable(n, set) ||
              !fits_drained(cluster_.node(n), ResourceVec{}, set.per_pod))
            continue;
          nodes.push_back(n);
          planned.push_back(set.per_pod);
          placed = true;
          break;
        }
      if (!placed) return {};
    }
  return nodes;
}

// Whether the nodes claimed for `job` can still hold all of its pods, drained.
bool Engine::claim_holds(const Job& job, const std::vector<NodeIdx>& nodes) const {
  std::vector<ResourceVec> planned(nodes.size());
  for (const PodSet& set : job.spec.pod_sets)
    for (std::int32_t i = 0; i < set.count; ++i) {
      bool placed = false;
      for (std::size_t k = 0; k < nodes.size() && !placed; ++k) {
        const Node& node = cluster_.node(nodes[k]);
        if (node.schedulable() && cluster_.allows(nodes[k], set.where) &&
            fits_drained(node, planned[k], set.per_pod)) {
          planned[k] += set.per_pod;
          placed = true;
        }
      }
      if (!placed) return false;
    }
  return true;
}

void Engine::drop_claim(std::uint32_t j) {
  auto it = claims_.find(j);
  if (it == claims_.end()) return;
  ++claims_dropped_;
  for (NodeIdx n : it->second)
    if (n < claimed_by_.size() && claimed_by_[n] == jobs_[j].queue) claimed_by_[n] = kNoClaim;
  claims_.erase(it);
  QueueRec& rec = queues_[jobs_[j].queue];
  if (rec.claimant == j) rec.claimant = kNoClaim;
  ++epoch_;  // placements may differ now
}

// After job j failed to be admitted (and found no victims): keeps, makes, moves or drops its
// claim. Returns whether claims changed.
bool Engine::update_claim(std::uint32_t j, AdmitOutcome outcome) {
  if (!config_.node_reservation || config_.quota_only) return false;
  const Job& job = jobs_[j];
  QueueRec& rec = queues_[job.queue];
  // The flavor it would be admitted on (its quota's first that admits it), if its queue is owed
  // there.
  FlavorId f = kNoFlavor;
  if (outcome != AdmitOutcome::kDidNotFitQuota)
    for (FlavorId c : job.candidates)
      if (!quota_.check(job.queue, c, job.total) &&
          (!nominal_only(job) || quota_.within_nominal(job.queue, c, job.total))) {
        if (owed(job.queue, c)) f = c;
        break;
      }
  auto it = claims_.find(j);
  const bool had = it != claims_.end();
  if (f == kNoFlavor) {
    drop_claim(j);
    return had;
  }
  if (had) {
    if (cluster_.node(it->second.front()).flavor == f && claim_holds(job, it->second)) return false;
  } else if (rec.claimant != kNoClaim && pending_key(rec.claimant) < pending_key(j)) {
    return false;  // the queue's claimant is before it
  }
  // Nodes claimed for its queue (its own, or a later queue-mate's) may be chosen again.
  std::vector<NodeIdx> nodes = choose_claim(job, f);
  if (nodes.empty()) {
    drop_claim(j);
    return had;
  }
  if (rec.claimant != kNoClaim) drop_claim(rec.claimant);
  if (claimed_by_.size() < cluster_.size()) claimed_by_.resize(cluster_.size(), kNoClaim);
  for (NodeIdx n : nodes) claimed_by_[n] = job.queue;
  claims_.emplace(j, std::move(nodes));
  rec.claimant = j;
  ++epoch_;
  return true;
}

}  // namespace gpuq
