// The engine's per-queue rules (scheduler/guardrails.cpp): a non-preemptible job never borrows
// unless its queue says it may (nonPreemptibleMayBorrow), a user at the queue's
// maxRunningJobsPerUser waits while another user's job goes, and a victim is never given longer
// to stop than its queue's maxGracePeriod.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

// Queues `a` and `b`, 4 GPUs nominal each, in cohort `lab`, on one 8-GPU node; `a` already runs
// a 4-GPU job, so anything more it takes is borrowed from `b`'s unused quota.
Engine lab(bool may_borrow) {
  Engine e;
  QueueSpec a = queue("a", "lab", "h100", {{kGpu, gpus(4)}});
  a.non_preemptible_may_borrow = may_borrow;
  REQUIRE(e.apply_queue(a).ok());
  REQUIRE(e.apply_queue(queue("b", "lab", "h100", {{kGpu, gpus(4)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
  REQUIRE(e.submit(job("first", "a", res(gpus(4))), 0).ok());
  REQUIRE(admitted_ids(e.schedule(0)) == std::vector<std::string>{"first"});
  return e;
}

JobSpec owned(const std::string& id, const std::string& owner, Time submitted) {
  JobSpec j = job(id, "q", res(gpus(1)), 1, 0, submitted);
  j.owner = owner;
  return j;
}

}  // namespace

TEST_CASE("a non-preemptible job does not borrow from the cohort; a preemptible one behind it does") {
  Engine e = lab(/*may_borrow=*/false);
  JobSpec keep = job("keep", "a", res(gpus(2)), 1, 0, 1);
  keep.preemptible = false;
  REQUIRE(e.submit(keep, 1).ok());
  REQUIRE(e.submit(job("flex", "a", res(gpus(2)), 1, 0, 2), 2).ok());
  // BestEffortFIFO: keep is passed over, flex (preemptible) borrows b's unused quota.
  CHECK(admitted_ids(e.schedule(3)) == std::vector<std::string>{"flex"});
  const Job* k = e.job(JobId("keep"));
  REQUIRE(k->state == JobState::kPending);
  CHECK(e.pending_reason(*k) ==
        "it is not preemptible, so it runs only within queue a's nominal quota (its nonPreemptibleMayBorrow is "
        "false): it needs 2 gpu of flavor h100 and the queue uses 6 of its nominal 4");
  // Once a's own jobs leave room within its nominal, it runs.
  REQUIRE(e.observe(JobFinished{JobId("first"), 0, ""}, 4).ok());
  CHECK(admitted_ids(e.schedule(5)) == std::vector<std::string>{"keep"});
}

TEST_CASE("a non-preemptible job borrows when its queue sets nonPreemptibleMayBorrow") {
  Engine e = lab(/*may_borrow=*/true);
  JobSpec keep = job("keep", "a", res(gpus(2)), 1, 0, 1);
  keep.preemptible = false;
  REQUIRE(e.submit(keep, 1).ok());
  CHECK(admitted_ids(e.schedule(2)) == std::vector<std::string>{"keep"});
  CHECK(e.quotas().usage(0, 0)[kGpu] == gpus(6));  // 2 borrowed
}

TEST_CASE("a non-preemptible job larger than its queue's nominal is rejected, saying why") {
  Engine strict = lab(false);
  JobSpec big = job("big", "a", res(gpus(6)));
  big.preemptible = false;
  auto r = strict.submit(big, 1);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kRejected);
  CHECK(r.error().find("queue a can never hold more than 4 (it is not preemptible, so it runs only within the "
                       "queue's nominal quota: nonPreemptibleMayBorrow is false)") != std::string::npos);
  // A preemptible one of the same size may wait for the cohort; so may this one where allowed.
  CHECK(strict.submit(job("big-ok", "a", res(gpus(6))), 1).ok());
  Engine lenient = lab(true);
  CHECK(lenient.submit(big, 1).ok());
}

TEST_CASE("a non-preemptible preemptor does not borrow through preemption either") {
  // a (nominal 4, reclaims within the cohort) runs 4; b lends its 4 and runs nothing; a's
  // non-preemptible high-priority job asking 2 more would have to borrow: it preempts nothing
  // of its own queue's lower-priority work to borrow (withinQueue would free nominal, which is
  // allowed: it then runs within nominal).
  Engine e;
  QueueSpec a = queue("a", "lab", "h100", {{kGpu, gpus(4)}});
  a.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
  REQUIRE(e.apply_queue(a).ok());
  REQUIRE(e.apply_queue(queue("b", "lab", "h100", {{kGpu, gpus(4)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
  REQUIRE(e.submit(job("low", "a", res(gpus(4)), 1, 0, 0), 0).ok());
  REQUIRE(admitted_ids(e.schedule(0)) == std::vector<std::string>{"low"});
  JobSpec keep = job("keep", "a", res(gpus(2)), 1, 10, 1);
  keep.preemptible = false;
  REQUIRE(e.submit(keep, 1).ok());
  // It may not borrow b's free 4 GPUs, so it makes room within a's nominal by preempting low.
  auto ds = e.schedule(2);
  CHECK(admitted_ids(ds).empty());
  CHECK(preempted_ids(ds) == std::vector<std::string>{"low by keep InQueue"});
}

TEST_CASE("maxRunningJobsPerUser holds a user's third job and lets another user's job go") {
  for (QueueingStrategy strategy : {QueueingStrategy::kBestEffortFIFO, QueueingStrategy::kStrictFIFO}) {
    CAPTURE(to_string(strategy));
    Engine e;
    QueueSpec q = queue("q", "", "h100", {{kGpu, gpus(8)}});
    q.strategy = strategy;
    q.max_running_jobs_per_user = 2;
    REQUIRE(e.apply_queue(q).ok());
    REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
    REQUIRE(e.submit(owned("alice-1", "alice", 0), 0).ok());
    REQUIRE(e.submit(owned("alice-2", "alice", 1), 1).ok());
    REQUIRE(e.submit(owned("alice-3", "alice", 2), 2).ok());
    REQUIRE(e.submit(owned("bob-1", "bob", 3), 3).ok());
    CHECK(admitted_ids(e.schedule(4)) == std::vector<std::string>{"alice-1", "alice-2", "bob-1"});
    const Job* third = e.job(JobId("alice-3"));
    REQUIRE(third->state == JobState::kPending);
    CHECK(e.pending_reason(*third) ==
          "user alice has 2 admitted or running jobs in queue q, its maxRunningJobsPerUser (2); it waits until one of "
          "them ends");
    CHECK(e.owner_jobs(0, "alice").running == 2);
    CHECK(e.owner_jobs(0, "alice").pending == 1);
    // Room is not what holds it: another cycle changes nothing.
    CHECK(e.schedule(5).empty());
    REQUIRE(e.observe(JobFinished{JobId("alice-1"), 0, ""}, 6).ok());
    CHECK(admitted_ids(e.schedule(7)) == std::vector<std::string>{"alice-3"});
    CHECK(e.owner_jobs(0, "alice").running == 2);
    CHECK(e.owner_jobs(0, "alice").pending == 0);
  }
}

TEST_CASE("a reclaim's Preemption never gives the victim longer than its queue's maxGracePeriod") {
  // b borrows a's 4 GPUs with a 300 s job and a 5 s job; a reclaims them. b's cap is lowered to
  // 10 s after they were submitted: the long one gets 10, the short one keeps its 5.
  Engine e;
  QueueSpec a = queue("a", "lab", "h100", {{kGpu, gpus(4)}});
  a.preemption.reclaim_within_cohort = ReclaimPolicy::kAny;
  REQUIRE(e.apply_queue(a).ok());
  QueueSpec b = queue("b", "lab", "h100", {{kGpu, gpus(4)}});
  REQUIRE(e.apply_queue(b).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
  JobSpec own = job("own", "b", res(gpus(4)), 1, 0, 0);
  JobSpec slow = job("slow", "b", res(gpus(2)), 1, 0, 1);
  slow.grace_period = 300;
  JobSpec quick = job("quick", "b", res(gpus(2)), 1, 0, 2);
  quick.grace_period = 5;
  REQUIRE(e.submit(own, 0).ok());
  REQUIRE(admitted_ids(e.schedule(1)).size() == 1);  // admitted first: the last victim candidate
  REQUIRE(e.submit(slow, 1).ok());
  REQUIRE(e.submit(quick, 2).ok());
  REQUIRE(admitted_ids(e.schedule(3)).size() == 2);
  b.max_grace_period = 10;
  REQUIRE(e.apply_queue(b).ok());
  REQUIRE(e.submit(job("reclaimer", "a", res(gpus(4)), 1, 0, 4), 4).ok());
  auto ds = e.schedule(5);
  std::map<std::string, Time> grace;
  for (const Decision& d : ds)
    if (const auto* p = std::get_if<Preemption>(&d)) grace[p->job.value] = p->grace_period;
  CHECK(grace == std::map<std::string, Time>{{"quick", 5}, {"slow", 10}});
}
