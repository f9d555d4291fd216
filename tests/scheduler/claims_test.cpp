// Node reservations (scheduler/claims.cpp): a queue below its nominal quota whose job finds no
// room keeps nodes for it from the other queues until they drain.
#include <algorithm>

#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

// Queues a (4 GPUs) and b (8 GPUs), no cohort, on three 4-GPU nodes, spread placement. b runs
// seven 1-GPU jobs (n1: 3, n2: 2, n3: 2; free 1, 2, 2), so a's 4-GPU job fits its quota but no
// node; b has two more 1-GPU jobs waiting.
Engine fragmented(bool reservation, bool memo = true) {
  EngineConfig config = engine_config(PlacementPolicy::kSpread, false);
  config.node_reservation = reservation;
  config.admission_memo = memo;
  Engine e(config);
  REQUIRE(e.apply_queue(queue("a", "", "h100", {{kGpu, gpus(4)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "", "h100", {{kGpu, gpus(8)}})).ok());
  for (const char* n : {"n1", "n2", "n3"}) REQUIRE(e.upsert_node(node(n, "h100", res(gpus(4))), 0).ok());
  for (int i = 0; i < 7; ++i) REQUIRE(e.submit(job("b" + std::to_string(i), "b", res(gpus(1))), 0).ok());
  REQUIRE(e.schedule(0).size() == 7);
  REQUIRE(e.submit(job("a-big", "a", res(gpus(4)), 1, 0, 1), 1).ok());
  for (const char* id : {"b7", "b8"}) REQUIRE(e.submit(job(id, "b", res(gpus(1)), 1, 0, 1), 1).ok());
  return e;
}

std::string node_of(const Engine& e, const std::string& id) {
  const Job* j = e.job(JobId(id));
  REQUIRE(j != nullptr);
  REQUIRE(!j->slots.empty());
  return e.cluster().node(j->slots.front().node).name;
}

std::vector<std::string> on_node(const Engine& e, const std::string& node, int jobs) {
  std::vector<std::string> out;
  for (int i = 0; i < jobs; ++i) {
    const std::string id = "b" + std::to_string(i);
    const Job* j = e.job(JobId(id));
    if (j != nullptr && j->state == JobState::kAdmitted && node_of(e, id) == node) out.push_back(id);
  }
  return out;
}

void finish(Engine& e, const std::vector<std::string>& ids, Time now) {
  for (const auto& id : ids) REQUIRE(e.observe(JobFinished{JobId(id), 0, {}}, now).ok());
}

}  // namespace

TEST_CASE("a queue owed its quota keeps a node for its job that finds no room, until it drains") {
  Engine e = fragmented(true);
  // a-big claims the node with the most wholly free GPUs (n2, before n3); b7 goes elsewhere.
  CHECK(admitted_ids(e.schedule(1)) == std::vector<std::string>{"b7"});
  CHECK(e.claimed_nodes(JobId("a-big")) == std::vector<std::string>{"n2"});
  CHECK(node_of(e, "b7") != "n2");
  CHECK(e.pending_reason(*e.job(JobId("a-big"))) ==
        "no room on nodes of flavor h100 for 1 x {4 gpu}; node n2 kept for it while it drains (its queue is "
        "below its nominal quota)");
  // b's jobs on n2 end one by one; b8 (b below its quota again) never takes n2's GPUs.
  const auto on_n2 = on_node(e, "n2", 8);
  REQUIRE(on_n2.size() == 2);
  finish(e, {on_n2[0]}, 2);
  const auto second = e.schedule(2);
  CHECK(admitted_ids(second) == std::vector<std::string>{"b8"});
  CHECK(node_of(e, "b8") != "n2");
  finish(e, {on_n2[1]}, 3);
  const auto third = e.schedule(3);
  REQUIRE(admitted_ids(third) == std::vector<std::string>{"a-big"});
  CHECK(admission(third[0]).pods[0].node == "n2");
  CHECK(e.claimed_nodes(JobId("a-big")).empty());
}

TEST_CASE("without node reservations the freed GPUs go to the other queue's small jobs and the big job waits") {
  Engine e = fragmented(false);
  CHECK(admitted_ids(e.schedule(1)) == std::vector<std::string>{"b7"});
  CHECK(e.claimed_nodes(JobId("a-big")).empty());
  // Spread puts each small job where most is free: the GPUs n2 frees are taken again.
  const auto on_n2 = on_node(e, "n2", 8);
  finish(e, {on_n2.front()}, 2);
  CHECK(admitted_ids(e.schedule(2)) == std::vector<std::string>{"b8"});
  CHECK(node_of(e, "b8") == "n2");
  finish(e, {on_n2.back()}, 3);
  CHECK(admitted_ids(e.schedule(3)).empty());
  CHECK(e.job(JobId("a-big"))->state == JobState::kPending);
}

TEST_CASE("a claim keeps other queues off, not the claimant's queue-mates, and ends with its job") {
  Engine e = fragmented(true);
  REQUIRE(e.submit(job("a-small", "a", res(gpus(2)), 1, 0, 2), 1).ok());
  const auto first = admitted_ids(e.schedule(1));
  // a-small (behind a-big in a's queue: BestEffortFIFO) may use a's claimed node.
  CHECK(first == std::vector<std::string>{"b7", "a-small"});
  CHECK(e.claimed_nodes(JobId("a-big")) == std::vector<std::string>{"n2"});
  CHECK(node_of(e, "a-small") == "n2");
  // a now holds 2 of its 4: still owed, the claim stays; cancelling a-big ends it.
  REQUIRE(e.cancel(JobId("a-big"), 2).ok());
  CHECK(e.claimed_nodes(JobId("a-big")).empty());
  const auto on_n3 = on_node(e, "n3", 8);
  REQUIRE(!on_n3.empty());
  finish(e, {on_n3.front()}, 2);
  CHECK(admitted_ids(e.schedule(2)) == std::vector<std::string>{"b8"});
}

TEST_CASE("a queue at or over its nominal quota claims nothing: borrowing is not owed") {
  EngineConfig config = engine_config(PlacementPolicy::kSpread, false);
  Engine e(config);
  // a (2 GPUs) may borrow from lender l (8, idle) in cohort c; b (8) has no cohort.
  REQUIRE(e.apply_queue(queue("a", "c", "h100", {{kGpu, gpus(2)}})).ok());
  REQUIRE(e.apply_queue(queue("l", "c", "h100", {{kGpu, gpus(8)}})).ok());
  REQUIRE(e.apply_queue(queue("b", "", "h100", {{kGpu, gpus(8)}})).ok());
  for (const char* n : {"n1", "n2", "n3"}) REQUIRE(e.upsert_node(node(n, "h100", res(gpus(4))), 0).ok());
  REQUIRE(e.submit(job("a0", "a", res(gpus(2))), 0).ok());
  for (int i = 0; i < 6; ++i) REQUIRE(e.submit(job("b" + std::to_string(i), "b", res(gpus(1))), 0).ok());
  REQUIRE(e.schedule(0).size() == 7);
  // a at its nominal: its 4-GPU job would borrow; it fits the quota, finds no node, claims none.
  REQUIRE(e.submit(job("a-big", "a", res(gpus(4)), 1, 0, 1), 1).ok());
  CHECK(admitted_ids(e.schedule(1)).empty());
  CHECK(e.job(JobId("a-big"))->state == JobState::kPending);
  CHECK(e.claimed_nodes(JobId("a-big")).empty());
}

TEST_CASE("decisions with node reservations are the same with and without the admission memo") {
  for (const bool memo : {true, false}) {
    CAPTURE(memo);
    Engine e = fragmented(true, memo);
    for (int i = 9; i < 20; ++i) REQUIRE(e.submit(job("b" + std::to_string(i), "b", res(gpus(1)), 1, 0, 1), 1).ok());
    std::vector<std::string> order;
    for (Time t = 1; t < 12; ++t) {
      for (const auto& id : admitted_ids(e.schedule(t))) order.push_back(id + "@" + std::to_string(t));
      // The oldest running b job ends each second.
      for (int i = 0; i < 20; ++i) {
        const Job* j = e.job(JobId("b" + std::to_string(i)));
        if (j != nullptr && j->state == JobState::kAdmitted) {
          REQUIRE(e.observe(JobFinished{j->spec.id, 0, {}}, t).ok());
          break;
        }
      }
    }
    INFO(order.size());
    CHECK(std::any_of(order.begin(), order.end(), [](const std::string& s) { return s.rfind("a-big@", 0) == 0; }));
    static std::vector<std::string> first;
    if (memo) first = order;
    else CHECK(order == first);
  }
}
