// The engine's part of the batch features: retries (JobSpec::retries: a failed run is requeued,
// a preemption uses none), an array's throttle and a singleton (passed over as at
// maxRunningJobsPerUser), and a front end's dependency hold beside a user's hold.
#include <doctest/doctest.h>

#include <algorithm>
#include <optional>

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

TEST_CASE("an array's members from one template: the same jobs, orders, events and schedule as a submit each") {
  Engine each, from_template;
  REQUIRE(one_node_two_queues(each));
  REQUIRE(one_node_two_queues(from_template));
  for (Engine* e : {&each, &from_template}) REQUIRE(e->submit(job("before", "q", res(gpus(8)), 1, 0, 0), 0).ok());
  const std::vector<int> indices{0, 3, 7, 8};
  // Held, then not held (the two ways into the engine), throttled to 2.
  for (const bool held : {true, false}) {
    const std::string array = held ? "h" : "a";
    const std::optional<std::string> hold =
        held ? std::optional<std::string>("held at submission") : std::nullopt;
    // An array's members are submitted at one time (member() varies it by index).
    const auto at_once = [&](int i) {
      JobSpec m = member(array, i, 2, gpus(1));
      m.submitted_at = 1;
      return m;
    };
    for (int i : indices) REQUIRE(each.submit(at_once(i), 1, hold).ok());
    auto tmpl = from_template.array_template(at_once(indices.front()));
    REQUIRE(tmpl.ok());
    for (int i : indices)
      REQUIRE(from_template.submit_member(tmpl.value(), JobId(array + "_" + std::to_string(i)), i, 1, hold).ok());
  }
  const auto a = each.take_events(), b = from_template.take_events();
  REQUIRE(a.size() == 1 + 2 * indices.size() + indices.size());
  CHECK(events_text(a) == events_text(b));
  const QueueIdx q = *each.queue_index(QueueName("q"));
  CHECK(each.pending_count(q) == from_template.pending_count(q));
  CHECK(each.job_counts(q).pending == from_template.job_counts(q).pending);
  for (const std::string id : {"h_0", "h_8", "a_0", "a_7"}) {
    CAPTURE(id);
    const Job& x = *each.job(JobId(id));
    const Job& y = *from_template.job(JobId(id));
    CHECK(x.spec.id == y.spec.id);
    CHECK(x.spec.array_index == y.spec.array_index);
    CHECK(x.spec.array_id == y.spec.array_id);
    CHECK(x.order == y.order);
    CHECK(x.held == y.held);
    CHECK(x.request == y.request);
    CHECK(x.total == y.total);
    CHECK(x.candidates == y.candidates);
    CHECK(each.pending_reason(x) == from_template.pending_reason(y));
  }
  // An id in use is refused, and nothing enters; a template that can never fit is refused as
  // that member's submit would be.
  auto tmpl = from_template.array_template(member("a", 9, 0, gpus(1)));
  REQUIRE(tmpl.ok());
  const auto taken = from_template.submit_member(tmpl.value(), JobId("a_3"), 3, 2);
  CHECK(taken.code() == ErrorCode::kAlreadyExists);
  CHECK(taken.error() == "job \"a_3\" already exists");
  CHECK(from_template.take_events().empty());
  const auto too_big = from_template.array_template(member("b", 0, 0, gpus(9)));
  const auto alone = each.submit(member("b", 0, 0, gpus(9)), 2);
  REQUIRE(!too_big.ok());
  CHECK(too_big.error() == alone.error());
  CHECK(too_big.code() == alone.code());
  // Released and run alike.
  for (Engine* e : {&each, &from_template}) {
    REQUIRE(admitted_ids(e->schedule(2)) == std::vector<std::string>{"before"});
    REQUIRE(e->observe(JobStarted{JobId("before")}, 3).ok());
    REQUIRE(e->observe(JobFinished{JobId("before"), 0, "exited 0"}, 3).ok());
    REQUIRE(e->release_hold(JobId("h_7"), 3, "released").ok());
  }
  const auto ra = admitted_ids(each.schedule(4));
  CHECK(ra == std::vector<std::string>{"h_7", "a_0", "a_3"});  // a's throttle: 2
  CHECK(ra == admitted_ids(from_template.schedule(4)));
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
