// Start-time estimates: the engine run forward in virtual time on a copy of itself.
#include <doctest/doctest.h>

#include "scheduler/what_if.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

// Queue a (8 GPUs) on one 8-GPU node: r1 runs all of it from 0 (expected 100 s, limit 1000 s);
// p1 (8 GPUs, expected 50 s), p2 and p3 (4 GPUs each) wait.
Engine one_node(std::optional<Time> queue_estimate = std::nullopt) {
  Engine e;
  QueueSpec q = queue("a", "", "h100", {{kGpu, gpus(8)}});
  q.runtime_estimate = queue_estimate;
  REQUIRE(e.apply_queue(q).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
  JobSpec r1 = job("r1", "a", res(gpus(8)));
  r1.expected_runtime = 100;
  r1.max_runtime = 1000;
  REQUIRE(e.submit(r1, 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  REQUIRE(e.observe(JobStarted{JobId("r1")}, 0).ok());
  JobSpec p1 = job("p1", "a", res(gpus(8)), 1, 0, 10);
  p1.expected_runtime = 50;
  REQUIRE(e.submit(p1, 10).ok());
  REQUIRE(e.submit(job("p2", "a", res(gpus(4)), 1, 0, 20), 20).ok());
  REQUIRE(e.submit(job("p3", "a", res(gpus(4)), 1, 0, 30), 30).ok());
  CHECK(e.schedule(40).empty());
  return e;
}

}  // namespace

TEST_CASE("what-if: each waiting job starts when the jobs before it end as expected") {
  Engine e = one_node();
  const WhatIfResult w = estimate_starts(e, 40);
  CHECK(w.pending == 3);
  CHECK(w.starts.at("p1") == 100);  // r1 ends at 0 + 100
  CHECK(w.starts.at("p2") == 150);  // p1 runs 50 s
  CHECK(w.starts.at("p3") == 150);
  // The live engine is untouched.
  CHECK(e.job(JobId("p1"))->state == JobState::kPending);
  CHECK(e.job(JobId("r1"))->state == JobState::kRunning);
  // The same engine and time give the same answer.
  CHECK(estimate_starts(e, 40).starts == w.starts);
}

TEST_CASE("what-if: the Slurm-style baseline runs every job to its limit") {
  Engine e = one_node();
  WhatIfOptions limits;
  limits.runtime = WhatIfOptions::Runtime::kLimit;
  const WhatIfResult w = estimate_starts(e, 40, limits);
  CHECK(w.starts.at("p1") == 1000);  // r1's maxRuntime
  // p1 has no limit: it runs for ever, and nothing after it gets an estimate.
  CHECK(w.starts.count("p2") == 0);
  CHECK(w.starts.count("p3") == 0);
}

TEST_CASE("what-if: a job that says nothing runs its queue's runtimeEstimate; one past its estimate runs as long again") {
  Engine with = one_node(200);
  // p1 expects 50 s; p2 (no estimate of its own) then runs the queue's 200 s.
  CHECK(estimate_starts(with, 40).starts.at("p2") == 150);
  Engine without = one_node();
  CHECK(estimate_starts(without, 40).starts.at("p3") == 150);
  // At 300, r1 (expected 100) is overdue: it is taken to run as long again (to 600); at 700,
  // twice 700 is past its limit of 1000, where it ends.
  CHECK(estimate_starts(with, 300).starts.at("p1") == 600);
  CHECK(estimate_starts(with, 700).starts.at("p1") == 1000);
  // The baseline knows nothing of it: the limit.
  WhatIfOptions limits;
  limits.runtime = WhatIfOptions::Runtime::kLimit;
  CHECK(estimate_starts(with, 300, limits).starts.at("p1") == 1000);
}

TEST_CASE("what-if: a preemptor starts once its victim stopped, within the victim's grace period") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  REQUIRE(e.submit(job("low", "q", res(gpus(8))), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  REQUIRE(e.observe(JobStarted{JobId("low")}, 0).ok());
  REQUIRE(e.submit(job("high", "q", res(gpus(8)), 1, 10, 5), 5).ok());
  const WhatIfResult w = estimate_starts(e, 5);
  REQUIRE(w.starts.count("high") == 1);
  CHECK(w.starts.at("high") >= 5);
  CHECK(w.starts.at("high") <= 5 + 30);  // the default grace period
  CHECK(w.starts.count("low") == 0);     // requeued, with no runtime known: it was not pending
}

TEST_CASE("what-if: nothing ends within the horizon, so there is no estimate") {
  Engine e = one_node();
  WhatIfOptions short_horizon;
  short_horizon.horizon = 30;
  CHECK(estimate_starts(e, 40, short_horizon).starts.empty());
}
