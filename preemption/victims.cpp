#include "preemption/victims.hpp"

#include <algorithm>
#include <map>
#include <tuple>

namespace gpuq::preemption {
namespace {

// Kueue's strategies (fairsharing/strategy.go), compared exactly as its CompareDRS does: the
// shares are computed with Kueue's arithmetic, so what Kueue finds equal is equal here.
bool passes(FairShareStrategy s, drf::Share preemptor_after, drf::Share target_before,
            drf::Share target_after) {
  switch (s) {
    case FairShareStrategy::kLessThanOrEqualToFinalShare: return preemptor_after <= target_after;
    case FairShareStrategy::kLessThanInitialShare: return preemptor_after < target_before;
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

// A run's candidates as far as the search has pulled them; at(i) pulls more on demand. A
// pointer it returns is good until the next at() on the same buffer.
class Buffer {
 public:
  explicit Buffer(Run* run) : run_(run), queue_(run->queue()) {}
  std::uint32_t queue() const { return queue_; }
  const Candidate* at(std::size_t i) {
    while (got_.size() <= i && !done_) {
      if (auto c = run_->next())
        got_.push_back(*c);
      else
        done_ = true;
    }
    return i < got_.size() ? &got_[i] : nullptr;
  }

 private:
  Run* run_;
  std::uint32_t queue_;
  std::vector<Candidate> got_;
  bool done_ = false;
};

// The classic victim order, produced lazily: the jobs already stopping, then the other queues'
// runs merged (a heap of their heads), then the preemptor's own run. drop() ends the run of the
// candidate next() returned last: the rest of that run is never looked at.
class Order {
 public:
  Order(const std::vector<Candidate>& stopping, std::vector<Buffer>& buffers, std::uint32_t own,
        bool with_others)
      : stopping_(stopping), buffers_(buffers), own_(own) {
    for (std::size_t b = 0; b < buffers_.size(); ++b) {
      if (buffers_[b].queue() == own_) own_buffer_ = &buffers_[b];
      else if (with_others) push(b, 0);
    }
  }

  std::optional<Candidate> next() {
    if (has_pending_) push(pending_buffer_, pending_pos_);
    has_pending_ = false;
    if (next_stopping_ < stopping_.size()) return stopping_[next_stopping_++];
    if (!heap_.empty()) {
      std::pop_heap(heap_.begin(), heap_.end(), later_);
      const Head h = heap_.back();
      heap_.pop_back();
      has_pending_ = true;
      pending_buffer_ = h.buffer;
      pending_pos_ = h.pos + 1;
      return h.c;
    }
    if (own_buffer_ != nullptr)
      if (const Candidate* c = own_buffer_->at(next_own_++)) return *c;
    return std::nullopt;
  }

  void drop() { has_pending_ = false; }

 private:
  struct Head {
    Candidate c;
    std::size_t buffer;
    std::size_t pos;
  };

  void push(std::size_t b, std::size_t pos) {
    if (const Candidate* c = buffers_[b].at(pos)) {
      heap_.push_back(Head{*c, b, pos});
      std::push_heap(heap_.begin(), heap_.end(), later_);
    }
  }

  const std::vector<Candidate>& stopping_;
  std::vector<Buffer>& buffers_;
  std::uint32_t own_;
  Buffer* own_buffer_ = nullptr;
  std::size_t next_stopping_ = 0;
  std::size_t next_own_ = 0;
  std::vector<Head> heap_;
  // The run of the candidate returned last, whose next one joins the heap at the next call.
  bool has_pending_ = false;
  std::size_t pending_buffer_ = 0;
  std::size_t pending_pos_ = 0;
  // std::*_heap keep the greatest on top: "greater" is "later in the victim order".
  struct Later {
    std::uint32_t own;
    bool operator()(const Head& a, const Head& b) const { return victim_before(b.c, a.c, own); }
  };
  Later later_{own_};
};

// Candidates from a list (the victim order with one place's candidates moved first), with the
// same next() and drop() as Order: without `with_others`, only the jobs stopping and the
// preemptor's own queue; drop() passes over the rest of the last candidate's queue where its run
// was ordered (its other candidates after it), which here means nothing more than skipping the
// candidate (minimal() skips those whose queue no longer borrows one by one).
class ListOrder {
 public:
  ListOrder(const std::vector<Candidate>& list, std::uint32_t own, bool with_others)
      : list_(list), own_(own), with_others_(with_others) {}
  std::optional<Candidate> next() {
    while (next_ < list_.size()) {
      const Candidate& c = list_[next_++];
      if (with_others_ || c.preempting || c.queue == own_) return c;
    }
    return std::nullopt;
  }
  void drop() {}

 private:
  const std::vector<Candidate>& list_;
  std::uint32_t own_;
  bool with_others_;
  std::size_t next_ = 0;
};

// A run over a list already in the within-queue victim order.
class VectorRun final : public Run {
 public:
  VectorRun(std::uint32_t queue, std::vector<Candidate> list) : queue_(queue), list_(std::move(list)) {}
  std::uint32_t queue() const override { return queue_; }
  std::optional<Candidate> next() override {
    if (next_ == list_.size()) return std::nullopt;
    return list_[next_++];
  }

 private:
  std::uint32_t queue_;
  std::vector<Candidate> list_;
  std::size_t next_ = 0;
};

class Search {
 public:
  Search(const Preemptor& p, std::vector<Candidate> stopping, const std::vector<Run*>& runs,
         World& world)
      : p_(p), stopping_(std::move(stopping)), world_(world) {
    std::sort(stopping_.begin(), stopping_.end(),
              [&](const Candidate& a, const Candidate& b) { return victim_before(a, b, p_.queue); });
    for (Run* r : runs) buffers_.emplace_back(r);
    // In queue index order (the search's results do not depend on it).
    std::stable_sort(buffers_.begin(), buffers_.end(),
                     [](const Buffer& a, const Buffer& b) { return a.queue() < b.queue(); });
  }

  // Kueue's classic preemption, in the victim order; where that finds nothing and the preemptor
  // needs room on nodes, the same again with one place's candidates first, place by place.
  std::vector<Target> classic() {
    if (auto t = classic_with([&](bool with_others) { return Order(stopping_, buffers_, p_.queue, with_others); });
        !t.empty())
      return t;
    return classic_by_place();
  }

  // Kueue's fairPreemptions (README.md in this folder, "Fair-sharing mode"); where that finds nothing and the
  // preemptor needs room on nodes, the same again with one place's candidates first, as in
  // classic(). borrowWithinCohort does not apply here, as in Kueue.
  std::vector<Target> fair() {
    if (auto t = fair_with(stopping_, buffers_); !t.empty()) return t;
    return by_place([&](const std::vector<Candidate>& first) {
      std::vector<Candidate> stopping;
      std::map<std::uint32_t, std::vector<Candidate>> by_queue;
      for (const Candidate& c : first)
        (c.preempting ? stopping : by_queue[c.queue]).push_back(c);
      std::vector<VectorRun> runs;
      runs.reserve(by_queue.size());
      for (auto& [queue, list] : by_queue) runs.emplace_back(queue, std::move(list));
      std::vector<Buffer> buffers;
      buffers.reserve(runs.size());
      for (VectorRun& r : runs) buffers.emplace_back(&r);
      return fair_with(stopping, buffers);
    });
  }

 private:
  // One queue's candidates as the fair search walks them.
  struct Group {
    Buffer* buffer;
    std::uint32_t queue;
    std::size_t next = 0;
    bool dropped = false;
    const Candidate* head() { return buffer->at(next); }
    void pop() { ++next; }
  };

  // The fair search over these candidates: the jobs already stopping, then each queue's run
  // (buffers in queue index order).
  std::vector<Target> fair_with(const std::vector<Candidate>& stopping, std::vector<Buffer>& buffers) {
    targets_.clear();
    for (const Candidate& c : stopping)
      if (take(c, PreemptReason::kInQueue)) return finish(true);

    // The first strategy: each queue's candidates in order; those that fail wait for the second.
    std::vector<Group> groups;
    for (Buffer& b : buffers) groups.push_back(Group{&b, b.queue()});
    std::vector<std::vector<Candidate>> retry(groups.size());
    while (Group* g = pick(groups)) {
      const auto gi = static_cast<std::size_t>(g - groups.data());
      if (g->queue == p_.queue || p_.within_nominal_after) {
        // Its own queue by priority; another while the preemptor stays within its nominal
        // without share checks.
        const Candidate c = *g->head();
        g->pop();
        if (take(c, g->queue == p_.queue ? PreemptReason::kInQueue : PreemptReason::kReclaim))
          return finish(true);
        continue;
      }
      const drf::Share preemptor_after = world_.preemptor_share();
      const drf::Share target_before = world_.share(g->queue);
      while (const Candidate* at = g->head()) {
        const Candidate c = *at;
        g->pop();
        if (passes(p_.fair.strategies.front(), preemptor_after, target_before,
                   world_.share_without(c))) {
          if (take(c, PreemptReason::kFairShare)) return finish(true);
          break;  // the shares changed: pick again
        }
        retry[gi].push_back(c);
      }
    }
    if (p_.fair.strategies.size() < 2) return finish(false);

    // The second strategy (LessThanInitialShare, which does not depend on the candidate) looks
    // at each queue once, at its first candidate that failed the first strategy.
    std::vector<VectorRun> lists;
    lists.reserve(retry.size());
    for (std::size_t i = 0; i < retry.size(); ++i) lists.emplace_back(groups[i].queue, std::move(retry[i]));
    std::vector<Buffer> second_buffers;
    second_buffers.reserve(lists.size());
    for (VectorRun& r : lists) second_buffers.emplace_back(&r);
    std::vector<Group> second;
    for (Buffer& b : second_buffers) second.push_back(Group{&b, b.queue()});
    while (Group* g = pick(second)) {
      const Candidate c = *g->head();
      if (passes(p_.fair.strategies[1], world_.preemptor_share(), world_.share(g->queue),
                 world_.share_without(c)) &&
          take(c, PreemptReason::kFairShare))
        return finish(true);
      g->dropped = true;
    }
    return finish(false);
  }

  bool from_other_queue(const Candidate& c) const { return c.queue != p_.queue && !c.preempting; }

  // The classic search's attempts, each over the candidates make(with_others) gives.
  template <class Make>
  std::vector<Target> classic_with(Make make) {
    bool others = false;
    for (Buffer& b : buffers_)
      if (b.queue() != p_.queue && b.at(0) != nullptr) others = true;
    if (!others) {
      auto order = make(false);
      return minimal(order, true, std::nullopt, false);
    }
    if (auto bound = borrow_bound(p_)) {
      auto order = make(true);
      return minimal(order, true, bound, /*drop_at_bound=*/!p_.under_nominal);
    }
    // Without borrowing, the preemptor must end within its nominal, and only its own queue's
    // jobs lower its usage: with none of them to take, a search that would end above it is not
    // run (it would take and give back every other queue's candidate, one by one, for nothing).
    if (p_.under_nominal && (p_.within_nominal_after || own_has_candidates())) {
      auto order = make(true);
      if (auto t = minimal(order, false, std::nullopt, false); !t.empty()) return t;
    }
    auto order = make(false);
    return minimal(order, true, std::nullopt, false);
  }

  std::vector<Target> classic_by_place() {
    return by_place([&](const std::vector<Candidate>& first) {
      return classic_with([&](bool with_others) { return ListOrder(first, p_.queue, with_others); });
    });
  }

  // Taken in the victim order, the candidates the quota lets go may free room on different
  // nodes and none on the node the preemptor needs (team-a borrows a node and a half: its last
  // two jobs admitted run on two nodes, and once they are taken it borrows no more). So, place
  // by place in the order the candidates first name them, `attempt` runs the search again over
  // the candidates with that place's first among those of their priority: the order changes
  // only where the victim order was decided by admission time and name. (Moving a place's
  // higher-priority job before a lower-priority one elsewhere lets a queue lose more than it
  // borrowed, and with fair sharing that went in circles: a reclaim took a job that came back
  // by fair share and preempted its preemptor.) The first that fits wins; at most kPlaces
  // places and kCandidates candidates are tried (the search is deterministic, and a failed one
  // is not repeated while nothing changes: the engine keeps its answer).
  template <class Attempt>
  std::vector<Target> by_place(Attempt attempt) {
    constexpr std::size_t kCandidates = 256, kPlaces = 16;
    std::vector<Candidate> all;
    {
      Order order(stopping_, buffers_, p_.queue, true);
      while (all.size() < kCandidates)
        if (auto c = order.next()) all.push_back(*c);
        else break;
    }
    std::vector<std::uint32_t> places;
    std::vector<std::vector<std::uint32_t>> where(all.size());
    for (std::size_t i = 0; i < all.size(); ++i) {
      where[i] = world_.places(all[i]);
      for (std::uint32_t pl : where[i])
        if (places.size() < kPlaces && std::find(places.begin(), places.end(), pl) == places.end()) places.push_back(pl);
    }
    if (places.size() < 2) return {};  // one place: the same order as the first search
    // The victim order's bands, in which `all` already is: stopping first, then other queues'
    // jobs, then the preemptor's own; each by priority.
    auto band = [&](const Candidate& c) {
      return std::make_tuple(!c.preempting, c.queue == p_.queue, c.priority);
    };
    for (std::uint32_t pl : places) {
      std::vector<Candidate> first;
      first.reserve(all.size());
      for (std::size_t b = 0; b < all.size();) {  // band by band: its place's candidates first
        std::size_t e = b;
        while (e < all.size() && band(all[e]) == band(all[b])) ++e;
        for (const bool on_place : {true, false})
          for (std::size_t i = b; i < e; ++i)
            if ((std::find(where[i].begin(), where[i].end(), pl) != where[i].end()) == on_place)
              first.push_back(all[i]);
        b = e;
      }
      if (auto t = attempt(first); !t.empty()) return t;
    }
    return {};
  }

  bool own_has_candidates() {
    for (Buffer& b : buffers_)
      if (b.queue() == p_.queue) return b.at(0) != nullptr;
    return false;
  }

  // Kueue's TargetClusterQueueOrdering over one flat cohort: the queue with the highest share
  // now, the preemptor's own counted with the preemptor added. Queues without candidates left,
  // and other queues that borrow nothing any more, drop out for good (shares only go down while
  // victims are taken). Equal shares: the queue whose next candidate comes first in the victim
  // order (so another queue before the preemptor's own).
  Group* pick(std::vector<Group>& groups) {
    Group* best = nullptr;
    drf::Share best_share;
    for (Group& g : groups) {
      if (g.dropped) continue;
      const Candidate* head = g.head();
      if (head == nullptr || (g.queue != p_.queue && !world_.borrowing_any(g.queue))) {
        g.dropped = true;
        continue;
      }
      const drf::Share s = g.queue == p_.queue ? world_.preemptor_share() : world_.share(g.queue);
      if (best == nullptr || s > best_share ||
          (s == best_share && victim_before(*head, *best->head(), p_.queue))) {
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

  // Kueue's minimalPreemptions: take in the source's order (Order: the victim order; without
  // `with_others`, only the jobs stopping and the preemptor's own queue) until the preemptor
  // fits, then give back. With `drop_at_bound`, other queues' jobs at or above the
  // borrowWithinCohort bound are not candidates.
  template <class Source>
  std::vector<Target> minimal(Source& order, bool allow_borrowing, std::optional<std::int64_t> bound,
                              bool drop_at_bound) {
    targets_.clear();
    bool fits = false;
    while (auto c = order.next()) {
      PreemptReason reason = PreemptReason::kInQueue;
      if (from_other_queue(*c)) {
        // Back within its nominal, it gives no more; a run is in priority order, so past the
        // bound nothing more of it can be taken either.
        if (!world_.borrowing(c->queue) || (drop_at_bound && c->priority >= *bound)) {
          order.drop();
          continue;
        }
        reason = PreemptReason::kReclaim;
        if (bound && c->priority >= *bound)
          allow_borrowing = false;  // a victim above the threshold: only as a reclaim
        else if (bound)
          reason = PreemptReason::kReclaimWhileBorrowing;
      }
      world_.remove(*c);
      targets_.push_back(Target{*c, reason});
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
  std::vector<Candidate> stopping_;
  std::vector<Buffer> buffers_;
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
  return a.id < b.id;
}

std::vector<Target> find_victims(const Preemptor& p, std::vector<Candidate> stopping,
                                 const std::vector<Run*>& runs, World& world) {
  Search search(p, std::move(stopping), runs, world);
  return p.fair.enabled ? search.fair() : search.classic();
}

std::vector<Target> find_victims(const Preemptor& p, std::vector<Candidate> candidates, World& world) {
  std::sort(candidates.begin(), candidates.end(),
            [&](const Candidate& a, const Candidate& b) { return victim_before(a, b, p.queue); });
  std::vector<Candidate> stopping;
  std::map<std::uint32_t, std::vector<Candidate>> by_queue;
  for (const Candidate& c : candidates) {
    if (c.preempting) stopping.push_back(c);
    else by_queue[c.queue].push_back(c);
  }
  std::vector<VectorRun> runs;
  runs.reserve(by_queue.size());
  for (auto& [queue, list] : by_queue) runs.emplace_back(queue, std::move(list));
  std::vector<Run*> pointers;
  for (VectorRun& r : runs) pointers.push_back(&r);
  return find_victims(p, std::move(stopping), pointers, world);
}

}  // namespace gpuq::preemption
