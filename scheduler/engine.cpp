// Commands and the job lifecycle. The admission cycle is in admission.cpp; the checks and the
// words that explain a decision are in explain.cpp.
#include "scheduler/engine.hpp"

#include <algorithm>
#include <type_traits>

#include "scheduler/placement.hpp"
#include "scheduler/quantity.hpp"

namespace gpuq {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64-style combination: order-sensitive and well spread.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 27);
}

std::uint64_t shape_of(const JobSpec& spec) {
  std::uint64_t h = spec.exclusive ? 1 : 2;
  for (const PodSet& s : spec.pod_sets) {
    h = mix(h, static_cast<std::uint64_t>(s.count));
    for (Quantity q : s.per_pod.v) h = mix(h, static_cast<std::uint64_t>(q));
  }
  return h;
}

}  // namespace

Engine::Engine(EngineConfig config)
    : config_(std::move(config)), history_(config_.usage_half_life) {}

std::optional<FlavorId> Engine::flavor_id(const std::string& name) const {
  auto it = flavor_ids_.find(name);
  if (it == flavor_ids_.end()) return std::nullopt;
  return it->second;
}

FlavorId Engine::intern_flavor(const std::string& name) {
  auto [it, fresh] = flavor_ids_.try_emplace(name, static_cast<FlavorId>(flavor_names_.size()));
  if (fresh) {
    flavor_names_.push_back(name);
    flavor_shapes_.emplace_back();
    quota_.set_flavor_count(flavor_names_.size());
  }
  return it->second;
}

std::optional<QueueIdx> Engine::queue_index(const QueueName& name) const {
  auto it = queue_ids_.find(name.value);
  if (it == queue_ids_.end()) return std::nullopt;
  return it->second;
}

Result<void> Engine::apply_queue(const QueueSpec& spec) {
  if (spec.name.empty()) return Error{"queue: name is empty"};
  if (!(spec.weight > 0))
    return Error{"queue \"" + spec.name.value + "\": weight must be > 0"};
  std::vector<FlavorId> flavors;
  for (const FlavorQuota& fq : spec.quotas) {
    if (fq.flavor.empty()) return Error{"queue \"" + spec.name.value + "\": quota flavor is empty"};
    for (const auto& [r, q] : fq.resources) {
      auto where = "queue \"" + spec.name.value + "\": " + fq.flavor + "/" + resources_.name(r);
      for (auto [field, value] : {std::pair{"nominal", std::optional<Quantity>(q.nominal)},
                                  std::pair{"borrowingLimit", q.borrowing_limit},
                                  std::pair{"lendingLimit", q.lending_limit}})
        if (value && *value > kMaxQuantity)
          return Error{where + " " + field + " is more than " +
                       format_quantity(kMaxQuantity, scale_of(r)) + ", the most a quota may state"};
      if (q.nominal < 0) return Error{where + " nominal must be >= 0"};
      if (q.borrowing_limit && *q.borrowing_limit < 0)
        return Error{where + " borrowingLimit must be >= 0"};
      if (q.lending_limit && *q.lending_limit < 0)
        return Error{where + " lendingLimit must be >= 0"};
      if (spec.cohort.empty() && (q.borrowing_limit || q.lending_limit))
        return Error{where + " borrowingLimit and lendingLimit need a cohort"};
    }
    FlavorId f = intern_flavor(fq.flavor);
    if (std::find(flavors.begin(), flavors.end(), f) != flavors.end())
      return Error{"queue \"" + spec.name.value + "\": flavor " + fq.flavor + " listed twice"};
    flavors.push_back(f);
  }
  auto [it, fresh] = queue_ids_.try_emplace(spec.name.value, static_cast<QueueIdx>(queues_.size()));
  if (fresh) queues_.emplace_back();
  queues_[it->second].spec = spec;
  quota_.set_queue(it->second, spec, flavors);
  // Candidate flavors of pending jobs depend on the queue's quota list.
  for (const PendingKey& k : queues_[it->second].pending)
    jobs_[k.job].candidates = candidate_flavors(it->second, jobs_[k.job].spec);
  return Ok();
}

Engine::QueueJobCounts Engine::job_counts(QueueIdx q) const {
  QueueJobCounts c;
  c.pending = queues_[q].pending.size();
  for (const HoldingKey& k : queues_[q].holding)
    ++(jobs_[std::get<3>(k)].state == JobState::kAdmitted ? c.admitted : c.running);
  for (std::uint32_t v : preempting_)
    if (jobs_[v].queue == q && !jobs_[v].draining) ++c.preempting;
  return c;
}

Result<void> Engine::remove_queue(const QueueName& name) {
  auto q = queue_index(name);
  if (!q) return Error{"queue \"" + name.value + "\" does not exist", ErrorCode::kNotFound};
  const QueueRec& rec = queues_[*q];
  if (!rec.pending.empty() || !rec.holding.empty() || rec.admitted > 0)
    return Error{"queue \"" + name.value + "\" has " + std::to_string(rec.pending.size()) + " pending and " +
                     std::to_string(rec.holding.size()) +
                     " admitted or running jobs; cancel them or wait for them to finish",
                 ErrorCode::kFailedPrecondition};
  for (NodeIdx n = 0; n < cluster_.size(); ++n)
    if (cluster_.node(n).dedicated == *q)
      return Error{"queue \"" + name.value + "\": node \"" + cluster_.node(n).name +
                       "\" is dedicated to it; change the node's dedicatedTo first",
                   ErrorCode::kFailedPrecondition};
  QueueSpec emptied;
  emptied.name = name;
  queues_[*q].spec = emptied;
  quota_.set_queue(*q, emptied, {});
  queue_ids_.erase(name.value);
  return Ok();
}

Result<void> Engine::set_usage_history(const QueueName& queue, const ResourceVec& average, Time now) {
  auto q = queue_index(queue);
  if (!q) return Error{"queue \"" + queue.value + "\" does not exist", ErrorCode::kNotFound};
  if (!history_.enabled())
    return Error{"queue \"" + queue.value + "\": usage history needs a usage half-life",
                 ErrorCode::kFailedPrecondition};
  UsageHistory::Average avg{};
  for (std::size_t r = 0; r < kMaxResources; ++r) {
    if (average.v[r] < 0)
      return Error{"queue \"" + queue.value + "\": usage history of " + resources_.name(static_cast<ResourceId>(r)) + " is negative"};
    avg[r] = static_cast<double>(average.v[r]);
  }
  history_.set(*q, avg, now);
  return Ok();
}

// What a queue's average usage is measured against: the cluster's capacity, or, when no nodes
// are modelled, the sum of every queue's nominal quota.
ResourceVec Engine::history_basis() const {
  if (!config_.quota_only) return capacity_all_;
  ResourceVec total;
  for (QueueIdx q = 0; q < queues_.size(); ++q)
    for (const FlavorQuota& fq : queues_[q].spec.quotas)
      for (const auto& [r, quota] : fq.resources) total[r] += quota.nominal;
  return total;
}

Result<QueueIdx> Engine::resolve_dedicated(const NodeSpec& spec) {
  if (!spec.dedicated_to) return kNoQueue;
  auto q = queue_index(*spec.dedicated_to);
  if (!q)
    return Error{"node \"" + spec.name + "\": dedicatedTo names queue \"" +
                 spec.dedicated_to->value + "\", which does not exist"};
  return *q;
}

Result<void> Engine::upsert_node(const NodeSpec& spec, Time now) {
  if (spec.name.empty()) return Error{"node: name is empty"};
  if (spec.flavor.empty()) return Error{"node \"" + spec.name + "\": flavor is empty"};
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (spec.capacity[r] < 0 || spec.capacity[r] > kMaxQuantity)
      return Error{"node \"" + spec.name + "\": capacity of " + resources_.name(r) + " is " +
                   format_quantity(spec.capacity[r], scale_of(r)) + "; it must be 0.." +
                   format_quantity(kMaxQuantity, scale_of(r))};
  auto dedicated = resolve_dedicated(spec);
  if (!dedicated) return Error{dedicated.error()};
  FlavorId f = intern_flavor(spec.flavor);
  // What the node counted for before this update, to take it out of the totals.
  struct Counted {
    FlavorId flavor;
    QueueIdx dedicated;
    ResourceVec capacity;
    NodeState state;
  };
  std::optional<Counted> before;
  if (auto existing = cluster_.find(spec.name)) {
    const Node& old = cluster_.node(*existing);
    before = Counted{old.flavor, old.dedicated, old.capacity, old.state};
  }
  auto n = cluster_.upsert(spec, f, *dedicated);
  if (!n) return Error{n.error()};
  if (before) {
    capacity_all_ -= before->capacity;
    count_node(before->flavor, before->dedicated, before->capacity, -1);
  }
  capacity_all_ += spec.capacity;
  count_node(f, *dedicated, spec.capacity, +1);
  topology_dirty_ = true;
  const bool was_down = before && before->state == NodeState::kDown;
  if (spec.state == NodeState::kDown && !was_down) lose_node(*n, now);
  return Ok();
}

void Engine::count_node(FlavorId f, QueueIdx dedicated, const ResourceVec& capacity, int delta) {
  ResourceVec& total = capacity_by_owner_[{f, dedicated}];
  if (delta > 0) total += capacity; else total -= capacity;
  auto& shapes = flavor_shapes_[f];
  auto it = std::find_if(shapes.begin(), shapes.end(), [&](const NodeShape& s) {
    return s.capacity == capacity && s.dedicated == dedicated;
  });
  if (it == shapes.end()) it = shapes.insert(shapes.end(), NodeShape{capacity, dedicated, 0});
  it->count = static_cast<std::uint32_t>(static_cast<int>(it->count) + delta);
  if (it->count == 0) shapes.erase(it);
}

ResourceVec Engine::usable_capacity(FlavorId f, QueueIdx q) const {
  ResourceVec out;
  if (auto it = capacity_by_owner_.find({f, kNoQueue}); it != capacity_by_owner_.end()) out += it->second;
  if (auto it = capacity_by_owner_.find({f, q}); q != kNoQueue && it != capacity_by_owner_.end())
    out += it->second;
  return out;
}

Result<void> Engine::set_node_state(const std::string& name, NodeState state, Time now) {
  auto n = cluster_.find(name);
  if (!n) return Error{"node \"" + name + "\" does not exist", ErrorCode::kNotFound};
  bool was_down = cluster_.node(*n).state == NodeState::kDown;
  cluster_.set_state(*n, state);
  if (state == NodeState::kDown && !was_down) lose_node(*n, now);
  return Ok();
}

Result<Job> Engine::make_job(JobSpec spec) const {
  if (auto v = validate_job(spec); !v) return Error{v.error(), v.code()};
  if (job_ids_.count(spec.id.value))
    return Error{"job \"" + spec.id.value + "\" already exists", ErrorCode::kAlreadyExists};
  auto q = queue_index(spec.queue);
  if (!q)
    return Error{"queue \"" + spec.queue.value + "\" does not exist", ErrorCode::kRejected};
  Job job;
  job.queue = *q;
  // validate_job bounded each set's per_pod * count by 2^52, so with the running total also
  // bounded after every step, no sum here exceeds 2^53.
  for (const PodSet& s : spec.pod_sets) {
    job.total += s.per_pod * s.count;
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (job.total[r] > kMaxQuantity)
        return Error{"job \"" + spec.id.value + "\": " + resources_.name(r) +
                     " for all its pods is more than " +
                     format_quantity(kMaxQuantity, scale_of(r)) + ", the most a job may ask for"};
  }
  job.shape = shape_of(spec);
  for (const PodSet& s : spec.pod_sets)
    if (s.per_pod[kGpu] > 0 && (job.smallest_gpu_pod == 0 || s.per_pod[kGpu] < job.smallest_gpu_pod))
      job.smallest_gpu_pod = s.per_pod[kGpu];
  job.candidates = candidate_flavors(*q, spec);
  job.spec = std::move(spec);
  return job;
}

void Engine::reserve_jobs(std::size_t more) {
  jobs_.reserve(jobs_.size() + more);
  job_ids_.reserve(job_ids_.size() + more);
  admission_seq_.reserve(admission_seq_.size() + more);
}

std::uint32_t Engine::store_job(Job job) {
  auto j = static_cast<std::uint32_t>(jobs_.size());
  job.order = next_order_++;
  job_ids_.emplace(job.spec.id.value, j);
  if (config_.placement == PlacementPolicy::kFragAware) count_shapes(job);
  jobs_.push_back(std::move(job));
  admission_seq_.push_back(0);
  return j;
}

void Engine::count_shapes(const Job& job) {
  for (const PodSet& s : job.spec.pod_sets) shape_counts_[shape_of(s.per_pod)] += static_cast<std::size_t>(s.count);
  frag_dirty_ = true;
}

Result<void> Engine::submit(JobSpec spec, Time now) {
  auto job = make_job(std::move(spec));
  if (!job) return Error{job.error(), job.code()};
  if (auto why = never_fits(*job)) return Error{*why, ErrorCode::kRejected};
  const std::uint32_t j = store_job(std::move(job.value()));
  add_pending(j);
  emit(jobs_[j], std::nullopt, now);
  return Ok();
}

Result<void> Engine::restore_running(JobSpec spec, const RunningPlacement& where, Time now) {
  const std::string who = "job \"" + spec.id.value + "\": ";
  auto made = make_job(std::move(spec));
  if (!made) {
    // A running job's queue must exist: that is a broken state, not a job to turn away.
    return Error{made.code() == ErrorCode::kRejected ? who + made.error() : made.error(),
                 made.code() == ErrorCode::kRejected ? ErrorCode::kNotFound : made.code()};
  }
  Job& job = made.value();
  if (auto bad = gpu_shape_error(job.spec)) return Error{who + *bad};

  FlavorId f = job.candidates.empty() ? kNoFlavor : job.candidates.front();
  if (where.flavor) {
    auto id = flavor_id(*where.flavor);
    if (!id) return Error{who + "flavor \"" + *where.flavor + "\" does not exist"};
    f = *id;
  }
  if (!where.nodes.empty()) {
    auto n = cluster_.find(where.nodes.front());
    if (!n) return Error{who + "node \"" + where.nodes.front() + "\" does not exist"};
    f = cluster_.node(*n).flavor;
  }
  auto slots = place_restored(job, where, f);
  if (!slots) return Error{slots.error()};

  const std::uint32_t j = store_job(std::move(job));
  admit(j, f, std::move(slots.value()), where.admitted_at);
  Job& restored = jobs_[j];
  restored.state = JobState::kRunning;
  emit(restored, JobState::kAdmitted, now);
  return Ok();
}

// The slot of a restored pod on exactly the GPUs it held, if they and the rest of its resources
// are free on node n.
Result<PodSlot> Engine::exact_slot(NodeIdx n, const ResourceVec& pod, const std::vector<int>& gpus,
                                   const Job& job) const {
  const Node& node = cluster_.node(n);
  const GpuAsk ask = GpuAsk::of(pod[kGpu]);
  const std::size_t want = ask.fraction > 0 ? 1 : static_cast<std::size_t>(ask.whole);
  if (gpus.size() != want)
    return Error{"holds " + std::to_string(gpus.size()) + " GPU indices for " + std::to_string(want) + " GPUs"};
  PodSlot slot;
  slot.node = n;
  slot.resources = pod;
  slot.queue = job.queue;
  slot.exclusive = job.spec.exclusive;
  slot.milli_per_gpu = static_cast<std::int16_t>(ask.fraction > 0 ? ask.fraction : kMilliPerGpu);
  for (int g : gpus) {
    if (g < 0 || g >= node.gpu_count()) return Error{"GPU " + std::to_string(g) + " does not exist"};
    if (std::find(slot.gpus.begin(), slot.gpus.end(), g) != slot.gpus.end())
      return Error{"GPU " + std::to_string(g) + " is listed twice"};
    if (node.gpu_free[static_cast<std::size_t>(g)] < slot.milli_per_gpu)
      return Error{"GPU " + std::to_string(g) + " is already taken"};
    slot.gpus.push_back(static_cast<std::uint8_t>(g));
  }
  for (ResourceId r = 0; r < kMaxResources; ++r)
    if (r != kGpu && node.capacity[r] - node.used[r] < pod[r])
      return Error{"not enough " + resources_.name(r) + " free"};
  return slot;
}

Result<std::vector<PodSlot>> Engine::place_restored(const Job& job, const RunningPlacement& where,
                                                    FlavorId f) {
  std::vector<PodSlot> slots;
  if (config_.quota_only) return slots;
  const std::string who = "job \"" + job.spec.id.value + "\": ";
  if (where.nodes.empty()) {
    rebuild_topology_if_needed();
    PlacementRequest req{f, job.queue, job.spec.exclusive, &job.spec.pod_sets, config_.placement, &frag_};
    if (auto placed = place(cluster_, topology_, req)) return std::move(*placed);
    return Error{who + "does not fit on the free capacity of flavor " +
                 (f == kNoFlavor ? std::string("(none)") : flavor_names_[f])};
  }
  std::size_t pods = 0;
  for (const PodSet& s : job.spec.pod_sets) pods += static_cast<std::size_t>(s.count);
  if (where.nodes.size() != pods)
    return Error{who + "nodes has " + std::to_string(where.nodes.size()) + " entries for " +
                 std::to_string(pods) + " pods; give one node per pod"};
  std::size_t i = 0;
  for (const PodSet& s : job.spec.pod_sets) {
    for (std::int32_t k = 0; k < s.count; ++k, ++i) {
      auto n = cluster_.find(where.nodes[i]);
      Error err{who + "pod " + std::to_string(i) + " does not fit on node " + where.nodes[i]};
      if (!n) err.message = who + "node \"" + where.nodes[i] + "\" does not exist";
      else if (cluster_.node(*n).flavor != f)
        err.message = who + "its pods are on nodes of different flavors";
      // Taken as it is: state and dedication do not matter, physical room does.
      else if (i < where.gpus.size() && !where.gpus[i].empty()) {
        auto slot = exact_slot(*n, s.per_pod, where.gpus[i], job);
        if (slot) {
          cluster_.retake(slot.value());
          slots.push_back(std::move(slot.value()));
          continue;
        }
        err.message = who + "pod " + std::to_string(i) + " on node " + where.nodes[i] + ": " + slot.error();
      } else if (cluster_.fits_physically(*n, s.per_pod)) {
        slots.push_back(cluster_.take(*n, s.per_pod, job.queue, job.spec.exclusive,
                                      config_.placement));
        continue;
      }
      for (auto it = slots.rbegin(); it != slots.rend(); ++it) cluster_.release(*it);
      return err;
    }
  }
  return slots;
}

Result<void> Engine::cancel(const JobId& id, Time now) {
  auto it = job_ids_.find(id.value);
  if (it == job_ids_.end())
    return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it->second];
  if (job.state == JobState::kPending) {
    if (job.reserved)
      drop_reservation(it->second, now);  // its victims still stop; what they free is free
    else
      remove_pending(it->second);
  } else if (job.holds_resources()) {
    if (config_.stops_confirmed)
      start_draining(it->second, now);
    else
      release(job, now);
  } else {
    return Error{"job \"" + id.value + "\" already ended (" + to_string(job.state) + ")",
                 ErrorCode::kFailedPrecondition};
  }
  finish(it->second, JobState::kCancelled, now, "cancelled");
  return Ok();
}

Result<void> Engine::observe(const BinderFact& fact, Time now) {
  if (const auto* lost = std::get_if<NodeLost>(&fact)) {
    auto n = cluster_.find(lost->node);
    if (!n) return Error{"node \"" + lost->node + "\" does not exist", ErrorCode::kNotFound};
    cluster_.set_state(*n, NodeState::kDown);
    lose_node(*n, now);
    return Ok();
  }
  const JobId& id = *job_of(fact);  // not NodeLost: handled above
  auto it = job_ids_.find(id.value);
  if (it == job_ids_.end())
    return Error{"job \"" + id.value + "\" does not exist", ErrorCode::kNotFound};
  Job& job = jobs_[it->second];
  if (job.draining) {
    // Cancelled while it ran: whatever the binder says now, its processes are gone (unless it
    // only says they started, which a cancel can overtake).
    if (!std::holds_alternative<JobStarted>(fact)) drained(it->second);
    return Ok();
  }
  if (!job.holds_resources())
    return Error{"job \"" + id.value + "\" is " + to_string(job.state) + ", not admitted",
                 ErrorCode::kFailedPrecondition};
  if (const auto* lost = std::get_if<JobLost>(&fact)) {
    lose_job(it->second, now, lost->reason);
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
    requeue(it->second, now, "preempted by " + job.preempted_by.value + " (" +
                                 to_string(job.preempt_reason) + ")");
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
  finish(it->second, done.exit_code == 0 ? JobState::kSucceeded : JobState::kFailed, now,
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
    requeue(j, now, "preempted by " + job.preempted_by.value + " (" + to_string(job.preempt_reason) + "); " +
                        reason);
  else if (job.spec.on_node_loss == NodeLossPolicy::kRequeue)
    requeue(j, now, reason);
  else
    finish(j, JobState::kFailed, now, reason);
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
  job.wait = {};
  if (f != kNoFlavor) quota_.add(job.queue, f, job.total);
  queues_[job.queue].usage_all_flavors += job.total;
  ++queues_[job.queue].admitted;
  admission_seq_[j] = next_admission_++;
  active_.emplace(admission_seq_[j], j);
  queues_[job.queue].holding.insert(holding_key(j));
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
  draining_.insert(j);
}

void Engine::drained(std::uint32_t j) {
  Job& job = jobs_[j];
  if (preempting_.count(j) > 0)
    victim_stopped(j, 0);  // its residual slots go and its preemptors stop waiting on it
  else
    release_slots(job);
  job.draining = false;
  draining_.erase(j);
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
  events_.push_back(Event{next_seq_++, now, job.spec.id, from, job.state, std::move(reason)});
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

void Engine::add_pending(std::uint32_t j) {
  Job& job = jobs_[j];
  QueueRec& q = queues_[job.queue];
  q.pending.insert(pending_key(j));
  job.pending_since = cycle_;
  if (job.smallest_gpu_pod == 0) {
    ++q.without_gpu;
    return;
  }
  count(q.by_total_gpu, job.total[kGpu], +1);
  count(q.by_smallest_gpu_pod, job.smallest_gpu_pod, +1);
}

void Engine::remove_pending(std::uint32_t j) {
  const Job& job = jobs_[j];
  QueueRec& q = queues_[job.queue];
  q.pending.erase(pending_key(j));
  if (job.smallest_gpu_pod == 0) {
    --q.without_gpu;
    return;
  }
  count(q.by_total_gpu, job.total[kGpu], -1);
  count(q.by_smallest_gpu_pod, job.smallest_gpu_pod, -1);
}

const Job* Engine::job(const JobId& id) const {
  auto it = job_ids_.find(id.value);
  return it == job_ids_.end() ? nullptr : &jobs_[it->second];
}

std::vector<const Job*> Engine::pending_in_submission_order() const {
  std::vector<const Job*> out;
  for (const QueueRec& q : queues_)
    for (const PendingKey& k : q.pending) out.push_back(&jobs_[k.job]);
  for (std::uint32_t j : reserved_) out.push_back(&jobs_[j]);
  std::sort(out.begin(), out.end(), [](const Job* a, const Job* b) { return a->order < b->order; });
  return out;
}

void Engine::rebuild_topology_if_needed() {
  if (!topology_dirty_ && topology_.levels() == config_.topology_levels) return;
  topology_.build(config_.topology_levels, cluster_.nodes());
  std::vector<std::size_t> domains_per_level;
  for (std::size_t l = 0; l < topology_.level_count(); ++l)
    domains_per_level.push_back(topology_.domains(l).size());
  cluster_.set_domains(topology_.node_domains(), domains_per_level);
  topology_dirty_ = false;
}

}  // namespace gpuq
