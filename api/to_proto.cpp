#include "api/to_proto.hpp"

#include "spec/quantity.hpp"

namespace gpuq::api {

namespace {

// Non-zero components only: a zero request and an absent one mean the same.
void put_resources(const ResourceVec& v, const ResourceNames& names,
                   google::protobuf::Map<std::string, std::string>* out) {
  for (std::size_t i = 0; i < names.size(); ++i) {
    const auto r = static_cast<ResourceId>(i);
    if (v[r] != 0) (*out)[names.name(r)] = format_quantity(v[r], r);
  }
}

void put_constraints(const NodeConstraints& c, v1::PodSet* out) {
  for (const auto& [k, v] : c.node_selector) (*out->mutable_node_selector())[k] = v;
  for (const auto& term : c.affinity) {
    v1::NodeSelectorTerm* t = out->add_affinity();
    for (const NodeRequirement& r : term) {
      v1::NodeRequirement* p = t->add_match_expressions();
      p->set_key(r.key);
      p->set_operator_(to_string(r.op));
      for (const auto& v : r.values) p->add_values(v);
    }
  }
  for (const Toleration& t : c.tolerations) {
    v1::Toleration* p = out->add_tolerations();
    p->set_key(t.key);
    p->set_operator_(t.exists ? "Exists" : "Equal");
    p->set_value(t.value);
    if (t.effect) p->set_effect(to_string(*t.effect));
  }
}

}  // namespace

v1::QueueSpec to_proto(const QueueSpec& s, const ResourceNames& names) {
  v1::QueueSpec out;
  out.set_name(s.name.value);
  out.set_cohort(s.cohort);
  out.set_weight(s.weight);
  out.set_queueing_strategy(to_string(s.strategy));
  for (const FlavorQuota& fq : s.quotas) {
    v1::FlavorQuota* q = out.add_quotas();
    q->set_flavor(fq.flavor);
    for (const auto& [r, rq] : fq.resources) {
      v1::ResourceQuota& p = (*q->mutable_resources())[names.name(r)];
      p.set_nominal(format_quantity(rq.nominal, r));
      if (rq.borrowing_limit) p.set_borrowing_limit(format_quantity(*rq.borrowing_limit, r));
      if (rq.lending_limit) p.set_lending_limit(format_quantity(*rq.lending_limit, r));
    }
  }
  v1::PreemptionPolicy* p = out.mutable_preemption();
  p->set_within_queue(to_string(s.preemption.within_queue));
  p->set_reclaim_within_cohort(to_string(s.preemption.reclaim_within_cohort));
  p->set_borrow_within_cohort(to_string(s.preemption.borrow_within_cohort));
  if (s.preemption.borrow_max_priority_threshold)
    p->set_max_priority_threshold(*s.preemption.borrow_max_priority_threshold);
  p->set_min_runtime_seconds(s.preemption.min_runtime);
  out.set_max_pending_jobs(s.max_pending_jobs);
  if (s.max_gpus_per_job) out.set_max_gpus_per_job(format_quantity(*s.max_gpus_per_job, kGpu));
  out.set_max_pods_per_job(s.max_pods_per_job);
  if (s.max_runtime) out.set_max_runtime_seconds(*s.max_runtime);
  if (s.default_max_runtime) out.set_default_max_runtime_seconds(*s.default_max_runtime);
  if (s.runtime_estimate) out.set_runtime_estimate_seconds(*s.runtime_estimate);
  if (s.max_grace_period) out.set_max_grace_period_seconds(*s.max_grace_period);
  if (s.idle.warn_after) out.set_idle_warn_after_seconds(*s.idle.warn_after);
  if (s.idle.cancel_after) out.set_idle_cancel_after_seconds(*s.idle.cancel_after);
  for (const std::string& c : s.allowed_priority_classes) out.add_allowed_priority_classes(c);
  out.set_non_preemptible_may_borrow(s.non_preemptible_may_borrow);
  out.set_max_running_jobs_per_user(s.max_running_jobs_per_user);
  out.set_max_pending_jobs_per_user(s.max_pending_jobs_per_user);
  out.set_max_submits_per_user_per_minute(s.max_submits_per_user_per_minute);
  out.set_max_retries(s.max_retries);
  auto put_members = [](const Members& m, v1::Members* p) {
    for (const auto& u : m.users) p->add_users(u);
    for (const auto& g : m.groups) p->add_groups(g);
  };
  if (s.submitters) put_members(*s.submitters, out.mutable_submitters());
  if (!s.viewers.empty()) put_members(s.viewers, out.mutable_viewers());
  put_notify(s.notify, out.mutable_notify());
  if (!s.kubernetes.empty()) {
    v1::QueueKubernetes* k = out.mutable_kubernetes();
    k->set_namespace_(s.kubernetes.ns);
    k->set_default_image(s.kubernetes.default_image);
    for (const std::string& i : s.kubernetes.allowed_images) k->add_allowed_images(i);
    k->set_pod_template_json(s.kubernetes.pod_template);
  }
  return out;
}

void put_notify(const NotifySpec& n, v1::Notify* out) {
  if (n.empty() && n.on.empty()) return;
  out->set_url(n.url);
  for (const std::string& e : n.on) out->add_on(e);
}

v1::NodeSpec to_proto(const NodeSpec& s, const ResourceNames& names) {
  v1::NodeSpec out;
  out.set_name(s.name);
  out.set_flavor(s.flavor);
  put_resources(s.capacity, names, out.mutable_capacity());
  for (const auto& [k, v] : s.labels) (*out.mutable_labels())[k] = v;
  out.set_state(to_string(s.state));
  if (s.dedicated_to) out.set_dedicated_to(s.dedicated_to->value);
  for (const Taint& t : s.taints) {
    v1::Taint* p = out.add_taints();
    p->set_key(t.key);
    p->set_value(t.value);
    p->set_effect(to_string(t.effect));
  }
  return out;
}

v1::JobSpec to_proto(const JobSpec& s, const ResourceNames& names) {
  v1::JobSpec out;
  out.set_id(s.id.value);
  out.set_queue(s.queue.value);
  out.set_name(s.name);
  out.set_owner(s.owner);
  out.set_priority(std::to_string(s.priority));
  for (const PodSet& ps : s.pod_sets) {
    v1::PodSet* p = out.add_pod_sets();
    p->set_name(ps.name);
    p->set_count(ps.count);
    put_resources(ps.per_pod, names, p->mutable_resources());
    put_constraints(ps.where, p);
  }
  for (const std::string& f : s.flavors) out.add_flavors(f);
  out.set_max_runtime_seconds(s.max_runtime.value_or(0));
  out.set_expected_runtime_seconds(s.expected_runtime.value_or(0));
  out.set_preemptible(s.preemptible);
  out.set_grace_period_seconds(s.grace_period);
  out.set_exclusive(s.exclusive);
  out.set_on_node_loss(to_string(s.on_node_loss));
  out.set_retries(s.retries);
  out.set_singleton(s.singleton);
  return out;
}

std::optional<JobState> from_proto(v1::JobState s) {
  switch (s) {
    case v1::JOB_STATE_PENDING: return JobState::kPending;
    case v1::JOB_STATE_ADMITTED: return JobState::kAdmitted;
    case v1::JOB_STATE_RUNNING: return JobState::kRunning;
    case v1::JOB_STATE_PREEMPTING: return JobState::kPreempting;
    case v1::JOB_STATE_SUCCEEDED: return JobState::kSucceeded;
    case v1::JOB_STATE_FAILED: return JobState::kFailed;
    case v1::JOB_STATE_CANCELLED: return JobState::kCancelled;
    default: return std::nullopt;
  }
}

v1::JobState to_proto(JobState s) {
  switch (s) {
    case JobState::kPending:
      return v1::JOB_STATE_PENDING;
    case JobState::kAdmitted:
      return v1::JOB_STATE_ADMITTED;
    case JobState::kRunning:
      return v1::JOB_STATE_RUNNING;
    case JobState::kPreempting:
      return v1::JOB_STATE_PREEMPTING;
    case JobState::kSucceeded:
      return v1::JOB_STATE_SUCCEEDED;
    case JobState::kFailed:
      return v1::JOB_STATE_FAILED;
    case JobState::kCancelled:
      return v1::JOB_STATE_CANCELLED;
  }
  return v1::JOB_STATE_UNSPECIFIED;
}

}  // namespace gpuq::api
