// Engine::explain: the order, quota and room a person sees with `gpuq explain`.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

// Cohort lab: a (nominal 8, may borrow 4 more) and b (nominal 8, lends at most 6), two 8-GPU
// nodes. a runs 10 GPUs (2 borrowed from b), b runs 3; 3 GPUs are free.
Engine lab() {
  Engine e;
  REQUIRE(e.apply_queue(queue("a", "lab", "h100", {{kGpu, gpus(8), gpus(4)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "lab", "h100", {{kGpu, gpus(8), std::nullopt, gpus(6)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
  REQUIRE(e.upsert_node(node("n2", "h100", res(gpus(8))), 0).ok());
  REQUIRE(e.submit(job("a1", "a", res(gpus(6)), 1, 0, 1), 1).ok());
  REQUIRE(e.submit(job("a2", "a", res(gpus(4)), 1, 0, 2), 2).ok());
  REQUIRE(e.submit(job("b1", "b", res(gpus(3)), 1, 0, 3), 3).ok());
  REQUIRE(e.schedule(3).size() == 3);
  REQUIRE(e.submit(job("a3", "a", res(gpus(4)), 1, 0, 5), 5).ok());
  REQUIRE(e.submit(job("a4", "a", res(gpus(4)), 1, 5, 6), 6).ok());
  REQUIRE(e.submit(job("b2", "b", res(gpus(4)), 1, 0, 7), 7).ok());
  CHECK(e.schedule(8).empty());
  return e;
}

}  // namespace

TEST_CASE("explain: the place in its queue and in the cycle, and the parts of its key") {
  Engine e = lab();
  const JobExplanation a3 = e.explain(*e.job(JobId("a3")));
  CHECK(a3.reason == e.pending_reason(*e.job(JobId("a3"))));
  CHECK(a3.queue_position == 2);  // a4 has the higher priority
  CHECK(a3.queue_pending == 2);
  CHECK(e.explain(*e.job(JobId("a4"))).queue_position == 1);
  // b2 keeps b within its nominal, a3 would have a borrow more: b's head goes first.
  CHECK(a3.cycle_queues == 2);
  CHECK(a3.cycle_rank == 2);
  CHECK(e.explain(*e.job(JobId("b2"))).cycle_rank == 1);
  CHECK_FALSE(a3.order.within_nominal);
  CHECK(e.explain(*e.job(JobId("b2"))).order.within_nominal);
  CHECK(a3.order.priority == 0);
  CHECK(a3.order.submitted_at == 5);
  CHECK(a3.order.share > 0);
  CHECK_FALSE(a3.order.share_infinite);
  CHECK_FALSE(a3.preempted);
}

TEST_CASE("explain: the quota arithmetic and the room on the nodes") {
  Engine e = lab();
  const JobExplanation a3 = e.explain(*e.job(JobId("a3")));
  REQUIRE(a3.quota.size() == 1);
  const auto& q = a3.quota[0];
  CHECK(q.flavor == "h100");
  CHECK(q.resource == kGpu);
  CHECK(q.requested == gpus(4));
  CHECK(q.nominal == gpus(8));
  CHECK(q.used == gpus(10));
  CHECK(q.borrowed == gpus(2));
  CHECK(q.borrowing_limit == gpus(4));
  CHECK_FALSE(q.lending_limit);
  CHECK(q.headroom == gpus(2));     // nominal + borrowingLimit 12, uses 10
  CHECK(q.reachable == gpus(12));
  CHECK(q.cohort == "lab");
  CHECK(q.cohort_lendable == gpus(14));  // a's 8 and b's lendingLimit 6
  const JobExplanation b2 = e.explain(*e.job(JobId("b2")));
  REQUIRE(b2.quota.size() == 1);
  CHECK(b2.quota[0].lending_limit == gpus(6));

  REQUIRE(a3.room.size() == 1);
  const auto& r = a3.room[0];
  CHECK(r.nodes == 2);
  CHECK(r.open == 2);
  CHECK(r.gpu_free == gpus(3));
  CHECK(r.largest_free_block <= 3);
  CHECK(r.fitting == 0);              // no node has 4 GPUs free
  CHECK(r.gpu_stranded == gpus(3));   // none of the free GPUs can hold a 4-GPU pod
  CHECK(r.pods == 1);
  CHECK(r.gpu_per_pod == gpus(4));

  REQUIRE(e.set_node_state("n2", NodeState::kCordoned, 9).ok());
  CHECK(e.explain(*e.job(JobId("a3"))).room[0].open == 1);
}

TEST_CASE("explain: a preempted job says by whom, under which policy and when") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  REQUIRE(e.submit(job("low", "q", res(gpus(8)), 1, 0, 0), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  REQUIRE(e.submit(job("high", "q", res(gpus(8)), 1, 10, 5), 5).ok());
  CHECK(preempted_ids(e.schedule(5)) == std::vector<std::string>{"low by high InQueue"});
  const JobExplanation low = e.explain(*e.job(JobId("low")));
  REQUIRE(low.preempted);
  CHECK(low.preempted->by == "high");
  CHECK(low.preempted->by_queue == "q");
  CHECK(low.preempted->reason == PreemptReason::kInQueue);
  CHECK(low.preempted->at == 5);
  CHECK(low.queue_position == 0);  // not pending
}
