// gpuqd as a Kubernetes secondary scheduler, end to end: a real gpuqd process (binder:
// kubernetes) against a cluster (the real control plane in kubernetes_real_test, the fake API
// server in kubernetes_binder_test), each scenario ending with the invariants of harness.hpp
// over the cluster's whole state and request log.
#include <fstream>

#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

const char* kTwoQueues = R"(  - name: team-a
    cohort: all
    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]
  - name: team-b
    cohort: all
    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]
)";

}  // namespace

TEST_CASE("pods of two queues are bound within quota and borrowing; a pod that ends makes room") {
  KubeCluster k(2, 8);
  k.start(kTwoQueues);
  for (int i = 0; i < 3; ++i) k.create("a-" + std::to_string(i), pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("a-0") && k.bound("a-1") && k.bound("a-2"); }));  // a borrows 4
  for (int i = 0; i < 2; ++i) k.create("b-" + std::to_string(i), pod_of("team-b", 4));
  REQUIRE(eventually([&] { return k.bound("b-0"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(k.bound("b-1"));  // 16 GPUs in use
  // Why it waits, on its PodScheduled condition; a bound pod has its Scheduled event.
  REQUIRE(eventually([&] { return k.unschedulable("b-1").find("waits in queue team-b (1 of 1): ") != std::string::npos; }));
  MESSAGE(k.unschedulable("b-1"));
  bool scheduled = false;
  for (const auto& e : k.api.list("events", "default"))
    scheduled |= str_at(e, {"reason"}) == "Scheduled" && str_at(e, {"involvedObject", "name"}) == "a-0";
  CHECK(scheduled);
  k.api.finish_pod("default", "a-0", 0);
  REQUIRE(eventually([&] { return k.bound("b-1"); }));
  k.check_invariants();
}

TEST_CASE("pods of other schedulers take their nodes' room; a node that is not Ready takes no new pods") {
  KubeCluster k(3, 8);
  k.create("other", pod_of("", 6).by("default-scheduler").on("node-0"));
  k.start(kTwoQueues);
  k.api.set_node_ready("node-2", false);
  REQUIRE(eventually([&] { return k.node_state("node-2", "Cordoned"); }));
  for (int i = 0; i < 3; ++i) k.create("c-" + std::to_string(i), pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("c-0") && k.bound("c-1"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.node_of("c-0") == "node-1");
  CHECK(k.node_of("c-1") == "node-1");
  CHECK_FALSE(k.bound("c-2"));  // node-0 has 2 GPUs left, node-2 is not Ready
  k.api.set_node_ready("node-2", true);
  REQUIRE(eventually([&] { return k.bound("c-2"); }));
  CHECK(k.node_of("c-2") == "node-2");
  // The foreign pod ends: its GPUs are gpuq's again (node-2, not Ready again, takes nothing).
  k.api.set_node_ready("node-2", false);
  REQUIRE(eventually([&] { return k.node_state("node-2", "Cordoned"); }));
  k.api.finish_pod("default", "other", 0);
  k.create("d-0", pod_of("team-b", 4));  // the cohort's 16 GPUs of quota: 12 in use
  REQUIRE(eventually([&] { return k.bound("d-0"); }));
  CHECK(k.node_of("d-0") == "node-0");
  k.check_invariants();
}

TEST_CASE("a pod group is bound whole, once all its pods exist") {
  KubeCluster k(2, 8);
  k.start(kTwoQueues);
  auto member = [] { return pod_of("team-a", 4).label("gpuq.io/pod-group", "train").annotate("gpuq.io/pod-group-size", "3"); };
  k.create("g-0", member());
  k.create("g-1", member());
  k.create("single", pod_of("team-a", 1));
  REQUIRE(eventually([&] { return k.bound("single"); }));
  CHECK_FALSE(k.bound("g-0"));
  CHECK_FALSE(k.bound("g-1"));
  // Its members say why they wait from the first statusInterval (1 s here), not after the
  // group's timeout.
  for (const char* m : {"g-0", "g-1"})
    CHECK(eventually([&] { return k.unschedulable(m).find("pod group default/train has 2 of its 3 pods; none is placed until all exist") != std::string::npos; },
                     std::chrono::seconds(10)));
  k.create("g-2", member());
  // 12 of the 15 free GPUs: 4 + 4 on one node and 4 on the other.
  REQUIRE(eventually([&] { return k.bound("g-0") && k.bound("g-1") && k.bound("g-2"); }));
  // A group that stays short of its size is told so after its timeout (here 1 second).
  k.create("lone", pod_of("team-a", 1).label("gpuq.io/pod-group", "pair").annotate("gpuq.io/pod-group-size", "2")
                       .annotate("gpuq.io/pod-group-timeout", "1"));
  REQUIRE(eventually([&] {
    for (const auto& e : k.api.list("events", "default"))
      if (str_at(e, {"reason"}) == "PodGroupIncomplete" && str_at(e, {"involvedObject", "name"}) == "lone") return true;
    return false;
  }));
  // The Event and the PodScheduled condition are separate writes (the Events have a lane of
  // their own): the condition may land a moment after the Event.
  CHECK(eventually([&] { return k.unschedulable("lone").find("has 1 of its 2 pods after 1s; none is placed until all exist") != std::string::npos; }));
  k.check_invariants();
}

TEST_CASE("bad pods are told why on their PodScheduled condition while the rest flow") {
  KubeCluster k(2, 8);
  k.start(kTwoQueues);
  k.create("no-queue", pod_of("", 1));
  k.create("unknown-queue", pod_of("nope", 1));
  k.create("huge", pod_of("team-a", 1000));
  k.create("bad-group", pod_of("team-a", 1).label("gpuq.io/pod-group", "x").annotate("gpuq.io/pod-group-size", "many"));
  // A gang of 3 x 8 GPUs: more than the cohort's 16 could ever hold.
  for (int i = 0; i < 3; ++i)
    k.create("gang-" + std::to_string(i),
             pod_of("team-a", 8).label("gpuq.io/pod-group", "big").annotate("gpuq.io/pod-group-size", "3"));
  k.create("fine", pod_of("team-b", 2));
  REQUIRE(eventually([&] { return k.bound("fine"); }));
  REQUIRE(eventually([&] { return !k.unschedulable("no-queue").empty() && !k.unschedulable("unknown-queue").empty() &&
                                  !k.unschedulable("huge").empty() && !k.unschedulable("bad-group").empty(); }));
  CHECK(k.unschedulable("no-queue").find("gpuq.io/queue") != std::string::npos);
  CHECK(k.unschedulable("unknown-queue").find("queue \"nope\" does not exist") != std::string::npos);
  CHECK(k.unschedulable("huge").find("1000") != std::string::npos);
  // Each member's condition is written by its own status patch, and a member seen before the whole gang
  // first says the gang is incomplete: wait until every one of them carries the final reason.
  for (int i = 0; i < 3; ++i) {
    const std::string gang = "gang-" + std::to_string(i);
    CHECK(eventually([&] {
      return k.unschedulable(gang).find("needs 24 gpu in total; all nodes of flavor default together have 16") != std::string::npos;
    }));
    CHECK_FALSE(k.bound(gang));
  }
  CHECK(k.unschedulable("bad-group").find("gpuq.io/pod-group-size=\"many\"") != std::string::npos);
  CHECK_FALSE(k.bound("huge"));
  // The queue made with gpuq apply takes the pod that named it; the nodes stay the API's.
  std::ofstream(k.dir.path / "nope.yaml") << "queues:\n  - name: nope\n    quotas: [{flavor: default, resources: {gpu: {nominal: 1}}}]\n";
  CHECK(k.gpuq("apply -f " + (k.dir.path / "nope.yaml").string()).find("error") == std::string::npos);
  REQUIRE(eventually([&] { return k.bound("unknown-queue"); }));
  std::ofstream(k.dir.path / "node.yaml") << "nodes:\n  - name: extra\n    flavor: default\n    capacity: {gpu: 8}\n";
  CHECK(k.gpuq("apply -f " + (k.dir.path / "node.yaml").string()).find("nodes are the API server's") != std::string::npos);
  CHECK(k.gpuq("nodes cordon node-0").find("kubectl label, taint, cordon, drain") != std::string::npos);
  // A default queue on the namespace lets the pod without a label in.
  k.ensure_namespace("ml", {{"gpuq.io/default-queue", "team-b"}});
  k.create("in-ml", pod_of("", 1).in_ns("ml"));
  REQUIRE(eventually([&] { return k.bound("in-ml", "ml"); }));
  k.check_invariants();
}

TEST_CASE("a pod meets its queue's guardrails as a submit does: one asking more is told why and never bound") {
  KubeCluster k(1, 8);
  k.start("  - name: capped\n    maxGpusPerJob: 2\n    maxRuntime: 3600\n"
          "    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n");
  k.create("greedy", pod_of("capped", 4));
  k.create("modest", pod_of("capped", 2));
  REQUIRE(eventually([&] { return k.bound("modest"); }));
  REQUIRE(eventually([&] { return !k.unschedulable("greedy").empty(); }));
  CHECK_MESSAGE(k.unschedulable("greedy").find("queue \"capped\" allows at most 2 per job (maxGpusPerJob)") !=
                    std::string::npos,
                k.unschedulable("greedy"));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(k.bound("greedy"));  // 6 GPUs are free, but the queue does not take it
  // The one admitted got the queue's maxRuntime, as a submitted job does.
  CHECK(k.gpuq("ls -o json").find("\"max_runtime_seconds\": \"3600\"") != std::string::npos);
  k.check_invariants();
}

TEST_CASE("shares of a GPU: a reservation pod holds each shared GPU, sharers get its device, and it goes with them") {
  KubeCluster k(1, 2);
  k.ensure_namespace("gpuq-system");
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 2}}}]\n");
  for (int i = 0; i < 4; ++i) k.create("f-" + std::to_string(i), pod_of("team-a", 0).annotate("gpuq.io/gpu-milli", "500"));
  REQUIRE(eventually([&] { return k.bound_count() == 6; }));  // 4 sharers and 2 reservation pods
  std::map<std::string, int> sharers_of;
  for (int i = 0; i < 4; ++i) {
    auto p = k.api.get("pods", "default", "f-" + std::to_string(i));
    const std::string device = str_at(*p, {"metadata", "annotations", "gpuq.io/gpu-device"});
    CHECK(device.rfind("GPU-", 0) == 0);
    ++sharers_of[device];
  }
  CHECK(sharers_of.size() == 2);  // two pods on each GPU
  for (const auto& [device, n] : sharers_of) CHECK(n == 2);
  k.create("w-0", pod_of("team-a", 1));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK_FALSE(k.bound("w-0"));  // both GPUs are shared
  const std::string freed = str_at(*k.api.get("pods", "default", "f-0"), {"metadata", "annotations", "gpuq.io/gpu-device"});
  for (int i = 0; i < 4; ++i)
    if (str_at(*k.api.get("pods", "default", "f-" + std::to_string(i)), {"metadata", "annotations", "gpuq.io/gpu-device"}) == freed)
      k.api.finish_pod("default", "f-" + std::to_string(i), 0);
  // The last sharer gone, its reservation pod is deleted and the whole-GPU pod gets that GPU.
  REQUIRE(eventually([&] { return k.bound("w-0") && !k.api.devices_of("default", "w-0").empty(); }));
  CHECK(k.api.devices_of("default", "w-0").front() == freed);
  CHECK(k.api.list("pods", "gpuq-system").size() == 1);
  k.check_invariants();
}

TEST_CASE("nodeSelector, required node affinity and tolerations decide where a pod may go") {
  KubeCluster k(0, 8);
  k.add_node("node-a", 8, gpuq::test::json::object{{"zone", "a"}});
  k.add_node("node-b", 8, gpuq::test::json::object{{"zone", "b"}, {"gpu-count", "8"}});
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n");
  k.create("sel", pod_of("team-a", 1).with("nodeSelector", gpuq::test::json::object{{"zone", "b"}}));
  gpuq::test::json::value affinity = gpuq::test::json::parse(R"({"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution":
      {"nodeSelectorTerms": [{"matchExpressions": [{"key": "gpu-count", "operator": "Gt", "values": ["4"]}]}]}}})");
  k.create("aff", pod_of("team-a", 1).with("affinity", affinity));
  REQUIRE(eventually([&] { return k.bound("sel") && k.bound("aff"); }));
  CHECK(k.node_of("sel") == "node-b");
  CHECK(k.node_of("aff") == "node-b");
  // A taint keeps off pods that do not tolerate it.
  REQUIRE(k.api.request("PATCH", "/api/v1/nodes/node-b",
                        gpuq::test::json::serialize(gpuq::test::json::object{{"spec", {{"taints", gpuq::test::json::array{
                            gpuq::test::json::object{{"key", "dedicated"}, {"value", "ml"}, {"effect", "NoSchedule"}}}}}}}),
                        "application/merge-patch+json")
              .status == 200);
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  k.create("untolerated", pod_of("team-a", 1).with("nodeSelector", gpuq::test::json::object{{"zone", "b"}}));
  k.create("tolerated", pod_of("team-a", 1)
                            .with("nodeSelector", gpuq::test::json::object{{"zone", "b"}})
                            .with("tolerations", gpuq::test::json::array{gpuq::test::json::object{
                                                     {"key", "dedicated"}, {"operator", "Equal"}, {"value", "ml"}, {"effect", "NoSchedule"}}}));
  REQUIRE(eventually([&] { return k.bound("tolerated"); }));
  CHECK(k.node_of("tolerated") == "node-b");
  REQUIRE(eventually([&] { return k.unschedulable("untolerated").find("taint") != std::string::npos; }));
  MESSAGE(k.unschedulable("untolerated"));
  CHECK_FALSE(k.bound("untolerated"));
  k.check_invariants();
}

TEST_CASE("priority comes from PriorityClasses: a high-priority pod preempts a lower one of its queue, and goes first") {
  KubeCluster k(1, 8);
  for (const auto& [name, value] : {std::pair{"low", 100}, std::pair{"high", 1000}})
    k.api.create("priorityclasses", "",
                 gpuq::test::json::object{{"apiVersion", "scheduling.k8s.io/v1"}, {"kind", "PriorityClass"},
                                          {"metadata", {{"name", name}}}, {"value", value}});
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n"
          "    preemption: {withinQueue: LowerPriority}\n");
  k.create("low-0", pod_of("team-a", 8).with("priorityClassName", "low"));
  REQUIRE(eventually([&] { return k.bound("low-0"); }));
  CHECK(k.api.get("pods", "default", "low-0")->at("spec").at("priority").to_number<int>() == 100);  // the admission plugin's
  k.create("low-1", pod_of("team-a", 4).with("priorityClassName", "low"));
  k.create("high-0", pod_of("team-a", 4).with("priorityClassName", "high"));
  // high-0 takes low-0's GPUs through the Eviction API; low-1, older but lower, keeps waiting.
  REQUIRE(eventually([&] { return k.bound("high-0"); }));
  CHECK_FALSE(k.exists("low-0"));
  bool preempted = false;
  for (const auto& e : k.api.list("events", "default"))
    preempted |= str_at(e, {"reason"}) == "Preempted" && str_at(e, {"involvedObject", "name"}) == "low-0";
  CHECK(preempted);
  REQUIRE(eventually([&] { return k.bound("low-1"); }));  // the other 4 GPUs
  // A priority given in the pod without its class is refused at admission, as the API server's
  // Priority plugin refuses it.
  CHECK_THROWS_AS(k.create("sneaky", pod_of("team-a", 1).with("priority", 1000000)), ApiError);
  k.check_invariants();
}

TEST_CASE("init containers count at their peak: a pod whose init container needs 6 GPUs goes where 6 are free") {
  KubeCluster k(2, 8);
  k.create("other", pod_of("", 4).by("default-scheduler").on("node-0"));
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n");
  gpuq::test::json::array init{gpuq::test::json::object{
      {"name", "fetch"}, {"image", "busybox"},
      {"resources", {{"requests", {{"nvidia.com/gpu", "6"}}}, {"limits", {{"nvidia.com/gpu", "6"}}}}}}};
  k.create("staged", pod_of("team-a", 2).with("initContainers", init));
  REQUIRE(eventually([&] { return k.bound("staged"); }));
  CHECK(k.node_of("staged") == "node-1");  // node-0 has 4 free: enough for the 2, not for the 6
  REQUIRE(eventually([&] { return str_at(*k.api.get("pods", "default", "staged"), {"status", "phase"}) == "Running"; }));
  CHECK(k.gpuq("ls -o json").find("\"gpu\": \"6\"") != std::string::npos);
  k.check_invariants();
}
