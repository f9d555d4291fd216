// Pods and nodes read from the API's JSON (binder/kubernetes/objects.hpp): the effective request
// as kube-scheduler computes it, where a pod may run, and what a node offers.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "binder/kubernetes/objects.hpp"
#include "spec/constraints.hpp"

using namespace gpuq;
using namespace gpuq::binder::k8s;
namespace json = boost::json;

namespace {

json::object parse(const char* text) { return json::parse(text).as_object(); }

constexpr Quantity kGi = Quantity{1} << 30;

}  // namespace

TEST_CASE("a pod's effective request: containers summed, init containers at their peak, sidecars, overhead") {
  auto p = read_pod(parse(R"({
    "metadata": {"namespace": "ml", "name": "train-0", "uid": "u1", "resourceVersion": "7",
                 "labels": {"gpuq.io/queue": "vision"}},
    "spec": {
      "schedulerName": "gpuq", "priority": 100, "terminationGracePeriodSeconds": 60,
      "containers": [
        {"name": "main", "resources": {"requests": {"cpu": "4", "memory": "16Gi"}, "limits": {"nvidia.com/gpu": 2}}},
        {"name": "logger", "resources": {"requests": {"cpu": "500m", "memory": "1Gi"}}}
      ],
      "initContainers": [
        {"name": "fetch", "resources": {"requests": {"cpu": "8", "memory": "2Gi"}}},
        {"name": "proxy", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1", "memory": "512Mi"}}}
      ],
      "overhead": {"cpu": "250m"}
    },
    "status": {"phase": "Pending"}})"));
  REQUIRE_MESSAGE(p.ok(), p.error());
  CHECK(p->key() == "ml/train-0");
  CHECK(p->scheduler == "gpuq");
  CHECK(*p->priority == 100);
  CHECK(p->grace_seconds == 60);
  CHECK(p->labels.at("gpuq.io/queue") == "vision");
  // containers 4.5 cpu + sidecar 1 = 5.5; init peak: fetch 8 (no sidecar before it) -> 8; + 0.25
  CHECK(p->request[kCpu] == 8250);
  // memory: containers 17Gi + sidecar 0.5Gi = 17.5Gi against an init peak of 2Gi
  CHECK(p->request[kMemory] == 17 * kGi + kGi / 2);
  CHECK(p->request[kGpu] == 2000);  // the limit stands for the missing request
  CHECK_FALSE(p->terminal());
  CHECK_FALSE(p->terminating);
}

TEST_CASE("a shared GPU by annotation; a bad quantity names the pod and the field") {
  auto p = read_pod(parse(R"({"metadata": {"namespace": "ml", "name": "nb", "annotations": {"gpuq.io/gpu-milli": "250"}},
                              "spec": {"containers": [{"name": "c"}]}})"));
  REQUIRE_MESSAGE(p.ok(), p.error());
  CHECK(p->request[kGpu] == 250);
  CHECK(p->phase == "Pending");
  auto bad = read_pod(parse(R"({"metadata": {"namespace": "ml", "name": "x"},
      "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "lots"}}}]}})"));
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.error().rfind("pod ml/x: spec.containers[0].resources.requests.cpu: quantity \"lots\"", 0) == 0);
  auto milli = read_pod(parse(R"({"metadata": {"namespace": "ml", "name": "y", "annotations": {"gpuq.io/gpu-milli": "1500"}},
                                  "spec": {"containers": [{"name": "c"}]}})"));
  CHECK(milli.error() ==
        "pod ml/y: metadata.annotations.gpuq.io/gpu-milli: \"1500\" must be 1..1000 (thousandths of one GPU)");
}

TEST_CASE("where a pod may run: nodeSelector, required node affinity, tolerations") {
  auto p = read_pod(parse(R"({"metadata": {"namespace": "ml", "name": "p"}, "spec": {
      "containers": [{"name": "c"}],
      "nodeSelector": {"gpuq.io/flavor": "h100"},
      "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                              {"key": "gpu-count", "operator": "Gt", "values": ["4"]}]},
        {"matchExpressions": [{"key": "spot", "operator": "DoesNotExist"}, {"key": "zone", "operator": "NotIn", "values": ["c"]}]}
      ]}}},
      "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}})"));
  REQUIRE_MESSAGE(p.ok(), p.error());
  const std::vector<Taint> gpu_taint{{"nvidia.com/gpu", "present", TaintEffect::kNoSchedule}};
  const std::vector<Taint> other_taint{{"dedicated", "db", TaintEffect::kNoSchedule}};
  const std::vector<Taint> soft{{"dedicated", "db", TaintEffect::kPreferNoSchedule}};
  auto allowed_on = [&](const std::map<std::string, std::string>& labels, const std::vector<Taint>& taints) {
    return spec::allows(p->where, labels, taints);
  };
  CHECK(allowed_on({{"gpuq.io/flavor", "h100"}, {"zone", "a"}, {"gpu-count", "8"}}, gpu_taint));
  CHECK_FALSE(allowed_on({{"gpuq.io/flavor", "a100"}, {"zone", "a"}, {"gpu-count", "8"}}, {}));  // selector
  CHECK_FALSE(allowed_on({{"gpuq.io/flavor", "h100"}, {"zone", "a"}, {"gpu-count", "4"}, {"spot", "1"}}, {}));  // Gt 4 fails; so does the second term
  CHECK(allowed_on({{"gpuq.io/flavor", "h100"}, {"zone", "d"}}, {}));                            // second term
  CHECK_FALSE(allowed_on({{"gpuq.io/flavor", "h100"}, {"zone", "d"}, {"spot", "1"}}, {}));
  CHECK_FALSE(allowed_on({{"gpuq.io/flavor", "h100"}, {"zone", "d"}}, other_taint));  // not tolerated
  CHECK(allowed_on({{"gpuq.io/flavor", "h100"}, {"zone", "d"}}, soft));               // a preference only
}

TEST_CASE("a node: allocatable in base units, labels, taints, Ready, cordoned") {
  auto n = read_node(parse(R"({"metadata": {"name": "gpu-1", "resourceVersion": "9", "labels": {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"}},
      "spec": {"unschedulable": true, "taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
      "status": {"allocatable": {"cpu": "127900m", "memory": "1056000Mi", "nvidia.com/gpu": "8", "pods": "110", "ephemeral-storage": "100Gi"},
                 "conditions": [{"type": "MemoryPressure", "status": "False"}, {"type": "Ready", "status": "True"}]}})"));
  REQUIRE_MESSAGE(n.ok(), n.error());
  CHECK(n->name == "gpu-1");
  CHECK(n->allocatable[kCpu] == 127'900);
  CHECK(n->allocatable[kMemory] == Quantity{1'056'000} << 20);
  CHECK(n->allocatable[kGpu] == 8000);
  CHECK(n->max_pods == 110);
  CHECK(n->unschedulable);
  CHECK(n->ready);
  REQUIRE(n->taints.size() == 1);
  CHECK(n->taints[0].effect == TaintEffect::kNoSchedule);
  auto bad = read_node(parse(R"({"metadata": {"name": "n"}, "spec": {"taints": [{"key": "k", "effect": "Never"}]}})"));
  CHECK(bad.error() == "node n: spec.taints[0].effect: \"Never\" is not allowed; use one of NoSchedule, PreferNoSchedule, NoExecute");
  auto not_ready = read_node(parse(R"({"metadata": {"name": "n"}, "status": {"conditions": [{"type": "Ready", "status": "Unknown"}]}})"));
  CHECK_FALSE(not_ready->ready);
}
