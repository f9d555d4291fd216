// Checks on a job before it is queued, and the words that say why a job waits or is rejected.
#include <algorithm>

#include "scheduler/engine.hpp"
#include "scheduler/quantity.hpp"

namespace gpuq {
namespace {

std::string amount(const ResourceNames& names, ResourceId r, Quantity q) {
  return format_quantity(q, scale_of(r)) + " " + names.name(r);
}

std::string describe_pod(const ResourceNames& names, const ResourceVec& pod) {
  std::string out;
  for (ResourceId r = 0; r < names.size(); ++r) {
    if (pod[r] == 0) continue;
    if (!out.empty()) out += ", ";
    out += amount(names, r, pod[r]);
  }
  return out;
}

std::string join(const std::vector<std::string>& parts, const std::string& sep) {
  std::string out;
  for (const auto& p : parts) out += (out.empty() ? "" : sep) + p;
  return out;
}

}  // namespace

Result<void> Engine::validate_job(const JobSpec& spec) const {
  const std::string who = "job \"" + spec.id.value + "\": ";
  if (spec.id.empty()) return Error{"job: id is empty"};
  if (spec.queue.empty()) return Error{who + "queue is empty"};
  if (spec.pod_sets.empty()) return Error{who + "pods is empty; a job needs at least one pod set"};
  for (std::size_t i = 0; i < spec.pod_sets.size(); ++i) {
    const PodSet& s = spec.pod_sets[i];
    const std::string at = who + "pods[" + std::to_string(i) + "]";
    if (s.count < 1)
      return Error{at + ".count is " + std::to_string(s.count) + "; it must be >= 1"};
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (s.per_pod[r] < 0)
        return Error{at + ".resources." + resources_.name(r) + " is negative; it must be >= 0"};
  }
  if (spec.max_runtime && *spec.max_runtime <= 0)
    return Error{who + "maxRuntime must be > 0 seconds"};
  if (spec.grace_period < 0) return Error{who + "gracePeriod must be >= 0 seconds"};
  return Ok();
}

std::vector<FlavorId> Engine::candidate_flavors(QueueIdx q, const JobSpec& spec) const {
  auto accepted = [&](FlavorId f) {
    return spec.flavors.empty() ||
           std::find(spec.flavors.begin(), spec.flavors.end(), flavor_names_[f]) !=
               spec.flavors.end();
  };
  std::vector<FlavorId> out;
  const auto& qq = quota_.queue(q);
  if (!qq.unlimited) {
    for (FlavorId f : qq.order)
      if (accepted(f)) out.push_back(f);
    return out;
  }
  if (config_.quota_only) return {kNoFlavor};
  for (FlavorId f = 0; f < flavor_names_.size(); ++f)
    if (!flavor_shapes_[f].empty() && accepted(f)) out.push_back(f);
  return out;
}

std::optional<std::string> Engine::never_fits(const Job& job) const {
  const std::string& qname = job.spec.queue.value;
  if (job.total.is_zero()) return "requests no resources";
  for (const PodSet& s : job.spec.pod_sets)
    if (s.per_pod[kGpu] > kMilliPerGpu && s.per_pod[kGpu] % kMilliPerGpu != 0)
      return "asks for " + format_quantity(s.per_pod[kGpu], UnitScale::kMilli) +
             " gpu per pod; a pod takes either a share of one GPU (below 1) or whole GPUs";
  if (job.candidates.empty()) {
    std::vector<std::string> offered;
    const auto& qq = quota_.queue(job.queue);
    if (!qq.unlimited)
      for (FlavorId f : qq.order) offered.push_back(flavor_names_[f]);
    else
      for (FlavorId f = 0; f < flavor_names_.size(); ++f)
        if (!flavor_shapes_[f].empty()) offered.push_back(flavor_names_[f]);
    if (offered.empty()) return std::string("the cluster has no nodes");
    return "accepts flavors " + join(job.spec.flavors, ", ") + " but queue " + qname +
           (qq.unlimited ? " can use only " : " has quota only for ") + join(offered, ", ");
  }

  std::vector<std::string> reasons;
  for (FlavorId f : job.candidates) {
    // What no node could ever hold first, then what the quota never allows.
    std::string why;
    if (!config_.quota_only) {
      const auto& shapes = flavor_shapes_[f];
      if (shapes.empty()) why = "the cluster has no node of flavor " + flavor_names_[f];
      for (const PodSet& s : job.spec.pod_sets) {
        if (!why.empty()) break;
        ResourceVec largest;
        bool fits_one = false;
        for (const auto& [cap, dedicated] : shapes) {
          if (dedicated != kNoQueue && dedicated != job.queue) continue;
          for (std::size_t r = 0; r < kMaxResources; ++r)
            largest.v[r] = std::max(largest.v[r], cap.v[r]);
          ResourceVec need = s.per_pod;
          if (need[kGpu] > 0 && need[kGpu] < kMilliPerGpu) need[kGpu] = kMilliPerGpu;
          fits_one = fits_one || need.fits_in(cap);
        }
        if (fits_one) continue;
        for (ResourceId r = 0; r < resources_.size() && why.empty(); ++r) {
          Quantity need = s.per_pod[r];
          if (r == kGpu && need > 0 && need < kMilliPerGpu) need = kMilliPerGpu;
          if (need > largest[r])
            why = "needs " + amount(resources_, r, s.per_pod[r]) +
                  " per pod; the largest node of flavor " + flavor_names_[f] + " has " +
                  format_quantity(largest[r], scale_of(r));
        }
        if (why.empty())
          why = "no single node of flavor " + flavor_names_[f] + " has room for one pod of " +
                describe_pod(resources_, s.per_pod);
      }
      for (ResourceId r = 0; r < resources_.size() && why.empty(); ++r)
        if (job.total[r] > flavor_capacity_[f][r])
          why = "needs " + amount(resources_, r, job.total[r]) + " in total; all nodes of flavor " +
                flavor_names_[f] + " together have " +
                format_quantity(flavor_capacity_[f][r], scale_of(r));
    }
    if (why.empty() && f != kNoFlavor) {
      for (ResourceId r = 0; r < resources_.size() && why.empty(); ++r) {
        Quantity most = quota_.reachable(job.queue, f, r);
        if (job.total[r] > most)
          why = "needs " + amount(resources_, r, job.total[r]) + " of flavor " + flavor_names_[f] +
                (most == 0 ? "; queue " + qname + " has no " + resources_.name(r) +
                                 " quota on that flavor"
                           : "; queue " + qname + " can never hold more than " +
                                 format_quantity(most, scale_of(r)));
      }
    }
    if (why.empty()) return std::nullopt;
    reasons.push_back(std::move(why));
  }
  return join(reasons, "; ");
}

std::string Engine::pending_reason(const Job& job) const {
  const QueueRec& q = queues_[job.queue];
  if (job.state != JobState::kPending) return to_string(job.state);
  if (q.spec.strategy == QueueingStrategy::kStrictFIFO && !q.pending.empty() &&
      q.pending.begin()->job != static_cast<std::uint32_t>(&job - jobs_.data()))
    return "waiting behind " + jobs_[q.pending.begin()->job].spec.id.value + " (StrictFIFO)";
  const WaitReason& w = job.wait;
  std::string out;
  switch (w.kind) {
    case WaitReason::Kind::kNotConsidered:
      return "not yet considered by a scheduling cycle";
    case WaitReason::Kind::kQuota: {
      const QuotaShortfall& s = w.quota;
      out = "needs " + amount(resources_, s.resource, s.requested) + " of flavor " +
            flavor_names_[s.flavor] + " but ";
      const std::string left = format_quantity(s.available, scale_of(s.resource));
      switch (s.limit) {
        case QuotaLimit::kNominal:
          out += "queue " + q.spec.name.value + " has " + left + " left of its nominal quota";
          break;
        case QuotaLimit::kBorrowingLimit:
          out += "queue " + q.spec.name.value + " has " + left +
                 " left within nominal + borrowingLimit";
          break;
        case QuotaLimit::kCohortPool: {
          const auto* c = quota_.cohort_of(job.queue);
          out += "only " + left + " is free for queue " + q.spec.name.value + " in cohort " +
                 (c ? c->name : std::string("?"));
          break;
        }
      }
      break;
    }
    case WaitReason::Kind::kCapacity: {
      out = "no room on nodes of flavor " +
            (w.flavor == kNoFlavor ? std::string("(any)") : flavor_names_[w.flavor]) + " for ";
      std::vector<std::string> sets;
      for (const PodSet& s : job.spec.pod_sets)
        sets.push_back(std::to_string(s.count) + " x {" + describe_pod(resources_, s.per_pod) + "}");
      out += join(sets, " + ");
      break;
    }
  }
  if (w.flavors_tried > 1) out += " (first of " + std::to_string(w.flavors_tried) + " flavors tried)";
  return out;
}

}  // namespace gpuq
