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
