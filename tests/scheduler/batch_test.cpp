// The engine's part of the batch features: retries (JobSpec::retries: a failed run is requeued,
// a preemption uses none), an array's throttle and a singleton (passed over as at
// maxRunningJobsPerUser), and a front end's dependency hold beside a user's hold.
#include <doctest/doctest.h>

#include <algorithm>

#include "tests/support/builders.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace scheduler_batch_test {

using namespace gpuq;
using namespace gpuq::test;

JobSpec member(const std::string& array, int index, int throttle, Quantity gpu) {
  JobSpec j = job(array + "_" + std::to_string(index), "q", res(gpu), 1, 0, index);
  j.array_id = array;
  j.array_index = index;
  j.array_throttle = throttle;
  return j;
}

TEST_CASE("a failed run is retried up to its retries, counted apart from requeues by preemption") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  JobSpec flaky = job("flaky", "q", res(gpus(4)), 1, 0, 0);
  flaky.retries = 2;
  REQUIRE(e.submit(flaky, 0).ok());
  for (int run = 1; run <= 3; ++run) {
    REQUIRE(admitted_ids(e.schedule(run * 10)) == std::vector<std::string>{"flaky"});
    REQUIRE(e.observe(JobStarted{JobId("flaky")}, run * 10).ok());
    REQUIRE(e.observe(JobFinished{JobId("flaky"), 1, ""}, run * 10 + 1).ok());
    const Job* j = e.job(JobId("flaky"));
    if (run < 3) {
      CHECK(j->state == JobState::kPending);
      CHECK(j->retried == run);
      CHECK(j->attempts == run);
      const auto events = e.take_events();
      CHECK(events.back().reason == "exit code 1; retry " + std::to_string(run) + " of 2");
    } else {
      CHECK(j->state == JobState::kFailed);  // no retries left
      CHECK(j->retried == 2);
      CHECK(j->end_reason == "exit code 1");
    }
  }

  // A preempted job goes back without using a retry; a later failure still has its retry.
  JobSpec low = job("low", "q", res(gpus(8)), 1, 0, 100);
  low.retries = 1;
  REQUIRE(e.submit(low, 100).ok());
  REQUIRE(admitted_ids(e.schedule(101)) == std::vector<std::string>{"low"});
  REQUIRE(e.observe(JobStarted{JobId("low")}, 101).ok());
  REQUIRE(e.submit(job("high", "q", res(gpus(8)), 1, 10, 102), 102).ok());
  CHECK(preempted_ids(e.schedule(103)) == std::vector<std::string>{"low by high InQueue"});
  REQUIRE(e.observe(JobStopped{JobId("low")}, 104).ok());
  CHECK(e.job(JobId("low"))->preemptions == 1);
  CHECK(e.job(JobId("low"))->retried == 0);
  CHECK(admitted_ids(e.schedule(104)) == std::vector<std::string>{"high"});  // its booking, now free
  REQUIRE(e.observe(JobStarted{JobId("high")}, 105).ok());
  REQUIRE(e.observe(JobFinished{JobId("high"), 0, ""}, 106).ok());
  REQUIRE(admitted_ids(e.schedule(107)) == std::vector<std::string>{"low"});
  REQUIRE(e.observe(JobFinished{JobId("low"), 2, ""}, 108).ok());
  CHECK(e.job(JobId("low"))->state == JobState::kPending);
  CHECK(e.job(JobId("low"))->retried == 1);

  // A lost node fails a job with onNodeLoss Fail only once its retries are spent.
  Engine f;
  REQUIRE(one_node_two_queues(f));
  JobSpec fragile = job("fragile", "q", res(gpus(8)), 1, 0, 0);
  fragile.on_node_loss = NodeLossPolicy::kFail;
  fragile.retries = 1;
  REQUIRE(f.submit(fragile, 0).ok());
  REQUIRE(admitted_ids(f.schedule(1)) == std::vector<std::string>{"fragile"});
  REQUIRE(f.observe(NodeLost{"n1"}, 2).ok());
  CHECK(f.job(JobId("fragile"))->state == JobState::kPending);
  CHECK(f.job(JobId("fragile"))->retried == 1);
}

TEST_CASE("an array's throttle caps its members holding resources; the queue's other jobs go past") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  for (int i = 0; i < 6; ++i) REQUIRE(e.submit(member("a1", i, 2, gpus(1)), i).ok());
  REQUIRE(e.submit(job("other", "q", res(gpus(1)), 1, 0, 10), 10).ok());
  // 8 GPUs would take all six: the throttle lets two in, and the later job goes past the rest.
  CHECK(admitted_ids(e.schedule(11)) == std::vector<std::string>{"a1_0", "a1_1", "other"});
  CHECK(e.pending_reason(*e.job(JobId("a1_2"))) ==
        "array a1 has 2 members admitted or running, its throttle (%2); it waits until one of them ends");
  CHECK(admitted_ids(e.schedule(12)).empty());
  REQUIRE(e.observe(JobFinished{JobId("a1_0"), 0, ""}, 13).ok());
  CHECK(admitted_ids(e.schedule(14)) == std::vector<std::string>{"a1_2"});
  // A cancelled member frees its place too.
  REQUIRE(e.cancel(JobId("a1_1"), 15).ok());
  CHECK(admitted_ids(e.schedule(16)) == std::vector<std::string>{"a1_3"});
  CHECK(e.admissible_now(JobId("a1_4")) == false);
}

TEST_CASE("a singleton waits while a job of its owner and name holds resources, in any queue") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  JobSpec first = job("first", "other", res(gpus(1)), 1, 0, 0);
  first.owner = "alice";
  first.name = "etl";
  JobSpec second = job("second", "q", res(gpus(1)), 1, 0, 1);
  second.owner = "alice";
  second.name = "etl";
  second.singleton = true;
  JobSpec bobs = second;
  bobs.id = JobId("bobs");
  bobs.owner = "bob";
  REQUIRE(e.submit(first, 0).ok());
  REQUIRE(e.submit(second, 1).ok());
  REQUIRE(e.submit(bobs, 2).ok());
  auto admitted = admitted_ids(e.schedule(3));
  std::sort(admitted.begin(), admitted.end());
  CHECK(admitted == std::vector<std::string>{"bobs", "first"});
  CHECK(e.pending_reason(*e.job(JobId("second"))) ==
        "singleton: another job of user alice named \"etl\" is admitted or running; it waits until that one ends");
  REQUIRE(e.observe(JobFinished{JobId("first"), 0, ""}, 4).ok());
  CHECK(admitted_ids(e.schedule(5)) == std::vector<std::string>{"second"});
}

TEST_CASE("a dependency hold and a user hold are separate: the job goes once both are released") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  REQUIRE(e.submit(job("j", "q", res(gpus(1))), 0).ok());
  REQUIRE(e.hold(JobId("j"), 1, "waiting for x to succeed (after-ok)", Engine::HoldKind::kDependency).ok());
  REQUIRE(e.hold(JobId("j"), 1, "held by alice").ok());
  CHECK(e.pending_count(*e.queue_index(QueueName("q"))) == 1);
  CHECK(e.release_hold(JobId("j"), 2, "released by alice").ok());
  CHECK(e.pending_reason(*e.job(JobId("j"))) == "waiting for x to succeed (after-ok)");
  CHECK_FALSE(e.job(JobId("j"))->held);
  CHECK(admitted_ids(e.schedule(3)).empty());
  CHECK(e.release_hold(JobId("j"), 4, "released by alice").code() == ErrorCode::kFailedPrecondition);
  REQUIRE(e.release_hold(JobId("j"), 4, "dependencies met", Engine::HoldKind::kDependency).ok());
  CHECK(admitted_ids(e.schedule(5)) == std::vector<std::string>{"j"});

  // A job its front end fails ends Failed with the reason, out of its queue's counts.
  REQUIRE(e.submit(job("k", "q", res(gpus(1))), 6).ok());
  REQUIRE(e.hold(JobId("k"), 6, "waiting", Engine::HoldKind::kDependency).ok());
  REQUIRE(e.cancel(JobId("k"), 7, "dependency never satisfied", JobState::kFailed).ok());
  CHECK(e.job(JobId("k"))->state == JobState::kFailed);
  CHECK(e.pending_count(*e.queue_index(QueueName("q"))) == 0);
}

}  // namespace scheduler_batch_test
