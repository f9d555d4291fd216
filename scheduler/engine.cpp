// Commands on queues and nodes: construction, flavors, queues and their usage history, nodes and
// the capacity they count for, the topology. Jobs come in through intake.cpp and live out their
// life in lifecycle.cpp; the admission cycle is in admission.cpp; the checks and the words that
// explain a decision are in explain.cpp.
#include "scheduler/engine.hpp"

#include <algorithm>
#include <cmath>

#include "spec/quantity.hpp"

namespace gpuq {

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
  ++epoch_;  // kept failures (admission.cpp) are tried again
  if (spec.name.empty()) return Error{"queue: name is empty"};
  if (!(spec.weight >= 0) || !std::isfinite(spec.weight))
    return Error{"queue \"" + spec.name.value + "\": weight must be 0 or more"};
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
  // (Its request changes with them: re-indexed.)
  QueueRec& rec = queues_[it->second];
  rec.by_request.clear();
  for (const PendingKey& k : rec.pending) {
    Job& job = jobs_[k.job];
    job.candidates = FlavorList(candidate_flavors(it->second, job.spec));
    job.request = request_hash(job);
    rec.by_request[job.request].insert(k);
  }
  return Ok();
}

Engine::QueueJobCounts Engine::job_counts(QueueIdx q) const {
  QueueJobCounts c;
  c.pending = pending_count(q);
  for (const HoldingKey& k : queues_[q].holding)
    ++(jobs_[std::get<3>(k)].state == JobState::kAdmitted ? c.admitted : c.running);
  for (std::uint32_t v : preempting_)
    if (jobs_[v].queue == q && !jobs_[v].draining) ++c.preempting;
  return c;
}

Result<void> Engine::remove_queue(const QueueName& name) {
  ++epoch_;  // kept failures (admission.cpp) are tried again
  auto q = queue_index(name);
  if (!q) return Error{"queue \"" + name.value + "\" does not exist", ErrorCode::kNotFound};
  const QueueRec& rec = queues_[*q];
  if (!rec.pending.empty() || rec.held > 0 || !rec.holding.empty() || rec.admitted > 0)
    return Error{"queue \"" + name.value + "\" has " + std::to_string(pending_count(*q)) + " pending and " +
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
  ++epoch_;  // kept failures (admission.cpp) are tried again
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
  ++epoch_;  // kept failures (admission.cpp) are tried again
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
  ++epoch_;  // kept failures (admission.cpp) are tried again
  auto n = cluster_.find(name);
  if (!n) return Error{"node \"" + name + "\" does not exist", ErrorCode::kNotFound};
  bool was_down = cluster_.node(*n).state == NodeState::kDown;
  cluster_.set_state(*n, state);
  if (state == NodeState::kDown && !was_down) lose_node(*n, now);
  return Ok();
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
