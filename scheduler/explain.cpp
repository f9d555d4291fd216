// Checks on a job before it is queued, and the words that say why a job waits or is rejected.
#include <algorithm>
#include <cstdlib>

#include "scheduler/engine.hpp"
#include "spec/constraints.hpp"
#include "spec/enums.hpp"
#include "spec/quantity.hpp"

namespace gpuq {
namespace {

// A number as people say it: GPUs in decimal ("0.5", "1.5"), other resources in Kubernetes
// notation ("500m" CPU, "16Gi" memory).
std::string number(ResourceId r, Quantity q) {
  if (r != kGpu || q % kMilliPerGpu == 0) return format_quantity(q, scale_of(r));
  std::string frac = std::to_string(1000 + std::llabs(q) % kMilliPerGpu).substr(1);
  while (frac.back() == '0') frac.pop_back();
  // Appended piece by piece: GCC 12 at -O3 warns falsely (-Wrestrict, PR105329) on
  // `const char* + std::string`, which breaks the Release build under -Werror.
  std::string out = q < 0 ? "-" : "";
  out += std::to_string(std::llabs(q) / kMilliPerGpu);
  out += '.';
  out += frac;
  return out;
}

std::string amount(const ResourceNames& names, ResourceId r, Quantity q) {
  return number(r, q) + " " + names.name(r);
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

// How a pod set's node constraints sort the nodes of one flavor (kube-scheduler's "0/12 nodes
// are available: ..."): those whose labels its nodeSelector or affinity rejects, and those with
// a taint it does not tolerate (the first such taint, to name it). A walk over every node: only
// for the words a person asks for, never in a cycle.
struct ConstraintCount {
  std::size_t nodes = 0, unmatched = 0, tainted = 0;
  const Taint* taint = nullptr;
  bool none_allowed() const { return nodes > 0 && unmatched + tainted == nodes; }
};

ConstraintCount count_constraints(const Cluster& cluster, const PodSet& set, FlavorId f) {
  static const std::vector<Taint> kNoTaints;
  ConstraintCount c;
  for (NodeIdx n = 0; n < cluster.size(); ++n) {
    const Node& node = cluster.node(n);
    if (node.flavor != f) continue;
    ++c.nodes;
    if (cluster.allows(n, set.where)) continue;
    if (!spec::allows(set.where, node.labels, kNoTaints)) {
      ++c.unmatched;
      continue;
    }
    ++c.tainted;
    if (c.taint == nullptr) c.taint = spec::untolerated(set.where, node.taints);
  }
  return c;
}

// "1 cordoned, 2 draining, 1 down": the nodes of flavor f that take no new pods; "" when all do.
std::string closed_nodes(const Cluster& cluster, FlavorId f, std::size_t& nodes, std::size_t& closed) {
  std::size_t cordoned = 0, draining = 0, down = 0;
  nodes = closed = 0;
  for (NodeIdx n = 0; n < cluster.size(); ++n) {
    const Node& node = cluster.node(n);
    if (node.flavor != f) continue;
    ++nodes;
    if (node.schedulable()) continue;
    ++closed;
    (node.state == NodeState::kCordoned ? cordoned : node.state == NodeState::kDraining ? draining : down) += 1;
  }
  std::vector<std::string> parts;
  if (cordoned > 0) parts.push_back(std::to_string(cordoned) + " cordoned");
  if (draining > 0) parts.push_back(std::to_string(draining) + " draining");
  if (down > 0) parts.push_back(std::to_string(down) + " down");
  return join(parts, ", ");
}

std::string shown(const Taint& t) {
  return t.key + (t.value.empty() ? "" : "=" + t.value) + ":" + to_string(t.effect);
}

// "8 do not match ..., 4 have a taint it does not tolerate (gpu=broken:NoSchedule)".
std::string constraint_parts(const ConstraintCount& c) {
  std::vector<std::string> parts;
  if (c.unmatched > 0)
    parts.push_back(std::to_string(c.unmatched) + (c.unmatched == 1 ? " does" : " do") +
                    " not match the pod set's node selector or affinity");
  if (c.tainted > 0)
    parts.push_back(std::to_string(c.tainted) + (c.tainted == 1 ? " has" : " have") +
                    " a taint it does not tolerate" +
                    (c.taint ? " (" + shown(*c.taint) + ")" : ""));
  return join(parts, ", ");
}

}  // namespace

Result<void> Engine::validate_job(const JobSpec& spec) const {
  // The messages' prefixes are made only for a refusal (an array's members pass through here).
  const auto who = [&] { return "job \"" + spec.id.value + "\": "; };
  if (spec.id.empty()) return Error{"job: id is empty"};
  if (spec.queue.empty()) return Error{who() + "queue is empty"};
  if (spec.pod_sets.empty()) return Error{who() + "pods is empty; a job needs at least one pod set"};
  for (std::size_t i = 0; i < spec.pod_sets.size(); ++i) {
    const PodSet& s = spec.pod_sets[i];
    const auto at = [&] { return who() + "pods[" + std::to_string(i) + "]"; };
    if (s.count < 1)
      return Error{at() + ".count is " + std::to_string(s.count) + "; it must be >= 1"};
    for (ResourceId r = 0; r < kMaxResources; ++r) {
      if (s.per_pod[r] < 0)
        return Error{at() + ".resources." + resources_.name(r) + " is negative; it must be >= 0"};
      Quantity total = 0;
      if (__builtin_mul_overflow(s.per_pod[r], Quantity{s.count}, &total) || total > kMaxQuantity)
        return Error{at() + ": " + resources_.name(r) + " for all its pods is more than " +
                     format_quantity(kMaxQuantity, scale_of(r)) + ", the most a job may ask for"};
    }
  }
  if (spec.max_runtime && *spec.max_runtime <= 0)
    return Error{who() + "maxRuntime must be > 0 seconds"};
  if (spec.grace_period < 0) return Error{who() + "gracePeriod must be >= 0 seconds"};
  return Ok();
}

std::optional<std::string> Engine::gpu_shape_error(const JobSpec& spec) {
  for (const PodSet& s : spec.pod_sets)
    if (!is_valid_gpu_request(s.per_pod[kGpu]))
      return "asks for " + format_quantity(s.per_pod[kGpu], UnitScale::kMilli) +
             " gpu per pod; a pod takes either a share of one GPU (below 1) or whole GPUs";
  return std::nullopt;
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
  if (auto bad = gpu_shape_error(job.spec)) return bad;
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
    std::string why = never_fits_on(job, f);
    if (why.empty()) return std::nullopt;
    reasons.push_back(std::move(why));
  }
  return join(reasons, "; ");
}

// Why the job could never run on flavor f as the cluster and quotas stand, or "" when it could:
// what no node could ever hold first, then what the quota never allows.
std::string Engine::never_fits_on(const Job& job, FlavorId f) const {
  if (!config_.quota_only) {
    if (std::string why = too_big_for_nodes(job, f); !why.empty()) return why;
  }
  if (f == kNoFlavor) return {};
  const bool within_nominal_only = nominal_only(job);
  for (ResourceId r = 0; r < resources_.size(); ++r) {
    Quantity most = quota_.reachable(job.queue, f, r);
    const auto& row = quota_.queue(job.queue).rows[f];
    const bool capped = within_nominal_only && row.listed[r] && row.nominal[r] < most;
    if (capped) most = row.nominal[r];
    if (job.total[r] <= most) continue;
    const std::string head = "needs " + amount(resources_, r, job.total[r]) + " of flavor " +
                             flavor_names_[f] + "; queue " + job.spec.queue.value;
    const std::string why =
        capped ? " (it is not preemptible, so it runs only within the queue's nominal quota: "
                 "nonPreemptibleMayBorrow is false)"
               : "";
    if (most == 0) return head + " has no " + resources_.name(r) + " quota on that flavor" + why;
    return head + " can never hold more than " + number(r, most) + why;
  }
  return {};
}

std::string Engine::too_big_for_nodes(const Job& job, FlavorId f) const {
  const auto& shapes = flavor_shapes_[f];
  if (shapes.empty()) return "the cluster has no node of flavor " + flavor_names_[f];
  // Nodes dedicated to other queues do not count; say so when some were left out.
  bool others_dedicated = false;
  for (const NodeShape& shape : shapes)
    others_dedicated = others_dedicated || (shape.dedicated != kNoQueue && shape.dedicated != job.queue);
  // Made only for a refusal (every submit passes through here).
  const auto of_flavor = [&] {
    return " of flavor " + flavor_names_[f] +
           (others_dedicated ? " that queue " + job.spec.queue.value + " may use" : "");
  };
  for (const PodSet& s : job.spec.pod_sets) {
    ResourceVec need = s.per_pod;
    if (need[kGpu] > 0 && need[kGpu] < kMilliPerGpu) need[kGpu] = kMilliPerGpu;  // one GPU to share
    ResourceVec largest;
    bool fits_one = false;
    for (const NodeShape& shape : shapes) {
      if (shape.dedicated != kNoQueue && shape.dedicated != job.queue) continue;
      for (std::size_t r = 0; r < kMaxResources; ++r)
        largest.v[r] = std::max(largest.v[r], shape.capacity.v[r]);
      fits_one = fits_one || need.fits_in(shape.capacity);
    }
    if (fits_one) continue;
    for (ResourceId r = 0; r < resources_.size(); ++r)
      if (need[r] > largest[r])
        return "needs " + amount(resources_, r, s.per_pod[r]) + " per pod; the largest node" + of_flavor() +
               " has " + number(r, largest[r]);
    return "no single node" + of_flavor() + " has room for one pod of " + describe_pod(resources_, s.per_pod);
  }
  const ResourceVec usable = usable_capacity(f, job.queue);
  for (ResourceId r = 0; r < resources_.size(); ++r)
    if (job.total[r] > usable[r])
      return "needs " + amount(resources_, r, job.total[r]) + " in total; all nodes" + of_flavor() +
             " together have " + number(r, usable[r]);
  return {};
}

std::string Engine::pending_reason(const Job& job) const {
  const QueueRec& q = queues_[job.queue];
  if (job.state != JobState::kPending) return to_string(job.state);
  if (job.held) return "held: not scheduled until released (gpuq release " + job.spec.id.value + ")";
  if (job.dependent) return *job.waiting_for;
  if (job.reserved) {
    const std::size_t n = job.preemption->waiting_on.size();
    return "waiting for " + std::to_string(n) + " preempted job" + (n == 1 ? "" : "s") + " to stop";
  }
  if (at_run_limit(job)) return run_limit_reason(job);
  if (q.spec.strategy == QueueingStrategy::kStrictFIFO) {
    // The head that holds the queue: the first job whose owner is not at maxRunningJobsPerUser.
    auto head = q.pending.begin();
    while (head != q.pending.end() && at_run_limit(jobs_[head->job])) ++head;
    if (head != q.pending.end() && jobs_[head->job].order != job.order)  // job may be a view
      return "waiting behind " + jobs_[head->job].spec.id.value + " (StrictFIFO)";
  }
  WaitReason reached_or_derived;
  const WaitReason* wp = &*job.wait;
  if (job.pending_since < cycle_ && job.wait->cycle < cycle_) {
    // The last cycle left this job's queue before reaching it, because none of the queue's jobs
    // could fit. Say what stops it now: its quota where that does, else room on the nodes.
    for (FlavorId f : job.candidates) {
      ++reached_or_derived.flavors_tried;
      auto shortfall = f == kNoFlavor ? std::nullopt : quota_.check(job.queue, f, job.total);
      const bool over_nominal =
          !shortfall && f != kNoFlavor && nominal_only(job) && !quota_.within_nominal(job.queue, f, job.total);
      reached_or_derived.add(shortfall ? WaitReason::OnFlavor{true, false, *shortfall, f}
                                       : WaitReason::OnFlavor{false, over_nominal, {}, f});
    }
    wp = &reached_or_derived;
  }
  const WaitReason& w = *wp;
  if (w.user_limit)
    return "it was at a running-job limit (its owner's maxRunningJobsPerUser in queue " + q.spec.name.value +
           ", its array's throttle or --singleton) at the last scheduling cycle; it may go at the next";
  if (w.kept == 0) return "not yet considered by a scheduling cycle";
  std::vector<std::string> parts;
  for (std::size_t i = 0; i < w.kept; ++i) parts.push_back(explain_wait(job, w.on_flavor[i]));
  std::string out = join(parts, "; ");
  if (w.flavors_tried > w.kept)
    out += "; and " + std::to_string(w.flavors_tried - w.kept) + " more flavors did not fit";
  if (w.preemption_found_nothing) out += "; no preemption its queue allows would make room";
  if (auto c = claims_.find(stored_slot(job)); c != claims_.end()) {
    std::vector<std::string> names;
    for (NodeIdx n : c->second) names.push_back(cluster_.node(n).name);
    const bool one = names.size() == 1;
    out += std::string(one ? "; node " : "; nodes ") + join(names, ", ") + " kept for it while " +
           (one ? "it drains" : "they drain") + " (its queue is below its nominal quota)";
  }
  return out;
}

std::string Engine::explain_wait(const Job& job, const WaitReason::OnFlavor& why) const {
  const std::string& qname = queues_[job.queue].spec.name.value;
  if (why.nominal_only) return nominal_only_reason(job, why.flavor);
  if (!why.quota) return explain_room(job, why.flavor);
  const QuotaShortfall& s = why.shortfall;
  const ResourceId r = s.resource;
  std::string out = "needs " + amount(resources_, r, s.requested) + " of flavor " +
                    flavor_names_[s.flavor] + " but ";
  switch (s.limit) {
    case QuotaLimit::kNominal:
      return out + "queue " + qname + " already uses " + number(r, s.used) + " of its nominal " +
             number(r, s.bound);
    case QuotaLimit::kBorrowingLimit:
      return out + "queue " + qname + " already uses " + number(r, s.used) +
             " of its nominal + borrowingLimit " + number(r, s.bound);
    case QuotaLimit::kCohortPool: {
      const auto* c = quota_.cohort_of(job.queue);
      out += "cohort " + (c ? c->name : std::string("?")) + " has only " +
             amount(resources_, r, s.available) + " left for queue " + qname;
      if (s.used + s.requested <= s.nominal)
        out += " (other queues are borrowing the unused part of its nominal)";
      return out;
    }
  }
  return out;
}

// No room on flavor f: the node constraints first when they leave no node of the flavor to a
// pod set; else the room asked for, with how few nodes the constraints leave when they do.
std::string Engine::explain_room(const Job& job, FlavorId f) const {
  const std::string flavor = f == kNoFlavor ? std::string("(any)") : flavor_names_[f];
  std::string narrowed;
  for (std::size_t i = 0; i < job.spec.pod_sets.size() && f != kNoFlavor; ++i) {
    const PodSet& s = job.spec.pod_sets[i];
    const ConstraintCount c = count_constraints(cluster_, s, f);
    const std::string which = job.spec.pod_sets.size() == 1 ? ""
                              : s.name.empty()              ? "pods[" + std::to_string(i) + "]: "
                                                            : "pod set " + s.name + ": ";
    if (c.none_allowed())
      return which + "0/" + std::to_string(c.nodes) + " nodes of flavor " + flavor +
             " are available: " + constraint_parts(c);
    if (narrowed.empty() && c.unmatched + c.tainted > 0)
      narrowed = " (" + which + std::to_string(c.nodes - c.unmatched - c.tainted) + "/" +
                 std::to_string(c.nodes) + " nodes allow it: " + constraint_parts(c) + ")";
  }
  // Nodes closed to new pods (cordon, drain, lost): said first when they are all of them, so a
  // cordoned cluster does not read as a full one.
  std::size_t nodes = 0, closed = 0;
  const std::string closed_text = f == kNoFlavor ? std::string() : closed_nodes(cluster_, f, nodes, closed);
  if (closed > 0 && closed == nodes)
    return "0/" + std::to_string(nodes) + " nodes of flavor " + flavor + " take new pods: " + closed_text;
  std::vector<std::string> sets;
  for (const PodSet& s : job.spec.pod_sets)
    sets.push_back(std::to_string(s.count) + " x {" + describe_pod(resources_, s.per_pod) + "}");
  return "no room on nodes of flavor " + flavor + " for " + join(sets, " + ") + narrowed +
         (closed > 0 ? " (" + std::to_string(closed) + "/" + std::to_string(nodes) + " nodes take no new pods: " +
                           closed_text + ")"
                     : "");
}

}  // namespace gpuq
