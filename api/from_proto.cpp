#include "api/from_proto.hpp"

#include "spec/limits.hpp"
#include "spec/validate.hpp"
#include "spec/values.hpp"

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

}  // namespace

Result<QueueSpec> from_proto(const v1::QueueSpec& q, ResourceNames& names) {
  return converted<QueueSpec>([&] {
    Path at;
    QueueSpec out;
    out.name = QueueName(q.name());
    out.cohort = q.cohort();
    if (q.weight() != 0) out.weight = q.weight();
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
    spec::validate(out, at, names);
    return out;
  });
}

Result<Submission> from_proto(const v1::JobSpec& j, ResourceNames& names, const PriorityClasses& classes) {
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
        Path::Key rk(at, "resources");
        ps.per_pod = resources_of(s.resources(), names, at);
        out.pod_sets.push_back(std::move(ps));
      }
    }
    {
      Path::Key k(at, "flavors");
      spec::check_count(static_cast<std::size_t>(j.flavors_size()), limits::kJobFlavors, "flavors", at);
      out.flavors.assign(j.flavors().begin(), j.flavors().end());
    }
    if (j.max_runtime_seconds() != 0) out.max_runtime = j.max_runtime_seconds();
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
    spec::validate(out, at, names);
    spec::validate(sub.run, at);
    return sub;
  });
}

}  // namespace gpuq::api
