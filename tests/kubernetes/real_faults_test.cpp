// Faults only a real control plane gives (tests/kubecluster), each ending with the invariants of
// harness.hpp over the real state and the API server's audit log: kube-apiserver restarted
// while gpuqd binds (etcd keeps the data), watch history compacted so that a resume is answered
// 410 Gone, the leader killed while it binds, a node going NotReady through the node lifecycle
// controller, a namespace deleted with gpuq's pods in it, and API Priority and Fairness
// refusing gpuqd's requests (429) until it slows down.
#include <set>
#include <sstream>

#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

const std::chrono::seconds kLong(120);  // only ends a hung wait; nothing asserts a duration

// gpuqd's lists of pods (not watches): one at start, one more after each 410 Gone.
std::size_t pod_lists(KubeCluster& k) {
  std::size_t n = 0;
  for (const ApiRequest& r : k.api.requests())
    if (r.user_agent.rfind("gpuqd", 0) == 0 && r.method == "GET" && r.path == "/api/v1/pods" &&
        r.query.find("watch=") == std::string::npos)
      ++n;
  return n;
}

std::size_t bound_of(KubeCluster& k, const std::string& prefix, int count) {
  std::size_t n = 0;
  for (int i = 0; i < count; ++i) n += k.bound(prefix + std::to_string(i)) ? 1 : 0;
  return n;
}

std::string phase(KubeCluster& k, const std::string& pod, const std::string& ns = "default") {
  auto p = k.api.get("pods", ns, pod);
  return p ? str_at(*p, {"status", "phase"}) : std::string();
}

const char* kOneQueue = "  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 64}}}]\n";

}  // namespace

TEST_CASE("kube-apiserver killed and started again while gpuqd binds: nothing lost, nothing bound twice") {
  KubeCluster k(4, 8);
  k.start(kOneQueue);
  for (int i = 0; i < 30; ++i) k.create("a-" + std::to_string(i), pod_of("team-a", 1));
  REQUIRE(eventually([&] { return bound_of(k, "a-", 30) > 0; }, kLong));
  k.api.control("POST", "/v1/components/kube-apiserver/restart?signal=KILL");
  for (int i = 30; i < 32; ++i) k.create("a-" + std::to_string(i), pod_of("team-a", 1));
  REQUIRE(eventually([&] { return bound_of(k, "a-", 32) == 32; }, kLong));
  // They run: the kubelets admitted every one (none was bound where it did not fit).
  REQUIRE(eventually([&] {
    for (int i = 0; i < 32; ++i)
      if (phase(k, "a-" + std::to_string(i)) != "Running") return false;
    return true;
  }, kLong));
  k.check_invariants();
}

TEST_CASE("watch history compacted while the API server is down: gpuqd's resume is answered 410 Gone, it lists again and misses nothing") {
  KubeCluster k(1, 8);
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n");
  k.create("a-0", pod_of("team-a", 8));
  REQUIRE(eventually([&] { return phase(k, "a-0") == "Running"; }, kLong));
  const std::size_t lists_before = pod_lists(k);
  CHECK(lists_before >= 1);
  k.api.control("POST", "/v1/components/kube-apiserver/stop?signal=KILL");
  k.api.control("POST", "/v1/etcd/compact");
  k.api.control("POST", "/v1/components/kube-apiserver/start");
  // The pod ends and another takes its 8 GPUs: gpuqd must have seen the first end, through the
  // list it made after its resumed watch was refused.
  k.api.finish_pod("default", "a-0", 0);
  k.create("a-1", pod_of("team-a", 8));
  REQUIRE(eventually([&] { return k.bound("a-1"); }, kLong));
  CHECK(pod_lists(k) > lists_before);
  k.check_invariants();
}

TEST_CASE("the leader killed while it binds: the standby takes over and every pod is bound once") {
  KubeCluster k(8, 8);
  const std::string lease = "  leaderElection: {enabled: true, namespace: gpuq-system, name: gpuq, identity: ID,"
                            " leaseDuration: 3s, renewDeadline: 2s, retryPeriod: 250ms}\n";
  auto with_id = [&](const std::string& id) { return std::string(lease).replace(lease.find("ID"), 2, id); };
  // A slow client (5 requests a second) keeps the leader binding for a while.
  k.start(kOneQueue, with_id("first") + "  qps: 5\n  burst: 5\n");
  REQUIRE(eventually([&] { return k.api.get("leases", "gpuq-system", "gpuq").has_value(); }, kLong));
  KubeCluster::Replica second = k.start_replica(kOneQueue, with_id("second") + "  qps: 5\n  burst: 5\n", "second.db");
  for (int i = 0; i < 60; ++i) k.create("a-" + std::to_string(i), pod_of("team-a", 1));
  REQUIRE(eventually([&] { return bound_of(k, "a-", 60) >= 5; }, kLong));
  k.kill_gpuqd();
  REQUIRE(eventually([&] { return bound_of(k, "a-", 60) == 60; }, kLong));
  CHECK(str_at(*k.api.get("leases", "gpuq-system", "gpuq"), {"spec", "holderIdentity"}) == "second");
  std::set<std::string> binders;
  for (const ApiRequest& r : k.api.requests())
    if (r.method == "POST" && r.path.find("/binding") != std::string::npos && r.status == 201) binders.insert(r.user_agent);
  CHECK(binders.count("gpuqd/second") == 1);
  second.stop(SIGTERM);
  k.check_invariants();
}

TEST_CASE("a node whose heartbeats stop goes NotReady through the node lifecycle controller: gpuq places nothing there until it is back") {
  KubeCluster k(2, 8);
  k.start(kOneQueue);
  // Tolerating the unreachable taint for 2 s, as a job that wants to leave a lost node.
  json::array tolerations{json::object{{"key", "node.kubernetes.io/unreachable"}, {"operator", "Exists"},
                                       {"effect", "NoExecute"}, {"tolerationSeconds", 2}}};
  const json::object on_node_1{{"kubernetes.io/hostname", "node-1"}};
  k.create("before", pod_of("team-a", 8).with("tolerations", tolerations).with("nodeSelector", on_node_1));
  REQUIRE(eventually([&] { return phase(k, "before") == "Running"; }, kLong));
  k.api.control("POST", "/v1/nodes/node-1/heartbeats", R"({"on":false})");
  REQUIRE(eventually([&] { return k.node_state("node-1", "Cordoned"); }, kLong));
  std::string ready;
  const json::object node = *k.api.get("nodes", "", "node-1");
  for (const json::value& c : node.at("status").as_object().at("conditions").as_array())
    if (str_at(c.as_object(), {"type"}) == "Ready") ready = str_at(c.as_object(), {"status"});
  CHECK(ready == "Unknown");  // the controller's verdict, not the kubelet's
  // The taint eviction controller deletes the pod once its toleration ran out; with its kubelet
  // gone it stays Terminating.
  REQUIRE(eventually([&] { return !str_at(*k.api.get("pods", "default", "before"), {"metadata", "deletionTimestamp"}).empty(); }, kLong));
  k.create("after", pod_of("team-a", 8).with("nodeSelector", on_node_1));
  std::this_thread::sleep_for(std::chrono::seconds(2));
  CHECK_FALSE(k.bound("after"));
  MESSAGE("while node-1 is lost: " << k.unschedulable("after"));
  // The kubelet is back: it finishes the deletion, the node is Ready, the new pod goes there.
  k.api.control("POST", "/v1/nodes/node-1/heartbeats", R"({"on":true})");
  REQUIRE(eventually([&] { return k.bound("after"); }, kLong));
  CHECK_FALSE(k.exists("before"));
  CHECK(k.node_of("after") == "node-1");
  k.check_invariants();
}

TEST_CASE("a namespace deleted with gpuq's pods in it: their jobs end and their room goes to others") {
  KubeCluster k(1, 8);
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n");
  k.ensure_namespace("ml", {{"gpuq.io/default-queue", "team-a"}});
  k.create("run-0", pod_of("", 4).in_ns("ml"));
  k.create("run-1", pod_of("", 4).in_ns("ml"));
  REQUIRE(eventually([&] { return phase(k, "run-0", "ml") == "Running" && phase(k, "run-1", "ml") == "Running"; }, kLong));
  k.create("wait", pod_of("", 4).in_ns("ml"));
  k.create("elsewhere", pod_of("team-a", 8));
  std::this_thread::sleep_for(std::chrono::seconds(1));
  CHECK_FALSE(k.bound("wait", "ml"));
  REQUIRE(k.api.request("DELETE", "/api/v1/namespaces/ml").status == 200);
  // The namespace controller deletes the pods (each after its grace period), then the namespace.
  REQUIRE(eventually([&] { return !k.api.get("namespaces", "", "ml").has_value(); }, kLong));
  REQUIRE(eventually([&] { return k.bound("elsewhere"); }, kLong));
  const std::string jobs = k.gpuq("ls -a -o json");
  for (const char* pod : {"run-0", "run-1", "wait"}) CHECK(jobs.find(std::string("ml.") + pod) != std::string::npos);
  CHECK(k.gpuq("ls").find("ml.") == std::string::npos);  // none of them is still pending or running
  k.check_invariants();
}

TEST_CASE("API Priority and Fairness refuses gpuqd's requests with 429: it waits as told and binds every pod once") {
  KubeCluster k(4, 8);
  // A priority level of a few seats (3 of the server's 600), borrowing none and refusing what does
  // not fit, for gpuqd's service account alone.
  const ApiResponse level = k.api.request("POST", "/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations",
      R"({"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"PriorityLevelConfiguration","metadata":{"name":"gpuq-narrow"},
          "spec":{"type":"Limited","limited":{"nominalConcurrencyShares":1,"lendablePercent":0,"borrowingLimitPercent":0,
                                               "limitResponse":{"type":"Reject"}}}})");
  REQUIRE_MESSAGE(level.status == 201, level.body);
  const ApiResponse schema = k.api.request("POST", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas",
      R"({"apiVersion":"flowcontrol.apiserver.k8s.io/v1","kind":"FlowSchema","metadata":{"name":"gpuq-narrow"},
          "spec":{"priorityLevelConfiguration":{"name":"gpuq-narrow"},"matchingPrecedence":100,
                  "distinguisherMethod":{"type":"ByUser"},
                  "rules":[{"subjects":[{"kind":"ServiceAccount","serviceAccount":{"name":"gpuq","namespace":"gpuq-system"}}],
                            "resourceRules":[{"verbs":["*"],"apiGroups":["*"],"resources":["*"],"namespaces":["*"],"clusterScope":true}]}]}})");
  REQUIRE_MESSAGE(schema.status == 201, schema.body);
  // The pods wait before gpuqd starts: it admits them in one cycle and binds them all at once.
  for (int i = 0; i < 32; ++i) k.create("a-" + std::to_string(i), pod_of("team-a", 1));
  k.start(kOneQueue);
  REQUIRE(eventually([&] { return bound_of(k, "a-", 32) == 32; }, kLong));
  std::size_t refused = 0;
  for (const ApiRequest& r : k.api.requests())
    if (r.user_agent.rfind("gpuqd", 0) == 0 && r.status == 429) ++refused;
  MESSAGE("gpuqd's requests refused 429 by API Priority and Fairness: " << refused);
  CHECK(refused > 0);
  k.check_invariants();
}
