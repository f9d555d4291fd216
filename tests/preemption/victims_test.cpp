// The victim search on its own, over a small world of one resource: each queue has a usage and a
// nominal, each candidate a size, and the preemptor fits when the free room holds it (and, when
// borrowing is not allowed, its queue stays within nominal).
#include <doctest/doctest.h>

#include <algorithm>
#include <map>
#include <string>

#include "preemption/victims.hpp"

using namespace gpuq;
using namespace gpuq::preemption;

namespace {

struct Queue {
  std::int64_t usage = 0;
  std::int64_t nominal = 0;
  double weight = 1;
};

class SmallWorld final : public World {
 public:
  std::map<std::uint32_t, Queue> queues;
  std::map<std::uint32_t, std::int64_t> size;  // by job
  std::int64_t free = 0;
  std::int64_t need = 0;
  std::uint32_t preemptor_queue = 0;
  std::int64_t lendable = 16;  // the cohort's, for shares
  int fits_calls = 0;

  void remove(const Candidate& c) override {
    if (!c.preempting) queues[c.queue].usage -= size.at(c.job);
    free += size.at(c.job);
  }
  void restore(const Candidate& c) override {
    if (!c.preempting) queues[c.queue].usage += size.at(c.job);
    free -= size.at(c.job);
  }
  bool fits(bool allow_borrowing) override {
    ++fits_calls;
    const Queue& q = queues[preemptor_queue];
    return free >= need && (allow_borrowing || q.usage + need <= q.nominal);
  }
  bool borrowing(std::uint32_t q) const override {
    const Queue& qq = queues.at(q);
    return qq.usage > qq.nominal;
  }
  bool borrowing_any(std::uint32_t q) const override { return borrowing(q); }
  drf::Share share(std::uint32_t q) const override { return share_of(q, 0); }
  drf::Share preemptor_share() const override { return share_of(preemptor_queue, need); }
  drf::Share share_without(const Candidate& c) const override {
    return share_of(c.queue, c.preempting ? 0 : -size.at(c.job));
  }

 private:
  drf::Share share_of(std::uint32_t q, std::int64_t extra) const {
    const Queue& qq = queues.at(q);
    const auto borrowed = std::max<std::int64_t>(0, qq.usage + extra - qq.nominal);
    return drf::weighted(drf::borrowed_permille(borrowed, lendable), qq.weight);
  }
};

std::vector<std::string>& ids() {
  static std::vector<std::string> names;  // stable storage for the candidates' string_views
  return names;
}

Candidate cand(std::uint32_t job, std::uint32_t queue, std::int32_t priority, std::uint64_t admission,
               bool preempting = false) {
  ids().reserve(1000);
  ids().push_back("j" + std::to_string(job));
  return Candidate{job, queue, priority, 0, job, static_cast<std::int64_t>(admission), ids().back(),
                   preempting};
}

std::vector<std::string> victims(const std::vector<Target>& targets) {
  std::vector<std::string> out;
  for (const Target& t : targets) out.push_back(std::string(t.victim.id) + ":" + to_string(t.reason));
  return out;
}

Preemptor preemptor(std::uint32_t queue, std::int32_t priority) {
  Preemptor p;
  p.queue = queue;
  p.priority = priority;
  p.submitted_at = 100;
  p.submit_order = 500;
  return p;
}

}  // namespace

TEST_CASE("victim order: stopping first, other queues, lower priority, newest admitted, id") {
  const std::uint32_t own = 0;
  std::vector<Candidate> c = {cand(1, own, 0, 9),      cand(2, 1, 5, 1),  cand(3, 1, 0, 1),
                              cand(4, 1, 0, 7),        cand(5, own, 0, 1, true),
                              cand(6, 2, 0, 7)};
  std::sort(c.begin(), c.end(),
            [&](const Candidate& a, const Candidate& b) { return victim_before(a, b, own); });
  std::vector<std::uint32_t> order;
  for (const auto& x : c) order.push_back(x.job);
  CHECK(order == std::vector<std::uint32_t>{5, 4, 6, 3, 2, 1});
}

TEST_CASE("eligibility follows withinQueue and reclaimWithinCohort") {
  Preemptor p = preemptor(0, 5);
  Candidate lower = cand(1, 0, 4, 1), equal_newer = cand(2, 0, 5, 1), higher = cand(3, 0, 6, 1);
  equal_newer.submitted_at = 200;
  Candidate equal_older = cand(4, 0, 5, 1);
  equal_older.submitted_at = 50;

  p.policy.within_queue = WithinQueuePolicy::kNever;
  CHECK_FALSE(eligible(p, lower));
  CHECK_FALSE(eligible(p, cand(9, 0, 0, 1, /*preempting=*/true)));  // the same rules
  p.policy.within_queue = WithinQueuePolicy::kLowerPriority;
  CHECK(eligible(p, lower));
  CHECK_FALSE(eligible(p, equal_newer));
  CHECK_FALSE(eligible(p, higher));
  p.policy.within_queue = WithinQueuePolicy::kLowerOrNewerEqualPriority;
  CHECK(eligible(p, equal_newer));
  CHECK_FALSE(eligible(p, equal_older));
  CHECK_FALSE(eligible(p, higher));

  Candidate other_high = cand(5, 1, 9, 1), other_low = cand(6, 1, 1, 1);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kNever;
  CHECK_FALSE(eligible(p, other_low));
  p.policy.reclaim_within_cohort = ReclaimPolicy::kLowerPriority;
  CHECK(eligible(p, other_low));
  CHECK_FALSE(eligible(p, other_high));
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  CHECK(eligible(p, other_high));
}

TEST_CASE("greedy then give-back leaves the minimal set, and the world as it was") {
  SmallWorld w;
  w.queues[0] = {10, 10, 1};
  w.size = {{1, 1}, {2, 1}, {3, 4}};
  w.free = 0;
  w.need = 4;
  Preemptor p = preemptor(0, 5);
  p.policy.within_queue = WithinQueuePolicy::kLowerPriority;
  // Order: j1 (prio 0), j2 (prio 1), j3 (prio 2): the two small ones are taken first, then j3,
  // after which they are not needed.
  auto t = find_victims(p, {cand(3, 0, 2, 1), cand(1, 0, 0, 1), cand(2, 0, 1, 1)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j3:InQueue"});
  CHECK(w.free == 0);
  CHECK(w.queues[0].usage == 10);
}

TEST_CASE("give-back starts from the second-to-last victim and keeps what is needed") {
  SmallWorld w;
  w.queues[0] = {6, 10, 1};
  w.size = {{1, 2}, {2, 1}, {3, 2}};
  w.need = 4;
  Preemptor p = preemptor(0, 5);
  p.policy.within_queue = WithinQueuePolicy::kLowerPriority;
  // Taken: j1 (2), j2 (1), j3 (2) = 5 >= 4. Give back j2 (1): 4 still fits; j1 cannot go back.
  auto t = find_victims(p, {cand(1, 0, 0, 1), cand(2, 0, 1, 1), cand(3, 0, 2, 1)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j1:InQueue", "j3:InQueue"});
}

TEST_CASE("nothing is preempted when every allowed victim together is not enough") {
  SmallWorld w;
  w.queues[0] = {3, 10, 1};
  w.size = {{1, 1}, {2, 2}};
  w.need = 4;
  Preemptor p = preemptor(0, 5);
  p.policy.within_queue = WithinQueuePolicy::kLowerPriority;
  CHECK(find_victims(p, {cand(1, 0, 0, 1), cand(2, 0, 1, 1)}, w).empty());
  CHECK(w.free == 0);
  CHECK(w.queues[0].usage == 3);
}

TEST_CASE("reclaim: only while the preemptor fits within nominal, only from borrowing queues") {
  SmallWorld w;
  w.preemptor_queue = 0;
  w.queues[0] = {0, 4, 1};  // the preemptor's queue: under nominal
  w.queues[1] = {6, 4, 1};  // borrowing 2
  w.queues[2] = {2, 4, 1};  // not borrowing
  w.size = {{1, 3}, {2, 3}, {3, 2}};
  w.need = 4;
  Preemptor p = preemptor(0, 0);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.under_nominal = true;
  p.within_nominal_after = true;  // 0 + 4 <= 4
  // j1 (queue 1, newest) is taken: queue 1 is at 3 <= 4 now, so j2 (queue 1) is skipped; queue
  // 2 never borrowed, so j3 is not taken: 3 free < 4, nothing fits, nothing is preempted.
  CHECK(find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8), cand(3, 2, 0, 7)}, w).empty());
  w.free = 1;  // now j1 alone makes room
  auto t = find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8), cand(3, 2, 0, 7)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j1:Reclaim"});

  // Not under nominal: no reclaim; only its own queue's lower-priority jobs (none here).
  p.under_nominal = false;
  CHECK(find_victims(p, {cand(1, 1, 0, 9)}, w).empty());
}

TEST_CASE("reclaim: a preemptor that would end above its nominal is not searched for without its own jobs") {
  SmallWorld w;
  w.preemptor_queue = 0;
  w.queues[0] = {2, 4, 1};  // under nominal, but 2 + 4 > 4: no reclaim can keep it within
  w.queues[1] = {8, 4, 1};  // borrowing 4
  w.size = {{1, 2}, {2, 2}, {3, 2}};
  w.need = 4;
  Preemptor p = preemptor(0, 5);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.policy.within_queue = WithinQueuePolicy::kLowerPriority;
  p.under_nominal = true;
  p.within_nominal_after = false;
  // Only queue 1's jobs: the reclaim without borrowing is skipped (no fits() at all), and the
  // fallback takes only its own queue's jobs (none): nothing, as the full search would find.
  CHECK(find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8)}, w).empty());
  CHECK(w.fits_calls == 0);
  CHECK(w.queues[1].usage == 8);
  // With a job of its own queue to take, the reclaim is searched: j3 (own) brings it to
  // 0 + 4 <= 4, j1 makes the room.
  w.free = 0;
  auto t = find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8), cand(3, 0, 0, 7)}, w);
  CHECK(w.fits_calls > 0);
  CHECK(victims(t) == std::vector<std::string>{"j1:Reclaim", "j3:InQueue"});
}

TEST_CASE("borrowWithinCohort: below the threshold while borrowing, above it only as reclaim") {
  SmallWorld w;
  w.queues[0] = {4, 4, 1};  // at nominal: the preemptor will borrow
  w.queues[1] = {8, 4, 1};
  w.size = {{1, 2}, {2, 2}};
  w.need = 2;
  Preemptor p = preemptor(0, 10);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.policy.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
  p.policy.borrow_max_priority_threshold = 3;
  // j1 priority 5 is above the threshold: dropped while not under nominal; j2 priority 3 is taken.
  auto t = find_victims(p, {cand(1, 1, 5, 9), cand(2, 1, 3, 1)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j2:ReclaimWhileBorrowing"});
  // Only an above-threshold job: nothing.
  CHECK(find_victims(p, {cand(1, 1, 5, 9)}, w).empty());
}

TEST_CASE("borrowWithinCohort: an above-threshold victim forbids borrowing from then on") {
  SmallWorld w;
  w.queues[0] = {0, 4, 1};  // under nominal
  w.queues[1] = {10, 4, 1};
  w.size = {{1, 2}, {2, 3}};
  w.need = 5;  // 0 + 5 > 4: the preemptor would borrow
  Preemptor p = preemptor(0, 10);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.policy.borrow_within_cohort = BorrowWithinCohortPolicy::kLowerPriority;
  p.policy.borrow_max_priority_threshold = 3;
  p.under_nominal = true;
  // In order j2 (priority 0, below) then j1 (priority 5, above). Taking j1 as a reclaim forbids
  // borrowing from then on, and the preemptor needs 5 > nominal 4: it never fits, nothing.
  CHECK(find_victims(p, {cand(1, 1, 5, 9), cand(2, 1, 0, 1)}, w).empty());
  w.need = 4;  // within nominal: j2 (3) alone is not enough, j1 (2) after it is
  auto t = find_victims(p, {cand(1, 1, 5, 9), cand(2, 1, 0, 1)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j2:ReclaimWhileBorrowing", "j1:Reclaim"});
}

TEST_CASE("fair sharing: LessThanOrEqualToFinalShare against LessThanInitialShare") {
  SmallWorld w;
  w.lendable = 8;
  w.queues[0] = {4, 4, 1};  // at nominal: the preemptor of 2 will borrow 2 (share 0.25)
  w.queues[1] = {7, 4, 1};  // borrowing 3 (share 0.375)
  w.size = {{1, 2}, {2, 1}};
  w.need = 2;
  Preemptor p = preemptor(0, 0);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.fair.enabled = true;

  // Final share: losing j1 (2) would leave queue 1 at 0.125 < 0.25: fails, kept for a retry;
  // losing j2 (1) leaves 0.25 >= 0.25: taken, but 1 free < 2 and queue 1 has no more: nothing.
  p.fair.strategies = {FairShareStrategy::kLessThanOrEqualToFinalShare};
  CHECK(find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8)}, w).empty());

  // Initial share only: 0.25 < 0.375: the first candidate, j1, is taken and is enough.
  p.fair.strategies = {FairShareStrategy::kLessThanInitialShare};
  auto t = find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j1:FairShare"});

  // Both, in the default order: j2 is taken under the first; j1 is retried under the second,
  // but queue 1's share is now 0.25 (borrowing 2 of 8) and 0.25 < 0.25 fails: nothing.
  p.fair.strategies = {FairShareStrategy::kLessThanOrEqualToFinalShare,
                       FairShareStrategy::kLessThanInitialShare};
  CHECK(find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8)}, w).empty());
  // With 1 already free, j2 under the first strategy is enough.
  w.free = 1;
  t = find_victims(p, {cand(1, 1, 0, 9), cand(2, 1, 0, 8)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j2:FairShare"});
}

TEST_CASE("fair sharing: a preemptor within its nominal takes borrowers' jobs without share checks") {
  SmallWorld w;
  w.lendable = 8;
  w.queues[0] = {0, 4, 1};
  w.queues[1] = {5, 4, 1};  // borrowing 1: share 0.125
  w.size = {{1, 5}};
  w.need = 4;
  Preemptor p = preemptor(0, 0);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.fair.enabled = true;
  p.within_nominal_after = true;  // 0 + 4 <= 4
  auto t = find_victims(p, {cand(1, 1, 0, 9)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j1:Reclaim"});

  // With nominal 2 the preemptor would borrow 2 (share 0.25): losing j1 leaves queue 1 at 0
  // (final share fails) and 0.25 < 0.125 fails too: nothing.
  w.queues[0].nominal = 2;
  p.within_nominal_after = false;
  CHECK(find_victims(p, {cand(1, 1, 0, 9)}, w).empty());
}

TEST_CASE("fair sharing: the queue with the highest share gives up a job first; weights count") {
  SmallWorld w;
  w.lendable = 8;
  w.queues[0] = {0, 4, 1};
  w.queues[1] = {6, 4, 1};  // borrowing 2: share 0.25
  w.queues[2] = {7, 4, 1};  // borrowing 3: share 0.375
  w.size = {{1, 2}, {2, 2}};
  w.need = 2;
  Preemptor p = preemptor(0, 0);
  p.policy.reclaim_within_cohort = ReclaimPolicy::kAny;
  p.fair.enabled = true;
  p.fair.strategies = {FairShareStrategy::kLessThanInitialShare};
  w.queues[0].nominal = 0;  // the preemptor borrows all of it: share 0.25 after admission
  // Queue 2 (0.375) is picked first and 0.25 < 0.375 passes.
  auto t = find_victims(p, {cand(1, 1, 0, 9), cand(2, 2, 0, 1)}, w);
  CHECK(victims(t) == std::vector<std::string>{"j2:FairShare"});
  // With weight 2, queue 2's share halves to 0.1875 and queue 1 (0.25) is picked, but 0.25 < 0.25
  // fails; queue 2 then fails too (0.25 < 0.1875): nothing.
  w.queues[2].weight = 2;
  CHECK(find_victims(p, {cand(1, 1, 0, 9), cand(2, 2, 0, 1)}, w).empty());
}

TEST_CASE("jobs already stopping are taken first and cost no share check") {
  SmallWorld w;
  w.queues[0] = {4, 4, 1};
  w.queues[1] = {4, 4, 1};
  w.size = {{1, 2}, {2, 2}};
  w.need = 2;
  Preemptor p = preemptor(0, 9);
  p.policy.within_queue = WithinQueuePolicy::kLowerPriority;
  auto t = find_victims(p, {cand(1, 0, 0, 9), cand(2, 1, 50, 1, /*preempting=*/true)}, w);
  REQUIRE(t.size() == 1);
  CHECK(t[0].victim.job == 2);
  CHECK(t[0].victim.preempting);
}
