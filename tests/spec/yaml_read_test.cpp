// Specs from YAML (spec/yaml_read.hpp): what is read, and how a bad field is refused, with its
// path and its line and column. Whole-file front ends (scenarios, apply, gpuqd's config) have
// their own tests; this is the layer they share.
#include <doctest/doctest.h>

#include <string>

#include "spec/yaml_read.hpp"

using namespace gpuq;
using namespace gpuq::spec;

namespace {

// Reads `text` with `read` as a front end does: an error gets the line and column of the field
// its path names.
template <class F>
std::string error_of(const std::string& text, F read) {
  try {
    const yaml::Document doc = parse_document(text, "f.yaml");
    read_document(doc, "f.yaml", [&] {
      Path at;
      (void)read(doc.root(), at);
    });
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string job_error(const std::string& text) {
  ResourceNames names;
  JobKeys keys;
  keys.run = true;
  keys.id_required = false;
  return error_of(text, [&](yaml::Node n, Path& at) { return read_job(n, at, names, keys); });
}

std::string node_error(const std::string& text) {
  ResourceNames names;
  return error_of(text, [&](yaml::Node n, Path& at) { return read_node(n, at, names); });
}

}  // namespace

TEST_CASE("a queue, a node and a job read from YAML") {
  ResourceNames names;
  const auto doc = yaml::parse_one(R"(
queue:
  name: team-a
  cohort: research
  weight: 2.5
  quotas:
    - flavor: h100
      resources:
        gpu: {nominal: 8, borrowingLimit: 4}
        rdma/hca: {nominal: 16}
  preemption: {withinQueue: LowerPriority, reclaimWithinCohort: Any, borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 10}}
node: {name: n1, flavor: h100, capacity: {gpu: 8, memory: 1Ti}, labels: {gpuq.io/rack: r1}, state: Cordoned}
job:
  queue: team-a
  priority: high
  pods: [{name: workers, count: 2, resources: {gpu: 500m}}]
  command: [python, train.py]
  env: {EPOCHS: "3"}
  image: nvcr.io/nvidia/pytorch:24.05-py3
)");
  Path at;
  const QueueSpec q = read_queue(doc.root().find("queue"), at, names);
  CHECK(q.name.value == "team-a");
  CHECK(q.weight == 2.5);
  REQUIRE(q.quotas.size() == 1);
  REQUIRE(q.quotas[0].resources.size() == 2);
  CHECK(q.quotas[0].resources[0].second.nominal == 8000);
  CHECK(*q.quotas[0].resources[0].second.borrowing_limit == 4000);
  CHECK(names.name(q.quotas[0].resources[1].first) == "rdma/hca");
  CHECK(q.preemption.borrow_within_cohort == BorrowWithinCohortPolicy::kLowerPriority);
  CHECK(*q.preemption.borrow_max_priority_threshold == 10);
  const NodeSpec n = read_node(doc.root().find("node"), at, names);
  CHECK(n.capacity[kMemory] == Quantity{1} << 40);
  CHECK(n.state == NodeState::kCordoned);
  CHECK(n.labels.at("gpuq.io/rack") == "r1");
  const PriorityClasses classes;
  JobKeys keys;
  keys.run = true;
  keys.id_required = false;
  keys.classes = &classes;
  const Submission s = read_job(doc.root().find("job"), at, names, keys);
  CHECK(s.job.priority == 100);
  CHECK(s.priority == "high");
  CHECK(s.job.pod_sets[0].count == 2);
  CHECK(s.job.pod_sets[0].per_pod[kGpu] == 500);
  CHECK(s.run.command == std::vector<std::string>{"python", "train.py"});
  CHECK(s.run.env.at("EPOCHS") == "3");
  CHECK(s.run.image == "nvcr.io/nvidia/pytorch:24.05-py3");
  CHECK_FALSE(s.run.working_dir_implicit);  // a job file's workingDir is asked for
}

TEST_CASE("gpuModels: the GPU models a job accepts, a required affinity on the model label of every pod set") {
  ResourceNames names;
  JobKeys keys;
  keys.id_required = false;
  Path at;
  const auto doc = yaml::parse_one(
      "queue: q\ngpuModels: [V100M16, V100M32]\n"
      "pods:\n  - {name: a, resources: {gpu: 1}}\n"
      "  - name: b\n    resources: {gpu: 1}\n"
      "    affinity: [[{key: zone, operator: In, values: [x]}], [{key: zone, operator: In, values: [y]}]]\n");
  const Submission s = read_job(doc.root(), at, names, keys);
  const NodeRequirement model{kGpuModelLabel, LabelOperator::kIn, {"V100M16", "V100M32"}};
  REQUIRE(s.job.pod_sets[0].where->affinity.size() == 1);
  CHECK(s.job.pod_sets[0].where->affinity[0] == std::vector<NodeRequirement>{model});
  // Each of a pod set's own terms gets it: the model holds whichever term matches.
  REQUIRE(s.job.pod_sets[1].where->affinity.size() == 2);
  for (const auto& term : s.job.pod_sets[1].where->affinity) {
    REQUIRE(term.size() == 2);
    CHECK(term[1] == model);
  }
  CHECK(job_error("queue: q\npods: [{resources: {gpu: 1}}]\ngpuModels: []\n") ==
        "f.yaml:3:12: gpuModels: is empty; list the GPU models the job accepts, or leave the key out");
}

TEST_CASE("errors name the field, its line and column, the value and what is allowed") {
  CHECK(job_error("queue: q\npods: [{resources: {gpu: lots}}]\n") ==
        "f.yaml:2:26: pods[0].resources.gpu: quantity \"lots\": not a number; use a number with an optional "
        "suffix, e.g. 2, 500m, 1.5, 16Gi");
  CHECK(job_error("queue: q\npods: [{resources: {gpu: 1}}]\ngracePerod: 5\n") ==
        "f.yaml:3:1: gracePerod: unknown key; did you mean gracePeriod? allowed here: id, queue, name, owner, "
        "priority, pods, flavors, preemptible, exclusive, maxRuntime, expectedRuntime, gracePeriod, onNodeLoss, command, env, "
        "workingDir, image, notify, nodeSelector, affinity, tolerations, gpuModels");
  CHECK(job_error("queue: q\npods: [{resources: {gpu: 1}}]\nimage: \"my image\"\n") ==
        "f.yaml:3:8: image: \"my image\" is not an image: it holds whitespace; use a reference such as "
        "nvcr.io/nvidia/pytorch:24.05-py3 (at most 512 bytes, no whitespace or control characters)");
  CHECK(job_error("queue: q\npods: [{resources: {gpu: 1}}]\nimage: [a]\n") ==
        "f.yaml:3:8: image: expected a string, got a list");
  CHECK(job_error("pods: [{resources: {gpu: 1}}]\n") == "f.yaml:1:1: queue: is required");
  // A check made on the typed values (spec/validate.hpp) is placed at its field too.
  CHECK(job_error("queue: q\npods:\n  - resources: {gpu: 1}\n    name: a/b\n") ==
        "f.yaml:4:11: pods[0].name: \"a/b\" is not a pod set name: it holds '/'; use letters, digits, '-', "
        "'_' and '.', beginning with a letter or a digit");
  CHECK(job_error("queue: q\npods: [{resources: {gpu: 1}}]\nonNodeLoss: Sometimes\n") ==
        "f.yaml:3:13: onNodeLoss: \"Sometimes\" is not allowed; use one of Requeue, Fail");
  CHECK(node_error("{name: n1, flavor: h100, capacity: {gpu: 8}, labels: {zone: \"a b\"}}\n")
            .rfind("f.yaml:1:61: labels.zone: \"a b\" is not a label value", 0) == 0);
}

TEST_CASE("a node with 200000 labels is refused before any label is read, naming the limit") {
  std::string text = "name: n1\nflavor: h100\ncapacity: {gpu: 8}\nlabels:\n";
  for (int i = 0; i < 200'000; ++i) text += "  l" + std::to_string(i) + ": v\n";
  CHECK(node_error(text) == "f.yaml:5:3: labels: has 200000 labels; at most 1024 are allowed");
}

TEST_CASE("a job with 100000 env entries or a 100000-argument command is refused, naming the limit") {
  std::string env = "queue: q\npods: [{resources: {gpu: 1}}]\nenv:\n";
  for (int i = 0; i < 100'000; ++i) env += "  V" + std::to_string(i) + ": x\n";
  CHECK(job_error(env) == "f.yaml:4:3: env: has 100000 variables; at most 4096 are allowed");
  std::string cmd = "queue: q\npods: [{resources: {gpu: 1}}]\ncommand:\n";
  for (int i = 0; i < 100'000; ++i) cmd += "  - a\n";
  CHECK(job_error(cmd) == "f.yaml:4:3: command: has 100000 arguments; at most 4096 are allowed");
}
