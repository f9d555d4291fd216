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

Result<JobSpec> from_proto(const v1::JobSpec& j, ResourceNames& names, const PriorityClasses& classes) {
  YAML::Node y(YAML::NodeType::Map);
  if (!j.id().empty()) y["id"] = j.id();
  y["queue"] = j.queue();
  if (!j.name().empty()) y["name"] = j.name();
  if (!j.owner().empty()) y["owner"] = j.owner();
  if (!j.priority().empty()) y["priority"] = j.priority();
  YAML::Node pods(YAML::NodeType::Sequence);
  for (const auto& s : j.pod_sets()) {
    YAML::Node p(YAML::NodeType::Map);
    if (!s.name().empty()) p["name"] = s.name();
    if (s.count() != 0) p["count"] = s.count();
    p["resources"] = resources(s.resources());
    pods.push_back(p);
  }
  y["pods"] = pods;
  if (j.flavors_size() > 0) {
    YAML::Node fl(YAML::NodeType::Sequence);
    for (const auto& f : j.flavors()) fl.push_back(f);
    y["flavors"] = fl;
  }
  if (j.max_runtime_seconds() != 0) y["maxRuntime"] = j.max_runtime_seconds();
  if (j.has_preemptible()) y["preemptible"] = j.preemptible();
  if (j.has_grace_period_seconds()) y["gracePeriod"] = j.grace_period_seconds();
  if (j.exclusive()) y["exclusive"] = true;
  auto spec = parsed<JobSpec>([&] {
    // The id is optional here (the daemon assigns one); the scenario format requires it.
    if (!y["id"]) y["id"] = std::string("-");
    return sim::parse_job(y, "spec", names, classes);
  });
  if (!spec) return spec;
  JobSpec out = std::move(spec.value());
  if (j.id().empty()) out.id = JobId{};
  if (j.on_node_loss() == "Fail") out.on_node_loss = NodeLossPolicy::kFail;
  else if (j.on_node_loss().empty() || j.on_node_loss() == "Requeue") out.on_node_loss = NodeLossPolicy::kRequeue;
  else
    return Error{"spec.on_node_loss: \"" + j.on_node_loss() + "\" is not allowed; use Requeue or Fail",
                 ErrorCode::kInvalidArgument};
  return out;
}

}  // namespace gpuq::api
