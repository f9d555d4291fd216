// Holds (Engine::hold, release_hold): a held job stays Pending and counted, is never admitted,
// and goes back to its place when released; cancelling, removing its queue and explaining it.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace scheduler_holds_test {

using namespace gpuq;
using namespace gpuq::test;

TEST_CASE("a held job is passed over, still counted as pending, and released back to its place") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  const QueueIdx q = *e.queue_index(QueueName("q"));
  REQUIRE(e.submit(job("first", "q", res(gpus(8)), 1, 0, 0), 0).ok());
  REQUIRE(e.submit(job("second", "q", res(gpus(8)), 1, 0, 1), 1).ok());
  REQUIRE(e.hold(JobId("first"), 2, "held by alice").ok());
  REQUIRE(e.hold(JobId("first"), 2, "again").ok());  // held already: nothing changes
  auto events = e.take_events();
  REQUIRE(events.size() == 3);  // two submissions, one hold
  CHECK(events[2].from == JobState::kPending);
  CHECK(events[2].to == JobState::kPending);
  CHECK(events[2].reason == "held by alice");
  CHECK(e.pending_count(q) == 2);
  CHECK(e.job_counts(q).pending == 2);
  CHECK(e.pending_reason(*e.job(JobId("first"))).starts_with("held: not scheduled until released"));
  const JobExplanation why = e.explain(*e.job(JobId("first")));
  CHECK(why.queue_position == 0);
  CHECK(why.queue_pending == 0);

  // The cycle passes over it: the later job takes the node.
  CHECK(admitted_ids(e.schedule(3)) == std::vector<std::string>{"second"});
  CHECK(admitted_ids(e.schedule(4)).empty());
  CHECK(e.job(JobId("first"))->state == JobState::kPending);

  // Released, it is first again: ahead of a job submitted after it, once the node is free.
  REQUIRE(e.release_hold(JobId("first"), 5, "released by alice").ok());
  REQUIRE(e.submit(job("third", "q", res(gpus(8)), 1, 0, 6), 6).ok());
  REQUIRE(e.observe(JobStarted{JobId("second")}, 7).ok());
  REQUIRE(e.observe(JobFinished{JobId("second"), 0, "exited 0"}, 7).ok());
  CHECK(admitted_ids(e.schedule(8)) == std::vector<std::string>{"first"});
  CHECK(e.job(JobId("third"))->state == JobState::kPending);
}

TEST_CASE("submit held at once: the same events, counts, explanation and later schedule as submit then hold") {
  Engine apart, at_once;
  REQUIRE(one_node_two_queues(apart));
  REQUIRE(one_node_two_queues(at_once));
  const QueueIdx q = *apart.queue_index(QueueName("q"));
  for (Engine* e : {&apart, &at_once}) REQUIRE(e->submit(job("before", "q", res(gpus(8)), 1, 0, 0), 0).ok());
  for (int i = 0; i < 3; ++i) {
    const std::string id = "h" + std::to_string(i);
    REQUIRE(apart.submit(job(id, "q", res(gpus(4)), 1, 0, 1), 1).ok());
    REQUIRE(apart.hold(JobId(id), 1, "held at submission").ok());
    REQUIRE(at_once.submit(job(id, "q", res(gpus(4)), 1, 0, 1), 1, "held at submission").ok());
  }
  const auto a = apart.take_events(), b = at_once.take_events();
  REQUIRE(a.size() == 7);
  CHECK(events_text(a) == events_text(b));
  CHECK(apart.pending_count(q) == at_once.pending_count(q));
  CHECK(apart.job_counts(q).pending == at_once.job_counts(q).pending);
  const Job& ja = *apart.job(JobId("h1"));
  const Job& jb = *at_once.job(JobId("h1"));
  CHECK(jb.held);
  CHECK(ja.order == jb.order);
  CHECK(ja.request == jb.request);
  CHECK(ja.pending_since == jb.pending_since);
  CHECK(apart.pending_reason(ja) == at_once.pending_reason(jb));
  CHECK(apart.explain(ja).queue_position == at_once.explain(jb).queue_position);
  // Released in the same order, they are admitted alike.
  for (Engine* e : {&apart, &at_once}) {
    REQUIRE(e->release_hold(JobId("h2"), 2, "released").ok());
    REQUIRE(e->release_hold(JobId("h0"), 2, "released").ok());
    REQUIRE(admitted_ids(e->schedule(3)) == std::vector<std::string>{"before"});
    REQUIRE(e->observe(JobStarted{JobId("before")}, 4).ok());
    REQUIRE(e->observe(JobFinished{JobId("before"), 0, "exited 0"}, 4).ok());
  }
  CHECK(admitted_ids(apart.schedule(5)) == admitted_ids(at_once.schedule(5)));
  CHECK(apart.job(JobId("h0"))->state == at_once.job(JobId("h0"))->state);
  CHECK(apart.job(JobId("h2"))->state == at_once.job(JobId("h2"))->state);
}

TEST_CASE("holds: only pending jobs; release only held ones; cancel and queue removal see them") {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  REQUIRE(e.submit(job("run", "other", res(gpus(8))), 0).ok());
  REQUIRE(admitted_ids(e.schedule(1)) == std::vector<std::string>{"run"});
  const auto running = e.hold(JobId("run"), 2, "x");
  CHECK(running.code() == ErrorCode::kFailedPrecondition);
  CHECK(running.error() == "job \"run\" is Admitted; only a pending job can be held");
  CHECK(e.hold(JobId("nope"), 2, "x").code() == ErrorCode::kNotFound);

  REQUIRE(e.submit(job("wait", "q", res(gpus(4))), 2).ok());
  const auto not_held = e.release_hold(JobId("wait"), 3, "x");
  CHECK(not_held.code() == ErrorCode::kFailedPrecondition);
  CHECK(not_held.error() == "job \"wait\" is not held");

  REQUIRE(e.hold(JobId("wait"), 3, "held").ok());
  const auto removal = e.remove_queue(QueueName("q"));
  CHECK(removal.code() == ErrorCode::kFailedPrecondition);
  CHECK(removal.error().find("has 1 pending") != std::string::npos);

  REQUIRE(e.cancel(JobId("wait"), 4).ok());
  CHECK(e.job(JobId("wait"))->state == JobState::kCancelled);
  CHECK(e.pending_count(*e.queue_index(QueueName("q"))) == 0);
  CHECK(e.remove_queue(QueueName("q")).ok());
}

}  // namespace scheduler_holds_test
