// The admission cycle. Each queue offers its head job; the heads are kept in a heap ordered by:
//   1. the head fits within its queue's nominal quota (guaranteed work first),
//   2. the queue's weighted share after adding the job (lowest first),
//   3. higher priority, 4. earlier submission, 5. job id.
// Only the queue that just admitted or skipped a job is re-keyed, so a decision costs O(log Q)
// plus placement, however many queues and jobs there are. The cycle runs until every queue is
// exhausted (BestEffortFIFO skips a head that does not fit; StrictFIFO stops the queue there), or
// left early because none of its remaining jobs could fit (none_can_fit).
#include <algorithm>
#include <span>

#include "drf/indexed_heap.hpp"
#include "drf/share.hpp"
#include "scheduler/engine.hpp"
#include "scheduler/placement.hpp"

namespace gpuq {
namespace {

std::uint64_t memo_key(std::uint64_t shape, FlavorId f, QueueIdx q) {
  std::uint64_t h = shape ^ (static_cast<std::uint64_t>(f) << 48) ^ (static_cast<std::uint64_t>(q) * 0x9e3779b97f4a7c15ULL);
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ULL;
  return h ^ (h >> 32);
}

}  // namespace

struct Engine::HeadKey {
  std::uint8_t tier = 1;
  drf::Share share;
  std::int32_t neg_priority = 0;
  Time submitted = 0;
  std::uint32_t job = UINT32_MAX;  // where the job is kept; for a view (a copy), `id` instead
  const std::string* id = nullptr;
};

bool Engine::HeadKeyLess::operator()(const HeadKey& a, const HeadKey& b) const {
  if (a.tier != b.tier) return a.tier < b.tier;
  if (a.share != b.share) return a.share < b.share;  // weight 0 and borrowing: last
  if (a.neg_priority != b.neg_priority) return a.neg_priority < b.neg_priority;
  if (a.submitted != b.submitted) return a.submitted < b.submitted;
  auto id = [&](const HeadKey& k) -> const std::string& {
    return k.job != UINT32_MAX ? (*jobs)[k.job].spec.id.value : *k.id;
  };
  return id(a) < id(b);
}

// The classic DRF share of a queue without quotas (usage over the whole cluster's capacity), per
// mille like Kueue's borrowing share, so that both kinds of queue compare on one scale.
drf::Share Engine::unlimited_share(QueueIdx q, const ResourceVec* extra) const {
  ResourceVec usage = queues_[q].usage_all_flavors;
  if (extra != nullptr) usage += *extra;
  const double s = drf::dominant_share(std::span<const Quantity>(usage.v),
                                       std::span<const Quantity>(capacity_all_.v), 1.0);
  return drf::weighted(s * 1000.0, quota_.queue(q).weight);
}

// The decayed usage history's part of a queue's share, on the same per-mille scale. A queue of
// weight 0 counts its history unweighted (its share is infinite only while it borrows).
double Engine::history_share(QueueIdx q) const {
  const double w = quota_.queue(q).weight;
  return 1000.0 * history_.share(q, basis_, w > 0 ? w : 1.0);
}

// A job's request as far as its admission goes: its queue, pod sets (shape: counts, sizes,
// constraints, exclusive), flavors and whether it may borrow.
std::uint64_t Engine::request_hash(const Job& job) const {
  std::uint64_t h = memo_key(job.shape, static_cast<FlavorId>(job.spec.preemptible), job.queue);
  for (FlavorId f : job.candidates) h = memo_key(h, f, job.queue);
  return h;
}

bool Engine::same_request(const Job& a, const Job& b) const {
  if (a.queue != b.queue || a.shape != b.shape || a.total != b.total || a.candidates != b.candidates ||
      a.spec.exclusive != b.spec.exclusive || a.spec.preemptible != b.spec.preemptible ||
      a.spec.pod_sets.size() != b.spec.pod_sets.size())
    return false;
  for (std::size_t i = 0; i < a.spec.pod_sets.size(); ++i) {
    const PodSet& x = a.spec.pod_sets[i];
    const PodSet& y = b.spec.pod_sets[i];
    if (x.count != y.count || x.per_pod != y.per_pod || !(x.where == y.where)) return false;
  }
  return true;
}

Engine::HeadKey Engine::head_key(QueueIdx q, const Job& job) const {
  HeadKey key;
  key.neg_priority = -job.spec.priority;
  key.submitted = job.spec.submitted_at;
  key.job = stored_slot(job);
  if (key.job == kNoJob) key.id = &job.spec.id.value;
  const auto& qq = quota_.queue(q);
  // The rest depends on the queue, the job's total and flavors and the quota book alone (and the
  // usage history, fixed within a cycle): the same request at the same quota version has it.
  const bool use_memo = !qq.unlimited && config_.admission_memo;
  const std::uint64_t memo = use_memo ? memo_key(job.request, 0, q) : 0;
  if (use_memo) {
    auto it = key_memo_.find(memo);
    if (it != key_memo_.end() && it->second.version == quota_.version()) {
      const Job& seen = jobs_[it->second.job];
      if (seen.queue == job.queue && seen.total == job.total && seen.candidates == job.candidates) {
        key.tier = it->second.tier;
        key.share = it->second.share;
        return key;
      }
    }
  }
  if (qq.unlimited) {
    key.share = unlimited_share(q, &job.total);
    if (history_.enabled()) key.share = key.share.plus(history_share(q));
    return key;
  }
  // The flavor the job would get: the first whose quota check passes now (as Kueue assigns
  // flavors), so a head that would borrow on its first flavor is not ranked as within nominal
  // because a later flavor would be. With none passing: the first within the queue's own
  // limits, else the first it may use at all (the job will be passed over in this cycle).
  FlavorId chosen = kNoFlavor;
  for (FlavorId f : job.candidates)
    if (!quota_.check(q, f, job.total)) {
      chosen = f;
      break;
    }
  if (chosen == kNoFlavor)
    for (FlavorId f : job.candidates)
      if (quota_.within_cap(q, f, job.total)) {
        chosen = f;
        break;
      }
  if (chosen == kNoFlavor) chosen = job.candidates.front();
  if (quota_.within_nominal(q, chosen, job.total)) key.tier = 0;
  key.share = quota_.borrowing_share(q, chosen, &job.total);
  if (history_.enabled()) key.share = key.share.plus(history_share(q));
  if (use_memo && key.job != kNoJob) key_memo_[memo] = KeyMemo{key.job, quota_.version(), key.tier, key.share};
  return key;
}

// For Engine::explain: the job's key as the cycle computes it, and where that would put its
// queue among the heads of the queues with pending jobs.
void Engine::explain_order(const Job& job, JobExplanation& e) const {
  const HeadKey key = head_key(job.queue, job);
  const auto& qq = quota_.queue(job.queue);
  e.order.within_nominal = key.tier == 0;
  e.order.share_infinite = key.share.infinite;
  e.order.share = key.share.value;
  e.order.history = history_.enabled() ? history_share(job.queue) : 0;
  e.order.weight = qq.weight;
  e.order.priority = job.spec.priority;
  e.order.submitted_at = job.spec.submitted_at;
  if (!qq.unlimited)
    for (FlavorId f : job.candidates)
      if (!quota_.check(job.queue, f, job.total)) {
        e.order.flavor = flavor_names_[f];
        break;
      }
  e.cycle_rank = 1;
  e.cycle_queues = 0;
  for (QueueIdx other = 0; other < queues_.size(); ++other) {
    const QueueRec& o = queues_[other];
    if (other == job.queue) {
      ++e.cycle_queues;
    } else if (!o.pending.empty()) {
      ++e.cycle_queues;
      if (HeadKeyLess{&jobs_}(head_key(other, jobs_[o.pending.begin()->job]), key)) ++e.cycle_rank;
    }
  }
}

std::vector<Decision> Engine::schedule(Time now) {
  rebuild_topology_if_needed();
  if (frag_dirty_) {
    std::vector<PodShape> shapes;
    for (const auto& [shape, n] : shape_counts_) {
      PodShape s = shape;
      s.weight = static_cast<double>(n);
      shapes.push_back(s);
    }
    FragModel next = FragModel::typical(shapes, frag_where_);
    next.keep_allowed(std::move(frag_));
    frag_ = std::move(next);
    frag_dirty_ = false;
    if (config_.placement == PlacementPolicy::kFragAware) ++epoch_;  // placements may differ now
  }
  std::vector<Decision> out;
  last_cycle_ = {};
  // Placing a single pod searches the whole index, so its failure stays a failure while the
  // cycle only consumes capacity; placing a gang pod by pod is greedy and can fail on a state
  // where it would succeed after others took some room. So when a gang failed and something was
  // admitted after it, run another pass: the cycle ends only when every pending job has been
  // tried against the final state.
  ++cycle_;
  // Preemptors whose victims have all stopped are admitted where they were booked, first.
  std::vector<std::uint32_t> ready;
  for (std::uint32_t j : reserved_)
    if (jobs_[j].preemption->waiting_on.empty()) ready.push_back(j);
  for (std::uint32_t j : ready) admit_booked(j, now, out);
  if (history_.enabled()) {
    // Usage is constant within a cycle, so bringing every history up to `now` here keeps the
    // history part of each key fixed while the cycle runs.
    for (QueueIdx q = 0; q < queues_.size(); ++q)
      history_.advance(q, queues_[q].usage_all_flavors, now);
    basis_ = history_basis();
  }
  claim_repasses_ = 0;
  while (run_pass(now, out)) {
  }
  last_cycle_.admitted = static_cast<std::uint64_t>(std::count_if(
      out.begin(), out.end(), [](const Decision& d) { return std::holds_alternative<Admission>(d); }));
  return out;
}

// True when a schedulable node of flavor f has room for a pod of `milli` GPU (ignoring cpu,
// memory and dedication: it may say yes where placement would say no, never the reverse).
bool Engine::room_for_gpu_pod(FlavorId f, Quantity milli) const {
  const Cluster::FreeIndex* ix = cluster_.index(f);
  if (ix == nullptr) return false;
  const int whole = milli < kMilliPerGpu ? 1 : static_cast<int>(milli / kMilliPerGpu);
  for (int k = static_cast<int>(ix->by_whole_free.size()) - 1; k >= whole; --k)
    if (!ix->by_whole_free[k].empty()) return true;
  return milli < kMilliPerGpu && !ix->partial.empty() && std::get<0>(*ix->partial.rbegin()) >= milli;
}

// True when no pending job of q could be admitted now: each asks for more GPU than the queue's
// quota leaves on every flavor, or has a GPU pod larger than the room on every node. Both only
// shrink while a pass admits, so the pass may leave the queue: visiting the rest of a saturated
// backlog one job at a time is what would otherwise dominate a cycle.
bool Engine::none_can_fit(QueueIdx q) const {
  const QueueRec& rec = queues_[q];
  if (rec.without_gpu > 0 || rec.by_total_gpu.empty()) return false;
  const auto& qq = quota_.queue(q);
  if (!qq.unlimited) {
    const Quantity least = rec.by_total_gpu.begin()->first;
    bool quota_room = false;
    for (FlavorId f : qq.order) quota_room = quota_room || quota_.headroom(q, f, kGpu) >= least;
    if (!quota_room) return true;
  }
  if (config_.quota_only) return false;
  const Quantity smallest_pod = rec.by_smallest_gpu_pod.begin()->first;
  if (qq.unlimited) {
    for (FlavorId f = 0; f < flavor_names_.size(); ++f)
      if (room_for_gpu_pod(f, smallest_pod)) return false;
    return true;
  }
  for (FlavorId f : qq.order)
    if (room_for_gpu_pod(f, smallest_pod)) return false;
  return true;
}

bool Engine::run_pass(Time now, std::vector<Decision>& out) {
  placement_failed_.clear();
  key_memo_.clear();
  failed_requests_.clear();
  ++last_cycle_.passes;
  drf::IndexedHeap<HeadKey, HeadKeyLess> order(HeadKeyLess{&jobs_});
  std::vector<std::set<PendingKey>::iterator> cursor(queues_.size());
  // The quota version each key was computed at. A queue with quotas has a key that depends only
  // on its job and the quota book, so while the version is unchanged the key is still exact and
  // the lazy re-check below would recompute the same key: skipping it changes nothing.
  std::vector<std::uint64_t> keyed_at(queues_.size());
  auto rekey = [&](QueueIdx q, const Job& job) {
    keyed_at[q] = quota_.version();
    order.set(q, head_key(q, job));
  };
  for (QueueIdx q = 0; q < queues_.size(); ++q) {
    auto& pending = queues_[q].pending;
    if (pending.empty()) continue;
    cursor[q] = pending.begin();
    rekey(q, jobs_[cursor[q]->job]);
  }
  preemption_failed_.clear();
  // A queue's head in a pass is its first job whose request has not failed in the pass: a job
  // of the same queue with the same request and no higher priority (a repeat) is passed over,
  // untried, with the reason of the job that failed. While the pass only takes capacity (quota
  // and room shrink) it would fail the same way, the per-pass memos of placement and victim
  // search answering for it as they did; after a preemption released quota, the pass that
  // follows (`again`) tries it afresh. With the admission memo, the repeats are jumped over
  // through the queue's index by request; without it (or with many distinct requests) they are
  // walked one by one: the same heads either way.
  auto is_repeat = [&](const Job& job) {
    auto f = failed_requests_.find(job.request);
    if (f == failed_requests_.end()) return false;
    const Job& seen = jobs_[f->second];
    return same_request(seen, job) &&
           (job.spec.priority < seen.spec.priority ||
            (job.spec.priority == seen.spec.priority &&
             std::tie(seen.spec.submitted_at, seen.order) < std::tie(job.spec.submitted_at, job.order)));
  };
  // `at`: the key of the job just decided (no longer pending if it was admitted or booked).
  auto next_viable = [&](QueueIdx q, const PendingKey& at) {
    constexpr std::size_t kJumpRequests = 64;
    QueueRec& rec = queues_[q];
    if (failed_requests_.empty()) return rec.pending.upper_bound(at);
    if (!config_.admission_memo || rec.by_request.size() > kJumpRequests) {
      auto next = rec.pending.upper_bound(at);
      for (; next != rec.pending.end() && is_repeat(jobs_[next->job]); ++next) {
        Job& job = jobs_[next->job];
        job.wait = jobs_[failed_requests_.at(job.request)].wait;
        last_cycle_.passed_over += weight(next->job);  // a block: each of its members
      }
      return next;
    }
    const PendingKey* best = nullptr;
    for (const auto& [request, jobs] : rec.by_request) {
      // Every job of a failed request after `at` is a repeat (no higher priority, later in the
      // queue; the request is a 64-bit hash, trusted as the placement memo's is).
      if (failed_requests_.count(request) > 0) continue;
      auto first = jobs.upper_bound(at);
      if (first != jobs.end() && (best == nullptr || *first < *best)) best = &*first;
    }
    return best == nullptr ? rec.pending.end() : rec.pending.find(*best);
  };
  // The queue's next head, or the queue leaves the pass.
  auto advance = [&](QueueIdx q, std::set<PendingKey>::iterator next) {
    cursor[q] = next;
    if (next == queues_[q].pending.end())
      order.erase(q);
    else
      rekey(q, jobs_[next->job]);
  };
  bool gang_failed = false;
  bool failed = false;  // some job was passed over in this pass
  bool again = false;
  while (!order.empty()) {
    const QueueIdx q = order.top();
    auto it = cursor[q];
    std::uint32_t j = it->job;
    // Other queues' admissions since this key was computed may have used up the cohort pool
    // its flavor choice relied on (a lazy update): a key that got worse goes back into the
    // heap; one that is as good or better is still the first.
    if (quota_.queue(q).unlimited || keyed_at[q] != quota_.version()) {
      if (HeadKey fresh = head_key(q, jobs_[j]); HeadKeyLess{&jobs_}(order.key(q), fresh)) {
        keyed_at[q] = quota_.version();
        order.set(q, fresh);
        continue;
      }
    }
    // An array's block: each of its members would be passed over alike (a running-job limit
    // is the same for all of them, and passing over changes nothing else), so the block is, at
    // once; otherwise its first member becomes a job of its own and is decided as one.
    if (const std::uint32_t w = weight(j); w > 1) {
      if (at_run_limit(jobs_[j])) {
        last_cycle_.decisions += w;
        WaitReason& wait = jobs_[j].wait.mut();
        wait = {};
        wait.cycle = cycle_;
        wait.user_limit = true;
        advance(q, next_viable(q, *it));
        continue;
      }
      j = split(j, blocks_.at(j).unsplit.front().first);
      it = cursor[q] = queues_[q].pending.find(pending_key(j));
      order.set(q, head_key(q, jobs_[j]));  // the same key, read from the member
    }
    const PendingKey decided = *it;
    ++last_cycle_.decisions;
    // A job whose owner is at the queue's maxRunningJobsPerUser is passed over, under either
    // strategy: it is held by its owner's jobs, not by room, so another user's job may go (as
    // Slurm's QOS MaxJobsPerUser); StrictFIFO still keeps the order of those that may run.
    if (at_run_limit(jobs_[j])) {
      drop_claim(j);  // held by its owner's jobs, not by room
      WaitReason& wait = jobs_[j].wait.mut();
      wait = {};
      wait.cycle = cycle_;
      wait.user_limit = true;
      advance(q, next_viable(q, decided));
      continue;
    }
    const std::uint64_t request = jobs_[j].request;
    AdmitOutcome outcome = AdmitOutcome::kDidNotFit;
    bool preempted = false;
    if (const KeptFailure* kept = kept_failure(j, now)) {
      outcome = kept->outcome;
      jobs_[j].wait = kept->wait;
      jobs_[j].wait.mut().cycle = cycle_;
      ++last_cycle_.kept;
    } else {
      const std::uint64_t before = raw_stamp();
      outcome = try_admit(j, now, /*commit=*/true);
      if (outcome != AdmitOutcome::kAdmitted) {
        preempted = try_preempt(j, now, out);
        if (!preempted) {
          undone_ += raw_stamp() - before;  // the attempt left the world as it found it
          keep_failure(j, outcome);
        }
      }
    }
    const std::uint64_t dropped = claims_dropped_;
    if (outcome == AdmitOutcome::kAdmitted) {
      remove_pending(j);
      out.emplace_back(describe_admission(jobs_[j]));
      again = again || gang_failed;
    } else if (preempted) {
      // Victims' quota was released: a job passed over earlier in this pass may fit now.
      again = again || failed;
    } else {
      failed_requests_.try_emplace(request, j);
      failed = true;
      update_claim(j, outcome);
    }
    // A claim given up (its job admitted, booked, no longer owed, or moved) left nodes free that
    // a job passed over before it in this pass may use.
    // At most a few such passes a cycle, whatever happens (the claims settle within one).
    if (claims_dropped_ != dropped && failed && !again && claim_repasses_ < kClaimRepasses) {
      again = true;
      ++claim_repasses_;
    }
    if (outcome != AdmitOutcome::kAdmitted && !preempted) {
      gang_failed = gang_failed || outcome == AdmitOutcome::kGangDidNotFit;
      if (queues_[q].spec.strategy == QueueingStrategy::kStrictFIFO) {
        order.erase(q);  // nothing behind the head may pass it
        continue;
      }
      // Free room alone cannot say whether a job with other node constraints behind this one
      // would find victims where this one found none (a head no node allows would stop every
      // preemption behind it): a queue that may preempt stays while it holds such jobs.
      const bool may_find_victims =
          queues_[q].spec.preemption.enabled() && queues_[q].constrained > 0;
      if (!may_find_victims && none_can_fit(q)) {
        ++last_cycle_.queues_dropped;
        order.erase(q);  // the jobs not reached say why when asked (pending_reason)
        continue;
      }
    }
    advance(q, next_viable(q, decided));
  }
  return again;
}

// Kept failures. A pending job that failed (admission, then victim search) fails again, with
// the same reason, while nothing its attempt read has changed: the quota book, the nodes (pods
// taken and released, node specs and states), the jobs holding resources and the engine's
// settings (epoch_: queue and node updates, binder facts, cancellations, bookings turned into
// admissions, a fragmentation model rebuilt), and the time, where the search passed over a
// candidate too young to preempt (minRuntime) or one whose stop was refused a moment ago. A
// search that passed over a job admitted in this cycle is not kept: that job is a candidate
// from the next cycle on. Where cycles repeat on an unchanged cluster (a burst of submissions
// into a full one, a periodic cycle), each head would otherwise repeat its placement and victim
// search; a cycle with a job finished or admitted moves the stamp, so a replay where nearly
// every cycle has one gains little (BENCHMARKS.md). The job is still visited and decided as
// before, so the walk, its order and its events are the same (replay_test compares).
const Engine::KeptFailure* Engine::kept_failure(std::uint32_t j, Time now) const {
  if (!config_.admission_memo) return nullptr;
  auto it = kept_failures_.find(j);
  if (it == kept_failures_.end() || it->second.stamp != world_stamp() || now >= it->second.until)
    return nullptr;
  return &it->second;
}

void Engine::keep_failure(std::uint32_t j, AdmitOutcome outcome) {
  if (!config_.admission_memo || !search_limit_.keep) {
    kept_failures_.erase(j);
    return;
  }
  kept_failures_[j] = KeptFailure{world_stamp(), search_limit_.until, outcome, *jobs_[j].wait};
}

Engine::AdmitOutcome Engine::try_admit(std::uint32_t j, Time now, bool commit) {
  Job& job = jobs_[j];
  WaitReason scratch;  // a dry run (commit=false) leaves the job's reason alone
  WaitReason& wait = commit ? job.wait.mut() : scratch;
  wait.kept = 0;
  wait.flavors_tried = 0;
  wait.preemption_found_nothing = false;
  wait.user_limit = false;
  wait.cycle = cycle_;
  bool gang_did_not_fit = false;
  bool placement_tried = false;
  for (FlavorId f : job.candidates) {
    ++wait.flavors_tried;
    if (f != kNoFlavor) {
      if (auto shortfall = quota_.check(job.queue, f, job.total)) {
        wait.add({true, false, *shortfall, f});
        continue;
      }
      if (nominal_only(job) && !quota_.within_nominal(job.queue, f, job.total)) {
        wait.add({false, true, {}, f});
        continue;
      }
    }
    std::vector<PodSlot> slots;
    if (!config_.quota_only) {
      const std::uint64_t key = memo_key(job.shape, f, job.queue);
      std::optional<std::vector<PodSlot>> placed;
      if (!commit || !placement_failed_.count(key)) {
        placed = place(cluster_, topology_, placement_request(j, f));
      }
      placement_tried = true;
      if (!placed) {
        if (commit) placement_failed_.insert(key);
        gang_did_not_fit = gang_did_not_fit || job.spec.pod_sets.size() > 1 ||
                           job.spec.pod_sets[0].count > 1;
        wait.add({false, false, {}, f});
        continue;
      }
      slots = std::move(*placed);
    }
    if (!commit) {
      for (auto it = slots.rbegin(); it != slots.rend(); ++it) cluster_.release(*it);
      return AdmitOutcome::kAdmitted;
    }
    admit(j, f, std::move(slots), now);
    emit(job, JobState::kPending, now);
    return AdmitOutcome::kAdmitted;
  }
  if (gang_did_not_fit) return AdmitOutcome::kGangDidNotFit;
  return placement_tried ? AdmitOutcome::kDidNotFit : AdmitOutcome::kDidNotFitQuota;
}

bool Engine::admissible_now(const JobId& id) {
  std::uint32_t it = find_job(id.value);
  if (it == kNoJob)
    if (auto b = in_block(id.value)) it = b->carrier;  // the same request as the member's
  if (it == kNoJob || jobs_[it].state != JobState::kPending ||
      jobs_[it].reserved || at_run_limit(jobs_[it]))
    return false;
  rebuild_topology_if_needed();
  return try_admit(it, 0, /*commit=*/false) == AdmitOutcome::kAdmitted;
}

Admission Engine::describe_admission(const Job& job) const {
  Admission a;
  a.job = job.spec.id;
  a.queue = job.spec.queue;
  if (job.flavor != kNoFlavor) a.flavor = flavor_names_[job.flavor];
  std::uint32_t set = 0;
  std::int32_t left = job.spec.pod_sets.empty() ? 0 : job.spec.pod_sets[0].count;
  for (const PodSlot& s : job.slots) {
    while (left == 0) left = job.spec.pod_sets[++set].count;
    --left;
    PodPlacement p;
    p.pod_set = set;
    p.node = cluster_.node(s.node).name;
    p.gpus.assign(s.gpus.begin(), s.gpus.end());
    p.gpu_milli = s.milli_per_gpu;
    a.pods.push_back(std::move(p));
  }
  return a;
}

}  // namespace gpuq
