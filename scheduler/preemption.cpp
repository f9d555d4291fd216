// Preemption wired into the engine: the candidates, the World that preemption/ searches over,
// and what a found victim set does (preemption/README.md). A preemptor's quota and placement are
// booked as soon as its victims are chosen, so the capacity they free cannot be taken by a third
// job while they stop (the classic preemption livelock); the victims keep only what the
// preemptor does not need until they have stopped.
#include <algorithm>
#include <map>
#include <span>

#include "drf/share.hpp"
#include "scheduler/engine.hpp"
#include "scheduler/placement.hpp"

namespace gpuq {

// The engine's state as the victim search sees it, for one preemptor on one flavor. remove() and
// restore() change the quota book and the nodes directly (not through release()): the search
// undoes everything before it returns, and nothing else runs meanwhile.
class Engine::VictimWorld final : public preemption::World {
 public:
  // need: the resources the preemptor contends for (Engine::contested).
  VictimWorld(Engine& e, std::uint32_t j, FlavorId f, const ResourceVec& need)
      : e_(e), job_(e.jobs_[j]), f_(f), need_(need) {}

  void remove(const preemption::Candidate& c) override {
    Job& v = e_.jobs_[c.job];
    for (auto it = v.slots.rbegin(); it != v.slots.rend(); ++it) e_.cluster_.release(*it);
    if (c.preempting) return;  // its quota is already released
    if (v.flavor != kNoFlavor) e_.quota_.remove(v.queue, v.flavor, v.total);
    e_.queues_[v.queue].usage_all_flavors -= v.total;
  }

  void restore(const preemption::Candidate& c) override {
    Job& v = e_.jobs_[c.job];
    for (const PodSlot& s : v.slots) e_.cluster_.retake(s);
    if (c.preempting) return;
    if (v.flavor != kNoFlavor) e_.quota_.add(v.queue, v.flavor, v.total);
    e_.queues_[v.queue].usage_all_flavors += v.total;
  }

  bool fits(bool allow_borrowing) override {
    if (f_ != kNoFlavor) {
      if (e_.quota_.check(job_.queue, f_, job_.total)) return false;
      // A preemptor that may not borrow (not preemptible) must fit within its nominal too.
      if ((!allow_borrowing || e_.nominal_only(job_)) && !e_.quota_.within_nominal(job_.queue, f_, job_.total))
        return false;
    }
    if (e_.config_.quota_only) return true;
    const PlacementRequest req = e_.placement_request(static_cast<std::uint32_t>(&job_ - e_.jobs_.data()), f_);
    auto placed = place(e_.cluster_, e_.topology_, req);
    if (!placed) return false;
    for (auto it = placed->rbegin(); it != placed->rend(); ++it) e_.cluster_.release(*it);
    return true;
  }

  bool borrowing(std::uint32_t q) const override { return e_.borrowing_on(q, f_, need_); }

  // The nodes a candidate holds room on, where placement matters (not in quota-only mode).
  std::vector<std::uint32_t> places(const preemption::Candidate& c) const override {
    std::vector<std::uint32_t> out;
    if (e_.config_.quota_only) return out;
    for (const PodSlot& s : e_.jobs_[c.job].slots)
      if (std::find(out.begin(), out.end(), static_cast<std::uint32_t>(s.node)) == out.end())
        out.push_back(static_cast<std::uint32_t>(s.node));
    return out;
  }

  bool borrowing_any(std::uint32_t q) const override {
    return e_.quota_.queue(q).unlimited ? e_.queues_[q].usage_all_flavors != ResourceVec{}
                                        : e_.quota_.borrowing_any(q);
  }

  drf::Share share(std::uint32_t q) const override { return share_with(q, nullptr); }

  drf::Share preemptor_share() const override { return share_with(job_.queue, &job_.total); }

  drf::Share share_without(const preemption::Candidate& c) const override {
    if (c.preempting) return share(c.queue);
    const ResourceVec minus = ResourceVec{} - e_.jobs_[c.job].total;
    return share_with(c.queue, &minus);
  }

 private:
  // Kueue's borrowing share; for a queue without quotas, the classic DRF share.
  drf::Share share_with(std::uint32_t q, const ResourceVec* extra) const {
    if (!e_.quota_.queue(q).unlimited) return e_.quota_.borrowing_share(q, f_, extra);
    return e_.unlimited_share(q, extra);
  }

  Engine& e_;
  const Job& job_;
  FlavorId f_;
  ResourceVec need_;
};

// Whether queue q uses more than its nominal, on flavor f, of a resource that `need` asks for.
// A queue without quotas has nominal 0: all it uses is borrowed.
bool Engine::borrowing_on(QueueIdx q, FlavorId f, const ResourceVec& need) const {
  if (f == kNoFlavor) return false;
  const auto& qq = quota_.queue(q);
  const ResourceVec& used = quota_.usage(q, f);
  for (ResourceId r = 0; r < kMaxResources; ++r) {
    if (need[r] <= 0) continue;
    if (qq.unlimited) {
      if (used[r] > 0) return true;
    } else if (qq.rows[f].present && qq.rows[f].listed[r] && used[r] > qq.rows[f].nominal[r]) {
      return true;
    }
  }
  return false;
}

Engine::HoldingKey Engine::holding_key(std::uint32_t j) const {
  return {jobs_[j].spec.priority, -jobs_[j].admitted_at, jobs_[j].spec.id.value, j};
}

// The resources a preemption is for (Kueue's flavor-resources in Preempt mode): those of the
// job's request that its queue's quota cannot give now on flavor f; when the quota gives them
// all (the nodes lack room: gpuq also preempts for that), everything it asks.
ResourceVec Engine::contested(const Job& job, FlavorId f) const {
  ResourceVec need;
  bool any = false;
  if (f != kNoFlavor && !quota_.queue(job.queue).unlimited)
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (job.total[r] > 0 && quota_.headroom(job.queue, f, r) < job.total[r]) {
        need[r] = job.total[r];
        any = true;
      }
  return any ? need : job.total;
}

preemption::Candidate Engine::describe_candidate(std::uint32_t v, bool preempting) const {
  const Job& vj = jobs_[v];
  return preemption::Candidate{v,
                               vj.queue,
                               vj.spec.priority,
                               vj.spec.submitted_at,
                               vj.order,
                               vj.admitted_at,
                               vj.spec.id.value,
                               preempting};
}

// One queue's jobs holding resources, walked in its holding order (the victim order within a
// queue), skipping what cannot be a victim: another flavor, not preemptible, admitted in this
// cycle, younger than the queue's minRuntime, refused to stop a moment ago (StopRefused), or not
// allowed by the preemptor's policy.
class Engine::QueueRun final : public preemption::Run {
 public:
  QueueRun(const Engine& e, const Job& job, QueueIdx q, FlavorId f, const ResourceVec& need,
           const preemption::Preemptor& p, Time now, SearchLimit& limit)
      : e_(e), job_(job), q_(q), f_(f), need_(need), p_(p), now_(now), limit_(limit),
        it_(e.queues_[q].holding.begin()),
        end_(e.queues_[q].holding.end()),
        min_runtime_(e.queues_[q].spec.preemption.min_runtime),
        any_priority_(q != job.queue && p.policy.reclaim_within_cohort == ReclaimPolicy::kAny),
        // Only LowerOrNewerEqualPriority takes jobs of the preemptor's own priority.
        equal_too_(q == job.queue &&
                   p.policy.within_queue == WithinQueuePolicy::kLowerOrNewerEqualPriority) {}

  std::uint32_t queue() const override { return q_; }

  std::optional<preemption::Candidate> next() override {
    for (; it_ != end_; ++it_) {
      // Ordered by priority: from the preemptor's on, only `Any` (or an equal priority under
      // LowerOrNewerEqualPriority) can still yield candidates; the rest is never walked.
      if (!any_priority_ && (std::get<0>(*it_) > job_.spec.priority ||
                             (std::get<0>(*it_) == job_.spec.priority && !equal_too_)))
        break;
      const std::uint32_t v = std::get<3>(*it_);
      const Job& vj = e_.jobs_[v];
      if (vj.flavor != f_ || !vj.spec.preemptible || !uses_need(vj)) continue;
      // Passed over for now only: a search that fails without them may not fail later.
      if (vj.admitted_cycle == e_.cycle_) {
        limit_.keep = false;
        continue;
      }
      if (now_ - vj.admitted_at < min_runtime_) {
        limit_.until = std::min(limit_.until, vj.admitted_at + min_runtime_);
        continue;
      }
      if (now_ < vj.preemption->unevictable_until) {
        limit_.until = std::min(limit_.until, vj.preemption->unevictable_until);
        continue;
      }
      preemption::Candidate c = e_.describe_candidate(v, false);
      if (!preemption::eligible(p_, c)) continue;
      ++it_;
      return c;
    }
    it_ = end_;
    return std::nullopt;
  }

 private:
  // Kueue takes only jobs that use a resource the preemption is for.
  bool uses_need(const Job& vj) const {
    for (ResourceId r = 0; r < kMaxResources; ++r)
      if (need_[r] > 0 && vj.total[r] > 0) return true;
    return false;
  }

  const Engine& e_;
  const Job& job_;
  QueueIdx q_;
  FlavorId f_;
  ResourceVec need_;
  const preemption::Preemptor& p_;
  Time now_;
  SearchLimit& limit_;
  std::set<HoldingKey>::const_iterator it_, end_;
  Time min_runtime_;
  bool any_priority_;
  bool equal_too_;
};

// Jobs already stopping, from the same queues and under the same rules: waiting for them frees
// node room only (their quota is gone), so they are useless without nodes.
std::vector<preemption::Candidate> Engine::stopping_candidates(const std::vector<QueueIdx>& sources,
                                                               FlavorId f,
                                                               const preemption::Preemptor& p) const {
  std::vector<preemption::Candidate> out;
  if (config_.quota_only) return out;
  for (std::uint32_t v : preempting_) {
    const Job& vj = jobs_[v];
    if (vj.flavor != f || vj.slots.empty() ||
        std::find(sources.begin(), sources.end(), vj.queue) == sources.end())
      continue;
    preemption::Candidate c = describe_candidate(v, true);
    if (preemption::eligible(p, c)) out.push_back(c);
  }
  return out;
}

bool Engine::try_preempt(std::uint32_t j, Time now, std::vector<Decision>& out) {
  Job& job = jobs_[j];
  const QueueSpec& spec = queues_[job.queue].spec;
  search_limit_ = {};
  if (!spec.preemption.enabled()) return false;
  const std::uint64_t memo = job.shape * 0x9e3779b97f4a7c15ULL ^ job.queue;
  if (auto it = preemption_failed_.find(memo);
      it != preemption_failed_.end() && job.spec.priority <= it->second.priority) {
    search_limit_ = it->second.limit;
    job.wait.mut().preemption_found_nothing = true;
    return false;
  }
  preemption::Preemptor p;
  p.queue = job.queue;
  p.priority = job.spec.priority;
  p.submitted_at = job.spec.submitted_at;
  p.submit_order = job.order;
  p.policy = spec.preemption;
  p.fair = config_.fair_sharing;
  for (FlavorId f : job.candidates) {
    p.under_nominal = false;
    p.within_nominal_after = false;
    const ResourceVec need = contested(job, f);
    if (f != kNoFlavor && !quota_.queue(job.queue).unlimited) {
      const auto& row = quota_.queue(job.queue).rows[f];
      const ResourceVec& used = quota_.usage(job.queue, f);
      p.under_nominal = true;
      p.within_nominal_after = true;
      for (ResourceId r = 0; r < kMaxResources; ++r) {
        if (need[r] <= 0 || !row.listed[r]) continue;
        if (used[r] >= row.nominal[r]) p.under_nominal = false;
        if (used[r] + job.total[r] > row.nominal[r]) p.within_nominal_after = false;
      }
    }
    std::vector<QueueIdx> sources;
    if (p.policy.within_queue != WithinQueuePolicy::kNever) sources.push_back(job.queue);
    if (p.policy.reclaim_within_cohort != ReclaimPolicy::kNever)
      if (const auto* cohort = quota_.cohort_of(job.queue))
        for (QueueIdx q : cohort->members)
          if (q != job.queue) sources.push_back(q);
    auto stopping = stopping_candidates(sources, f, p);
    std::vector<QueueRun> runs;
    runs.reserve(sources.size());
    for (QueueIdx q : sources) {
      // Borrowing only goes down while victims are taken: a queue not borrowing now gives none.
      if (q != job.queue && !borrowing_on(q, f, need)) continue;
      runs.emplace_back(*this, job, q, f, need, p, now, search_limit_);
    }
    if (stopping.empty() && runs.empty()) continue;
    std::vector<preemption::Run*> run_list;
    for (QueueRun& r : runs) run_list.push_back(&r);
    VictimWorld world(*this, j, f, need);
    auto targets = preemption::find_victims(p, std::move(stopping), run_list, world);
    if (targets.empty()) continue;
    commit_preemption(j, f, targets, now, out);
    preemption_failed_.clear();  // quota was released: earlier failures may succeed now
    return true;
  }
  auto [it, fresh] = preemption_failed_.try_emplace(memo, FailedSearch{job.spec.priority, search_limit_});
  if (!fresh) {
    it->second.priority = std::max(it->second.priority, job.spec.priority);
    it->second.limit.merge(search_limit_);
  }
  job.wait.mut().preemption_found_nothing = true;
  return false;
}

void Engine::commit_preemption(std::uint32_t j, FlavorId f,
                               const std::vector<preemption::Target>& targets, Time now,
                               std::vector<Decision>& out) {
  Job& job = jobs_[j];
  // What each victim holds on the nodes now, freed so the preemptor can be placed where the
  // search found room; what the preemptor does not take is given back to the victim below.
  std::vector<std::vector<PodSlot>> held(targets.size());
  for (std::size_t i = 0; i < targets.size(); ++i) {
    const std::uint32_t v = targets[i].victim.job;
    Job& victim = jobs_[v];
    if (!targets[i].victim.preempting) {
      victim.preemption.mut().slots_before = victim.slots;
      victim.preemption.mut().state_before = victim.state;
    }
    held[i] = std::move(victim.slots);
    victim.slots.clear();
    for (auto it = held[i].rbegin(); it != held[i].rend(); ++it) cluster_.release(*it);
    if (!targets[i].victim.preempting) {
      history_.advance(victim.queue, queues_[victim.queue].usage_all_flavors, now);
      if (victim.flavor != kNoFlavor) quota_.remove(victim.queue, victim.flavor, victim.total);
      queues_[victim.queue].usage_all_flavors -= victim.total;
      --queues_[victim.queue].admitted;
      queues_[victim.queue].holding.erase(holding_key(v));
      count_owner(victim, 0, -1);
      preempting_.insert(victim, v);
      const JobState from = victim.state;
      victim.state = JobState::kPreempting;
      victim.preemption.mut().preempted_by = job.spec.id;
      victim.preemption.mut().preempt_reason = targets[i].reason;
      victim.preemption.mut().preempted_at = now;
      emit(victim, from, now,
           std::string("preempted by ") + job.spec.id.value + " (" + to_string(targets[i].reason) + ")");
      // Never longer than its queue allows now (maxGracePeriod), also for a job submitted before.
      out.emplace_back(Preemption{victim.spec.id, victim.spec.queue, job.spec.id, targets[i].reason,
                                  victim_grace(victim)});
    }
    if (std::find(victim.preemption->preemptors.begin(), victim.preemption->preemptors.end(), j) == victim.preemption->preemptors.end())
      victim.preemption.mut().preemptors.push_back(j);
    job.preemption.mut().waiting_on.push_back(v);
  }

  // The booking: the preemptor's quota and placement, exactly as the search found them.
  history_.advance(job.queue, queues_[job.queue].usage_all_flavors, now);
  std::vector<PodSlot> slots;
  if (!config_.quota_only) {
    auto placed = place(cluster_, topology_, placement_request(j, f));
    // The search proved it fits in exactly this state, and place() is deterministic.
    if (placed) slots = std::move(*placed);
  }
  if (f != kNoFlavor) quota_.add(job.queue, f, job.total);
  queues_[job.queue].usage_all_flavors += job.total;
  remove_pending(j);
  count_owner(job, 0, +1);  // booked: counted as running (maxRunningJobsPerUser) from now
  job.flavor = f;
  job.slots = std::move(slots);
  job.reserved = true;
  job.wait.reset();
  reserved_.insert(job, j);

  for (std::size_t i = 0; i < targets.size(); ++i)
    jobs_[targets[i].victim.job].slots = retake_residual(held[i]);
}

// What of a stopping victim's slots is still free after its preemptor was placed: booked to it
// again, so nothing else is placed on a GPU it still uses. A slot untouched by the preemptor is
// taken back whole; one it overlaps is split into its CPU/memory part and one slot per GPU.
std::vector<PodSlot> Engine::retake_residual(const std::vector<PodSlot>& held) {
  std::vector<PodSlot> out;
  for (PodSlot s : held) {
    s.exclusive = false;  // a stopping job no longer keeps other tenants away
    const Node& node = cluster_.node(s.node);
    bool whole = true;
    for (auto g : s.gpus) whole = whole && node.gpu_free[g] >= s.milli_per_gpu;
    for (std::size_t r = 1; r < kMaxResources; ++r)
      whole = whole && s.resources.v[r] <= node.capacity.v[r] - node.used.v[r];
    if (whole) {
      cluster_.retake(s);
      out.push_back(std::move(s));
      continue;
    }
    PodSlot rest{s.node, {}, 0, {}, s.queue, false};
    for (std::size_t r = 1; r < kMaxResources; ++r)
      rest.resources.v[r] = std::max<Quantity>(
          0, std::min(s.resources.v[r], node.capacity.v[r] - node.used.v[r]));
    if (!rest.resources.is_zero()) {
      cluster_.retake(rest);
      out.push_back(std::move(rest));
    }
    for (auto g : s.gpus) {
      const auto milli = std::min(s.milli_per_gpu, cluster_.node(s.node).gpu_free[g]);
      if (milli <= 0) continue;
      PodSlot part{s.node, {g}, milli, {}, s.queue, false};
      part.resources[kGpu] = milli;
      cluster_.retake(part);
      out.push_back(std::move(part));
    }
  }
  return out;
}

// A victim has stopped: what it still held is free, and its preemptors stop waiting for it.
void Engine::victim_stopped(std::uint32_t v, Time /*now*/) {
  Job& victim = jobs_[v];
  for (auto it = victim.slots.rbegin(); it != victim.slots.rend(); ++it) cluster_.release(*it);
  victim.slots.clear();
  victim.preemption.mut().slots_before.clear();
  victim.flavor = kNoFlavor;
  active_.erase({admission_seq_[v], v});
  preempting_.erase(jobs_[v], v);
  for (std::uint32_t p : victim.preemption->preemptors) std::erase(jobs_[p].preemption.mut().waiting_on, v);
  victim.preemption.mut().preemptors.clear();
}

// A victim whose stop was refused (binder.hpp: StopRefused) runs on where it ran: its preemptors
// give their bookings back and go back to their queues (the next cycle looks for other victims
// or lets them wait), it holds its quota and slots again, and it is no victim until retry_after.
Result<void> Engine::stop_refused(std::uint32_t v, const StopRefused& fact, Time now) {
  Job& victim = jobs_[v];
  const std::string cannot = "job \"" + victim.spec.id.value + "\" cannot run on: ";
  if (victim.state != JobState::kPreempting || victim.draining)
    return Error{"job \"" + victim.spec.id.value + "\" is " + to_string(victim.state) +
                     (victim.draining ? " and cancelled" : "") + ", not a preemption victim; it cannot run on",
                 ErrorCode::kFailedPrecondition};
  if (quota_lost(v))
    return Error{cannot + "the quota it held went to other jobs", ErrorCode::kFailedPrecondition};
  // Its preemptors give their bookings back; each of their victims, this one included, holds
  // again what of its room is free (drop_reservation).
  const std::vector<std::uint32_t> preemptors = victim.preemption->preemptors;
  for (std::uint32_t p : preemptors)
    if (jobs_[p].reserved) {
      drop_reservation(p, now);
      add_pending(p);
    }
  if (!config_.quota_only && !same_room(victim.slots, victim.preemption->slots_before))
    return Error{cannot + "some of the room it held went to other jobs; it goes on stopping",
                 ErrorCode::kFailedPrecondition};
  for (auto it = victim.slots.rbegin(); it != victim.slots.rend(); ++it) cluster_.release(*it);
  victim.slots = std::move(victim.preemption->slots_before);  // as it was placed, pod by pod
  victim.preemption.mut().slots_before.clear();
  for (const PodSlot& s : victim.slots) cluster_.retake(s);
  history_.advance(victim.queue, queues_[victim.queue].usage_all_flavors, now);
  if (victim.flavor != kNoFlavor) quota_.add(victim.queue, victim.flavor, victim.total);
  queues_[victim.queue].usage_all_flavors += victim.total;
  ++queues_[victim.queue].admitted;
  queues_[victim.queue].holding.insert(holding_key(v));
  count_owner(victim, 0, +1);
  preempting_.erase(jobs_[v], v);
  victim.state = victim.preemption->state_before;
  victim.preemption.mut().unevictable_until = now + std::max<Time>(fact.retry_after, 0);
  const std::string by = victim.preemption->preempted_by.value;
  victim.preemption.mut().preempted_by = JobId();
  emit(victim, JobState::kPreempting, now, "not preempted by " + by + ": " + fact.reason);
  preemption_failed_.clear();
  return Ok();
}

// Whether victim v's quota would not fit again once its preemptors gave their bookings back
// (tried on the quota book, then undone).
bool Engine::quota_lost(std::uint32_t v) {
  const Job& victim = jobs_[v];
  if (victim.flavor == kNoFlavor) return false;
  std::vector<const Job*> booked;
  for (std::uint32_t p : victim.preemption->preemptors)
    if (jobs_[p].reserved && jobs_[p].flavor != kNoFlavor) booked.push_back(&jobs_[p]);
  for (const Job* p : booked) quota_.remove(p->queue, p->flavor, p->total);
  const bool lost = quota_.check(victim.queue, victim.flavor, victim.total).has_value();
  for (auto p = booked.rbegin(); p != booked.rend(); ++p) quota_.add((*p)->queue, (*p)->flavor, (*p)->total);
  return lost;
}

// Whether two lists of slots take the same room: GPU shares per GPU and resources per node.
bool Engine::same_room(const std::vector<PodSlot>& a, const std::vector<PodSlot>& b) {
  using Room = std::pair<std::map<std::pair<NodeIdx, int>, Quantity>, std::map<NodeIdx, ResourceVec>>;
  auto room = [](const std::vector<PodSlot>& slots) {
    Room r;
    for (const PodSlot& s : slots) {
      for (auto g : s.gpus) r.first[{s.node, static_cast<int>(g)}] += s.milli_per_gpu;
      r.second[s.node] += s.resources;
    }
    return r;
  };
  return room(a) == room(b);
}

// The preemptor gives its booking back (cancelled, or a node of its booking was lost).
void Engine::drop_reservation(std::uint32_t j, Time now) {
  Job& job = jobs_[j];
  history_.advance(job.queue, queues_[job.queue].usage_all_flavors, now);
  for (auto it = job.slots.rbegin(); it != job.slots.rend(); ++it) cluster_.release(*it);
  job.slots.clear();
  if (job.flavor != kNoFlavor) quota_.remove(job.queue, job.flavor, job.total);
  queues_[job.queue].usage_all_flavors -= job.total;
  job.flavor = kNoFlavor;
  // Its victims still run where they ran: what of their room is free again is theirs again.
  for (std::uint32_t v : job.preemption->waiting_on) {
    Job& victim = jobs_[v];
    std::erase(victim.preemption.mut().preemptors, j);
    if (victim.state != JobState::kPreempting || victim.preemption->slots_before.empty()) continue;
    for (auto it = victim.slots.rbegin(); it != victim.slots.rend(); ++it) cluster_.release(*it);
    victim.slots = retake_residual(victim.preemption->slots_before);
  }
  job.preemption.mut().waiting_on.clear();
  job.reserved = false;
  reserved_.erase(jobs_[j], j);
  count_owner(job, 0, -1);
}

// Every victim has stopped: the preemptor is admitted where it was booked.
void Engine::admit_booked(std::uint32_t j, Time now, std::vector<Decision>& out) {
  Job& job = jobs_[j];
  ++epoch_;  // a victim candidate from the next cycle on; quota and nodes do not change
  job.reserved = false;
  reserved_.erase(jobs_[j], j);
  job.admitted_at = now;
  job.admitted_cycle = cycle_;
  job.state = JobState::kAdmitted;
  ++queues_[job.queue].admitted;
  admission_seq_[j] = next_admission_++;
  active_.emplace(admission_seq_[j], j);
  queues_[job.queue].holding.insert(holding_key(j));
  emit(job, JobState::kPending, now, "its preempted jobs have stopped");
  out.emplace_back(describe_admission(job));
}

std::vector<const Job*> Engine::reserved_jobs() const {
  std::vector<const Job*> out;
  for (std::uint32_t j : reserved_) out.push_back(&jobs_[j]);
  return out;
}

}  // namespace gpuq
