// A job's life after intake: cancels, binder facts, lost nodes, admission and release, requeue
// and finish, events, pending bookkeeping, and the job queries.
#include <algorithm>

#include "scheduler/engine.hpp"

namespace gpuq {

Result<void> Engine::cancel(const JobId& id, Time now, std::string reason, JobState to) {
  ++epoch_;  // kept failures (admission.cpp) are tried again
  const std::uint32_t it = resolve(id.value);
  if (it == kNoJob)
    return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it];
  if (job.state == JobState::kPending) {
    if (job.off_order())
      drop_hold(job);
    else if (job.reserved)
      drop_reservation(it, now);  // its victims still stop, holding their room again
    else
      remove_pending(it);
  } else if (job.holds_resources()) {
    if (config_.stops_confirmed)
      start_draining(it, now);
    else
      release(job, now);
  } else {
    return Error{"job \"" + id.value + "\" already ended (" + to_string(job.state) + ")",
                 ErrorCode::kFailedPrecondition};
  }
  finish(it, to, now, std::move(reason));
  return Ok();
}

Result<void> Engine::observe(const BinderFact& fact, Time now) {
  ++epoch_;  // kept failures (admission.cpp) are tried again
  if (const auto* lost = std::get_if<NodeLost>(&fact)) {
    auto n = cluster_.find(lost->node);
    if (!n) return Error{"node \"" + lost->node + "\" does not exist", ErrorCode::kNotFound};
    cluster_.set_state(*n, NodeState::kDown);
    lose_node(*n, now);
    return Ok();
  }
  const JobId& id = *job_of(fact);  // not NodeLost: handled above
  const std::uint32_t it = resolve(id.value);
  if (it == kNoJob)
    return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it];
  if (const auto* refused = std::get_if<StopRefused>(&fact)) return stop_refused(it, *refused, now);
  if (job.draining) {
    // Cancelled while it ran: whatever the binder says now, its processes are gone (unless it
    // only says they started, which a cancel can overtake).
    if (!std::holds_alternative<JobStarted>(fact)) drained(it);
    return Ok();
  }
  if (!job.holds_resources())
    return Error{"job \"" + id.value + "\" is " + to_string(job.state) + ", not admitted",
                 ErrorCode::kFailedPrecondition};
  if (const auto* lost = std::get_if<JobLost>(&fact)) {
    lose_job(it, now, lost->reason);
    return Ok();
  }
  if (std::holds_alternative<JobStarted>(fact)) {
    if (job.state == JobState::kAdmitted) {
      job.state = JobState::kRunning;
      emit(job, JobState::kAdmitted, now);
    }
    return Ok();
  }
  if (job.state == JobState::kPreempting) {
    // Stopped as asked, or ended by itself meanwhile: either way it was preempted, and goes
    // back to its place in the queue.
    release(job, now);
    requeue(it, now, "preempted by " + job.preemption->preempted_by.value + " (" +
                                 to_string(job.preemption->preempt_reason) + ")");
    return Ok();
  }
  if (std::holds_alternative<JobStopped>(fact))
    return Error{"job \"" + id.value + "\" is " + to_string(job.state) +
                     ", not Preempting; report how it finished instead",
                 ErrorCode::kFailedPrecondition};
  const auto& done = std::get<JobFinished>(fact);
  release(job, now);
  std::string reason = done.reason;
  if (reason.empty() && done.exit_code != 0) reason = "exit code " + std::to_string(done.exit_code);
  if (done.exit_code != 0 && retry(it, now, reason)) return Ok();
  finish(it, done.exit_code == 0 ? JobState::kSucceeded : JobState::kFailed, now,
         std::move(reason));
  return Ok();
}

// A job whose node (or whose processes alone) vanished: a victim that was stopping anyway is
// preempted as it would have been; otherwise its on_node_loss decides.
void Engine::lose_job(std::uint32_t j, Time now, const std::string& reason) {
  Job& job = jobs_[j];
  const bool was_preempting = job.state == JobState::kPreempting;
  release(job, now);
  if (was_preempting)
    requeue(j, now, "preempted by " + job.preemption->preempted_by.value + " (" + to_string(job.preemption->preempt_reason) + "); " +
                        reason);
  else if (job.spec.on_node_loss == NodeLossPolicy::kRequeue)
    requeue(j, now, reason);
  else if (!retry(j, now, reason))
    finish(j, JobState::kFailed, now, reason);
}

// A run that failed, with retries left (JobSpec::retries): back to its place in its queue, the
// retry counted. Its quota and slots are released already.
bool Engine::retry(std::uint32_t j, Time now, const std::string& reason) {
  Job& job = jobs_[j];
  if (job.retried >= job.spec.retries) return false;
  ++job.retried;
  requeue(j, now, reason + "; retry " + std::to_string(job.retried) + " of " + std::to_string(job.spec.retries));
  return true;
}

void Engine::lose_node(NodeIdx n, Time now) {
  std::vector<std::uint32_t> hit;
  for (const auto& [seq, j] : active_)
    if (!jobs_[j].draining)
      for (const PodSlot& s : jobs_[j].slots)
      if (s.node == n) {
        hit.push_back(j);
        break;
      }
  const std::string reason = "node " + cluster_.node(n).name + " lost";
  for (std::uint32_t j : hit) lose_job(j, now, reason);
  // Cancelled jobs still stopping there have stopped with their node.
  std::vector<std::uint32_t> drained_here;
  for (std::uint32_t j : draining_)
    for (const PodSlot& s : jobs_[j].slots)
      if (s.node == n) {
        drained_here.push_back(j);
        break;
      }
  for (std::uint32_t j : drained_here) drained(j);
  // A preemptor booked on the lost node gives its booking up and goes back to its queue.
  std::vector<std::uint32_t> booked;
  for (std::uint32_t j : reserved_)
    for (const PodSlot& s : jobs_[j].slots)
      if (s.node == n) {
        booked.push_back(j);
        break;
      }
  for (std::uint32_t j : booked) {
    drop_reservation(j, now);
    add_pending(j);
  }
}

void Engine::admit(std::uint32_t j, FlavorId f, std::vector<PodSlot> slots, Time now) {
  Job& job = jobs_[j];
  history_.advance(job.queue, queues_[job.queue].usage_all_flavors, now);
  job.flavor = f;
  job.slots = std::move(slots);
  job.admitted_at = now;
  job.admitted_cycle = cycle_;
  job.state = JobState::kAdmitted;
  job.wait.reset();
  if (f != kNoFlavor) quota_.add(job.queue, f, job.total);
  queues_[job.queue].usage_all_flavors += job.total;
  ++queues_[job.queue].admitted;
  admission_seq_[j] = next_admission_++;
  active_.emplace(admission_seq_[j], j);
  queues_[job.queue].holding.insert(holding_key(j));
  count_owner(job, 0, +1);
}

void Engine::release(Job& job, Time now) {
  auto j = static_cast<std::uint32_t>(&job - jobs_.data());
  if (job.state == JobState::kPreempting) {
    victim_stopped(j, now);  // its quota went when it was chosen; its residual slots go now
    return;
  }
  release_quota(job, now);
  release_slots(job);
}

// What an Admitted or Running job holds, but its place on the nodes.
void Engine::release_quota(Job& job, Time now) {
  auto j = static_cast<std::uint32_t>(&job - jobs_.data());
  queues_[job.queue].holding.erase(holding_key(j));
  history_.advance(job.queue, queues_[job.queue].usage_all_flavors, now);
  if (job.flavor != kNoFlavor) quota_.remove(job.queue, job.flavor, job.total);
  queues_[job.queue].usage_all_flavors -= job.total;
  --queues_[job.queue].admitted;
  count_owner(job, 0, -1);
  active_.erase({admission_seq_[j], j});
  job.flavor = kNoFlavor;
}

void Engine::release_slots(Job& job) {
  for (auto it = job.slots.rbegin(); it != job.slots.rend(); ++it) cluster_.release(*it);
  job.slots.clear();
}

// Cancelled while holding a placement, with a binder that confirms stops: its quota is free now
// (a Preempting victim's went when it was chosen), its slots when the binder says it is gone.
void Engine::start_draining(std::uint32_t j, Time now) {
  Job& job = jobs_[j];
  if (job.state != JobState::kPreempting) release_quota(job, now);
  job.draining = true;
  draining_.insert(jobs_[j], j);
}

void Engine::drained(std::uint32_t j) {
  Job& job = jobs_[j];
  if (preempting_.contains(jobs_[j], j))
    victim_stopped(j, 0);  // its residual slots go and its preemptors stop waiting on it
  else
    release_slots(job);
  job.draining = false;
  draining_.erase(jobs_[j], j);
}

void Engine::requeue(std::uint32_t j, Time now, const std::string& reason) {
  Job& job = jobs_[j];
  JobState from = job.state;
  job.state = JobState::kPending;
  ++job.attempts;
  if (from == JobState::kPreempting) ++job.preemptions;
  // Back at its original place: the pending key is built from priority, time and order.
  add_pending(j);
  emit(job, from, now, reason);
}

void Engine::finish(std::uint32_t j, JobState to, Time now, std::string reason) {
  Job& job = jobs_[j];
  JobState from = job.state;
  job.state = to;
  job.end_reason = reason;
  emit(job, from, now, std::move(reason));
}

void Engine::emit(const Job& job, std::optional<JobState> from, Time now, std::string reason) {
  std::string flavor = job.holds_resources() && job.flavor != kNoFlavor ? flavor_names_[job.flavor] : std::string();
  events_.push_back(Event{next_seq_++, now, job.spec.id, from, job.state, std::move(reason), std::move(flavor)});
}

std::vector<Event> Engine::take_events() {
  std::vector<Event> out;
  out.swap(events_);
  return out;
}

Engine::PendingKey Engine::pending_key(std::uint32_t j) const {
  const Job& job = jobs_[j];
  return PendingKey{-job.spec.priority, job.spec.submitted_at, job.order, j};
}

namespace {
void count(std::map<Quantity, std::uint32_t>& m, Quantity key, int delta) {
  auto it = m.try_emplace(key, 0).first;
  it->second = static_cast<std::uint32_t>(static_cast<int>(it->second) + delta);
  if (it->second == 0) m.erase(it);
}
}  // namespace

void Engine::index_pending(std::uint32_t j) {
  const Job& job = jobs_[j];
  QueueRec& q = queues_[job.queue];
  q.pending.insert(pending_key(j));
  q.by_request[job.request].insert(pending_key(j));
}

void Engine::unindex_pending(std::uint32_t j) {
  const Job& job = jobs_[j];
  QueueRec& q = queues_[job.queue];
  q.pending.erase(pending_key(j));
  if (auto it = q.by_request.find(job.request); it != q.by_request.end()) {
    it->second.erase(pending_key(j));
    if (it->second.empty()) q.by_request.erase(it);
  }
}

// An array's block (arrays.cpp) is counted with its weight: the members it stands for.
void Engine::add_pending(std::uint32_t j) {
  Job& job = jobs_[j];
  QueueRec& q = queues_[job.queue];
  job.request = request_hash(job);
  index_pending(j);
  const std::uint32_t w = weight(j);
  q.in_blocks += w - 1;
  count_owner(job, static_cast<int>(w), 0);
  job.pending_since = cycle_;
  q.constrained += job.constrained ? w : 0;
  if (job.smallest_gpu_pod == 0) {
    q.without_gpu += w;
    return;
  }
  count(q.by_total_gpu, job.total[kGpu], static_cast<int>(w));
  count(q.by_smallest_gpu_pod, job.smallest_gpu_pod, static_cast<int>(w));
}

void Engine::remove_pending(std::uint32_t j) {
  const Job& job = jobs_[j];
  kept_failures_.erase(j);
  drop_claim(j);
  QueueRec& q = queues_[job.queue];
  unindex_pending(j);
  const std::uint32_t w = weight(j);
  q.in_blocks -= w - 1;
  count_owner(job, -static_cast<int>(w), 0);
  q.constrained -= job.constrained ? w : 0;
  if (job.smallest_gpu_pod == 0) {
    q.without_gpu -= w;
    return;
  }
  count(q.by_total_gpu, job.total[kGpu], -static_cast<int>(w));
  count(q.by_smallest_gpu_pod, job.smallest_gpu_pod, -static_cast<int>(w));
}

const Job* Engine::job(const JobId& id) const {
  const std::uint32_t it = find_job(id.value);
  return it == kNoJob ? nullptr : &jobs_[it];
}

std::optional<Job> Engine::view(const JobId& id) const {
  if (const Job* j = job(id)) return *j;
  if (auto b = in_block(id.value)) return member_of_block(b->carrier, b->pos);
  return std::nullopt;
}

std::uint32_t Engine::stored_slot(const Job& job) const {
  const std::less<const Job*> before;
  if (jobs_.empty() || before(&job, jobs_.data()) || !before(&job, jobs_.data() + jobs_.size())) return kNoJob;
  return static_cast<std::uint32_t>(&job - jobs_.data());
}

std::uint32_t Engine::members_of(const Job& job) const {
  const std::uint32_t j = stored_slot(job);
  return j == kNoJob ? 1 : weight(j);
}

std::vector<const Job*> Engine::pending_in_submission_order() const {
  std::vector<const Job*> out;
  for (const QueueRec& q : queues_)
    for (const PendingKey& k : q.pending) out.push_back(&jobs_[k.job]);
  for (std::uint32_t j : reserved_) out.push_back(&jobs_[j]);
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) { return a->order < b->order; });
  return out;
}

std::vector<const Job*> Engine::holding_jobs() const {
  std::vector<const Job*> out;
  job_ids_.for_each_slot([&](std::uint32_t j) {
    if (jobs_[j].holds_resources() || jobs_[j].draining) out.push_back(&jobs_[j]);
  });
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) { return a->order < b->order; });
  return out;
}

std::vector<Engine::Queued> Engine::pending_in_queue_order() const {
  std::vector<Queued> out;
  for (const QueueRec& q : queues_) {
    std::size_t position = 0;
    for (const PendingKey& k : q.pending) {
      out.push_back({&jobs_[k.job], position + 1, q.pending.size() + q.in_blocks});
      position += weight(k.job);  // a block, at its first member's place
    }
  }
  for (std::uint32_t j : reserved_) out.push_back({&jobs_[j], 0, 0});
  return out;
}

}  // namespace gpuq
