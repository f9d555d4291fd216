// Job intake: checking and storing a submitted job, and restoring a running one on its placement.
#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <type_traits>

#include "scheduler/engine.hpp"
#include "scheduler/placement.hpp"
#include "spec/quantity.hpp"

namespace gpuq {
namespace {

std::uint64_t mix(std::uint64_t h, std::uint64_t v) {
  // splitmix64-style combination: order-sensitive and well spread.
  h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
  h ^= h >> 31;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 27);
}

std::uint64_t mix(std::uint64_t h, const std::string& text) {
  return mix(mix(h, text.size()), std::hash<std::string>{}(text));
}

// The node constraints, so that jobs that may go on different nodes never share a placement
// memo entry. Each list is prefixed by its length, so no two different constraints hash alike
// by shifting a value from one list to the next.
std::uint64_t mix(std::uint64_t h, const NodeConstraints& c) {
  h = mix(h, c.node_selector.size());
  for (const auto& [k, v] : c.node_selector) h = mix(mix(h, k), v);
  h = mix(h, c.affinity.size());
  for (const auto& term : c.affinity) {
    h = mix(h, term.size());
    for (const NodeRequirement& r : term) {
      h = mix(mix(mix(h, r.key), static_cast<std::uint64_t>(r.op)), r.values.size());
      for (const std::string& v : r.values) h = mix(h, v);
    }
  }
  h = mix(h, c.tolerations.size());
  for (const Toleration& t : c.tolerations) {
    const std::uint64_t effect = t.effect ? static_cast<std::uint64_t>(*t.effect) + 1 : 0;
    h = mix(mix(mix(mix(h, t.key), t.exists ? 1 : 2), t.value), effect);
  }
  return h;
}

std::uint64_t shape_of(const JobSpec& spec) {
  std::uint64_t h = spec.exclusive ? 1 : 2;
  for (const PodSet& s : spec.pod_sets) {
    h = mix(h, static_cast<std::uint64_t>(s.count));
    for (Quantity q : s.per_pod.v) h = mix(h, static_cast<std::uint64_t>(q));
    if (!s.where->empty()) h = mix(h, s.where);
  }
  return h;
}

}  // namespace

Result<Job> Engine::make_job(JobSpec spec) const {
  if (auto v = validate_job(spec); !v) return Error{v.error(), v.code()};
  if (find_job(spec.id.value) != kNoJob)
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
  job.constrained = std::any_of(spec.pod_sets.begin(), spec.pod_sets.end(),
                                [](const PodSet& s) { return !s.where->empty(); });
  for (const PodSet& s : spec.pod_sets)
    if (s.per_pod[kGpu] > 0 && (job.smallest_gpu_pod == 0 || s.per_pod[kGpu] < job.smallest_gpu_pod))
      job.smallest_gpu_pod = s.per_pod[kGpu];
  job.candidates = FlavorList(candidate_flavors(*q, spec));
  job.spec = std::move(spec);
  return job;
}

void Engine::reserve_jobs(std::size_t more) {
  // Grown geometrically: reserving exactly size + more on every call (a job array per submit)
  // moved every job and rehashed every id each time, quadratic over many arrays.
  const auto grow = [more](auto& c) {
    if (c.size() + more > c.capacity()) c.reserve(std::max(c.size() + more, 2 * c.capacity()));
  };
  grow(jobs_);
  grow(admission_seq_);
  if (job_ids_.size() + more > job_ids_.max_load())
    job_ids_.reserve(std::max(job_ids_.size() + more, 2 * job_ids_.size()));
}

std::uint32_t Engine::store_job(Job job) {
  job.order = next_order_++;
  if (config_.placement == PlacementPolicy::kFragAware) count_shapes(job);
  return keep_job(std::move(job));
}

std::uint32_t Engine::keep_job(Job job) {
  std::uint32_t j;
  if (!free_jobs_.empty()) {
    j = free_jobs_.back();
    free_jobs_.pop_back();
    jobs_[j] = std::move(job);
    admission_seq_[j] = 0;
  } else {
    j = static_cast<std::uint32_t>(jobs_.size());
    jobs_.push_back(std::move(job));
    admission_seq_.push_back(0);
  }
  job_ids_.insert(jobs_[j].spec.id.value, j);
  return j;
}

bool Engine::forget(const JobId& id) {
  ++epoch_;  // kept failures (admission.cpp) are tried again
  const std::uint32_t j = find_job(id.value);
  if (j == kNoJob) {
    // An ended array's member in its block (array_command): it leaves the block.
    auto b = in_block(id.value);
    if (!b || !is_finished(jobs_[b->carrier].state)) return false;
    take_out(b->carrier, b->pos);
    return true;
  }
  if (!is_finished(jobs_[j].state) || jobs_[j].draining) return false;
  forget_id(id.value);
  // Destroyed and made anew, so every string and vector gives its memory back (a move-assigned
  // string may keep its buffer).
  std::destroy_at(&jobs_[j]);
  std::construct_at(&jobs_[j]);
  jobs_[j].state = JobState::kCancelled;  // a free slot: ended, and in no index
  free_jobs_.push_back(j);
  return true;
}

void Engine::count_shapes(const Job& job, std::size_t times) {
  for (const PodSet& s : job.spec.pod_sets) {
    PodShape shape = shape_of(s.per_pod);
    shape.where = intern_where(frag_where_, s.where);  // e.g. the GPU models it accepts
    shape_counts_[shape] += static_cast<std::size_t>(s.count) * times;
  }
  frag_dirty_ = true;
}

Result<Job> Engine::array_template(JobSpec first) const {
  auto job = make_job(std::move(first));
  if (!job) return job;
  if (auto why = never_fits(*job)) return Error{*why, ErrorCode::kRejected};
  return job;
}

Result<void> Engine::submit(JobSpec spec, Time now, std::optional<std::string> hold) {
  auto job = array_template(std::move(spec));  // one job: its own template
  if (!job) return Error{job.error(), job.code()};
  enter_job(std::move(job.value()), now, std::move(hold));
  return Ok();
}

Result<void> Engine::submit_member(const Job& tmpl, JobId id, std::int32_t index, Time now,
                                   std::optional<std::string> hold) {
  if (find_job(id.value) != kNoJob)
    return Error{"job \"" + id.value + "\" already exists", ErrorCode::kAlreadyExists};
  Job job = tmpl;
  job.spec.id = std::move(id);
  job.spec.array_index = index;
  enter_job(std::move(job), now, std::move(hold));
  return Ok();
}

void Engine::enter_job(Job job, Time now, std::optional<std::string> hold) {
  const std::uint32_t j = store_job(std::move(job));
  if (!hold) {
    add_pending(j);
    emit(jobs_[j], std::nullopt, now);
    return;
  }
  enter_held(j, 1);
  Job& held = jobs_[j];
  emit(held, std::nullopt, now);
  emit(held, JobState::kPending, now, std::move(*hold));
}

void Engine::restore_counts(const JobId& id, std::int32_t attempts, std::int32_t preemptions, std::int32_t retried) {
  const std::uint32_t it = resolve(id.value);
  if (it == kNoJob) return;
  jobs_[it].attempts = attempts;
  jobs_[it].preemptions = preemptions;
  jobs_[it].retried = retried;
}

Result<void> Engine::restore_running(JobSpec spec, const RunningPlacement& where, Time now) {
  ++epoch_;  // kept failures (admission.cpp) are tried again
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

}  // namespace gpuq
