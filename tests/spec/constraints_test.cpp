// Node constraints and taints in the spec layer: Kubernetes' matching (spec/constraints.hpp),
// every validation rule with its words (spec/validate.hpp), and reading them from YAML in both
// affinity shapes, merged from a job into its pod sets, with errors at their line and column.
#include "spec/constraints.hpp"

#include <doctest/doctest.h>

#include <functional>
#include <string>

#include "spec/limits.hpp"
#include "spec/validate.hpp"
#include "spec/yaml_read.hpp"

using namespace gpuq;
using namespace gpuq::spec;

namespace spec_constraints_test {

const std::map<std::string, std::string> kLabels = {{"zone", "z1"}, {"gen", "3"}, {"pool", "a"}};

NodeRequirement req(std::string key, LabelOperator op, std::vector<std::string> values = {}) {
  return NodeRequirement{std::move(key), op, std::move(values)};
}

std::string error_of(const std::function<void(Path&)>& f) {
  Path at("spec");
  try {
    f(at);
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string where_error(const NodeConstraints& c) {
  return error_of([&](Path& at) { validate(c, at); });
}

NodeConstraints with_affinity(std::vector<NodeRequirement> term) {
  NodeConstraints c;
  c.affinity = {std::move(term)};
  return c;
}

NodeConstraints with_toleration(Toleration t) {
  NodeConstraints c;
  c.tolerations = {std::move(t)};
  return c;
}

std::string taints_error(const std::vector<Taint>& taints) {
  return error_of([&](Path& at) { check_taints(taints, at); });
}

// A job read from YAML as `gpuq submit -f` reads it, or its error with file, line and column.
std::string job_error(const std::string& text, Submission* out = nullptr) {
  try {
    const yaml::Document doc = parse_document(text, "f.yaml");
    read_document(doc, "f.yaml", [&] {
      Path at;
      ResourceNames names;
      JobKeys keys;
      keys.run = true;
      keys.id_required = false;
      Submission s = read_job(doc.root(), at, names, keys);
      if (out) *out = std::move(s);
    });
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

std::string node_error(const std::string& text, NodeSpec* out = nullptr) {
  try {
    const yaml::Document doc = parse_document(text, "f.yaml");
    read_document(doc, "f.yaml", [&] {
      Path at;
      ResourceNames names;
      NodeSpec n = read_node(doc.root(), at, names);
      if (out) *out = std::move(n);
    });
  } catch (const SpecError& e) {
    return e.what();
  }
  return "(accepted)";
}

const std::string kJob = "queue: q\npods: [{resources: {gpu: 1}}]\n";

TEST_CASE("requirements match labels as Kubernetes' operators do") {
  CHECK(matches(req("zone", LabelOperator::kIn, {"z0", "z1"}), kLabels));
  CHECK_FALSE(matches(req("zone", LabelOperator::kIn, {"z2"}), kLabels));
  CHECK_FALSE(matches(req("rack", LabelOperator::kIn, {"r1"}), kLabels));
  CHECK(matches(req("zone", LabelOperator::kNotIn, {"z2"}), kLabels));
  CHECK(matches(req("rack", LabelOperator::kNotIn, {"r1"}), kLabels));  // no label: not in
  CHECK(matches(req("gen", LabelOperator::kExists), kLabels));
  CHECK(matches(req("rack", LabelOperator::kDoesNotExist), kLabels));
  CHECK(matches(req("gen", LabelOperator::kGt, {"2"}), kLabels));
  CHECK_FALSE(matches(req("gen", LabelOperator::kGt, {"3"}), kLabels));
  CHECK(matches(req("gen", LabelOperator::kLt, {"4"}), kLabels));
  CHECK_FALSE(matches(req("zone", LabelOperator::kLt, {"4"}), kLabels));  // "z1" is no integer
}

TEST_CASE("allows: every selector pair, one affinity term, every blocking taint tolerated") {
  NodeConstraints c;
  CHECK(allows(c, kLabels, {}));
  c.node_selector = {{"zone", "z1"}, {"pool", "a"}};
  CHECK(allows(c, kLabels, {}));
  c.node_selector["pool"] = "b";
  CHECK_FALSE(allows(c, kLabels, {}));
  c.node_selector.clear();
  c.affinity = {{req("zone", LabelOperator::kIn, {"z9"})}, {req("gen", LabelOperator::kExists)}};
  CHECK(allows(c, kLabels, {}));
  c.affinity = {{}};  // an empty term matches nothing
  CHECK_FALSE(allows(c, kLabels, {}));
  c.affinity.clear();
  const std::vector<Taint> taints = {{"spot", "", TaintEffect::kPreferNoSchedule},
                                     {"gpu", "broken", TaintEffect::kNoSchedule}};
  CHECK_FALSE(allows(c, kLabels, taints));
  REQUIRE(untolerated(c, taints) != nullptr);
  CHECK(untolerated(c, taints)->key == "gpu");  // PreferNoSchedule is never the one
  c.tolerations = {Toleration{"gpu", false, "broken", TaintEffect::kNoSchedule}};
  CHECK(allows(c, kLabels, taints));
  c.tolerations = {Toleration{"gpu", true, "", std::nullopt}};
  CHECK(allows(c, kLabels, taints));
  c.tolerations = {Toleration{"gpu", false, "ok", std::nullopt}};
  CHECK_FALSE(allows(c, kLabels, taints));
  c.tolerations = {Toleration{"", true, "", std::nullopt}};
  CHECK(allows(c, kLabels, taints));
}

TEST_CASE("a pod set's constraints merge onto its job's") {
  NodeConstraints job;
  job.node_selector = {{"zone", "z1"}, {"pool", "a"}};
  job.affinity = {{req("gen", LabelOperator::kExists)}};
  job.tolerations = {Toleration{"gpu", true, "", std::nullopt}};
  NodeConstraints own;
  own.node_selector = {{"pool", "b"}};
  own.tolerations = {Toleration{"spot", true, "", std::nullopt}};
  NodeConstraints m = merged(job, own);
  CHECK(m.node_selector == std::map<std::string, std::string>{{"zone", "z1"}, {"pool", "b"}});
  CHECK(m.affinity == job.affinity);  // the pod set lists no term: the job's stay
  CHECK(m.tolerations.size() == 2);
  own.affinity = {{req("zone", LabelOperator::kIn, {"z2"})}};
  CHECK(merged(job, own).affinity == own.affinity);
}

TEST_CASE(
    "validation: each rule on constraints and taints, with the field, the value and what is "
    "allowed") {
  NodeConstraints c;
  c.node_selector = {{"a b", "x"}};
  CHECK(where_error(c).rfind("spec.nodeSelector.a b: \"a b\" is not a label key: it holds ' '",
                             0) == 0);
  c.node_selector = {{"zone", "-z"}};
  CHECK(where_error(c).rfind("spec.nodeSelector.zone: \"-z\" is not a label value", 0) == 0);

  CHECK(where_error(with_affinity({req("zone", LabelOperator::kIn)})) ==
        "spec.affinity[0][0].values: is empty; operator In needs at least one value");
  CHECK(where_error(with_affinity({req("zone", LabelOperator::kNotIn)})) ==
        "spec.affinity[0][0].values: is empty; operator NotIn needs at least one value");
  CHECK(where_error(with_affinity({req("gen", LabelOperator::kExists, {"3"})})) ==
        "spec.affinity[0][0].values: lists 1 value; operator Exists takes none (it looks at the "
        "key only)");
  CHECK(where_error(with_affinity({req("gen", LabelOperator::kDoesNotExist, {"3", "4"})})) ==
        "spec.affinity[0][0].values: lists 2 values; operator DoesNotExist takes none (it looks at "
        "the key only)");
  CHECK(where_error(with_affinity({req("gen", LabelOperator::kGt, {"1", "2"})})) ==
        "spec.affinity[0][0].values: lists 2 values; operator Gt takes exactly one, an integer");
  CHECK(where_error(with_affinity({req("gen", LabelOperator::kLt, {"three"})})) ==
        "spec.affinity[0][0].values[0]: \"three\" is not an integer; operator Lt compares the "
        "label's value as a "
        "64-bit integer, e.g. \"4\"");
  CHECK(where_error(with_affinity({req("gen", LabelOperator::kGt, {"-3"})})) == "(accepted)");
  CHECK(where_error(with_affinity(
                        {req("zone", LabelOperator::kIn, {"z1"}), req("", LabelOperator::kExists)}))
            .rfind("spec.affinity[0][1].key: is empty", 0) == 0);
  CHECK(where_error(with_affinity({req("zone", LabelOperator::kIn, {"bad value"})}))
            .rfind("spec.affinity[0][0].values[0]: \"bad value\" is not a label value", 0) == 0);

  CHECK(where_error(with_toleration({"gpu", true, "x", std::nullopt})) ==
        "spec.tolerations[0].value: \"x\": a toleration with operator Exists takes no value (it "
        "tolerates every "
        "value)");
  CHECK(where_error(with_toleration({"", false, "", std::nullopt})) ==
        "spec.tolerations[0].operator: is Equal with an empty key; a toleration of every taint has "
        "no key and "
        "operator Exists");
  CHECK(where_error(with_toleration({"", true, "", TaintEffect::kNoSchedule})) == "(accepted)");
  CHECK(where_error(with_toleration({"gpu/", false, "", std::nullopt}))
            .rfind("spec.tolerations[0].key: \"gpu/\" is not a label key", 0) == 0);

  CHECK(taints_error({{"", "x", TaintEffect::kNoSchedule}}) ==
        "spec[0].key: is empty; a taint needs a key such as nvidia.com/gpu");
  CHECK(taints_error({{"gpu", "a b", TaintEffect::kNoSchedule}})
            .rfind("spec[0].value: \"a b\" is not a label value", 0) == 0);
  CHECK(taints_error(
            {{"gpu", "a", TaintEffect::kNoSchedule}, {"gpu", "b", TaintEffect::kNoSchedule}}) ==
        "spec[1]: key \"gpu\" with effect NoSchedule is listed twice (taints[0]); give each key "
        "and effect once");
  CHECK(taints_error({{"gpu", "a", TaintEffect::kNoSchedule},
                      {"gpu", "a", TaintEffect::kNoExecute}}) == "(accepted)");
}

TEST_CASE(
    "limits: nodeSelector pairs, affinity terms, requirements, values, tolerations and taints") {
  NodeConstraints c;
  for (std::size_t i = 0; i < limits::kNodeSelector; ++i)
    c.node_selector["k" + std::to_string(i)] = "v";
  CHECK(where_error(c) == "(accepted)");
  c.node_selector["one-more"] = "v";
  CHECK(where_error(c) == "spec.nodeSelector: has 33 pairs; at most 32 are allowed");

  c = {};
  c.affinity.assign(limits::kAffinityTerms + 1, {req("zone", LabelOperator::kExists)});
  CHECK(where_error(c) == "spec.affinity: lists 9 terms; at most 8 are allowed");
  c = with_affinity(std::vector<NodeRequirement>(limits::kTermRequirements + 1,
                                                 req("zone", LabelOperator::kExists)));
  CHECK(where_error(c) == "spec.affinity[0]: lists 17 requirements; at most 16 are allowed");
  c = with_affinity(
      {req("zone", LabelOperator::kIn, std::vector<std::string>(limits::kRequirementValues, "z"))});
  CHECK(where_error(c) == "(accepted)");
  c.affinity[0][0].values.push_back("z");
  CHECK(where_error(c) == "spec.affinity[0][0].values: lists 65 values; at most 64 are allowed");

  c = {};
  c.tolerations.assign(limits::kTolerations + 1, Toleration{"gpu", true, "", std::nullopt});
  CHECK(where_error(c) == "spec.tolerations: lists 33 tolerations; at most 32 are allowed");
  std::vector<Taint> taints;
  for (std::size_t i = 0; i <= limits::kTaints; ++i)
    taints.push_back({"k" + std::to_string(i), "", TaintEffect::kNoSchedule});
  CHECK(taints_error(taints) == "spec: lists 33 taints; at most 32 are allowed");
}

TEST_CASE("a job's constraints read from YAML: the list shape, merged into every pod set") {
  Submission s;
  REQUIRE(job_error(R"(queue: q
nodeSelector: {zone: z1, pool: a}
affinity:
  - [{key: gen, operator: Gt, values: ["2"]}, {key: rack, operator: DoesNotExist}]
  - [{key: gpuq.io/big, operator: Exists}]
tolerations: [{key: gpu, operator: Equal, value: broken, effect: NoSchedule}]
pods:
  - {name: driver, resources: {cpu: 1}}
  - name: workers
    count: 2
    resources: {gpu: 1}
    nodeSelector: {pool: b}
    affinity: [[{key: zone, operator: In, values: [z1, z2]}]]
    tolerations: [{operator: Exists, effect: ""}]
)",
                    &s) == "(accepted)");
  REQUIRE(s.job.pod_sets.size() == 2);
  const NodeConstraints& driver = s.job.pod_sets[0].where;
  CHECK(driver.node_selector == std::map<std::string, std::string>{{"zone", "z1"}, {"pool", "a"}});
  REQUIRE(driver.affinity.size() == 2);
  CHECK(driver.affinity[0] ==
        std::vector<NodeRequirement>{req("gen", LabelOperator::kGt, {"2"}),
                                     req("rack", LabelOperator::kDoesNotExist)});
  CHECK(driver.affinity[1] ==
        std::vector<NodeRequirement>{req("gpuq.io/big", LabelOperator::kExists)});
  CHECK(driver.tolerations ==
        std::vector<Toleration>{{"gpu", false, "broken", TaintEffect::kNoSchedule}});
  const NodeConstraints& workers = s.job.pod_sets[1].where;
  CHECK(workers.node_selector == std::map<std::string, std::string>{{"zone", "z1"}, {"pool", "b"}});
  CHECK(workers.affinity ==
        std::vector<std::vector<NodeRequirement>>{{req("zone", LabelOperator::kIn, {"z1", "z2"})}});
  CHECK(workers.tolerations ==
        std::vector<Toleration>{{"gpu", false, "broken", TaintEffect::kNoSchedule},
                                {"", true, "", std::nullopt}});
}

TEST_CASE("Kubernetes' own affinity shape reads the same terms") {
  Submission s;
  REQUIRE(job_error(kJob + R"(affinity:
  nodeAffinity:
    requiredDuringSchedulingIgnoredDuringExecution:
      nodeSelectorTerms:
        - matchExpressions:
            - {key: zone, operator: In, values: [z1]}
            - {key: gen, operator: Lt, values: ["5"]}
        - {}
)",
                    &s) == "(accepted)");
  const auto& terms = s.job.pod_sets[0].where->affinity;
  REQUIRE(terms.size() == 2);
  CHECK(terms[0] == std::vector<NodeRequirement>{req("zone", LabelOperator::kIn, {"z1"}),
                                                 req("gen", LabelOperator::kLt, {"5"})});
  CHECK(terms[1].empty());  // a term without requirements: no node, as in Kubernetes
}

TEST_CASE("constraints and taints refused in YAML at their line and column") {
  CHECK(job_error(kJob + "affinity: [[{key: zone, operator: Near, values: [z1]}]]\n") ==
        "f.yaml:3:35: affinity[0][0].operator: \"Near\" is not allowed; use one of In, NotIn, "
        "Exists, DoesNotExist, "
        "Gt, Lt");
  CHECK(job_error(kJob + "affinity: [[{key: zone, operator: In}]]\n") ==
        "f.yaml:3:13: affinity[0][0].values: is empty; operator In needs at least one value");
  CHECK(job_error(kJob + "affinity:\n  - - {key: gen, operator: Gt, values: [x]}\n") ==
        "f.yaml:4:41: affinity[0][0].values[0]: \"x\" is not an integer; operator Gt compares the "
        "label's value as "
        "a 64-bit integer, e.g. \"4\"");
  CHECK(job_error(kJob + "affinity: [{key: zone, operator: Exists}]\n") ==
        "f.yaml:3:12: affinity[0]: expected a list of requirements such as [{key: zone, operator: "
        "In, values: "
        "[z1]}], got a map");
  CHECK(job_error(kJob + "affinity: zone\n") ==
        "f.yaml:3:11: affinity: expected a list of terms such as [[{key: zone, operator: In, "
        "values: [z1]}]], or "
        "Kubernetes' {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: ...}}, got "
        "\"zone\"");
  CHECK(job_error(
            kJob +
            "affinity: {nodeAffinity: {preferredDuringSchedulingIgnoredDuringExecution: []}}\n") ==
        "f.yaml:3:76: affinity.nodeAffinity.preferredDuringSchedulingIgnoredDuringExecution: "
        "preferences are not "
        "supported: gpuq honours only requiredDuringSchedulingIgnoredDuringExecution; remove this "
        "key");
  CHECK(job_error(kJob + "affinity: {podAffinity: {}}\n") ==
        "f.yaml:3:25: affinity.podAffinity: is not supported: gpuq places pods by node labels and "
        "taints only; "
        "remove this key");
  CHECK(
      job_error(kJob + "affinity: {nodeAffinity: {requiredDuringSchedulingIgnoredDuringExecution: "
                       "{nodeSelectorTerms: "
                       "[]}}}\n") ==
      "f.yaml:3:95: "
      "affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: is "
      "empty; list at least one term, or leave out nodeAffinity");
  CHECK(job_error(kJob + "tolerations: [{key: gpu, operator: Exists, value: x}]\n") ==
        "f.yaml:3:51: tolerations[0].value: \"x\": a toleration with operator Exists takes no "
        "value (it tolerates "
        "every value)");
  CHECK(job_error(kJob + "tolerations: [{value: x}]\n") ==
        "f.yaml:3:15: tolerations[0].operator: is Equal with an empty key; a toleration of every "
        "taint has no key "
        "and operator Exists");
  CHECK(job_error(kJob + "tolerations: [{key: gpu, operator: Is}]\n") ==
        "f.yaml:3:36: tolerations[0].operator: \"Is\" is not allowed; use one of Equal, Exists");
  CHECK(job_error(kJob + "tolerations: [{key: gpu, efect: NoSchedule}]\n") ==
        "f.yaml:3:26: tolerations[0].efect: unknown key; did you mean effect? allowed here: key, "
        "operator, value, "
        "effect");
  CHECK(job_error(kJob + "nodeSelector: {zone: \"a b\"}\n")
            .rfind("f.yaml:3:22: nodeSelector.zone: \"a b\" is not a label value", 0) == 0);
  CHECK(job_error("queue: q\npods: [{resources: {gpu: 1}, nodeSelecter: {a: b}}]\n")
            .rfind("f.yaml:2:30: pods[0].nodeSelecter: unknown key; did you mean nodeSelector?",
                   0) == 0);

  NodeSpec n;
  CHECK(node_error("{name: n, flavor: f, capacity: {gpu: 8}, taints: [{key: gpu, value: broken, "
                   "effect: NoSchedule}, "
                   "{key: spot, effect: PreferNoSchedule}]}\n",
                   &n) == "(accepted)");
  CHECK(n.taints == std::vector<Taint>{{"gpu", "broken", TaintEffect::kNoSchedule},
                                       {"spot", "", TaintEffect::kPreferNoSchedule}});
  CHECK(node_error("{name: n, flavor: f, capacity: {gpu: 8}, taints: [{key: gpu}]}\n") ==
        "f.yaml:1:51: taints[0].effect: is required");
  CHECK(node_error(
            "{name: n, flavor: f, capacity: {gpu: 8}, taints: [{key: gpu, effect: Never}]}\n") ==
        "f.yaml:1:70: taints[0].effect: \"Never\" is not allowed; use one of NoSchedule, "
        "PreferNoSchedule, NoExecute");
  CHECK(
      node_error(
          "{name: n, flavor: f, capacity: {gpu: 8}, taints: [{value: x, effect: NoSchedule}]}\n") ==
      "f.yaml:1:51: taints[0].key: is required");
  CHECK(node_error("{name: n, flavor: f, capacity: {gpu: 8}, taints: [{key: g, effect: "
                   "NoSchedule}, {key: g, effect: "
                   "NoSchedule}]}\n") ==
        "f.yaml:1:81: taints[1]: key \"g\" with effect NoSchedule is listed twice (taints[0]); "
        "give each key and "
        "effect once");
}

}  // namespace spec_constraints_test
