#include "api/from_proto.hpp"

#include <yaml-cpp/yaml.h>

#include "sim/spec_yaml.hpp"

namespace gpuq::api {
namespace {

YAML::Node resources(const google::protobuf::Map<std::string, std::string>& m) {
  YAML::Node out(YAML::NodeType::Map);
  for (const auto& [k, v] : m) out[k] = v;
  return out;
}

template <class T, class F>
Result<T> parsed(F&& f) {
  try {
    return f();
  } catch (const sim::SpecError& e) {
    return Error{e.what(), ErrorCode::kInvalidArgument};
  } catch (const YAML::Exception& e) {
    return Error{e.what(), ErrorCode::kInvalidArgument};
  }
}

}  // namespace

Result<QueueSpec> from_proto(const v1::QueueSpec& q, ResourceNames& names) {
  YAML::Node y(YAML::NodeType::Map);
  y["name"] = q.name();
  if (!q.cohort().empty()) y["cohort"] = q.cohort();
  if (q.weight() != 0) y["weight"] = q.weight();
  if (!q.queueing_strategy().empty()) y["queueingStrategy"] = q.queueing_strategy();
  if (q.quotas_size() > 0) {
    YAML::Node quotas(YAML::NodeType::Sequence);
    for (const auto& fq : q.quotas()) {
      YAML::Node f(YAML::NodeType::Map);
      f["flavor"] = fq.flavor();
      YAML::Node rs(YAML::NodeType::Map);
      for (const auto& [name, rq] : fq.resources()) {
        YAML::Node r(YAML::NodeType::Map);
        r["nominal"] = rq.nominal();
        if (rq.has_borrowing_limit()) r["borrowingLimit"] = rq.borrowing_limit();
        if (rq.has_lending_limit()) r["lendingLimit"] = rq.lending_limit();
        rs[name] = r;
      }
      f["resources"] = rs;
      quotas.push_back(f);
    }
    y["quotas"] = quotas;
  }
  if (q.has_preemption()) {
    const auto& p = q.preemption();
    YAML::Node pn(YAML::NodeType::Map);
    if (!p.within_queue().empty()) pn["withinQueue"] = p.within_queue();
    if (!p.reclaim_within_cohort().empty()) pn["reclaimWithinCohort"] = p.reclaim_within_cohort();
    if (!p.borrow_within_cohort().empty() || p.has_max_priority_threshold()) {
      YAML::Node b(YAML::NodeType::Map);
      b["policy"] = p.borrow_within_cohort().empty() ? std::string("Never") : p.borrow_within_cohort();
      if (p.has_max_priority_threshold()) b["maxPriorityThreshold"] = p.max_priority_threshold();
      pn["borrowWithinCohort"] = b;
    }
    if (p.min_runtime_seconds() != 0) pn["minRuntime"] = p.min_runtime_seconds();
    if (pn.size() > 0) y["preemption"] = pn;
  }
  if (q.max_pending_jobs() != 0) y["maxPendingJobs"] = q.max_pending_jobs();
  return parsed<QueueSpec>([&] { return sim::parse_queue(y, "spec", names); });
}

Result<NodeSpec> from_proto(const v1::NodeSpec& n, ResourceNames& names) {
  YAML::Node y(YAML::NodeType::Map);
  y["name"] = n.name();
  y["flavor"] = n.flavor();
  y["capacity"] = resources(n.capacity());
  if (n.labels_size() > 0) y["labels"] = resources(n.labels());
  if (!n.state().empty()) y["state"] = n.state();
  if (!n.dedicated_to().empty()) y["dedicatedTo"] = n.dedicated_to();
  return parsed<NodeSpec>([&] { return sim::parse_node(y, "spec", names); });
}

// Read field by field (no YAML: this is every Submit's path), with the scenario reader's checks
// and words (sim/spec_values.hpp), so errors name the same keys as `gpuq submit -f` files.
Result<JobSpec> from_proto(const v1::JobSpec& j, ResourceNames& names, const PriorityClasses& classes) {
  return parsed<JobSpec>([&] {
    JobSpec out;
    out.id = JobId(j.id());  // optional here: the daemon assigns one
    if (j.queue().empty()) sim::spec_fail("spec.queue", "is required");
    out.queue = QueueName(j.queue());
    out.name = j.name();
    out.owner = j.owner();
    if (!j.priority().empty()) out.priority = sim::priority_value(j.priority(), "spec.priority", classes);
    if (j.pod_sets_size() == 0) sim::spec_fail("spec.pods", "is required");
    out.pod_sets.reserve(static_cast<std::size_t>(j.pod_sets_size()));
    for (int i = 0; i < j.pod_sets_size(); ++i) {
      const v1::PodSet& s = j.pod_sets(i);
      const std::string at = "spec.pods[" + std::to_string(i) + "]";
      PodSet ps;
      ps.name = s.name();
      if (s.count() != 0) {
        sim::check_pod_count(s.count(), sim::quoted(std::to_string(s.count())), at + ".count");
        ps.count = s.count();
      }
      const std::string res = at + ".resources";
      for (const auto& [name, text] : s.resources()) {
        const ResourceId r = sim::resource_value(name, res, names);
        const std::string rp = res + "." + name;
        ps.per_pod[r] = sim::quantity_value(text, rp, r);
        if (ps.per_pod[r] < 0) sim::spec_fail(rp, sim::quoted(text) + " is negative; it must be >= 0");
      }
      out.pod_sets.push_back(std::move(ps));
    }
    for (int i = 0; i < j.flavors_size(); ++i) {
      if (j.flavors(i).empty()) sim::spec_fail("spec.flavors[" + std::to_string(i) + "]", "is empty");
      out.flavors.push_back(j.flavors(i));
    }
    if (j.max_runtime_seconds() != 0) {
      sim::check_max_runtime(j.max_runtime_seconds(), sim::quoted(std::to_string(j.max_runtime_seconds())),
                             "spec.maxRuntime");
      out.max_runtime = j.max_runtime_seconds();
    }
    if (j.has_preemptible()) out.preemptible = j.preemptible();
    if (j.has_grace_period_seconds()) {
      sim::check_grace_period(j.grace_period_seconds(), sim::quoted(std::to_string(j.grace_period_seconds())),
                              "spec.gracePeriod");
      out.grace_period = j.grace_period_seconds();
    }
    out.exclusive = j.exclusive();
    if (j.on_node_loss() == "Fail") out.on_node_loss = NodeLossPolicy::kFail;
    else if (j.on_node_loss().empty() || j.on_node_loss() == "Requeue") out.on_node_loss = NodeLossPolicy::kRequeue;
    else sim::spec_fail("spec.on_node_loss", sim::quoted(j.on_node_loss()) + " is not allowed; use Requeue or Fail");
    return out;
  });
}

}  // namespace gpuq::api
