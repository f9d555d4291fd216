#include <doctest/doctest.h>

#include "scheduler/usage_history.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

TEST_CASE("the decayed average halves every half-life once usage stops") {
  UsageHistory h(3600);
  h.set(0, UsageHistory::Average{8000}, 0);  // averaged 8 GPUs
  h.advance(0, res(0), 3600);
  CHECK(h.average(0)[kGpu] == doctest::Approx(4000));
  h.advance(0, res(0), 7200);
  CHECK(h.average(0)[kGpu] == doctest::Approx(2000));
}

TEST_CASE("constant usage pulls the average towards it, exactly as one long step") {
  UsageHistory steps(100), once(100);
  steps.advance(0, res(0), 0);
  once.advance(0, res(0), 0);
  for (Time t = 10; t <= 300; t += 10) steps.advance(0, res(gpus(4)), t);
  once.advance(0, res(gpus(4)), 300);
  CHECK(steps.average(0)[kGpu] == doctest::Approx(once.average(0)[kGpu]));
  CHECK(once.average(0)[kGpu] == doctest::Approx(4000 * (1 - 0.125)));  // three half-lives
}

TEST_CASE("the history share is the average over the basis and the weight; off means zero") {
  UsageHistory h(60);
  h.set(1, UsageHistory::Average{2000}, 0);
  CHECK(h.share(1, res(gpus(8)), 1.0) == doctest::Approx(0.25));
  CHECK(h.share(1, res(gpus(8)), 2.0) == doctest::Approx(0.125));
  CHECK(h.share(0, res(gpus(8)), 1.0) == 0.0);
  UsageHistory off;
  off.set(0, UsageHistory::Average{2000}, 0);
  CHECK(off.share(0, res(gpus(8)), 1.0) == 0.0);
}
