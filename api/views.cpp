#include "api/views.hpp"

#include <algorithm>

#include "api/to_proto.hpp"

namespace gpuq::api {

v1::Job to_proto(const storage::JobRecord& r, const daemon::Core& core) {
  const ResourceNames& names = core.names();
  v1::Job j;
  v1::JobSpec& spec = *j.mutable_spec();
  spec = to_proto(r.spec, names);
  if (!r.priority_text.empty()) spec.set_priority(r.priority_text);
  for (const auto& c : r.run.command) spec.add_command(c);
  for (const auto& [k, v] : r.run.env) (*spec.mutable_env())[k] = v;
  spec.set_working_dir(r.run.working_dir);
  spec.set_tty(r.run.tty);
  spec.set_tty_size(r.run.tty_size);
  spec.set_image(r.run.image);
  spec.set_working_dir_implicit(r.run.working_dir_implicit);
  put_notify(r.notify, spec.mutable_notify());
  j.set_state(to_proto(r.state));
  j.set_priority(r.spec.priority);
  j.set_reason(core.reason(r));
  j.set_submitted_at(r.spec.submitted_at);
  j.set_admitted_at(r.admitted_at);
  j.set_finished_at(r.finished_at);
  j.set_flavor(r.flavor);
  for (const PodPlacement& p : r.placement) {
    auto* pp = j.add_placement();
    if (p.pod_set < r.spec.pod_sets.size()) pp->set_pod_set(r.spec.pod_sets[p.pod_set].name);
    pp->set_node(p.node);
    for (int g : p.gpus) pp->add_gpus(g);
    pp->set_gpu_milli(p.gpu_milli);
  }
  j.set_attempts(r.attempts);
  j.set_preemptions(r.preemptions);
  j.set_exit_code(r.exit_code);
  j.set_preempted_by(r.preempted_by);
  j.set_stopping(r.state == JobState::kCancelled && core.stopping(r.spec.id));
  if (auto util = r.gpu_use.mean()) j.set_gpu_util_percent(*util);
  j.set_gpu_samples(r.gpu_use.samples);
  j.set_gpu_memory_peak_mib(r.gpu_use.memory_peak_mib);
  if (r.used.cpu_usec >= 0) j.set_cpu_seconds(static_cast<double>(r.used.cpu_usec) / 1e6);
  if (r.used.memory_peak >= 0) j.set_memory_peak_bytes(r.used.memory_peak);
  if (r.state == JobState::kRunning) j.set_idle_since(r.gpu_use.idle_since);
  j.set_held(r.state == JobState::kPending && r.held);
  j.set_retries_used(r.retried);
  j.set_array_id(r.spec.array_id);
  j.set_array_index(r.spec.array_id.empty() ? 0 : r.spec.array_index);
  for (const Dependency& d : r.after) {
    auto* p = spec.add_after();
    p->set_kind(d.kind == AfterKind::kOk ? "ok" : d.kind == AfterKind::kAny ? "any" : "not_ok");
    p->set_job(d.job);
  }
  if (r.state == JobState::kPending)
    if (const Job* live = core.engine().entry(r.spec.id); live != nullptr && live->state == JobState::kPending)
      if (auto e = core.estimates().of(core.engine().slot_of(*live), core.engine().order_of(r.spec.id).value_or(0),
                                       core.engine_generation())) {
        j.set_estimated_start(e->start.value_or(0));
        j.set_estimate_computed_at(e->computed_at);
      }
  return j;
}

v1::JobEvent to_proto(const storage::EventRecord& e) {
  v1::JobEvent out;
  out.set_seq(e.seq);
  out.set_at(e.at);
  out.set_job_id(e.job);
  out.set_queue(e.queue);
  if (e.from) out.set_from(to_proto(*e.from));
  out.set_to(to_proto(e.to));
  out.set_reason(e.reason);
  out.set_flavor(e.flavor);
  return out;
}

v1::QueueStatus to_proto(const daemon::QueueStatus& s, const daemon::Core& core) {
  const ResourceNames& names = core.names();
  v1::QueueStatus out;
  *out.mutable_spec() = to_proto(s.spec, names);
  for (const auto& u : s.usage) {
    auto* p = out.add_usage();
    p->set_flavor(u.flavor);
    p->set_resource(names.name(u.resource));
    p->set_used(u.used);
    p->set_nominal(u.nominal);
    p->set_borrowed(u.borrowed);
    p->set_lent(u.lent);
  }
  out.set_share(s.share);
  out.set_pending(static_cast<std::int32_t>(s.counts.pending));
  out.set_admitted(static_cast<std::int32_t>(s.counts.admitted));
  out.set_running(static_cast<std::int32_t>(s.counts.running));
  out.set_preempting(static_cast<std::int32_t>(s.counts.preempting));
  return out;
}

v1::NodeStatus to_proto(const daemon::NodeStatus& s, const daemon::Core& core) {
  const ResourceNames& names = core.names();
  v1::NodeStatus out;
  *out.mutable_spec() = to_proto(s.spec, names);
  for (ResourceId r = 0; r < names.size(); ++r) {
    if (s.capacity[r] != 0) (*out.mutable_capacity())[names.name(r)] = s.capacity[r];
    if (s.used[r] != 0) (*out.mutable_used())[names.name(r)] = s.used[r];
  }
  out.set_gpus(s.gpus);
  out.set_gpus_free(s.gpus_free);
  out.set_pods(s.pods);
  return out;
}

v1::JobExplanation to_proto(const JobExplanation& e, const ResourceNames& names, Time computed_at) {
  v1::JobExplanation out;
  out.set_reason(e.reason);
  out.set_queue_position(static_cast<std::int32_t>(e.queue_position));
  out.set_queue_pending(static_cast<std::int32_t>(e.queue_pending));
  out.set_cycle_rank(static_cast<std::int32_t>(e.cycle_rank));
  out.set_cycle_queues(static_cast<std::int32_t>(e.cycle_queues));
  if (e.cycle_queues > 0) {
    auto* o = out.mutable_order();
    o->set_within_nominal(e.order.within_nominal);
    o->set_flavor(e.order.flavor);
    o->set_share(e.order.share);
    o->set_share_infinite(e.order.share_infinite);
    o->set_history(e.order.history);
    o->set_weight(e.order.weight);
    o->set_priority(e.order.priority);
    o->set_submitted_at(e.order.submitted_at);
  }
  for (const JobExplanation::Quota& q : e.quota) {
    auto* p = out.add_quota();
    p->set_flavor(q.flavor);
    p->set_resource(names.name(q.resource));
    p->set_requested(q.requested);
    p->set_nominal(q.nominal);
    p->set_used(q.used);
    p->set_borrowed(q.borrowed);
    p->set_has_borrowing_limit(q.borrowing_limit.has_value());
    p->set_borrowing_limit(q.borrowing_limit.value_or(0));
    p->set_has_lending_limit(q.lending_limit.has_value());
    p->set_lending_limit(q.lending_limit.value_or(0));
    p->set_headroom(std::min(q.headroom, kMaxQuantity));
    p->set_reachable(std::min(q.reachable, kMaxQuantity));
    p->set_cohort(q.cohort);
    p->set_cohort_lendable(q.cohort_lendable);
    p->set_cohort_used(q.cohort_used);
  }
  for (const JobExplanation::Room& r : e.room) {
    auto* p = out.add_room();
    p->set_flavor(r.flavor);
    p->set_nodes(static_cast<std::int32_t>(r.nodes));
    p->set_open(static_cast<std::int32_t>(r.open));
    p->set_fitting(static_cast<std::int32_t>(r.fitting));
    p->set_gpu_free(r.gpu_free);
    p->set_largest_free_block(r.largest_free_block);
    p->set_gpu_stranded(r.gpu_stranded);
    p->set_pods(r.pods);
    p->set_gpu_per_pod(r.gpu_per_pod);
  }
  if (e.preempted) {
    auto* p = out.mutable_preempted();
    p->set_by(e.preempted->by);
    p->set_by_queue(e.preempted->by_queue);
    if (!e.preempted->by.empty() && e.preempted->at > 0) p->set_reason(to_string(e.preempted->reason));
    p->set_at(e.preempted->at);
  }
  out.set_computed_at(computed_at);
  return out;
}

}  // namespace gpuq::api
