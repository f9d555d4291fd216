// Node constraints and taints through the API: read from requests (a job's merged into each pod
// set, lists over their limit refused before they are copied, enums and rules in the YAML
// reader's words) and shown back (to_proto) so that a spec survives the round trip.
#include <doctest/doctest.h>

#include <string>

#include "api/from_proto.hpp"
#include "api/to_proto.hpp"
#include "spec/limits.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace api_constraints_proto_test {

using namespace gpuq;

namespace {

v1::JobSpec job() {
  v1::JobSpec j;
  j.set_queue("q");
  (*j.add_pod_sets()->mutable_resources())["gpu"] = "1";
  return j;
}

std::string job_error(const v1::JobSpec& j) {
  ResourceNames names;
  auto r = api::from_proto(j, names, PriorityClasses{});
  return r ? "(accepted)" : r.error();
}

std::string node_error(const v1::NodeSpec& n) {
  ResourceNames names;
  auto r = api::from_proto(n, names);
  return r ? "(accepted)" : r.error();
}

v1::NodeRequirement* requirement(v1::NodeSelectorTerm* t, const std::string& key,
                                 const std::string& op, std::vector<std::string> values = {}) {
  v1::NodeRequirement* r = t->add_match_expressions();
  r->set_key(key);
  r->set_operator_(op);
  for (auto& v : values) r->add_values(v);
  return r;
}

}  // namespace

TEST_CASE(
    "a job's constraints are merged into every pod set, which may add its own; they round-trip") {
  v1::JobSpec j = job();
  (*j.mutable_node_selector())["zone"] = "z1";
  requirement(j.add_affinity(), "gen", "Gt", {"2"});
  v1::Toleration* t = j.add_tolerations();
  t->set_key("gpu");
  t->set_operator_("Exists");
  t->set_effect("NoSchedule");
  v1::PodSet* workers = j.add_pod_sets();
  workers->set_name("workers");
  (*workers->mutable_resources())["gpu"] = "2";
  (*workers->mutable_node_selector())["zone"] = "z2";
  requirement(workers->add_affinity(), "pool", "In", {"a", "b"});
  workers->add_tolerations()->set_operator_("Exists");
  ResourceNames names;
  auto s = api::from_proto(j, names, PriorityClasses{});
  REQUIRE(s);
  const NodeConstraints& first = s->job.pod_sets[0].where;
  CHECK(first.node_selector == std::map<std::string, std::string>{{"zone", "z1"}});
  CHECK(first.affinity ==
        std::vector<std::vector<NodeRequirement>>{{{"gen", LabelOperator::kGt, {"2"}}}});
  CHECK(first.tolerations == std::vector<Toleration>{{"gpu", true, "", TaintEffect::kNoSchedule}});
  const NodeConstraints& second = s->job.pod_sets[1].where;
  CHECK(second.node_selector == std::map<std::string, std::string>{{"zone", "z2"}});
  CHECK(second.affinity ==
        std::vector<std::vector<NodeRequirement>>{{{"pool", LabelOperator::kIn, {"a", "b"}}}});
  CHECK(second.tolerations == std::vector<Toleration>{{"gpu", true, "", TaintEffect::kNoSchedule},
                                                      {"", true, "", std::nullopt}});

  // Shown back per pod set; read again, the same spec.
  const v1::JobSpec shown = api::to_proto(s->job, names);
  CHECK(shown.node_selector().empty());
  CHECK(shown.pod_sets(1).tolerations(1).operator_() == "Exists");
  CHECK(shown.pod_sets(0).tolerations(0).effect() == "NoSchedule");
  auto again = api::from_proto(shown, names, PriorityClasses{});
  REQUIRE(again);
  CHECK(again->job.pod_sets[0].where == first);
  CHECK(again->job.pod_sets[1].where == second);
}

TEST_CASE("bad constraints are refused with the path under spec and the YAML reader's words") {
  v1::JobSpec j = job();
  requirement(j.add_affinity(), "zone", "Near", {"z1"});
  CHECK(job_error(j) ==
        "spec.affinity[0][0].operator: \"Near\" is not allowed; use one of In, NotIn, Exists, "
        "DoesNotExist, Gt, Lt");
  j = job();
  requirement(j.mutable_pod_sets(0)->add_affinity(), "zone", "");
  CHECK(job_error(j) ==
        "spec.pods[0].affinity[0][0].operator: is required; use one of In, NotIn, Exists, "
        "DoesNotExist, Gt, Lt");
  j = job();
  requirement(j.mutable_pod_sets(0)->add_affinity(), "gen", "Lt", {"x"});
  CHECK(job_error(j) ==
        "spec.pods[0].affinity[0][0].values[0]: \"x\" is not an integer; operator Lt compares the "
        "label's value as "
        "a 64-bit integer, e.g. \"4\"");
  j = job();
  (*j.mutable_node_selector())["zone"] = "a b";
  CHECK(job_error(j).rfind("spec.nodeSelector.zone: \"a b\" is not a label value", 0) == 0);
  j = job();
  j.mutable_pod_sets(0)->add_tolerations()->set_operator_("Is");
  CHECK(job_error(j) ==
        "spec.pods[0].tolerations[0].operator: \"Is\" is not allowed; use one of Equal, Exists");
  j = job();
  j.add_tolerations()->set_value("x");
  CHECK(job_error(j) ==
        "spec.tolerations[0].operator: is Equal with an empty key; a toleration of every taint has "
        "no key and "
        "operator Exists");
}

TEST_CASE("constraint lists over their limit are refused by size; merged, a pod set over it too") {
  v1::JobSpec j = job();
  for (std::size_t i = 0; i <= spec::limits::kTolerations; ++i)
    j.add_tolerations()->set_operator_("Exists");
  CHECK(job_error(j) == "spec.tolerations: lists 33 tolerations; at most 32 are allowed");
  j = job();
  for (std::size_t i = 0; i <= spec::limits::kAffinityTerms; ++i)
    requirement(j.add_affinity(), "k", "Exists");
  CHECK(job_error(j) == "spec.affinity: lists 9 terms; at most 8 are allowed");
  j = job();
  v1::NodeSelectorTerm* term = j.mutable_pod_sets(0)->add_affinity();
  for (std::size_t i = 0; i <= spec::limits::kTermRequirements; ++i)
    requirement(term, "k", "Exists");
  CHECK(job_error(j) == "spec.pods[0].affinity[0]: lists 17 requirements; at most 16 are allowed");
  j = job();
  requirement(j.add_affinity(), "k", "In",
              std::vector<std::string>(spec::limits::kRequirementValues + 1, "v"));
  CHECK(job_error(j) == "spec.affinity[0][0].values: lists 65 values; at most 64 are allowed");
  j = job();
  for (int i = 0; i < 20; ++i) (*j.mutable_node_selector())["j" + std::to_string(i)] = "v";
  CHECK(job_error(j) == "(accepted)");
  for (int i = 0; i < 20; ++i)
    (*j.mutable_pod_sets(0)->mutable_node_selector())["p" + std::to_string(i)] = "v";
  CHECK(job_error(j) == "spec.pods[0].nodeSelector: has 40 pairs; at most 32 are allowed");
}

TEST_CASE("a node's taints: read, checked, shown back") {
  v1::NodeSpec n;
  n.set_name("n1");
  n.set_flavor("h100");
  (*n.mutable_capacity())["gpu"] = "8";
  v1::Taint* t = n.add_taints();
  t->set_key("gpu");
  t->set_value("broken");
  t->set_effect("NoSchedule");
  ResourceNames names;
  auto s = api::from_proto(n, names);
  REQUIRE(s);
  CHECK(s->taints == std::vector<Taint>{{"gpu", "broken", TaintEffect::kNoSchedule}});
  const v1::NodeSpec shown = api::to_proto(*s, names);
  REQUIRE(shown.taints_size() == 1);
  CHECK(shown.taints(0).effect() == "NoSchedule");
  t->set_effect("");
  CHECK(node_error(n) ==
        "spec.taints[0].effect: is required; use one of NoSchedule, PreferNoSchedule, NoExecute");
  t->set_effect("Sometimes");
  CHECK(node_error(n) ==
        "spec.taints[0].effect: \"Sometimes\" is not allowed; use one of NoSchedule, "
        "PreferNoSchedule, NoExecute");
  t->set_effect("NoExecute");
  t->set_key("");
  CHECK(node_error(n) ==
        "spec.taints[0].key: is empty; a taint needs a key such as nvidia.com/gpu");
  t->set_key("gpu");
  for (std::size_t i = 0; i < spec::limits::kTaints; ++i) {
    v1::Taint* more = n.add_taints();
    more->set_key("k" + std::to_string(i));
    more->set_effect("NoSchedule");
  }
  CHECK(node_error(n) == "spec.taints: lists 33 taints; at most 32 are allowed");
}

}  // namespace api_constraints_proto_test
