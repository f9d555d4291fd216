// The kubernetes binder when things go wrong: reclaim blocked by a PodDisruptionBudget, gpuqd
// killed and started again (same and fresh state file), and leader election with two replicas.
// (Faults only the fake can make on demand are in fake_faults_test.cpp; those only the real
// control plane gives in real_faults_test.cpp.)
#include <set>
#include <sstream>

#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

const char* kReclaim = R"(  - name: team-a
    cohort: all
    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]
    preemption: {reclaimWithinCohort: Any}
  - name: team-b
    cohort: all
    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]
    preemption: {reclaimWithinCohort: Any}
)";

std::size_t events_with(ClusterApi& api, const std::string& reason) {
  std::size_t n = 0;
  for (const auto& e : api.list("events"))
    if (str_at(e, {"reason"}) == reason) ++n;
  return n;
}

}  // namespace

namespace {

// team-a borrows all 16 GPUs with four 4-GPU pods (a-0..a-3, created in `order`), all Running.
void team_a_everywhere(KubeCluster& k, const std::vector<int>& order, const std::set<int>& protect) {
  k.start(kReclaim);
  for (int i : order) {
    PodOptions o = pod_of("team-a", 4).label("app", protect.count(i) > 0 ? "a-protected" : "a");
    k.create("a-" + std::to_string(i), o);
    REQUIRE(eventually([&] { return k.bound("a-" + std::to_string(i)); }));
  }
  REQUIRE(eventually([&] {
    for (int i = 0; i < 4; ++i)
      if (str_at(*k.api.get("pods", "default", "a-" + std::to_string(i)), {"status", "phase"}) != "Running") return false;
    return true;
  }));
}

// A PodDisruptionBudget, once the disruption controller has computed its status (until then an
// eviction it covers is refused "The disruption budget NAME is still being processed by the
// server").
int add_budget(KubeCluster& k, const std::string& app, int min_available) {
  const int status = k.api
      .request("POST", "/apis/policy/v1/namespaces/default/poddisruptionbudgets",
               json::serialize(json::object{{"apiVersion", "policy/v1"},
                                            {"kind", "PodDisruptionBudget"},
                                            {"metadata", {{"name", app}}},
                                            {"spec", {{"minAvailable", min_available}, {"selector", {{"matchLabels", {{"app", app}}}}}}}}))
      .status;
  REQUIRE(eventually([&] {
    auto pdb = k.api.get("poddisruptionbudgets", "default", app);
    const json::value* seen = pdb ? pdb->at("status").as_object().if_contains("observedGeneration") : nullptr;
    return seen != nullptr && seen->to_number<std::int64_t>() == pdb->at("metadata").as_object().at("generation").to_number<std::int64_t>();
  }));
  return status;
}

std::vector<std::string> messages_of(ClusterApi& api, const std::string& reason, const std::string& pod) {
  std::vector<std::string> out;
  for (const auto& e : api.list("events"))
    if (str_at(e, {"reason"}) == reason && str_at(e, {"involvedObject", "name"}) == pod) out.push_back(str_at(e, {"message"}));
  return out;
}

// The jobs gpuq has not finished whose name starts with `prefix` (gpuq ls: one row each).
std::size_t unfinished_jobs(KubeCluster& k, const std::string& prefix) {
  std::size_t n = 0;
  std::istringstream lines(k.gpuq("ls"));
  for (std::string line; std::getline(lines, line);)
    if (line.find("default." + prefix) != std::string::npos) ++n;
  return n;
}

}  // namespace

TEST_CASE("reclaim evicts through the Eviction API; a PodDisruptionBudget's no keeps the victims running, and says why") {
  KubeCluster k(2, 8);
  team_a_everywhere(k, {0, 1, 2, 3}, {0, 1, 2, 3});
  REQUIRE(add_budget(k, "a-protected", 4) == 201);
  k.create("b-0", pod_of("team-b", 8));
  // Each victim's first eviction is refused: nothing of it is disrupted, it runs on, and the
  // preemptor is told which budget stood in the way.
  REQUIRE(eventually([&] { return !messages_of(k.api, "PreemptionBlocked", "b-0").empty(); }));
  const std::string said = messages_of(k.api, "PreemptionBlocked", "b-0").front();
  CHECK(said.find("The disruption budget a-protected needs 4 healthy pods and has 4 currently") != std::string::npos);
  CHECK(said.find("gpuq looks for other jobs to preempt, or waits") != std::string::npos);
  // The victim's event is posted first, but gpuqd's writers post in parallel.
  CHECK(eventually([&] { return events_with(k.api, "EvictionBlocked") > 0; }));
  for (int i = 0; i < 4; ++i) CHECK(k.exists("a-" + std::to_string(i)));
  CHECK(events_with(k.api, "Preempted") == 0);
  CHECK_FALSE(k.bound("b-0"));
  // Without the budget, the victims are taken again once their retry time (evictRetry) passed.
  REQUIRE(k.api.request("DELETE", "/apis/policy/v1/namespaces/default/poddisruptionbudgets/a-protected").status == 200);
  REQUIRE(eventually([&] { return k.bound("b-0"); }));
  int left = 0;
  for (int i = 0; i < 4; ++i) left += k.exists("a-" + std::to_string(i)) ? 1 : 0;
  CHECK(left == 2);  // two 4-GPU victims made room for 8
  CHECK(eventually([&] { return events_with(k.api, "Preempted") == 2; }));
  // An evicted victim's job ends with its pods: were it queued again, it would be admitted
  // later to hold room for a pod that is gone, and nothing would free it.
  CHECK(eventually([&] { return unfinished_jobs(k, "a-") == 2; }));
  CHECK(k.gpuq("ls --state cancelled -o json").find("its pods were evicted") != std::string::npos);
  k.check_invariants();
}

TEST_CASE("a victim a PodDisruptionBudget protects is passed over for others it does not") {
  KubeCluster k(2, 8);
  // a-0 and a-1 are admitted last, so they are the first victims (most recently admitted).
  team_a_everywhere(k, {2, 3, 0, 1}, {0, 1});
  REQUIRE(add_budget(k, "a-protected", 2) == 201);
  k.create("b-0", pod_of("team-b", 8));
  REQUIRE(eventually([&] { return k.bound("b-0"); }));
  CHECK(k.exists("a-0"));
  CHECK(k.exists("a-1"));
  REQUIRE(eventually([&] { return !k.exists("a-2") && !k.exists("a-3"); }));
  CHECK_FALSE(messages_of(k.api, "PreemptionBlocked", "b-0").empty());
  CHECK(messages_of(k.api, "Preempted", "a-0").empty());
  CHECK(messages_of(k.api, "Preempted", "a-2").size() == 1);
  // Each victim the budget does not cover is asked to leave once.
  for (const char* pod : {"a-2", "a-3"}) {
    int asked = 0;
    for (const auto& r : k.api.requests())
      asked += r.method == "POST" && r.path == std::string("/api/v1/namespaces/default/pods/") + pod + "/eviction";
    CHECK_MESSAGE(asked == 1, std::string(pod));
  }
  CHECK(eventually([&] { return unfinished_jobs(k, "a-") == 2; }));
  k.check_invariants();
}

TEST_CASE("gpuqd killed and started again, with its state file and with a fresh one: nothing bound twice") {
  KubeCluster k(2, 8);
  k.start(R"(  - name: team-a
    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]
)");
  for (int i = 0; i < 4; ++i) k.create("a-" + std::to_string(i), pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound_count() == 4; }));
  k.create("p-0", pod_of("team-a", 4));
  k.create("p-1", pod_of("team-a", 4));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  k.kill_gpuqd();
  // While it is down: a pod ends, a pending pod is deleted, another comes.
  k.api.finish_pod("default", "a-0", 0);
  REQUIRE(k.api.request("DELETE", "/api/v1/namespaces/default/pods/p-0").status == 200);
  k.create("p-2", pod_of("team-a", 4));
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n");
  REQUIRE(eventually([&] { return k.bound("p-1") || k.bound("p-2"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.bound("p-1") != k.bound("p-2"));  // room for one: a-0's 4 GPUs
  k.check_invariants();

  k.kill_gpuqd();
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n", "", "fresh.db");
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(k.bound_count() == 5);  // a-0 (done) and the 4 running; the other p waits for room
  k.api.finish_pod("default", "a-1", 0);
  REQUIRE(eventually([&] { return k.bound("p-1") && k.bound("p-2"); }));
  k.check_invariants();
}

TEST_CASE("two replicas with a Lease: only the leader binds; the standby takes over when the leader is killed, with its fair-share history") {
  KubeCluster k(2, 8);
  const std::string queues = "  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 16}}}]\n";
  auto lease = [](const std::string& id) {
    return "  leaderElection: {enabled: true, namespace: gpuq-system, name: gpuq, identity: " + id +
           ", leaseDuration: 2s, renewDeadline: 1500ms, retryPeriod: 200ms}\n"
           "fairSharing: {usageHalfLife: 10}\nusageCheckpointInterval: 1s\n";
  };
  // The fair-share checkpoint on the Lease: who wrote it, and team-a's average GPU use.
  auto note = [&](std::string& by) {
    const std::string text = str_at(*k.api.get("leases", "gpuq-system", "gpuq"), {"metadata", "annotations", "gpuq.io/fair-share"});
    if (text.empty()) return -1.0;
    const json::object o = json::parse(text).as_object();
    by = std::string(o.at("by").as_string());
    for (const json::value& q : o.at("queues").as_array())
      if (q.at("queue").as_string() == "team-a")
        if (const json::value* g = q.at("average").as_object().if_contains("gpu")) return g->to_number<double>();
    return 0.0;
  };
  k.ensure_namespace("gpuq-system");
  k.start(queues, lease("first"));
  REQUIRE(eventually([&] { return k.api.get("leases", "gpuq-system", "gpuq").has_value(); }));
  KubeCluster::Replica second = k.start_replica(queues, lease("second"), "second.db");
  k.create("a-0", pod_of("team-a", 4));
  k.create("a-1", pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("a-0") && k.bound("a-1"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  auto writers = [&] {
    std::set<std::string> who;
    for (const auto& r : k.api.requests())
      if (r.method == "POST" && r.path.find("/binding") != std::string::npos) who.insert(r.user_agent);
    return who;
  };
  CHECK(writers() == std::set<std::string>{"gpuqd/first"});
  CHECK(str_at(*k.api.get("leases", "gpuq-system", "gpuq"), {"spec", "holderIdentity"}) == "first");
  // 8 GPUs busy for 4 s with a 10 s half-life: team-a's average is well above what a replica
  // starting from nothing would have a second or two after taking over.
  std::this_thread::sleep_for(std::chrono::seconds(4));
  std::string by;
  const double before = note(by);
  CHECK(by == "first");
  CHECK(before > 1200);
  k.kill_gpuqd();
  k.create("a-2", pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("a-2"); }));
  CHECK(str_at(*k.api.get("leases", "gpuq-system", "gpuq"), {"spec", "holderIdentity"}) == "second");
  // The request log may record the binding just after its answer was read.
  CHECK(eventually([&] { return writers() == std::set<std::string>{"gpuqd/first", "gpuqd/second"}; }));
  // The new leader went on from the old one's checkpoint (its usage only raised it since).
  double after = -1;
  REQUIRE(eventually([&] { return (after = note(by)) >= 0 && by == "second"; }));
  CHECK(after >= 0.95 * before);
  // The new leader took the running pods as they are: room for one more 4-GPU pod, not two.
  k.create("a-3", pod_of("team-a", 4));
  k.create("a-4", pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("a-3") || k.bound("a-4"); }));
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  CHECK(k.bound("a-3") != k.bound("a-4"));
  second.stop(SIGTERM);
  k.check_invariants();
}
