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

namespace {

// Two quota-less queues share 8 GPUs; each offers eight 1-GPU jobs. Returns how many of a's run.
int a_share_of_8(Time half_life, Quantity a_history_gpu, Time now) {
  EngineConfig config;
  config.usage_half_life = half_life;
  Engine e(config);
  REQUIRE(e.apply_queue(unlimited_queue("a")).ok());
  REQUIRE(e.apply_queue(unlimited_queue("b")).ok());
  REQUIRE(e.upsert_node(node("n", "h100", res(gpus(8))), 0).ok());
  if (a_history_gpu > 0) REQUIRE(e.set_usage_history(QueueName("a"), res(a_history_gpu), 0).ok());
  for (int i = 0; i < 8; ++i) {
    REQUIRE(e.submit(job("a" + std::to_string(i), "a", res(gpus(1))), 0).ok());
    REQUIRE(e.submit(job("b" + std::to_string(i), "b", res(gpus(1))), 0).ok());
  }
  int a = 0;
  for (const auto& id : admitted_ids(e.schedule(now))) a += id[0] == 'a';
  return a;
}

}  // namespace

TEST_CASE("a queue that used 6 of 8 GPUs on average lately waits behind one that used none") {
  CHECK(a_share_of_8(0, 0, 0) == 4);         // no history: an even split
  CHECK(a_share_of_8(3600, 0, 0) == 4);      // history on, but nobody used anything
  // a's history share is 6/8 = 0.75: b runs until its own share after adding passes that.
  CHECK(a_share_of_8(3600, gpus(6), 0) == 1);
  // Four half-lives later a's average is 6/16 GPU: nearly even again.
  CHECK(a_share_of_8(3600, gpus(6), 4 * 3600) == 4);
}

TEST_CASE("usage history needs a half-life and a known queue") {
  Engine off;
  REQUIRE(off.apply_queue(unlimited_queue("a")).ok());
  CHECK(off.set_usage_history(QueueName("a"), res(gpus(1)), 0).code() == ErrorCode::kFailedPrecondition);
  EngineConfig config;
  config.usage_half_life = 60;
  Engine on(config);
  CHECK(on.set_usage_history(QueueName("zz"), res(gpus(1)), 0).code() == ErrorCode::kNotFound);
}

TEST_CASE("running jobs build up history that decays after they finish") {
  EngineConfig config;
  config.usage_half_life = 100;
  Engine e(config);
  REQUIRE(e.apply_queue(unlimited_queue("a")).ok());
  REQUIRE(e.upsert_node(node("n", "h100", res(gpus(8))), 0).ok());
  REQUIRE(e.submit(job("j", "a", res(gpus(4))), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  REQUIRE(e.observe(JobFinished{JobId("j"), 0, {}}, 100).ok());  // ran 4 GPUs for one half-life
  CHECK(e.usage_history().average(0)[kGpu] == doctest::Approx(2000));
  (void)e.schedule(200);  // idle for another half-life
  CHECK(e.usage_history().average(0)[kGpu] == doctest::Approx(1000));
}
