#include "api/from_proto.hpp"

#include "spec/constraints.hpp"
#include "spec/job_array.hpp"
#include "spec/limits.hpp"
#include "spec/validate.hpp"
#include "spec/values.hpp"
#include "spec/yaml_read.hpp"

namespace gpuq::api {
namespace {

using spec::Path;
namespace limits = spec::limits;

// Runs a conversion; a SpecError becomes INVALID_ARGUMENT with its path under "spec".
template <class T, class F>
Result<T> converted(F&& f) {
  try {
    return f();
  } catch (spec::SpecError& e) {
    e.under("spec");
    return Error{e.what(), ErrorCode::kInvalidArgument};
  }
}

template <class E>
E enum_or(const std::string& text, E fallback, const Path& at) {
  return text.empty() ? fallback : spec::enum_value<E>(text, at);
}

ResourceQuota quota_of(const v1::ResourceQuota& p, ResourceId r, Path& at) {
  ResourceQuota q;
  {
    Path::Key k(at, "nominal");
    q.nominal = spec::quantity_value(p.nominal(), r, at);
  }
  if (p.has_borrowing_limit()) {
    Path::Key k(at, "borrowingLimit");
    q.borrowing_limit = spec::quantity_value(p.borrowing_limit(), r, at);
  }
  if (p.has_lending_limit()) {
    Path::Key k(at, "lendingLimit");
    q.lending_limit = spec::quantity_value(p.lending_limit(), r, at);
  }
  return q;
}

PreemptionSpec preemption_of(const v1::PreemptionPolicy& p, Path& at) {
  Path::Key k(at, "preemption");
  PreemptionSpec out;
  {
    Path::Key w(at, "withinQueue");
    out.within_queue = enum_or(p.within_queue(), WithinQueuePolicy::kNever, at);
  }
  {
    Path::Key r(at, "reclaimWithinCohort");
    out.reclaim_within_cohort = enum_or(p.reclaim_within_cohort(), ReclaimPolicy::kNever, at);
  }
  {
    Path::Key b(at, "borrowWithinCohort");
    Path::Key pk(at, "policy");
    out.borrow_within_cohort = enum_or(p.borrow_within_cohort(), BorrowWithinCohortPolicy::kNever, at);
  }
  if (p.has_max_priority_threshold()) out.borrow_max_priority_threshold = p.max_priority_threshold();
  out.min_runtime = p.min_runtime_seconds();
  return out;
}

// {name: quantity}: interned; each quantity read in its resource's units.
ResourceVec resources_of(const google::protobuf::Map<std::string, std::string>& m, ResourceNames& names, Path& at) {
  ResourceVec v;
  for (const auto& [name, text] : m) {
    Path::Key k(at, name);
    const ResourceId r = spec::resource_value(name, names, at);
    v[r] = spec::quantity_value(text, r, at);
  }
  return v;
}

NodeRequirement requirement_of(const v1::NodeRequirement& p, Path& at) {
  NodeRequirement r;
  r.key = p.key();
  {
    Path::Key k(at, "operator");
    if (p.operator_().empty())
      spec::fail(at, "is required; use one of In, NotIn, Exists, DoesNotExist, Gt, Lt");
    r.op = spec::enum_value<LabelOperator>(p.operator_(), at);
  }
  Path::Key k(at, "values");
  spec::check_count(static_cast<std::size_t>(p.values_size()), limits::kRequirementValues, "values",
                    at);
  r.values.assign(p.values().begin(), p.values().end());
  return r;
}

Toleration toleration_of(const v1::Toleration& p, Path& at) {
  Toleration t;
  t.key = p.key();
  t.value = p.value();
  {
    Path::Key k(at, "operator");
    if (!p.operator_().empty() && p.operator_() != "Equal" && p.operator_() != "Exists")
      spec::fail(at, spec::quoted(p.operator_()) + " is not allowed; use one of Equal, Exists");
    t.exists = p.operator_() == "Exists";
  }
  if (!p.effect().empty()) {
    Path::Key k(at, "effect");
    t.effect = spec::enum_value<TaintEffect>(p.effect(), at);
  }
  return t;
}

// nodeSelector, affinity and tolerations of a job or a pod set; every list's size checked
// before it is copied.
NodeConstraints constraints_of(
    const google::protobuf::Map<std::string, std::string>& selector,
    const google::protobuf::RepeatedPtrField<v1::NodeSelectorTerm>& affinity,
    const google::protobuf::RepeatedPtrField<v1::Toleration>& tolerations, Path& at) {
  NodeConstraints c;
  {
    Path::Key k(at, "nodeSelector");
    spec::check_count(selector.size(), limits::kNodeSelector, "pairs", at, spec::Counted::kHeld);
    c.node_selector.insert(selector.begin(), selector.end());
  }
  {
    Path::Key k(at, "affinity");
    spec::check_count(static_cast<std::size_t>(affinity.size()), limits::kAffinityTerms, "terms",
                      at);
    for (int i = 0; i < affinity.size(); ++i) {
      Path::Index ti(at, static_cast<std::size_t>(i));
      const auto& exprs = affinity[i].match_expressions();
      spec::check_count(static_cast<std::size_t>(exprs.size()), limits::kTermRequirements,
                        "requirements", at);
      auto& term = c.affinity.emplace_back();
      for (int j = 0; j < exprs.size(); ++j) {
        Path::Index ri(at, static_cast<std::size_t>(j));
        term.push_back(requirement_of(exprs[j], at));
      }
    }
  }
  Path::Key k(at, "tolerations");
  spec::check_count(static_cast<std::size_t>(tolerations.size()), limits::kTolerations,
                    "tolerations", at);
  for (int i = 0; i < tolerations.size(); ++i) {
    Path::Index ti(at, static_cast<std::size_t>(i));
    c.tolerations.push_back(toleration_of(tolerations[i], at));
  }
  return c;
}

std::vector<Taint> taints_of(const google::protobuf::RepeatedPtrField<v1::Taint>& taints,
                             Path& at) {
  spec::check_count(static_cast<std::size_t>(taints.size()), limits::kTaints, "taints", at);
  std::vector<Taint> out;
  for (int i = 0; i < taints.size(); ++i) {
    Path::Index ti(at, static_cast<std::size_t>(i));
    Taint& t = out.emplace_back();
    t.key = taints[i].key();
    t.value = taints[i].value();
    Path::Key k(at, "effect");
    if (taints[i].effect().empty())
      spec::fail(at, "is required; use one of NoSchedule, PreferNoSchedule, NoExecute");
    t.effect = spec::enum_value<TaintEffect>(taints[i].effect(), at);
  }
  return out;
}

Members members_of(const v1::Members& m, const char* role, Path& at) {
  Path::Key r(at, role);
  {
    Path::Key k(at, "users");
    spec::check_count(static_cast<std::size_t>(m.users_size()), limits::kRoleMembers, "users", at);
  }
  {
    Path::Key k(at, "groups");
    spec::check_count(static_cast<std::size_t>(m.groups_size()), limits::kRoleMembers, "groups", at);
  }
  return Members{{m.users().begin(), m.users().end()}, {m.groups().begin(), m.groups().end()}};
}

NotifySpec notify_of(const v1::Notify& n, Path& at) {
  Path::Key k(at, "notify");
  spec::check_count(static_cast<std::size_t>(n.on_size()), 5, "events", at);
  return NotifySpec{n.url(), {n.on().begin(), n.on().end()}};
}

void guardrails_of(const v1::QueueSpec& q, QueueSpec& out, Path& at) {
  if (!q.max_gpus_per_job().empty()) {
    Path::Key k(at, "maxGpusPerJob");
    out.max_gpus_per_job = spec::quantity_value(q.max_gpus_per_job(), kGpu, at);
  }
  out.max_pods_per_job = q.max_pods_per_job();
  if (q.has_max_runtime_seconds()) out.max_runtime = q.max_runtime_seconds();
  if (q.has_default_max_runtime_seconds()) out.default_max_runtime = q.default_max_runtime_seconds();
  if (q.has_runtime_estimate_seconds()) out.runtime_estimate = q.runtime_estimate_seconds();
  if (q.has_max_grace_period_seconds()) out.max_grace_period = q.max_grace_period_seconds();
  if (q.has_idle_warn_after_seconds()) out.idle.warn_after = q.idle_warn_after_seconds();
  if (q.has_idle_cancel_after_seconds()) out.idle.cancel_after = q.idle_cancel_after_seconds();
  {
    Path::Key k(at, "allowedPriorityClasses");
    spec::check_count(static_cast<std::size_t>(q.allowed_priority_classes_size()), limits::kPriorityClasses,
                      "classes", at);
    out.allowed_priority_classes.assign(q.allowed_priority_classes().begin(), q.allowed_priority_classes().end());
  }
  out.non_preemptible_may_borrow = q.non_preemptible_may_borrow();
  out.max_running_jobs_per_user = q.max_running_jobs_per_user();
  out.max_pending_jobs_per_user = q.max_pending_jobs_per_user();
  out.max_submits_per_user_per_minute = q.max_submits_per_user_per_minute();
  out.max_retries = q.max_retries();
  if (q.has_submitters()) out.submitters = members_of(q.submitters(), "submitters", at);
  out.viewers = members_of(q.viewers(), "viewers", at);
  out.notify = notify_of(q.notify(), at);
}

QueueKubernetes kubernetes_of(const v1::QueueKubernetes& k, Path& at) {
  Path::Key kk(at, "kubernetes");
  QueueKubernetes out;
  out.ns = k.namespace_();
  out.default_image = k.default_image();
  {
    Path::Key a(at, "allowedImages");
    spec::check_count(static_cast<std::size_t>(k.allowed_images_size()), limits::kAllowedImages, "images", at);
    out.allowed_images.assign(k.allowed_images().begin(), k.allowed_images().end());
  }
  Path::Key p(at, "podTemplate");
  out.pod_template = spec::pod_template_from_json(k.pod_template_json(), at);
  return out;
}

}  // namespace

Result<QueueSpec> from_proto(const v1::QueueSpec& q, ResourceNames& names) {
  return converted<QueueSpec>([&] {
    Path at;
    QueueSpec out;
    out.name = QueueName(q.name());
    out.cohort = q.cohort();
    if (q.has_weight()) out.weight = q.weight();
    {
      Path::Key k(at, "queueingStrategy");
      out.strategy = enum_or(q.queueing_strategy(), QueueingStrategy::kBestEffortFIFO, at);
    }
    {
      Path::Key k(at, "quotas");
      spec::check_count(static_cast<std::size_t>(q.quotas_size()), limits::kQuotaFlavors, "flavors", at);
      for (int i = 0; i < q.quotas_size(); ++i) {
        Path::Index fi(at, static_cast<std::size_t>(i));
        const v1::FlavorQuota& fq = q.quotas(i);
        FlavorQuota f;
        f.flavor = fq.flavor();
        Path::Key rk(at, "resources");
        for (const auto& [name, rq] : fq.resources()) {
          Path::Key nk(at, name);
          const ResourceId r = spec::resource_value(name, names, at);
          f.resources.emplace_back(r, quota_of(rq, r, at));
        }
        out.quotas.push_back(std::move(f));
      }
    }
    if (q.has_preemption()) out.preemption = preemption_of(q.preemption(), at);
    out.max_pending_jobs = q.max_pending_jobs();
    guardrails_of(q, out, at);
    if (q.has_kubernetes()) out.kubernetes = kubernetes_of(q.kubernetes(), at);
    spec::validate(out, at, names);
    return out;
  });
}

Result<NodeSpec> from_proto(const v1::NodeSpec& n, ResourceNames& names) {
  return converted<NodeSpec>([&] {
    Path at;
    NodeSpec out;
    out.name = n.name();
    out.flavor = n.flavor();
    {
      Path::Key k(at, "capacity");
      out.capacity = resources_of(n.capacity(), names, at);
    }
    {
      Path::Key k(at, "labels");
      spec::check_count(n.labels_size(), limits::kLabels, "labels", at, spec::Counted::kHeld);
      out.labels.insert(n.labels().begin(), n.labels().end());
    }
    {
      Path::Key k(at, "state");
      out.state = enum_or(n.state(), NodeState::kReady, at);
    }
    if (!n.dedicated_to().empty()) out.dedicated_to = QueueName(n.dedicated_to());
    {
      Path::Key k(at, "taints");
      out.taints = taints_of(n.taints(), at);
    }
    spec::validate(out, at, names);
    return out;
  });
}

Result<Submission> from_proto(const v1::JobSpec& j, const ResourceNames& names,
                              const PriorityClasses& classes) {
  return converted<Submission>([&] {
    Path at;
    Submission sub;
    JobSpec& out = sub.job;
    out.id = JobId(j.id());
    out.queue = QueueName(j.queue());
    out.name = j.name();
    out.owner = j.owner();
    sub.priority = j.priority();
    if (!j.priority().empty()) {
      Path::Key k(at, "priority");
      out.priority = spec::priority_value(j.priority(), classes, at);
    }
    // The job's own constraints are checked at their own path (spec.nodeSelector...) before
    // they are merged into each pod set.
    const NodeConstraints job_where =
        constraints_of(j.node_selector(), j.affinity(), j.tolerations(), at);
    spec::validate(job_where, at);
    {
      Path::Key k(at, "pods");
      if (j.pod_sets_size() == 0) spec::fail(at, "is required; a job needs at least one pod set");
      spec::check_count(static_cast<std::size_t>(j.pod_sets_size()), limits::kPodSets, "pod sets", at);
      out.pod_sets.reserve(static_cast<std::size_t>(j.pod_sets_size()));
      for (int i = 0; i < j.pod_sets_size(); ++i) {
        Path::Index pi(at, static_cast<std::size_t>(i));
        const v1::PodSet& s = j.pod_sets(i);
        PodSet ps;
        ps.name = s.name();
        if (s.count() != 0) ps.count = s.count();
        ps.where = spec::merged(
            job_where, constraints_of(s.node_selector(), s.affinity(), s.tolerations(), at));
        Path::Key rk(at, "resources");
        for (const auto& [name, text] : s.resources()) {
          Path::Key nk(at, name);
          const ResourceId r = spec::known_resource_value(name, names, at);
          ps.per_pod[r] = spec::quantity_value(text, r, at);
        }
        out.pod_sets.push_back(std::move(ps));
      }
    }
    {
      Path::Key k(at, "flavors");
      spec::check_count(static_cast<std::size_t>(j.flavors_size()), limits::kJobFlavors, "flavors", at);
      out.flavors.assign(j.flavors().begin(), j.flavors().end());
    }
    if (j.max_runtime_seconds() != 0) out.max_runtime = j.max_runtime_seconds();
    if (j.expected_runtime_seconds() != 0) out.expected_runtime = j.expected_runtime_seconds();
    if (j.has_preemptible()) out.preemptible = j.preemptible();
    if (j.has_grace_period_seconds()) out.grace_period = j.grace_period_seconds();
    out.exclusive = j.exclusive();
    {
      Path::Key k(at, "onNodeLoss");
      out.on_node_loss = enum_or(j.on_node_loss(), NodeLossPolicy::kRequeue, at);
    }
    {
      Path::Key k(at, "command");
      spec::check_count(static_cast<std::size_t>(j.command_size()), limits::kCommandArgs, "arguments", at,
                        spec::Counted::kHeld);
      sub.run.command.assign(j.command().begin(), j.command().end());
    }
    {
      Path::Key k(at, "env");
      spec::check_count(j.env_size(), limits::kEnvEntries, "variables", at, spec::Counted::kHeld);
      sub.run.env.insert(j.env().begin(), j.env().end());
    }
    sub.run.working_dir = j.working_dir();
    sub.run.tty = j.tty();
    sub.run.tty_size = j.tty_size().substr(0, 64);
    sub.run.image = j.image();
    sub.run.working_dir_implicit = j.working_dir_implicit();
    sub.notify = notify_of(j.notify(), at);
    sub.hold = j.hold();
    out.retries = j.retries();
    out.singleton = j.singleton();
    {
      Path::Key k(at, "after");
      spec::check_count(static_cast<std::size_t>(j.after_size()), limits::kDependencies, "dependencies", at);
      for (int i = 0; i < j.after_size(); ++i) {
        Path::Index ik(at, static_cast<std::size_t>(i));
        const v1::Dependency& d = j.after(i);
        Dependency dep;
        {
          Path::Key kk(at, "kind");
          if (d.kind() == "ok") dep.kind = AfterKind::kOk;
          else if (d.kind() == "any") dep.kind = AfterKind::kAny;
          else if (d.kind() == "not_ok") dep.kind = AfterKind::kNotOk;
          else spec::fail(at, "\"" + d.kind().substr(0, 64) + "\" is not a dependency kind; use ok, any or not_ok");
        }
        Path::Key jk(at, "job");
        if (d.job().empty()) spec::fail(at, "is empty; name the job to wait for");
        spec::check_job_id(d.job(), at);
        dep.job = d.job();
        sub.after.push_back(std::move(dep));
      }
    }
    if (!j.array().empty()) {
      Path::Key k(at, "array");
      auto range = spec::parse_array(j.array());
      if (!range) spec::fail(at, range.error());
      sub.array = std::move(range.value().indices);
      out.array_throttle = range.value().throttle;
    }
    spec::validate(out, at, names);
    spec::validate(sub.run, at);
    Path::Key k(at, "notify");
    spec::validate(sub.notify, at);
    return sub;
  });
}

}  // namespace gpuq::api
