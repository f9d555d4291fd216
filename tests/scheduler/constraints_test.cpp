// Node constraints in the engine: nodeSelector, required node affinity and tolerations against
// node labels and taints, under every placement policy and with topology; the placement memo,
// preemption, restored jobs and the words of the pending reason.
#include <doctest/doctest.h>

#include "scheduler/placement.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace scheduler_constraints_test {

Engine engine_with(const std::vector<NodeSpec>& nodes, EngineConfig config = {}) {
  Engine e(config);
  REQUIRE(e.apply_queue(unlimited_queue("a")).ok());
  for (const auto& n : nodes) REQUIRE(e.upsert_node(n, 0).ok());
  return e;
}

JobSpec where(JobSpec j, NodeConstraints c) {
  j.pod_sets[0].where = std::move(c);
  return j;
}

NodeConstraints selector(std::map<std::string, std::string> pairs) {
  NodeConstraints c;
  c.node_selector = std::move(pairs);
  return c;
}

NodeConstraints affinity(std::vector<std::vector<NodeRequirement>> terms) {
  NodeConstraints c;
  c.affinity = std::move(terms);
  return c;
}

NodeConstraints tolerating(std::vector<Toleration> ts) {
  NodeConstraints c;
  c.tolerations = std::move(ts);
  return c;
}

Toleration equal(std::string key, std::string value, std::optional<TaintEffect> effect = {}) {
  return Toleration{std::move(key), false, std::move(value), effect};
}

NodeSpec tainted(NodeSpec n, std::vector<Taint> taints) {
  n.taints = std::move(taints);
  return n;
}

// The node the job's only pod went to, or "" when it was not admitted.
std::string placed_on(Engine& e, const JobSpec& j, Time now = 0) {
  REQUIRE(e.submit(j, now).ok());
  for (const Decision& d : e.schedule(now))
    if (const auto* a = std::get_if<Admission>(&d); a && a->job == j.id) return a->pods[0].node;
  return "";
}

std::string reason(const Engine& e, const std::string& id) {
  return e.pending_reason(*e.job(JobId(id)));
}

const std::vector<NodeSpec> kZones = {
    node("small", "h100", res(gpus(2)), {{"zone", "z1"}}),
    node("mid", "h100", res(gpus(4)), {{"zone", "z2"}}),
    node("big", "h100", res(gpus(8)), {{"zone", "z2"}, {"gen", "3"}}),
};

TEST_CASE("pack and spread choose only among the nodes the selector and affinity allow") {
  const EngineConfig spread = engine_config(PlacementPolicy::kSpread, false);
  {
    Engine e = engine_with(kZones);  // pack alone would take small
    CHECK(placed_on(e, where(job("j", "a", res(gpus(1))), selector({{"zone", "z2"}}))) == "mid");
  }
  {
    Engine e = engine_with(kZones, spread);  // spread alone would take big
    CHECK(placed_on(e, where(job("j", "a", res(gpus(1))), selector({{"zone", "z1"}}))) == "small");
  }
  {
    Engine e = engine_with(kZones);
    CHECK(placed_on(e, where(job("gt", "a", res(gpus(1))),
                             affinity({{{"gen", LabelOperator::kGt, {"2"}}}}))) == "big");
    // Terms are ORed: the first matches nothing, the second only big.
    CHECK(placed_on(e, where(job("or", "a", res(gpus(1))),
                             affinity({{{"zone", LabelOperator::kIn, {"z9"}}},
                                       {{"gen", LabelOperator::kExists, {}}}}))) == "big");
    // Requirements of a term are ANDed.
    CHECK(placed_on(e, where(job("and", "a", res(gpus(1))),
                             affinity({{{"zone", LabelOperator::kIn, {"z2"}},
                                        {"gen", LabelOperator::kDoesNotExist, {}}}}))) == "mid");
    CHECK(placed_on(e, where(job("notin", "a", res(gpus(1))),
                             affinity({{{"zone", LabelOperator::kNotIn, {"z2"}}}}))) == "small");
  }
  {
    Engine e = engine_with(kZones, spread);
    CHECK(placed_on(e, where(job("lt", "a", res(gpus(1))),
                             affinity({{{"gen", LabelOperator::kLt, {"3"}}}}))) == "");
    CHECK(placed_on(e, where(job("none", "a", res(gpus(1))), affinity({{}}))) ==
          "");  // an empty term: no node
    CHECK(placed_on(e, where(job("nogen", "a", res(gpus(1))),
                             affinity({{{"gen", LabelOperator::kDoesNotExist, {}}}}))) == "mid");
  }
}

TEST_CASE(
    "a tainted node takes no pod that does not tolerate its taint; PreferNoSchedule keeps none "
    "off") {
  const std::vector<NodeSpec> nodes = {
      tainted(node("broken", "h100", res(gpus(8))), {{"gpu", "broken", TaintEffect::kNoSchedule}}),
      tainted(node("soft", "h100", res(gpus(2))), {{"spot", "", TaintEffect::kPreferNoSchedule}}),
      tainted(node("evict", "h100", res(gpus(8))), {{"maint", "", TaintEffect::kNoExecute}}),
  };
  Engine e = engine_with(nodes, engine_config(PlacementPolicy::kSpread, false));
  CHECK(placed_on(e, job("plain", "a", res(gpus(1)))) ==
        "soft");  // spread would take an 8-GPU node
  CHECK(placed_on(e, job("big", "a", res(gpus(4)))) == "");
  CHECK(placed_on(e, where(job("wrong-value", "a", res(gpus(4))),
                           tolerating({equal("gpu", "ok")}))) == "");
  CHECK(placed_on(e, where(job("wrong-effect", "a", res(gpus(4))),
                           tolerating({equal("gpu", "broken", TaintEffect::kNoExecute)}))) == "");
  CHECK(placed_on(e, where(job("equal", "a", res(gpus(4))),
                           tolerating({equal("gpu", "broken", TaintEffect::kNoSchedule)}))) ==
        "broken");
  CHECK(placed_on(e, where(job("exists", "a", res(gpus(4))),
                           tolerating({Toleration{"maint", true, "", std::nullopt}}))) == "evict");
  // An empty key with Exists tolerates every taint.
  CHECK(placed_on(e, where(job("all", "a", res(gpus(4))),
                           tolerating({Toleration{"", true, "", std::nullopt}}))) != "");
}

TEST_CASE("a taint added to a node keeps new pods off it; removed, they go there again") {
  NodeSpec n = node("n", "h100", res(gpus(8)));
  Engine e = engine_with({n});
  CHECK(placed_on(e, job("before", "a", res(gpus(1)))) == "n");
  REQUIRE(e.upsert_node(tainted(n, {{"gpu", "broken", TaintEffect::kNoSchedule}}), 1).ok());
  CHECK(e.cluster().node(0).blocking_taints);
  CHECK(placed_on(e, job("during", "a", res(gpus(1))), 1) == "");
  CHECK(e.job(JobId("before"))->state == JobState::kAdmitted);  // pods already there stay
  REQUIRE(e.upsert_node(n, 2).ok());
  CHECK_FALSE(e.cluster().node(0).blocking_taints);
  CHECK(admitted_ids(e.schedule(2)) == std::vector<std::string>{"during"});
}

TEST_CASE("frag-aware placement measures only the nodes a pod set may use") {
  // As in fragmentation_test: with a mix of 2-GPU pods, frag-aware puts a 1-GPU pod on b (3 of
  // 4 GPUs free) rather than a (2 free). Constraints that leave only a take a.
  Cluster c;
  REQUIRE(c.upsert(node("a", "h100", res(gpus(2)), {{"pool", "a"}}), 0, kNoQueue).ok());
  REQUIRE(c.upsert(tainted(node("b", "h100", res(gpus(4)), {{"pool", "b"}}),
                           {{"x", "", TaintEffect::kNoSchedule}}),
                   0, kNoQueue)
              .ok());
  (void)c.take(1, res(gpus(1)), 0, false, PlacementPolicy::kPack);
  Topology topology;
  const FragModel mix({PodShape{0, 2, 1000, 1}});
  std::vector<PodSet> tolerant{
      PodSet{"main", 1, res(gpus(1)), tolerating({Toleration{"x", true, "", std::nullopt}})}};
  PlacementRequest req{0, 0, false, &tolerant, PlacementPolicy::kFragAware, &mix};
  auto placed = place(c, topology, req);
  REQUIRE(placed);
  CHECK(placed->front().node == 1);
  c.release(placed->front());

  std::vector<PodSet> plain{PodSet{"main", 1, res(gpus(1))}};  // b's taint keeps it off
  req.pod_sets = &plain;
  placed = place(c, topology, req);
  REQUIRE(placed);
  CHECK(placed->front().node == 0);
  c.release(placed->front());

  NodeConstraints only_a = tolerating({Toleration{"x", true, "", std::nullopt}});
  only_a.node_selector = {{"pool", "a"}};
  std::vector<PodSet> selected{PodSet{"main", 1, res(gpus(1)), only_a}};
  req.pod_sets = &selected;
  placed = place(c, topology, req);
  REQUIRE(placed);
  CHECK(placed->front().node == 0);
}

TEST_CASE("a gang with a selector lands in the narrowest topology domain of the nodes it may use") {
  const std::vector<NodeSpec> nodes = {
      node("n1", "h100", res(gpus(4)),
           {{"zone", "z1"}, {"rack", "r1"}, {"pool", "a"}, {"tier", "x"}}),
      node("n2", "h100", res(gpus(4)),
           {{"zone", "z1"}, {"rack", "r2"}, {"pool", "b"}, {"tier", "x"}}),
      node("n3", "h100", res(gpus(4)), {{"zone", "z1"}, {"rack", "r1"}, {"pool", "c"}}),
      node("n4", "h100", res(gpus(4)), {{"zone", "z1"}, {"rack", "r2"}, {"pool", "b"}}),
  };
  const EngineConfig topo = engine_config(PlacementPolicy::kPack, false, {"zone", "rack"});
  for (const EngineConfig& config :
       {topo, engine_config(PlacementPolicy::kSpread, false, {"zone", "rack"})}) {
    Engine e = engine_with(nodes, config);
    REQUIRE(e.submit(where(job("b", "a", res(gpus(4)), 2), selector({{"pool", "b"}})), 0).ok());
    auto ds = e.schedule(0);
    REQUIRE(ds.size() == 1);
    CHECK(admission(ds[0]).pods[0].node == "n2");
    CHECK(admission(ds[0]).pods[1].node == "n4");
  }
  // The nodes it may use are in two racks: the zone holds the gang.
  Engine e = engine_with(nodes, topo);
  REQUIRE(e.submit(where(job("x", "a", res(gpus(4)), 2), selector({{"tier", "x"}})), 0).ok());
  auto ds = e.schedule(0);
  REQUIRE(ds.size() == 1);
  CHECK(admission(ds[0]).pods[0].node == "n1");
  CHECK(admission(ds[0]).pods[1].node == "n2");
}

TEST_CASE("each pod set of a job goes where its own constraints allow") {
  Engine e = engine_with(kZones);
  JobSpec j = job("two", "a", res(gpus(1)));
  j.pod_sets[0].name = "driver";
  j.pod_sets[0].where = selector({{"zone", "z1"}});
  j.pod_sets.push_back(PodSet{"workers", 2, res(gpus(2)), selector({{"gen", "3"}})});
  REQUIRE(e.submit(j, 0).ok());
  auto ds = e.schedule(0);
  REQUIRE(ds.size() == 1);
  CHECK(admission(ds[0]).pods[0].node == "small");
  CHECK(admission(ds[0]).pods[1].node == "big");
  CHECK(admission(ds[0]).pods[2].node == "big");

  JobSpec k = j;
  k.id = JobId("three");
  k.pod_sets[1].where = selector({{"gen", "4"}});
  REQUIRE(e.submit(k, 1).ok());
  CHECK(e.schedule(1).empty());
  CHECK(reason(e, "three") ==
        "pod set workers: 0/3 nodes of flavor h100 are available: 3 do not match the pod set's "
        "node selector or "
        "affinity");
}

TEST_CASE("the placement memo never mixes jobs with different constraints") {
  SUBCASE("a constrained job that fails does not stop an equal unconstrained one") {
    Engine e = engine_with({node("n", "h100", res(gpus(8)), {{"zone", "z1"}})});
    REQUIRE(
        e.submit(where(job("elsewhere", "a", res(gpus(2))), selector({{"zone", "z2"}})), 0).ok());
    REQUIRE(e.submit(job("anywhere", "a", res(gpus(2))), 0).ok());
    CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"anywhere"});
  }
  SUBCASE("an unconstrained job that fails does not stop an equal one that tolerates the taint") {
    Engine e = engine_with(
        {tainted(node("n", "h100", res(gpus(8))), {{"gpu", "", TaintEffect::kNoSchedule}})});
    REQUIRE(e.submit(job("plain", "a", res(gpus(2))), 0).ok());
    REQUIRE(e.submit(where(job("tolerant", "a", res(gpus(2))),
                           tolerating({Toleration{"gpu", true, "", {}}})),
                     0)
                .ok());
    CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"tolerant"});
  }
  SUBCASE("two equal jobs with different selectors: each is placed where it may go") {
    Engine e = engine_with({node("n1", "h100", res(gpus(2)), {{"zone", "z1"}}),
                            node("n2", "h100", res(gpus(2)), {{"zone", "z2"}})});
    REQUIRE(e.submit(where(job("z1a", "a", res(gpus(2))), selector({{"zone", "z1"}})), 0).ok());
    REQUIRE(e.submit(where(job("z1b", "a", res(gpus(2))), selector({{"zone", "z1"}})), 0).ok());
    REQUIRE(e.submit(where(job("z2", "a", res(gpus(2))), selector({{"zone", "z2"}})), 0).ok());
    CHECK(admitted_ids(e.schedule(0)) == std::vector<std::string>{"z1a", "z2"});
  }
}

TEST_CASE("preemption takes victims only on the nodes the preemptor may use") {
  Engine e;
  QueueSpec q = queue("q", "", "h100", {{kGpu, gpus(16)}});
  q.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
  REQUIRE(e.apply_queue(q).ok());
  REQUIRE(e.upsert_node(node("n1", "h100", res(gpus(4)), {{"zone", "z1"}}), 0).ok());
  REQUIRE(e.upsert_node(node("n2", "h100", res(gpus(4)), {{"zone", "z2"}}), 0).ok());
  // low1 (priority 0) on n1 comes first in the victim order; low2 (priority 1) on n2.
  REQUIRE(
      e.submit(where(job("low1", "q", res(gpus(4)), 1, 0), selector({{"zone", "z1"}})), 0).ok());
  REQUIRE(
      e.submit(where(job("low2", "q", res(gpus(4)), 1, 1), selector({{"zone", "z2"}})), 0).ok());
  REQUIRE(admitted_ids(e.schedule(1)).size() == 2);

  REQUIRE(e.submit(where(job("nowhere", "q", res(gpus(4)), 1, 10), selector({{"zone", "z3"}})), 10)
              .ok());
  REQUIRE(
      e.submit(where(job("high", "q", res(gpus(4)), 1, 10), selector({{"zone", "z2"}})), 10).ok());
  std::vector<std::string> preempted;
  for (const Decision& d : e.schedule(10))
    if (const auto* p = std::get_if<Preemption>(&d))
      preempted.push_back(p->job.value + " by " + p->by.value);
  CHECK(preempted == std::vector<std::string>{"low2 by high"});
  CHECK(e.job(JobId("low1"))->state == JobState::kAdmitted);
  const Job* high = e.job(JobId("high"));
  REQUIRE(high->reserved);
  REQUIRE(high->slots.size() == 1);
  CHECK(e.cluster().node(high->slots[0].node).name == "n2");
  CHECK(reason(e, "nowhere") ==
        "0/2 nodes of flavor h100 are available: 2 do not match the pod set's node selector or "
        "affinity; no "
        "preemption its queue allows would make room");
}

TEST_CASE(
    "a job no node allows today waits (not rejected) and says why; a node that allows it comes, it "
    "runs") {
  Engine e = engine_with({
      node("a1", "h100", res(gpus(8)), {{"zone", "z1"}}),
      node("a2", "h100", res(gpus(8)), {{"zone", "z1"}}),
      tainted(node("b1", "h100", res(gpus(8)), {{"zone", "z2"}}),
              {{"spot", "", TaintEffect::kPreferNoSchedule},
               {"gpu", "broken", TaintEffect::kNoSchedule}}),
  });
  const JobSpec j = where(job("j", "a", res(gpus(2))), selector({{"zone", "z2"}}));
  REQUIRE(e.submit(j, 0).ok());
  CHECK(e.schedule(0).empty());
  CHECK(reason(e, "j") ==
        "0/3 nodes of flavor h100 are available: 2 do not match the pod set's node selector or "
        "affinity, 1 has a "
        "taint it does not tolerate (gpu=broken:NoSchedule)");

  // Room is what is missing when some node allows it: say how few do.
  REQUIRE(e.submit(where(job("big", "a", res(gpus(8)), 3), selector({{"zone", "z1"}})), 0).ok());
  CHECK(e.schedule(0).empty());
  CHECK(reason(e, "big") ==
        "no room on nodes of flavor h100 for 3 x {8 gpu} (2/3 nodes allow it: 1 does not match the "
        "pod set's node "
        "selector or affinity)");

  REQUIRE(e.upsert_node(node("b2", "h100", res(gpus(8)), {{"zone", "z2"}}), 1).ok());
  CHECK(admitted_ids(e.schedule(1)) == std::vector<std::string>{"j"});
}

TEST_CASE(
    "a running job restored on given nodes keeps them whatever its constraints; without nodes it "
    "is placed by them") {
  Engine e = engine_with({node("n1", "h100", res(gpus(8)), {{"zone", "z1"}}),
                          tainted(node("n2", "h100", res(gpus(8)), {{"zone", "z2"}}),
                                  {{"gpu", "", TaintEffect::kNoExecute}})});
  RunningPlacement on_n2;
  on_n2.nodes = {"n2"};
  CHECK(
      e.restore_running(where(job("kept", "a", res(gpus(1))), selector({{"zone", "z1"}})), on_n2, 0)
          .ok());
  RunningPlacement anywhere;
  REQUIRE(e.restore_running(where(job("placed", "a", res(gpus(1))), selector({{"zone", "z1"}})),
                            anywhere, 0)
              .ok());
  CHECK(e.cluster().node(e.job(JobId("placed"))->slots[0].node).name == "n1");
  auto r = e.restore_running(where(job("nowhere", "a", res(gpus(1))), selector({{"zone", "z3"}})),
                             anywhere, 0);
  CHECK_FALSE(r.ok());
}

}  // namespace scheduler_constraints_test
