// The two worked examples of the DRF paper (Ghodsi et al., NSDI 2011), run through the engine:
// two quota-less queues share one node and are ordered by the classic dominant share.
#include <doctest/doctest.h>

#include "drf/share.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

struct Outcome {
  int a = 0, b = 0;
  double share_a = 0, share_b = 0;
};

Outcome run(ResourceVec capacity, ResourceVec task_a, ResourceVec task_b, int tasks_each) {
  Engine e;
  REQUIRE(e.apply_queue(unlimited_queue("A")).ok());
  REQUIRE(e.apply_queue(unlimited_queue("B")).ok());
  REQUIRE(e.upsert_node(node("n", "cpu", capacity), 0).ok());
  for (int i = 0; i < tasks_each; ++i) {
    REQUIRE(e.submit(job("a" + std::to_string(100 + i), "A", task_a), 0).ok());
    REQUIRE(e.submit(job("b" + std::to_string(100 + i), "B", task_b), 0).ok());
  }
  Outcome o;
  for (const auto& id : admitted_ids(e.schedule(0))) (id[0] == 'a' ? o.a : o.b)++;
  auto share = [&](int n, ResourceVec t) {
    ResourceVec used = t * n;
    return drf::dominant_share(std::span<const Quantity>(used.v), std::span<const Quantity>(capacity.v), 1.0);
  };
  o.share_a = share(o.a, task_a);
  o.share_b = share(o.b, task_b);
  return o;
}

}  // namespace

TEST_CASE("DRF example 1: <9 CPU, 18 GB>, A <1, 4>, B <3, 1>: A 3 tasks, B 2, both 2/3") {
  Outcome o = run(res(0, cores(9), gib(18)), res(0, cores(1), gib(4)), res(0, cores(3), gib(1)), 10);
  CHECK(o.a == 3);
  CHECK(o.b == 2);
  CHECK(o.share_a == doctest::Approx(2.0 / 3.0));
  CHECK(o.share_b == doctest::Approx(2.0 / 3.0));
}

TEST_CASE("DRF example 2: <100 CPU, 10000 GB>, A <2, 300>, B <6, 100>: A 20, B 10, both 60%") {
  Outcome o = run(res(0, cores(100), gib(10000)), res(0, cores(2), gib(300)),
                  res(0, cores(6), gib(100)), 40);
  CHECK(o.a == 20);
  CHECK(o.b == 10);
  CHECK(o.share_a == doctest::Approx(0.6));
  CHECK(o.share_b == doctest::Approx(0.6));
}

TEST_CASE("a weight-2 queue reaches twice the dominant share of a weight-1 queue") {
  Engine e;
  REQUIRE(e.apply_queue(unlimited_queue("heavy", 2.0)).ok());
  REQUIRE(e.apply_queue(unlimited_queue("light", 1.0)).ok());
  REQUIRE(e.upsert_node(node("n", "h100", res(gpus(9))), 0).ok());
  for (int i = 0; i < 10; ++i) {
    REQUIRE(e.submit(job("h" + std::to_string(10 + i), "heavy", res(gpus(1))), 0).ok());
    REQUIRE(e.submit(job("l" + std::to_string(10 + i), "light", res(gpus(1))), 0).ok());
  }
  int heavy = 0, light = 0;
  for (const auto& id : admitted_ids(e.schedule(0))) (id[0] == 'h' ? heavy : light)++;
  CHECK(heavy == 6);
  CHECK(light == 3);
}
