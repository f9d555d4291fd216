// What a platform team sees of gpuqd with kubectl on the real control plane: why a pod waits
// (its PodScheduled condition and gpuq's FailedScheduling Event, in `kubectl describe`), where a
// pod was placed and by whom (the Scheduled Event), and a pod's log (its simulated node's
// container) through the API server. Skipped, saying so, where kubectl is absent.
#include <cstdio>

#include "tests/kubernetes/harness.hpp"

using namespace gpuq::test;

namespace {

std::string kubectl(KubeCluster& k, const std::string& args) {
  std::string out;
  FILE* f = ::popen(("kubectl --kubeconfig " + k.api.admin_kubeconfig() + " " + args + " 2>&1").c_str(), "r");
  if (f == nullptr) return out;
  char buf[4096];
  while (std::size_t n = std::fread(buf, 1, sizeof buf, f)) out.append(buf, n);
  ::pclose(f);
  return out;
}

}  // namespace

TEST_CASE("kubectl shows gpuqd's PodScheduled conditions, its Events and a pod's log") {
  if (std::system("command -v kubectl >/dev/null 2>&1") != 0) {
    MESSAGE("skip: no kubectl on this machine (scripts/deps.sh installs Debian's kubernetes-client)");
    return;
  }
  KubeCluster k(1, 8);
  k.start("  - name: team-a\n    quotas: [{flavor: default, resources: {gpu: {nominal: 8}}}]\n");
  k.create("runs", pod_of("team-a", 8).with("containers", json::array{json::object{
                                                              {"name", "main"},
                                                              {"image", "busybox"},
                                                              {"command", json::array{"sh", "-c", "nvidia-smi -L; sleep 600"}},
                                                              {"resources", {{"limits", {{"nvidia.com/gpu", "8"}}}}}}}));
  k.create("waits", pod_of("team-a", 4));
  REQUIRE(eventually([&] { return k.bound("runs"); }));
  REQUIRE(eventually([&] { return !k.unschedulable("waits").empty(); }));
  const std::string described = kubectl(k, "describe pod waits");
  CHECK_MESSAGE(described.find("FailedScheduling") != std::string::npos, described);
  CHECK_MESSAGE(described.find("waits in queue team-a (1 of 1): needs 4 gpu of flavor default") != std::string::npos, described);
  CHECK_MESSAGE(described.find("PodScheduled   False") != std::string::npos, described);
  const std::string condition =
      kubectl(k, "get pod waits -o 'jsonpath={.status.conditions[?(@.type==\"PodScheduled\")].reason}: "
                 "{.status.conditions[?(@.type==\"PodScheduled\")].message}'");
  CHECK_MESSAGE(condition.find("Unschedulable: gpuq job default.waits-") != std::string::npos, condition);
  // No JobSet CRD here: a JobSet's pod waits, saying gpuqd does not watch JobSets and why.
  k.create("js-0", pod_of("team-a", 1).label("jobset.sigs.k8s.io/jobset-name", "js"));
  REQUIRE(eventually([&] { return !k.unschedulable("js-0").empty(); }));
  const std::string js = k.unschedulable("js-0");
  CHECK_MESSAGE(js.find("pod group js waits for its JobSet object (jobset.x-k8s.io) in namespace default, but gpuqd "
                        "does not watch JobSets: the API server did not serve jobset.x-k8s.io when gpuqd started; "
                        "restart gpuqd once its CRD is installed") != std::string::npos,
                js);
  const std::string placed = kubectl(k, "get events -o wide --field-selector involvedObject.name=runs");
  CHECK_MESSAGE(placed.find("Successfully assigned default/runs to node-0") != std::string::npos, placed);
  CHECK_MESSAGE(placed.find("gpuq") != std::string::npos, placed);
  std::string log;
  REQUIRE(eventually([&] { return (log = kubectl(k, "logs runs")).find("GPU 7:") != std::string::npos; }));
  CHECK_MESSAGE(log.find("GPU 0: kube-cluster simulated GPU (UUID: GPU-") != std::string::npos, log);
  k.check_invariants();
}
