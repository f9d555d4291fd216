// Kueue objects to gpuq queue specs and back (spec/kueue.hpp), on the Kueue documentation's
// examples (tests/spec/kueue/, each naming its source): each field's mapping, each warning, each
// refusal naming the object, the field and the value, and the round trip through write_kueue.
#include <doctest/doctest.h>

#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <string>
#include <tuple>

#include "spec/enums.hpp"
#include "spec/kueue.hpp"

using namespace gpuq;
using namespace gpuq::spec;

namespace kueue_test {

std::string example(const std::string& name) {
  std::ifstream in(std::string(GPUQ_KUEUE_EXAMPLES) + "/" + name);
  REQUIRE(in.good());
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

KueueImport read_text(const std::string& text, const std::string& source = "k.yaml") {
  return read_kueue(yaml::parse_stream(text), source);
}

std::string error_of(const std::string& text) {
  try {
    (void)read_text(text);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

const ResourceQuota& quota(const QueueSpec& q, std::size_t flavor, ResourceId r) {
  for (const auto& [id, rq] : q.quotas.at(flavor).resources)
    if (id == r) return rq;
  FAIL("no quota for resource " << int(r));
  throw 0;
}

// Everything a Kueue ClusterQueue can say, compared field by field.
void same_specs(const KueueImport& a, const KueueImport& b) {
  REQUIRE(a.queues.size() == b.queues.size());
  for (std::size_t i = 0; i < a.queues.size(); ++i) {
    const QueueSpec& x = a.queues[i];
    const QueueSpec& y = b.queues[i];
    CHECK(x.name == y.name);
    CHECK(x.cohort == y.cohort);
    CHECK(x.weight == y.weight);
    CHECK(x.strategy == y.strategy);
    CHECK(x.preemption.within_queue == y.preemption.within_queue);
    CHECK(x.preemption.reclaim_within_cohort == y.preemption.reclaim_within_cohort);
    CHECK(x.preemption.borrow_within_cohort == y.preemption.borrow_within_cohort);
    CHECK(x.preemption.borrow_max_priority_threshold == y.preemption.borrow_max_priority_threshold);
    REQUIRE(x.quotas.size() == y.quotas.size());
    for (std::size_t f = 0; f < x.quotas.size(); ++f) {
      CHECK(x.quotas[f].flavor == y.quotas[f].flavor);
      // By resource name: the export writes a flavor's resources sorted by name.
      using Row = std::tuple<Quantity, std::optional<Quantity>, std::optional<Quantity>>;
      const auto rows = [](const FlavorQuota& fq, const ResourceNames& names) {
        std::map<std::string, Row> out;
        for (const auto& [r, quota] : fq.resources)
          out[names.name(r)] = Row{quota.nominal, quota.borrowing_limit, quota.lending_limit};
        return out;
      };
      CHECK(rows(x.quotas[f], a.names) == rows(y.quotas[f], b.names));
    }
  }
}

KueueImport round_trip(const KueueImport& in) {
  std::vector<std::string> warnings;
  const std::string text = write_kueue(in.queues, in.names, warnings);
  CHECK(warnings.empty());
  KueueImport back = read_text(text, "export.yaml");
  CHECK(back.warnings.empty());
  return back;
}

TEST_CASE("kueue: the single ClusterQueue setup maps its quotas; the LocalQueue is reported") {
  const KueueImport k = read_text(example("single-clusterqueue-setup.yaml"), "setup.yaml");
  CHECK(k.flavors == std::vector<std::string>{"default-flavor"});
  REQUIRE(k.queues.size() == 1);
  const QueueSpec& q = k.queues[0];
  CHECK(q.name.value == "cluster-queue");
  CHECK(q.cohort.empty());
  CHECK(q.weight == 1.0);
  CHECK(q.strategy == QueueingStrategy::kBestEffortFIFO);
  REQUIRE(q.quotas.size() == 1);
  CHECK(q.quotas[0].flavor == "default-flavor");
  REQUIRE(q.quotas[0].resources.size() == 2);
  CHECK(q.quotas[0].resources[0].first == kCpu);
  CHECK(quota(q, 0, kCpu).nominal == 9000);  // millicores
  CHECK_FALSE(quota(q, 0, kCpu).borrowing_limit);
  CHECK_FALSE(quota(q, 0, kCpu).lending_limit);
  CHECK(quota(q, 0, kMemory).nominal == 36LL << 30);
  CHECK(q.preemption.within_queue == WithinQueuePolicy::kNever);
  // namespaceSelector {} (every namespace) is what gpuq does anyway: no warning for it.
  CHECK(k.warnings == std::vector<std::string>{
                          "setup.yaml:24:1: LocalQueue default/user-queue is ignored: gpuq has no "
                          "namespaces: jobs name the queue itself (gpuq submit -q cluster-queue)"});
  same_specs(k, round_trip(k));
}

TEST_CASE("kueue: pods quota is warned about and left out") {
  const KueueImport k = read_text(example("cluster-queue-pods.yaml"), "pods.yaml");
  REQUIRE(k.queues.size() == 1);
  CHECK(k.queues[0].quotas[0].resources.size() == 2);
  CHECK(k.warnings == std::vector<std::string>{
                          "pods.yaml:10:41: ClusterQueue cluster-queue: "
                          "spec.resourceGroups[0].coveredResources[2] is ignored: gpuq does not count "
                          "pods against a quota (a queue's maxPodsPerJob caps one job's pods)"});
  same_specs(k, round_trip(k));
}

TEST_CASE("kueue: two resource groups become the flavors in order, with a warning") {
  const KueueImport k = read_text(example("resource-groups.yaml"), "rg.yaml");
  REQUIRE(k.queues.size() == 1);
  const QueueSpec& q = k.queues[0];
  REQUIRE(q.quotas.size() == 4);
  CHECK(q.quotas[0].flavor == "spot");
  CHECK(q.quotas[1].flavor == "on-demand");
  CHECK(q.quotas[2].flavor == "vendor1");
  CHECK(q.quotas[3].flavor == "vendor2");
  CHECK(quota(q, 1, kCpu).nominal == 18000);
  CHECK(quota(q, 1, kMemory).nominal == 72LL << 30);
  CHECK(quota(q, 2, kGpu).nominal == 10000);  // "gpu" is gpuq's gpu, in milli-GPU
  REQUIRE(k.warnings.size() == 2);
  CHECK(k.warnings[0].find("rg.yaml:10:41: ClusterQueue cluster-queue: "
                           "spec.resourceGroups[0].coveredResources[2] is ignored") == 0);
  CHECK(k.warnings[1].find("rg.yaml:28:5: ClusterQueue cluster-queue: spec.resourceGroups[1]: gpuq "
                           "gives a job one flavor for all its resources") == 0);
  // Exported, each group is written back as it was (spot/on-demand: cpu, memory; vendors: gpu).
  std::vector<std::string> warnings;
  const std::string text = write_kueue(k.queues, k.names, warnings);
  CHECK(text.find("coveredResources: [\"cpu\", \"memory\"]") != std::string::npos);
  CHECK(text.find("coveredResources: [\"nvidia.com/gpu\"]") != std::string::npos);
  const KueueImport back = read_text(text);
  same_specs(k, back);
  REQUIRE(back.warnings.size() == 1);  // the second group's, again
}

TEST_CASE("kueue: cohort, borrowingLimit and lendingLimit") {
  const KueueImport k = read_text(example("cohort-borrowing.yaml"));
  CHECK(k.warnings.empty());
  REQUIRE(k.queues.size() == 2);
  CHECK(k.queues[0].name.value == "team-a-cq");
  CHECK(k.queues[0].cohort == "team-ab");
  CHECK(quota(k.queues[0], 0, kCpu).nominal == 9000);
  CHECK(quota(k.queues[0], 0, kCpu).borrowing_limit == 1000);
  CHECK_FALSE(quota(k.queues[0], 0, kCpu).lending_limit);
  CHECK(k.queues[1].cohort == "team-ab");
  CHECK(quota(k.queues[1], 0, kCpu).lending_limit == 1000);
  CHECK_FALSE(quota(k.queues[1], 0, kCpu).borrowing_limit);
  CHECK(quota(k.queues[1], 0, kMemory).nominal == 48LL << 30);
  same_specs(k, round_trip(k));
}

TEST_CASE("kueue: preemption, strategy and weight map; the rest is warned about field by field") {
  const KueueImport k = read_text(example("preemption.yaml"), "p.yaml");
  REQUIRE(k.queues.size() == 1);
  const QueueSpec& q = k.queues[0];
  CHECK(q.strategy == QueueingStrategy::kStrictFIFO);
  CHECK(q.weight == 0.5);
  CHECK(q.preemption.within_queue == WithinQueuePolicy::kLowerPriority);
  CHECK(q.preemption.reclaim_within_cohort == ReclaimPolicy::kAny);
  CHECK(q.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority);
  CHECK(q.preemption.borrow_max_priority_threshold == 100);
  CHECK(quota(q, 0, kGpu).nominal == 8000);  // nvidia.com/gpu
  CHECK(q.quotas[0].resources[0].first == kGpu);
  const std::vector<std::string> want = {
      "p.yaml:11:5: ClusterQueue team-a-cq: spec.namespaceSelector is ignored: gpuq queues are not "
      "bound to namespaces",
      "p.yaml:36:5: ClusterQueue team-a-cq: spec.flavorFungibility is ignored: gpuq tries a queue's "
      "flavors in order and takes the first where the job fits (borrowing included) before "
      "preempting",
      "p.yaml:38:15: ClusterQueue team-a-cq: spec.stopPolicy is ignored: gpuq queues cannot be held: "
      "the queue admits jobs",
      "p.yaml:45:15: Cohort team-ab: spec.parentName is ignored: gpuq cohorts are flat: its "
      "ClusterQueues borrow only from each other"};
  CHECK(k.warnings == want);
  same_specs(k, round_trip(k));
}

TEST_CASE("kueue: refusals name the object, the field and the value") {
  const std::string head =
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: ClusterQueue\nmetadata: {name: q}\nspec:\n";
  const std::string groups =
      "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n      resources:\n"
      "      - {name: cpu, nominalQuota: 4}\n";
  CHECK(error_of(head + groups + "  preemption: {withinClusterQueue: Sometimes}\n") ==
        "k.yaml:11:36: ClusterQueue \"q\": spec.preemption.withinClusterQueue: \"Sometimes\" is not "
        "allowed; use one of Never, LowerPriority, LowerOrNewerEqualPriority");
  CHECK(error_of(head + groups + "  preemption: {borrowWithinCohort: {policy: Always}}\n") ==
        "k.yaml:11:45: ClusterQueue \"q\": spec.preemption.borrowWithinCohort.policy: \"Always\" is "
        "not allowed; use one of Never, LowerPriority");
  CHECK(error_of(head + groups + "  queueingStrategy: Random\n") ==
        "k.yaml:11:21: ClusterQueue \"q\": spec.queueingStrategy: \"Random\" is not allowed; use one "
        "of BestEffortFIFO, StrictFIFO");
  CHECK(error_of(head + "  cohort: x\n") ==
        "k.yaml:5:3: ClusterQueue \"q\": spec: has no resourceGroups: Kueue admits nothing to such a "
        "ClusterQueue, while a gpuq queue without quotas is limited only by free capacity; give it a "
        "resource group");
  CHECK(error_of(head + "  resourceGroups:\n  - coveredResources: [cpu, memory]\n    flavors:\n"
                        "    - name: f\n      resources:\n      - {name: cpu, nominalQuota: 4}\n") ==
        "k.yaml:10:7: ClusterQueue \"q\": spec.resourceGroups[0].flavors[0].resources: lists cpu; it "
        "must list the group's coveredResources in their order (cpu, memory)");
  CHECK(error_of(head + "  resourceGroups:\n  - coveredResources: [cpu]\n    flavors:\n    - name: f\n"
                        "      resources:\n      - {name: cpu, nominalQuota: lots}\n")
            .find("k.yaml:10:35: ClusterQueue \"q\": "
                  "spec.resourceGroups[0].flavors[0].resources[0].nominalQuota: ") == 0);
  CHECK(error_of(head + groups + "  cohortt: x\n").find("spec.cohortt: unknown key; did you mean cohort?") !=
        std::string::npos);
  CHECK(error_of("apiVersion: kueue.x-k8s.io/v2\nkind: ClusterQueue\nmetadata: {name: q}\n") ==
        "k.yaml:1:13: apiVersion: \"kueue.x-k8s.io/v2\" is not a version gpuq reads; use "
        "kueue.x-k8s.io/v1beta1, v1beta2 or v1alpha1");
}

TEST_CASE("kueue: other objects are warned about and skipped") {
  const KueueImport k = read_text(
      "apiVersion: v1\nkind: Namespace\nmetadata: {name: team-a}\n---\n"
      "apiVersion: kueue.x-k8s.io/v1beta1\nkind: WorkloadPriorityClass\nmetadata: {name: p}\nvalue: 10\n"
      "---\napiVersion: kueue.x-k8s.io/v1beta1\nkind: ResourceFlavor\nmetadata: {name: spot, labels: {a: b}}\n"
      "spec: {nodeLabels: {instance: spot}, tolerations: [], topologyName: t}\n");
  CHECK(k.queues.empty());
  CHECK(k.flavors == std::vector<std::string>{"spot"});
  REQUIRE(k.warnings.size() == 6);
  CHECK(k.warnings[0] == "k.yaml:1:1: Namespace (v1) is ignored: not a Kueue object");
  CHECK(k.warnings[1] ==
        "k.yaml:5:1: WorkloadPriorityClass is ignored: gpuq applies ClusterQueue, ResourceFlavor, "
        "Cohort and LocalQueue only");
  CHECK(k.warnings[2] == "k.yaml:12:32: ResourceFlavor spot: metadata.labels is ignored: gpuq keeps no "
                         "Kubernetes object metadata");
  CHECK(k.warnings[3] == "k.yaml:13:20: ResourceFlavor spot: spec.nodeLabels is ignored: gpuq nodes name "
                         "their flavor (a node's flavor: spot); labels do not pick a flavor's nodes");
  CHECK(k.warnings[5].find("spec.topologyName is ignored") != std::string::npos);
}

TEST_CASE("kueue: export warns about what Kueue cannot say and refuses flavors it cannot group") {
  QueueSpec a;
  a.name = QueueName("a");
  a.max_pending_jobs = 10;
  a.quotas = {{"h100", {{kGpu, {8000, {}, {}}}}}};
  QueueSpec none;
  none.name = QueueName("none");
  ResourceNames names;
  std::vector<std::string> warnings;
  a.kubernetes.ns = "ml";
  a.kubernetes.pod_template = "{}";
  const std::string text = write_kueue({a, none}, names, warnings);
  CHECK(warnings == std::vector<std::string>{
                        "queue a: maxPendingJobs 10 is not exported: Kueue's ClusterQueue has no such "
                        "field",
                        "queue a: kubernetes (namespace ml) is not exported: Kueue's ClusterQueue has no such "
                        "field",
                        "queue none is not exported: it has no quotas (limited only by free capacity), "
                        "and a Kueue ClusterQueue without resourceGroups admits nothing"});
  CHECK(text.find("kind: ResourceFlavor\nmetadata:\n  name: \"h100\"") != std::string::npos);
  const KueueImport back = read_text(text);
  REQUIRE(back.queues.size() == 1);
  CHECK(quota(back.queues[0], 0, kGpu).nominal == 8000);

  QueueSpec mixed;
  mixed.name = QueueName("mixed");
  mixed.quotas = {{"h100", {{kGpu, {8000, {}, {}}}, {kCpu, {1000, {}, {}}}}}, {"a100", {{kGpu, {8000, {}, {}}}}}};
  try {
    (void)write_kueue({mixed}, names, warnings);
    FAIL("accepted");
  } catch (const SpecError& e) {
    CHECK(std::string(e.what()).find("queue \"mixed\": flavor \"a100\" lists gpu with other resources "
                                     "than the flavors before it") == 0);
  }
}

}  // namespace kueue_test
