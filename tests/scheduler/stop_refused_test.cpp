// A victim whose stop is refused (StopRefused: a PodDisruptionBudget said no to its first
// eviction) runs on where it ran, its preemptors look again without it, and it is no victim
// until its retry time; when its room went elsewhere meanwhile, the refusal is refused.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

std::vector<std::string> victims(const std::vector<Decision>& ds) { return preempted_ids(ds, false); }

// One queue on one 8-GPU node, preempting lower priorities: `a` (4 GPUs, priority 0, admitted
// first) and `b` (4 GPUs, priority 1) run.
Engine two_running() {
  Engine e;
  REQUIRE(one_node_two_queues(e));
  REQUIRE(e.submit(job("a", "q", res(gpus(4)), 1, 0), 0).ok());
  REQUIRE(e.submit(job("b", "q", res(gpus(4)), 1, 1), 0).ok());
  REQUIRE(admitted_ids(e.schedule(1)).size() == 2);
  REQUIRE(e.observe(JobStarted{JobId("a")}, 2).ok());
  REQUIRE(e.observe(JobStarted{JobId("b")}, 2).ok());
  return e;
}

}  // namespace

TEST_CASE("a refused stop: the victim runs on as it was and the preemptor takes another victim") {
  Engine e = two_running();
  const std::vector<PodSlot> a_slots = e.job(JobId("a"))->slots;
  const QueueIdx q = *e.queue_index(QueueName("q"));
  REQUIRE(e.submit(job("high", "q", res(gpus(4)), 1, 10), 10).ok());
  REQUIRE(victims(e.schedule(10)) == std::vector<std::string>{"a by high"});
  (void)e.take_events();

  REQUIRE(e.observe(StopRefused{JobId("a"), "budget pdb-a allows no disruption", 30}, 11).ok());
  const Job* a = e.job(JobId("a"));
  CHECK(a->state == JobState::kRunning);
  CHECK(a->preemption->preempted_by.value.empty());
  CHECK(a->slots.size() == a_slots.size());
  CHECK(a->slots.front().gpus == a_slots.front().gpus);
  CHECK(e.quotas().usage(q, 0)[kGpu] == gpus(8));  // a and b again, no booking
  CHECK(e.cluster().node(0).used[kGpu] == gpus(8));
  const Job* high = e.job(JobId("high"));
  CHECK(high->state == JobState::kPending);
  CHECK_FALSE(high->reserved);
  CHECK(e.reserved_jobs().empty());
  auto events = e.take_events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].from == JobState::kPreempting);
  CHECK(events[0].to == JobState::kRunning);
  CHECK(events[0].reason == "not preempted by high: budget pdb-a allows no disruption");

  // The next cycle passes over a (refused until 41) and takes b.
  CHECK(victims(e.schedule(12)) == std::vector<std::string>{"b by high"});
  REQUIRE(e.observe(JobStopped{JobId("b")}, 13).ok());
  CHECK(admitted_ids(e.schedule(14)) == std::vector<std::string>{"high"});
}

TEST_CASE("a refused victim is no candidate until its retry time, then is again") {
  Engine e = two_running();
  REQUIRE(e.submit(job("high", "q", res(gpus(4)), 1, 10), 10).ok());
  REQUIRE(victims(e.schedule(10)).size() == 1);
  REQUIRE(e.observe(StopRefused{JobId("a"), "refused", 30}, 11).ok());
  // b refuses too: nothing else to take, so high waits.
  REQUIRE(victims(e.schedule(12)) == std::vector<std::string>{"b by high"});
  REQUIRE(e.observe(StopRefused{JobId("b"), "refused", 30}, 13).ok());
  CHECK(e.schedule(20).empty());
  CHECK(e.job(JobId("high"))->state == JobState::kPending);
  CHECK(e.job(JobId("a"))->state == JobState::kRunning);
  CHECK(e.job(JobId("b"))->state == JobState::kRunning);
  // From 41 on, a may be taken again (the lowest priority first).
  CHECK(e.schedule(40).empty());
  CHECK(victims(e.schedule(41)) == std::vector<std::string>{"a by high"});
}

TEST_CASE("a victim whose preemptor was cancelled holds its room again; its stop may still be refused") {
  Engine e = two_running();
  REQUIRE(e.submit(job("high", "q", res(gpus(4)), 1, 10), 10).ok());
  REQUIRE(victims(e.schedule(10)).size() == 1);
  // The preemptor is cancelled: a, still running, holds its GPUs again, so a job of another
  // queue that would fit there does not get them.
  REQUIRE(e.cancel(JobId("high"), 11).ok());
  CHECK(e.cluster().node(0).used[kGpu] == gpus(8));
  REQUIRE(e.submit(job("thief", "other", res(gpus(4)), 1, 0), 11).ok());
  CHECK(e.schedule(12).empty());
  REQUIRE(e.observe(StopRefused{JobId("a"), "refused", 30}, 13).ok());
  CHECK(e.job(JobId("a"))->state == JobState::kRunning);
  CHECK(e.cluster().node(0).used[kGpu] == gpus(8));
  CHECK(e.schedule(14).empty());
  CHECK(e.job(JobId("thief"))->state == JobState::kPending);
}

TEST_CASE("a refusal is refused when the victim's quota went to another job") {
  Engine e;
  QueueSpec q = queue("q", "", "h100", {{kGpu, gpus(8)}});
  q.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
  REQUIRE(e.apply_queue(q).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(16))), 0).ok());
  REQUIRE(e.submit(job("a", "q", res(gpus(4)), 1, 0), 0).ok());
  REQUIRE(e.submit(job("b", "q", res(gpus(4)), 1, 1), 0).ok());
  REQUIRE(admitted_ids(e.schedule(1)).size() == 2);
  REQUIRE(e.submit(job("high", "q", res(gpus(4)), 1, 10), 10).ok());
  REQUIRE(victims(e.schedule(10)) == std::vector<std::string>{"a by high"});
  REQUIRE(e.cancel(JobId("high"), 11).ok());
  REQUIRE(e.submit(job("c", "q", res(gpus(4)), 1, 5), 11).ok());
  REQUIRE(admitted_ids(e.schedule(12)) == std::vector<std::string>{"c"});
  auto r = e.observe(StopRefused{JobId("a"), "refused", 30}, 13);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error() == "job \"a\" cannot run on: the quota it held went to other jobs");
  CHECK(e.job(JobId("a"))->state == JobState::kPreempting);
  CHECK(e.quotas().usage(*e.queue_index(QueueName("q")), 0)[kGpu] == gpus(8));
}

TEST_CASE("a stop refused for a job that is no victim is an error and changes nothing") {
  Engine e = two_running();
  auto r = e.observe(StopRefused{JobId("a"), "refused", 30}, 5);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  CHECK(r.error() == "job \"a\" is Running, not a preemption victim; it cannot run on");
  CHECK(e.job(JobId("a"))->state == JobState::kRunning);
  CHECK_FALSE(e.observe(StopRefused{JobId("nope"), "refused", 30}, 5).ok());
}
