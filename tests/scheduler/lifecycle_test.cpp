// Job lifecycle commands, events, queueing strategies and rejection at submit.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

Engine small_cluster() {
  Engine e;
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(8)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(4))), 0).ok());
  REQUIRE(e.upsert_node(node("n2", "h100", res(gpus(4))), 0).ok());
  return e;
}

std::vector<std::string> transitions(const std::vector<Event>& events) {
  std::vector<std::string> out;
  for (const auto& ev : events)
    out.push_back(ev.job.value + ":" + (ev.from ? to_string(*ev.from) : "-") + ">" + to_string(ev.to));
  return out;
}

// Two 4-GPU jobs running on the two nodes: "keep" is requeued when it loses its node, "drop" fails.
Engine keep_and_drop_running() {
  Engine e = small_cluster();
  JobSpec keep = job("keep", "a", res(gpus(4)));
  JobSpec drop = job("drop", "a", res(gpus(4)));
  drop.on_node_loss = NodeLossPolicy::kFail;
  REQUIRE(e.submit(keep, 0).ok());
  REQUIRE(e.submit(drop, 0).ok());
  REQUIRE(e.schedule(0).size() == 2);
  return e;
}

}  // namespace

TEST_CASE("a job goes Pending, Admitted, Running, Succeeded with strictly increasing events") {
  Engine e = small_cluster();
  REQUIRE(e.submit(job("j", "a", res(gpus(2))), 10).ok());
  REQUIRE(e.schedule(11).size() == 1);
  REQUIRE(e.observe(JobStarted{JobId("j")}, 12).ok());
  REQUIRE(e.observe(JobFinished{JobId("j"), 0, {}}, 13).ok());
  auto events = e.take_events();
  CHECK(transitions(events) == std::vector<std::string>{"j:->Pending", "j:Pending>Admitted",
                                                        "j:Admitted>Running", "j:Running>Succeeded"});
  for (std::size_t i = 1; i < events.size(); ++i) CHECK(events[i].seq > events[i - 1].seq);
  CHECK(events[3].at == 13);
  CHECK(e.take_events().empty());
  CHECK(e.job(JobId("j"))->state == JobState::kSucceeded);
  CHECK(e.cluster().node(0).used.is_zero());
}

TEST_CASE("a non-zero exit fails the job with the code as its reason") {
  Engine e = small_cluster();
  REQUIRE(e.submit(job("j", "a", res(gpus(1))), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  REQUIRE(e.observe(JobFinished{JobId("j"), 3, {}}, 1).ok());
  CHECK(e.job(JobId("j"))->state == JobState::kFailed);
  CHECK(e.job(JobId("j"))->end_reason == "exit code 3");
  CHECK(e.observe(JobFinished{JobId("j"), 0, {}}, 2).code() == ErrorCode::kFailedPrecondition);
  CHECK(e.observe(JobStarted{JobId("ghost")}, 2).code() == ErrorCode::kNotFound);
}

TEST_CASE("cancel frees a pending or running job once; a second cancel is refused") {
  Engine e = small_cluster();
  REQUIRE(e.submit(job("run", "a", res(gpus(4))), 0).ok());
  CHECK_FALSE(e.submit(job("wait", "a", res(gpus(8))), 0).ok());  // no node has 8 GPUs
  CHECK(e.job(JobId("wait")) == nullptr);  // a rejected job is not kept
  REQUIRE(e.submit(job("wait", "a", res(gpus(4)), 2), 0).ok());
  CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"run"});
  REQUIRE(e.cancel(JobId("wait"), 1).ok());
  REQUIRE(e.cancel(JobId("run"), 1).ok());
  CHECK(e.cancel(JobId("run"), 2).code() == ErrorCode::kFailedPrecondition);
  CHECK(e.cancel(JobId("nope"), 2).code() == ErrorCode::kNotFound);
  CHECK(e.job(JobId("run"))->state == JobState::kCancelled);
  CHECK(e.quotas().usage(0, *e.flavor_id("h100")).is_zero());
  CHECK(e.pending_in_submission_order().empty());
}

TEST_CASE("a lost node requeues its jobs or fails them, by each job's policy") {
  Engine e = keep_and_drop_running();
  (void)e.take_events();
  const std::string keep_node = e.cluster().node(e.job(JobId("keep"))->slots[0].node).name;
  const std::string drop_node = e.cluster().node(e.job(JobId("drop"))->slots[0].node).name;
  REQUIRE(e.observe(NodeLost{keep_node}, 5).ok());
  CHECK(e.job(JobId("keep"))->state == JobState::kPending);
  CHECK(e.job(JobId("keep"))->attempts == 1);
  auto events = e.take_events();
  REQUIRE(events.size() == 1);
  CHECK(events[0].reason == "node " + keep_node + " lost");
  REQUIRE(e.observe(NodeLost{drop_node}, 6).ok());
  CHECK(e.job(JobId("drop"))->state == JobState::kFailed);
  CHECK(e.schedule(7).empty());  // both nodes are down
  REQUIRE(e.set_node_state(keep_node, NodeState::kReady, 8).ok());
  CHECK(admitted_ids(e.schedule(8)) == std::vector<std::string>{"keep"});
}

TEST_CASE("jobs that can never fit are rejected at submit with the reason") {
  Engine e = small_cluster();
  auto reason = [&](JobSpec j) {
    auto r = e.submit(std::move(j), 0);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == ErrorCode::kRejected);
    return r.error();
  };
  CHECK(reason(job("q", "nope", res(gpus(1)))) == "queue \"nope\" does not exist");
  CHECK(reason(job("z", "a", res(0))) == "requests no resources");
  CHECK(reason(job("f", "a", res(1500))).find("1500m gpu per pod") != std::string::npos);
  CHECK(reason(job("big", "a", res(gpus(16)))) == "needs 16 gpu per pod; the largest node of flavor h100 has 4");
  CHECK(reason(job("sum", "a", res(gpus(4)), 3)) ==
        "needs 12 gpu in total; all nodes of flavor h100 together have 8");
  JobSpec wrong = job("fl", "a", res(gpus(1)));
  wrong.flavors = {"t4"};
  CHECK(reason(wrong) == "accepts flavors t4 but queue a has quota only for h100");
  REQUIRE(e.submit(job("dup", "a", res(gpus(1))), 0).ok());
  CHECK(e.submit(job("dup", "a", res(gpus(1))), 0).code() == ErrorCode::kAlreadyExists);
  JobSpec neg = job("neg", "a", res(-1));
  CHECK(e.submit(neg, 0).code() == ErrorCode::kInvalidArgument);
}

TEST_CASE("StrictFIFO holds the queue behind a head that does not fit; BestEffortFIFO does not") {
  for (auto strategy : {QueueingStrategy::kStrictFIFO, QueueingStrategy::kBestEffortFIFO}) {
    Engine e;
    QueueSpec q = queue("a", "", "h100", {{kGpu, gpus(8)}});
    q.strategy = strategy;
    REQUIRE(e.apply_queue(q).ok());
    REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(4))), 0).ok());
    REQUIRE(e.submit(job("first", "a", res(gpus(2))), 0).ok());
    REQUIRE(e.schedule(0).size() == 1);
    REQUIRE(e.submit(job("big", "a", res(gpus(4))), 1).ok());
    REQUIRE(e.submit(job("small", "a", res(gpus(1))), 2).ok());
    auto ids = admitted_ids(e.schedule(3));
    if (strategy == QueueingStrategy::kStrictFIFO) {
      CHECK(ids.empty());
      CHECK(e.pending_reason(*e.job(JobId("small"))) == "waiting behind big (StrictFIFO)");
    } else {
      CHECK(ids == std::vector<std::string>{"small"});
      CHECK(e.pending_reason(*e.job(JobId("big"))) ==
            "no room on nodes of flavor h100 for 1 x {4 gpu}; node n1 kept for it while it drains (its queue is "
            "below its nominal quota)");
    }
  }
}

TEST_CASE("within a queue: higher priority first, then earlier submission, then submit order") {
  Engine e;
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(3)}})).ok());
  REQUIRE(e.upsert_node(node("n", "h100", res(gpus(8))), 0).ok());
  REQUIRE(e.submit(job("late-low", "a", res(gpus(1)), 1, 0, 20), 30).ok());
  REQUIRE(e.submit(job("early-low", "a", res(gpus(1)), 1, 0, 10), 30).ok());
  REQUIRE(e.submit(job("high", "a", res(gpus(1)), 1, 5, 25), 30).ok());
  REQUIRE(e.submit(job("early-low-2", "a", res(gpus(1)), 1, 0, 10), 30).ok());
  CHECK(admitted_ids(e.schedule(30)) == std::vector<std::string>{"high", "early-low", "early-low-2"});
}

TEST_CASE("across queues: heads within nominal before borrowers, then the lower share after") {
  Engine e(engine_config(PlacementPolicy::kPack, true));
  REQUIRE(e.apply_queue(queue("borrower", "c", "h100", {{kGpu, gpus(1)}})).ok());
  REQUIRE(e.apply_queue(queue("owner", "c", "h100", {{kGpu, gpus(3)}})).ok());
  // The borrower's head is earlier and higher priority, but it would borrow: the owner's head
  // fits within its nominal and goes first.
  REQUIRE(e.submit(job("b1", "borrower", res(gpus(2)), 1, 9, 0), 0).ok());
  REQUIRE(e.submit(job("o1", "owner", res(gpus(2)), 1, 0, 5), 5).ok());
  CHECK(admitted_ids(e.schedule(5)) == std::vector<std::string>{"o1", "b1"});
}

TEST_CASE("quantities beyond 2^52 base units are refused, so sums cannot overflow") {
  Engine e = small_cluster();
  const Quantity huge = kMaxQuantity + 1;
  auto q = e.apply_queue(queue("big", "c", "h100", {{kGpu, gpus(1), huge}}));
  REQUIRE_FALSE(q.ok());
  CHECK(q.error().find("borrowingLimit is more than") != std::string::npos);
  auto n = e.upsert_node(node("n9", "h100", res(0, 0, huge)), 0);
  REQUIRE_FALSE(n.ok());
  CHECK(n.error().find("capacity of memory") != std::string::npos);
  // Each pod is fine, all of them together are not: per_pod * count must not overflow.
  auto j = e.submit(job("many", "a", res(0, 0, kMaxQuantity / 2 + 1), 2), 0);
  REQUIRE_FALSE(j.ok());
  CHECK(j.code() == ErrorCode::kInvalidArgument);
  CHECK(j.error().find("memory for all its pods is more than") != std::string::npos);
  JobSpec two_sets = job("sets", "a", res(0, 0, kMaxQuantity));
  two_sets.pod_sets.push_back(PodSet{"more", 1, res(0, 0, kMaxQuantity)});
  CHECK(e.submit(two_sets, 0).code() == ErrorCode::kInvalidArgument);
}

TEST_CASE("a restored running job keeps exactly its GPUs; a GPU is never restored twice") {
  Engine e = small_cluster();
  RunningPlacement where;
  where.nodes = {"n1"};
  where.gpus = {{2, 3}};
  REQUIRE(e.restore_running(job("a", "a", res(gpus(2))), where, 0).ok());
  const auto& slot_a = e.job(JobId("a"))->slots.at(0);
  CHECK(std::vector<int>(slot_a.gpus.begin(), slot_a.gpus.end()) == std::vector<int>{2, 3});

  // A second job claiming GPU 3 of n1 is refused, and nothing of it is kept.
  RunningPlacement clash;
  clash.nodes = {"n1"};
  clash.gpus = {{3}};
  auto r = e.restore_running(job("b", "a", res(gpus(1))), clash, 0);
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().find("GPU 3 is already taken") != std::string::npos);
  CHECK(e.job(JobId("b")) == nullptr);
  // Indices that do not exist, or the wrong number of them, are refused too.
  clash.gpus = {{7}};
  CHECK(e.restore_running(job("c", "a", res(gpus(1))), clash, 0).error().find("GPU 7 does not exist") !=
        std::string::npos);
  clash.gpus = {{0, 1}};
  CHECK(e.restore_running(job("c", "a", res(gpus(1))), clash, 0).error().find("holds 2 GPU indices") !=
        std::string::npos);

  // Shared GPUs: two half-GPU pods on the same index fit, a third does not.
  where.gpus = {{1}};
  REQUIRE(e.restore_running(job("h1", "a", res(gpus(0.5))), where, 0).ok());
  REQUIRE(e.restore_running(job("h2", "a", res(gpus(0.5))), where, 0).ok());
  CHECK_FALSE(e.restore_running(job("h3", "a", res(gpus(0.5))), where, 0).ok());

  // What is left on n1 (GPU 0) is what a new job gets.
  REQUIRE(e.submit(job("new", "a", res(gpus(1))), 1).ok());
  REQUIRE(e.schedule(1).size() == 1);
  const auto& slot_new = e.job(JobId("new"))->slots.at(0);
  CHECK(e.cluster().node(slot_new.node).name == "n1");
  CHECK(std::vector<int>(slot_new.gpus.begin(), slot_new.gpus.end()) == std::vector<int>{0});
}

TEST_CASE("with stops confirmed, a cancelled running job keeps its GPUs until its processes are gone") {
  EngineConfig config;
  config.stops_confirmed = true;
  Engine e(config);
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(8)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(4))), 0).ok());
  REQUIRE(e.submit(job("run", "a", res(gpus(4))), 0).ok());
  REQUIRE(admitted_ids(e.schedule(0)) == std::vector<std::string>{"run"});
  REQUIRE(e.observe(JobStarted{JobId("run")}, 1).ok());
  REQUIRE(e.submit(job("next", "a", res(gpus(4))), 2).ok());
  REQUIRE(e.cancel(JobId("run"), 3).ok());
  const Job* run = e.job(JobId("run"));
  CHECK(run->state == JobState::kCancelled);
  CHECK(run->draining);
  CHECK(e.quotas().usage(0, *e.flavor_id("h100")).is_zero());  // its quota is free at once
  CHECK_FALSE(e.cluster().node(0).used.is_zero());            // its GPUs are not
  CHECK(e.schedule(4).empty());
  CHECK(e.cancel(JobId("run"), 4).code() == ErrorCode::kFailedPrecondition);
  CHECK(e.observe(JobStarted{JobId("run")}, 5).ok());  // a late start report changes nothing
  CHECK(e.schedule(5).empty());
  REQUIRE(e.observe(JobStopped{JobId("run")}, 6).ok());
  CHECK_FALSE(e.job(JobId("run"))->draining);
  CHECK(e.job(JobId("run"))->state == JobState::kCancelled);
  CHECK(e.cluster().node(0).used.is_zero());
  CHECK(admitted_ids(e.schedule(7)) == std::vector<std::string>{"next"});
  CHECK(e.observe(JobStopped{JobId("run")}, 8).code() == ErrorCode::kFailedPrecondition);
}

TEST_CASE("with stops confirmed, a lost node frees the GPUs of a cancelled job still stopping there") {
  EngineConfig config;
  config.stops_confirmed = true;
  Engine e(config);
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(8)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(4))), 0).ok());
  REQUIRE(e.submit(job("run", "a", res(gpus(4))), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  REQUIRE(e.cancel(JobId("run"), 1).ok());
  REQUIRE(e.observe(NodeLost{"n1"}, 2).ok());
  CHECK_FALSE(e.job(JobId("run"))->draining);
  CHECK(e.job(JobId("run"))->state == JobState::kCancelled);
  CHECK(e.cluster().node(0).used.is_zero());
}

TEST_CASE("a job whose processes were lost is requeued or failed, by its node-loss policy") {
  Engine e = keep_and_drop_running();
  REQUIRE(e.observe(JobLost{JobId("keep"), "lost"}, 1).ok());
  REQUIRE(e.observe(JobLost{JobId("drop"), "lost"}, 1).ok());
  CHECK(e.job(JobId("keep"))->state == JobState::kPending);
  CHECK(e.job(JobId("keep"))->attempts == 1);
  CHECK(e.job(JobId("drop"))->state == JobState::kFailed);
  CHECK(e.job(JobId("drop"))->end_reason == "lost");
  CHECK(e.cluster().node(0).used.is_zero());
  CHECK(e.cluster().node(1).used.is_zero());
  CHECK(e.observe(JobLost{JobId("drop"), "lost"}, 2).code() == ErrorCode::kFailedPrecondition);
}

TEST_CASE("a forgotten job leaves the engine: its slot is used again, so memory follows live jobs") {
  EngineConfig config;
  config.stops_confirmed = true;
  Engine e(config);
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(8)}})).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(4))), 0).ok());
  REQUIRE(e.submit(job("run", "a", res(gpus(4))), 0).ok());
  REQUIRE(e.submit(job("wait", "a", res(gpus(4))), 0).ok());
  REQUIRE(admitted_ids(e.schedule(0)) == std::vector<std::string>{"run"});
  // Unfinished jobs, and a cancelled one whose processes still stop, are kept.
  CHECK_FALSE(e.forget(JobId("run")));
  CHECK_FALSE(e.forget(JobId("wait")));
  CHECK_FALSE(e.forget(JobId("nobody")));
  REQUIRE(e.cancel(JobId("run"), 1).ok());
  CHECK_FALSE(e.forget(JobId("run")));
  REQUIRE(e.job(JobId("run"))->draining);
  REQUIRE(e.observe(JobStopped{JobId("run")}, 2).ok());
  CHECK(e.forget(JobId("run")));
  CHECK(e.job(JobId("run")) == nullptr);
  CHECK_FALSE(e.forget(JobId("run")));
  CHECK(e.cancel(JobId("run"), 3).code() == ErrorCode::kNotFound);
  CHECK(e.job(JobId("wait"))->state == JobState::kPending);
  CHECK(admitted_ids(e.schedule(3)) == std::vector<std::string>{"wait"});

  // A stream of short jobs, each forgotten once it ended: two slots are enough for all of them,
  // and the ids are free again (the daemon refuses a reused id from its own records).
  REQUIRE(e.cancel(JobId("wait"), 4).ok());
  REQUIRE(e.observe(JobStopped{JobId("wait")}, 4).ok());
  REQUIRE(e.forget(JobId("wait")));
  const std::size_t slots = e.job_slots();
  for (int i = 0; i < 1000; ++i) {
    const std::string id = "short-" + std::to_string(i % 10);
    REQUIRE(e.submit(job(id, "a", res(gpus(i % 2 == 0 ? 4 : 2))), 10 + i).ok());
    REQUIRE(admitted_ids(e.schedule(10 + i)) == std::vector<std::string>{id});
    REQUIRE(e.observe(JobFinished{JobId(id), i % 3 == 0 ? 1 : 0, {}}, 10 + i).ok());
    REQUIRE(e.forget(JobId(id)));
  }
  CHECK(e.job_slots() == slots);
  CHECK(e.cluster().node(0).used.is_zero());
  CHECK(e.quotas().usage(0, *e.flavor_id("h100")).is_zero());
  // A job in a reused slot starts clean: no attempts, preemptions or reason of the slot's last job.
  REQUIRE(e.submit(job("fresh", "a", res(gpus(1))), 2000).ok());
  const Job* fresh = e.job(JobId("fresh"));
  CHECK(fresh->attempts == 0);
  CHECK(fresh->end_reason->empty());
  CHECK(fresh->state == JobState::kPending);
}

TEST_CASE("the admission memo passes over a backlog of the same request untried, deciding the same") {
  for (const bool memo : {true, false}) {
    CAPTURE(memo);
    EngineConfig config;
    config.admission_memo = memo;
    Engine e(config);
    REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(16)}})).ok());
    REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(8))), 0).ok());
    REQUIRE(e.submit(job("small", "a", res(gpus(3))), 0).ok());
    REQUIRE(admitted_ids(e.schedule(0)) == std::vector<std::string>{"small"});
    // 5 GPUs free: none of the 8-GPU jobs fits, the 1-GPU job behind them does.
    for (int i = 0; i < 50; ++i) REQUIRE(e.submit(job("big-" + std::to_string(i), "a", res(gpus(8))), 1).ok());
    REQUIRE(e.submit(job("one", "a", res(gpus(1))), 2).ok());
    // big-0 is tried and fails; big-1..49 are repeats of its request, passed over untried
    // (jumped over with the memo, walked without it); "one" is the next head.
    CHECK(admitted_ids(e.schedule(3)) == std::vector<std::string>{"one"});
    CHECK(e.last_cycle().decisions == 2);
    CHECK(e.last_cycle().passed_over == (memo ? 0u : 49u));
    // A repeat says why as the one tried did (walked), or as a job the cycle did not reach.
    const std::string why = e.pending_reason(*e.job(JobId("big-30")));
    INFO(why);
    // big-0 also says that it keeps n1 (a node reservation: its queue is below its nominal).
    if (!memo)
      CHECK(e.pending_reason(*e.job(JobId("big-0"))) ==
            why + "; node n1 kept for it while it drains (its queue is below its nominal quota)");
    CHECK(why.find("h100") != std::string::npos);
  }
}
