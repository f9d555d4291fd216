#include "preemption/victims.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpuq::preemption {
namespace {

// Shares are ratios computed in double; two ways of computing the same ratio may differ in the
// last bits, so comparisons allow for that (deterministically: the same inputs compare alike).
constexpr double kShareEpsilon = 1e-12;

bool passes(FairShareStrategy s, double preemptor_after, double target_before,
            double target_after) {
  switch (s) {
    case FairShareStrategy::kLessThanOrEqualToFinalShare:
      return preemptor_after <= target_after + kShareEpsilon;
    case FairShareStrategy::kLessThanInitialShare:
      return preemptor_after < target_before - kShareEpsilon;
  }
  return false;
}

// borrowWithinCohort: other queues' jobs with a priority below this bound may be taken while
// the preemptor borrows (lower than its own, and at most maxPriorityThreshold).
std::optional<std::int64_t> borrow_bound(const Preemptor& p) {
  if (p.policy.borrow_within_cohort != BorrowWithinCohortPolicy::kLowerPriority) return std::nullopt;
  std::int64_t bound = p.priority;
  if (p.policy.borrow_max_priority_threshold)
    bound = std::min<std::int64_t>(bound, std::int64_t{*p.policy.borrow_max_priority_threshold} + 1);
  return bound;
}

class Search {
 public:
  Search(const Preemptor& p, World& world) : p_(p), world_(world) {}

  std::vector<Target> classic(std::vector<Candidate> all) {
    std::vector<Candidate> own;  // the preemptor's queue, and jobs stopping anyway
    for (const Candidate& c : all)
      if (!from_other_queue(c)) own.push_back(c);
    if (own.size() == all.size()) return minimal(all, true, std::nullopt);
    if (auto bound = borrow_bound(p_)) {
      if (!p_.under_nominal)
        std::erase_if(all, [&](const Candidate& c) { return from_other_queue(c) && c.priority >= *bound; });
      return minimal(all, true, bound);
    }
    if (p_.under_nominal)
      if (auto t = minimal(all, false, std::nullopt); !t.empty()) return t;
    return minimal(own, true, std::nullopt);
  }

  std::vector<Target> fair(const std::vector<Candidate>& all) {
    const auto bound = borrow_bound(p_);
    std::vector<Candidate> first;  // jobs already stopping: no share check needed
    std::map<std::uint32_t, std::vector<Candidate>> by_queue;  // in queue index order
    for (const Candidate& c : all) {
      if (c.preempting) first.push_back(c);
      else by_queue[c.queue].push_back(c);
    }
    for (const Candidate& c : first)
      if (take(c, PreemptReason::kInQueue)) return finish(true);

    std::vector<Candidate> retry;
    Groups groups = make_groups(by_queue);
    while (Group* g = pick(groups)) {
      const Candidate* taken = nullptr;
      PreemptReason reason = PreemptReason::kFairShare;
      if (g->queue == p_.queue) {
        taken = &g->list[g->next++];
        reason = PreemptReason::kInQueue;
      } else if (p_.within_nominal_after) {
        taken = &g->list[g->next++];
        reason = PreemptReason::kReclaim;
      } else {
        const double preemptor_after = world_.preemptor_share();
        const double target_before = world_.share(g->queue);
        while (g->next < g->list.size() && taken == nullptr) {
          const Candidate& c = g->list[g->next++];
          if (bound && c.priority < *bound) {
            taken = &c;
            reason = PreemptReason::kReclaimWhileBorrowing;
          } else if (passes(p_.fair.strategies.front(), preemptor_after, target_before,
                            world_.share_without(c))) {
            taken = &c;
          } else {
            retry.push_back(c);
          }
        }
      }
      if (taken != nullptr && take(*taken, reason)) return finish(true);
    }
    if (p_.fair.strategies.size() > 1) {
      // The second strategy takes at most one candidate per queue, its first.
      std::map<std::uint32_t, std::vector<Candidate>> again;
      for (const Candidate& c : retry) again[c.queue].push_back(c);
      Groups second = make_groups(again);
      while (Group* g = pick(second)) {
        const Candidate& c = g->list[g->next];
        g->next = g->list.size();
        if (passes(p_.fair.strategies[1], world_.preemptor_share(), world_.share(g->queue),
                   world_.share_without(c)) &&
            take(c, PreemptReason::kFairShare))
          return finish(true);
      }
    }
    return finish(false);
  }

 private:
  struct Group {
    std::uint32_t queue;
    std::vector<Candidate> list;
    std::size_t next = 0;
    bool dropped = false;
  };
  using Groups = std::vector<Group>;

  static Groups make_groups(std::map<std::uint32_t, std::vector<Candidate>>& by_queue) {
    Groups out;
    for (auto& [queue, list] : by_queue) out.push_back(Group{queue, std::move(list), 0, false});
    return out;
  }

  bool from_other_queue(const Candidate& c) const { return c.queue != p_.queue && !c.preempting; }

  // The queue with candidates left and the highest share now (ties: the lower queue index).
  // Other queues that are no longer borrowing give up nothing more.
  Group* pick(Groups& groups) {
    Group* best = nullptr;
    double best_share = 0;
    for (Group& g : groups) {
      if (g.dropped) continue;
      if (g.next == g.list.size() || (g.queue != p_.queue && !world_.borrowing(g.queue))) {
        g.dropped = true;
        continue;
      }
      const double s = world_.share(g.queue);
      if (best == nullptr || s > best_share + kShareEpsilon) {
        best = &g;
        best_share = s;
      }
    }
    return best;
  }

  // Takes a victim; true when the preemptor fits now (fair mode always allows borrowing).
  bool take(const Candidate& c, PreemptReason reason) {
    world_.remove(c);
    targets_.push_back(Target{c, reason});
    return world_.fits(true);
  }

  std::vector<Target> finish(bool fits) {
    if (!fits) {
      restore_all();
      return {};
    }
    fill_back(true);
    restore_all();
    return std::move(targets_);
  }

  // Kueue's minimalPreemptions: take in order until the preemptor fits, then give back.
  std::vector<Target> minimal(const std::vector<Candidate>& candidates, bool allow_borrowing,
                              std::optional<std::int64_t> bound) {
    targets_.clear();
    bool fits = false;
    for (const Candidate& c : candidates) {
      PreemptReason reason = PreemptReason::kInQueue;
      if (from_other_queue(c)) {
        if (!world_.borrowing(c.queue)) continue;  // back within its nominal: no more from it
        reason = PreemptReason::kReclaim;
        if (bound && c.priority >= *bound)
          allow_borrowing = false;  // a victim above the threshold: only as a reclaim
        else if (bound)
          reason = PreemptReason::kReclaimWhileBorrowing;
      }
      world_.remove(c);
      targets_.push_back(Target{c, reason});
      if (world_.fits(allow_borrowing)) {
        fits = true;
        break;
      }
    }
    if (!fits) {
      restore_all();
      return {};
    }
    fill_back(allow_borrowing);
    restore_all();
    return std::move(targets_);
  }

  // Walking back from the second-to-last victim (the last one was needed), return every victim
  // without which the preemptor still fits: what is left is minimal.
  void fill_back(bool allow_borrowing) {
    for (std::size_t i = targets_.size() - 1; i-- > 0;) {
      world_.restore(targets_[i].victim);
      if (world_.fits(allow_borrowing))
        targets_.erase(targets_.begin() + static_cast<std::ptrdiff_t>(i));
      else
        world_.remove(targets_[i].victim);
    }
  }

  void restore_all() {
    for (auto it = targets_.rbegin(); it != targets_.rend(); ++it) world_.restore(it->victim);
  }

  const Preemptor& p_;
  World& world_;
  std::vector<Target> targets_;
};

}  // namespace

bool eligible(const Preemptor& p, const Candidate& c) {
  if (c.queue == p.queue) {
    switch (p.policy.within_queue) {
      case WithinQueuePolicy::kNever: return false;
      case WithinQueuePolicy::kLowerPriority: return c.priority < p.priority;
      case WithinQueuePolicy::kLowerOrNewerEqualPriority:
        return c.priority < p.priority ||
               (c.priority == p.priority &&
                std::tie(p.submitted_at, p.submit_order) < std::tie(c.submitted_at, c.submit_order));
    }
    return false;
  }
  switch (p.policy.reclaim_within_cohort) {
    case ReclaimPolicy::kNever: return false;
    case ReclaimPolicy::kLowerPriority: return c.priority < p.priority;
    case ReclaimPolicy::kAny: return true;
  }
  return false;
}

bool victim_before(const Candidate& a, const Candidate& b, std::uint32_t preemptor_queue) {
  if (a.preempting != b.preempting) return a.preempting;
  const bool a_other = a.queue != preemptor_queue;
  const bool b_other = b.queue != preemptor_queue;
  if (a_other != b_other) return a_other;
  if (a.priority != b.priority) return a.priority < b.priority;
  if (a.admitted_at != b.admitted_at) return a.admitted_at > b.admitted_at;
  if (a.admission != b.admission) return a.admission > b.admission;
  return a.id < b.id;
}

std::vector<Target> find_victims(const Preemptor& p, std::vector<Candidate> candidates, World& world) {
  if (candidates.empty()) return {};
  std::sort(candidates.begin(), candidates.end(),
            [&](const Candidate& a, const Candidate& b) { return victim_before(a, b, p.queue); });
  Search search(p, world);
  return p.fair.enabled ? search.fair(candidates) : search.classic(std::move(candidates));
}

}  // namespace gpuq::preemption
