// Placement: per-GPU accounting, pack and spread, gangs, dedicated nodes, exclusive jobs, node
// states and topology.
#include <doctest/doctest.h>

#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

Engine engine_with(std::vector<NodeSpec> nodes, EngineConfig config = {}) {
  Engine e(config);
  REQUIRE(e.apply_queue(unlimited_queue("a")).ok());
  REQUIRE(e.apply_queue(unlimited_queue("b")).ok());
  for (const auto& n : nodes) REQUIRE(e.upsert_node(n, 0).ok());
  return e;
}

Admission only(const std::vector<Decision>& ds) {
  REQUIRE(ds.size() == 1);
  return admission(ds[0]);
}

}  // namespace

TEST_CASE("pods asking for a share of a GPU share one physical GPU") {
  Engine e = engine_with({node("n", "t4", res(gpus(2)))});
  REQUIRE(e.submit(job("x", "a", res(500)), 0).ok());
  REQUIRE(e.submit(job("y", "b", res(500)), 0).ok());
  REQUIRE(e.submit(job("z", "a", res(600)), 0).ok());
  auto ds = e.schedule(0);
  REQUIRE(ds.size() == 3);
  CHECK(admission(ds[0]).pods[0].gpus == std::vector<int>{0});
  CHECK(admission(ds[1]).pods[0].gpus == std::vector<int>{0});  // fills GPU 0 up to 1000
  CHECK(admission(ds[2]).pods[0].gpus == std::vector<int>{1});
  CHECK(admission(ds[2]).pods[0].gpu_milli == 600);
  CHECK(e.cluster().node(0).gpu_free == std::vector<std::int16_t>{0, 400});
}

TEST_CASE("whole-GPU pods take only wholly free GPUs") {
  Engine e = engine_with({node("n", "t4", res(gpus(2)))});
  REQUIRE(e.submit(job("share", "a", res(250)), 0).ok());
  REQUIRE(e.submit(job("two", "a", res(gpus(2))), 0).ok());
  REQUIRE(e.submit(job("one", "a", res(gpus(1))), 0).ok());
  auto ids = admitted_ids(e.schedule(0));
  CHECK(ids == std::vector<std::string>{"share", "one"});
  const Job* one = e.job(JobId("one"));
  REQUIRE(one->slots.size() == 1);
  CHECK(one->slots[0].gpus == std::vector<std::uint8_t>{1});
}

TEST_CASE("pack fills the node with the fewest free GPUs; spread the one with the most") {
  std::vector<NodeSpec> nodes = {node("big", "h100", res(gpus(8))), node("small", "h100", res(gpus(2)))};
  {
    Engine e = engine_with(nodes);
    REQUIRE(e.submit(job("j", "a", res(gpus(1))), 0).ok());
    CHECK(only(e.schedule(0)).pods[0].node == "small");
  }
  {
    Engine e = engine_with(nodes, engine_config(PlacementPolicy::kSpread, false));
    REQUIRE(e.submit(job("j", "a", res(gpus(1))), 0).ok());
    CHECK(only(e.schedule(0)).pods[0].node == "big");
  }
}

TEST_CASE("a gang is placed whole or not at all, and a failed gang leaves no trace") {
  Engine e = engine_with({node("n1", "h100", res(gpus(4))), node("n2", "h100", res(gpus(4)))});
  REQUIRE(e.submit(job("other", "b", res(gpus(1))), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);  // pack: on n1, leaving 3 + 4 free
  REQUIRE(e.submit(job("gang", "a", res(gpus(4)), 2), 0).ok());
  CHECK(e.schedule(0).empty());
  CHECK(e.cluster().node(0).used[kGpu] + e.cluster().node(1).used[kGpu] == gpus(1));
  REQUIRE(e.observe(JobFinished{JobId("other"), 0, {}}, 1).ok());
  const Admission a = only(e.schedule(1));
  REQUIRE(a.pods.size() == 2);
  CHECK(a.pods[0].node != a.pods[1].node);
}

TEST_CASE("cpu and memory on the node limit pods as GPUs do") {
  Engine e = engine_with({node("n", "h100", res(gpus(8), cores(16), gib(64)))});
  REQUIRE(e.submit(job("cpu-heavy", "a", res(gpus(1), cores(12))), 0).ok());
  REQUIRE(e.submit(job("more-cpu", "a", res(gpus(1), cores(8))), 0).ok());
  REQUIRE(e.submit(job("mem", "a", res(gpus(1), cores(1), gib(64))), 0).ok());
  CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"cpu-heavy", "mem"});
}

TEST_CASE("a dedicated node takes only its queue's pods") {
  NodeSpec owned = node("owned", "h100", res(gpus(8)));
  owned.dedicated_to = QueueName("a");
  Engine e = engine_with({owned});
  REQUIRE(e.submit(job("mine", "a", res(gpus(1))), 0).ok());
  auto r = e.submit(job("theirs", "b", res(gpus(1))), 0);
  CHECK_FALSE(r.ok());  // b can never run anywhere: rejected at submit
  CHECK(r.code() == ErrorCode::kRejected);
  CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"mine"});
}

TEST_CASE("an exclusive job shares its nodes with no other queue") {
  Engine e = engine_with({node("n1", "h100", res(gpus(8))), node("n2", "h100", res(gpus(8)))});
  REQUIRE(e.submit(job("b-small", "b", res(gpus(1))), 0).ok());
  CHECK(only(e.schedule(0)).pods[0].node == "n1");
  JobSpec ex = job("a-exclusive", "a", res(gpus(1)));
  ex.exclusive = true;
  REQUIRE(e.submit(ex, 1).ok());
  CHECK(only(e.schedule(1)).pods[0].node == "n2");  // n1 has b's pod
  REQUIRE(e.submit(job("b-more", "b", res(gpus(1))), 2).ok());
  REQUIRE(e.submit(job("a-more", "a", res(gpus(1))), 2).ok());
  auto ds = e.schedule(2);
  REQUIRE(ds.size() == 2);
  for (const auto& d : ds)
    if (admission(d).job.value == "b-more") CHECK(admission(d).pods[0].node == "n1");
}

TEST_CASE("cordoned, draining and down nodes take no new pods; ready again, they do") {
  Engine e = engine_with({node("n", "h100", res(gpus(8)))});
  for (NodeState s : {NodeState::kCordoned, NodeState::kDraining, NodeState::kDown}) {
    REQUIRE(e.set_node_state("n", s, 0).ok());
    REQUIRE(e.submit(job(std::string("j-") + to_string(s), "a", res(gpus(1))), 0).ok());
    CHECK(e.schedule(0).empty());
    // The reason says the node is closed, not that it is full.
    const std::string state = s == NodeState::kCordoned ? "cordoned" : s == NodeState::kDraining ? "draining" : "down";
    CHECK(e.pending_reason(*e.job(JobId("j-" + std::string(to_string(s))))) ==
          "0/1 nodes of flavor h100 take new pods: 1 " + state);
  }
  REQUIRE(e.set_node_state("n", NodeState::kReady, 1).ok());
  CHECK(e.schedule(1).size() == 3);
  CHECK_FALSE(e.set_node_state("nope", NodeState::kReady, 1).ok());
}

TEST_CASE("a multi-node gang lands in the narrowest topology domain that holds it") {
  std::vector<NodeSpec> nodes = {
      node("n1", "h100", res(gpus(4)), {{"zone", "z1"}, {"rack", "r1"}}),
      node("n2", "h100", res(gpus(4)), {{"zone", "z1"}, {"rack", "r2"}}),
      node("n3", "h100", res(gpus(4)), {{"zone", "z1"}, {"rack", "r1"}}),
  };
  {
    Engine e = engine_with(nodes);  // no topology: index order puts the pods on n1 and n2
    REQUIRE(e.submit(job("gang", "a", res(gpus(4)), 2), 0).ok());
    const Admission a = only(e.schedule(0));
    CHECK(a.pods[0].node == "n1");
    CHECK(a.pods[1].node == "n2");
  }
  {
    Engine e = engine_with(nodes, engine_config(PlacementPolicy::kPack, false, {"zone", "rack"}));
    REQUIRE(e.submit(job("gang", "a", res(gpus(4)), 2), 0).ok());
    const Admission a = only(e.schedule(0));
    CHECK(a.pods[0].node == "n1");
    CHECK(a.pods[1].node == "n3");  // both in rack r1
  }
}

TEST_CASE("a node cannot shrink below what its pods hold") {
  Engine e = engine_with({node("n", "h100", res(gpus(4), cores(8)))});
  REQUIRE(e.submit(job("j", "a", res(gpus(1), cores(6))), 0).ok());
  REQUIRE(e.schedule(0).size() == 1);
  CHECK_FALSE(e.upsert_node(node("n", "h100", res(gpus(4), cores(4))), 1).ok());
  auto r = e.upsert_node(node("n", "h100", res(gpus(0), cores(8))), 1);
  CHECK_FALSE(r.ok());
  CHECK(r.error().find("GPU 0 is in use") != std::string::npos);
  CHECK(e.upsert_node(node("n", "h100", res(gpus(2), cores(8))), 1).ok());  // GPUs 2,3 free
}
