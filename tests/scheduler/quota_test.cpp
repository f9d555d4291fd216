// Kueue's ClusterQueue semantics: nominal, borrowingLimit, lendingLimit, cohort pools.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

// Submits one-GPU jobs to q until the engine stops admitting them; returns how many got in.
int fill(Engine& e, const std::string& q, int max_jobs = 64) {
  static int next = 0;
  int admitted = 0;
  for (int i = 0; i < max_jobs; ++i) {
    REQUIRE(e.submit(job(q + "-" + std::to_string(next++), q, res(gpus(1))), 0).ok());
    admitted += static_cast<int>(e.schedule(0).size());
  }
  return admitted;
}

Engine quota_only() { return Engine(engine_config(PlacementPolicy::kPack, true)); }

}  // namespace

TEST_CASE("lendingLimit: nominal 6 lending 4 and nominal 6 lending 2 reach 8 and 10") {
  {
    Engine e = quota_only();
    REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(6), std::nullopt, gpus(4)}})).ok());
    REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(6), std::nullopt, gpus(2)}})).ok());
    // a keeps 2 of its own and may draw the whole pool (4 + 2): 8.
    CHECK(fill(e, "a") == 8);
    // b keeps 4 guaranteed; the pool is spent, so b gets exactly its guaranteed part.
    CHECK(fill(e, "b") == 4);
  }
  {
    Engine e = quota_only();
    REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(6), std::nullopt, gpus(4)}})).ok());
    REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(6), std::nullopt, gpus(2)}})).ok());
    CHECK(fill(e, "b") == 10);  // 4 guaranteed + the pool of 6
    CHECK(fill(e, "a") == 2);   // only a's guaranteed part is left
  }
}

TEST_CASE("the guaranteed part is never lent") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(8), std::nullopt, gpus(0)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(2)}})).ok());
  CHECK(fill(e, "b") == 2);  // a lends nothing (lendingLimit 0)
  CHECK(fill(e, "a") == 8);
}

TEST_CASE("borrowingLimit caps usage at nominal + borrowingLimit") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(4), gpus(2)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(10)}})).ok());
  CHECK(fill(e, "a") == 6);
  CHECK(fill(e, "b") == 8);  // the pool of 14 less a's 6
}

TEST_CASE("borrowingLimit 0 means exactly nominal, even with an idle cohort") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(3), gpus(0)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(10)}})).ok());
  CHECK(fill(e, "a") == 3);
}

TEST_CASE("a queue without a cohort uses exactly its nominal") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("solo", "", "h100", {{kGpu, gpus(5)}})).ok());
  CHECK(fill(e, "solo") == 5);
}

TEST_CASE("limits without a cohort are refused with the field named") {
  Engine e = quota_only();
  auto r = e.apply_queue(queue("solo", "", "h100", {{kGpu, gpus(5), gpus(1)}}));
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().find("borrowingLimit") != std::string::npos);
  CHECK(e.apply_queue(queue("w0", "", "h100", {{kGpu, gpus(5)}}, 0.0)).ok());  // Kueue's weight 0
  auto w = e.apply_queue(queue("w", "", "h100", {{kGpu, gpus(5)}}, -1.0));
  REQUIRE_FALSE(w.ok());
  CHECK(w.error().find("weight must be 0 or more") != std::string::npos);
}

TEST_CASE("the cohort pool is the sum of lendable quota and is never over-drawn") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(4)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(4), std::nullopt, gpus(1)}})).ok());
  REQUIRE(e.apply_queue(queue("z", "c", "h100", {{kGpu, gpus(0)}})).ok());
  CHECK(fill(e, "z") == 5);  // 4 from a + 1 lendable from b
  const auto* c = e.quotas().cohort_of(*e.queue_index(QueueName("z")));
  REQUIRE(c != nullptr);
  FlavorId f = *e.flavor_id("h100");
  CHECK(c->lendable[f][kGpu] == gpus(5));
  CHECK(c->used[f][kGpu] == gpus(5));
  CHECK(fill(e, "b") == 3);  // b's guaranteed 3 is still there
  CHECK(fill(e, "a") == 0);  // a lent all of its nominal and there is no reclaim yet
}

TEST_CASE("finishing a job gives its quota back to the queue and the pool") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(2)}})).ok());
  REQUIRE(e.submit(job("j1", "a", res(gpus(2))), 0).ok());
  REQUIRE(e.submit(job("j2", "a", res(gpus(2))), 0).ok());
  CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"j1"});
  CHECK(e.schedule(1).empty());
  REQUIRE(e.observe(JobFinished{JobId("j1"), 0, {}}, 2).ok());
  CHECK(admitted_ids(e.schedule(2)) == std::vector<std::string>{"j2"});
}

TEST_CASE("a job above nominal + borrowingLimit is rejected at submit with the reason") {
  Engine e = quota_only();
  REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(4), gpus(2)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "c", "h100", {{kGpu, gpus(10)}})).ok());
  auto r = e.submit(job("big", "a", res(gpus(7))), 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kRejected);
  CHECK(r.error() == "needs 7 gpu of flavor h100; queue a can never hold more than 6");
  CHECK(e.submit(job("ok", "a", res(gpus(6))), 0).ok());
}

TEST_CASE("a listed flavor without gpu quota has none: a typo cannot leave GPUs unlimited") {
  Engine e = quota_only();
  ResourceId typo = *e.resource_names().intern("gpus");
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{typo, gpus(8)}, {kCpu, cores(64)}})).ok());
  auto r = e.submit(job("g", "a", res(gpus(1))), 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "needs 1 gpu of flavor h100; queue a has no gpu quota on that flavor");
  // Unlisted resources other than gpu are limited only by capacity.
  CHECK(e.submit(job("mem", "a", res(0, cores(1), gib(512))), 0).ok());
  CHECK(e.schedule(0).size() == 1);
}
