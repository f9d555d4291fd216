#pragma once
// Specs from YAML documents (spec/yaml.hpp), with the keys of the scenario format
// (docs/reference/scenarios.md), which gpuqd's config, `gpuq apply` and job files share. Every error
// is a SpecError naming the field's path and its line and column; unknown keys are refused with
// the nearest allowed key as a suggestion. Each spec is checked with spec/validate.hpp before it
// is returned.
//
// The small readers below are for front ends that read keys of their own (a scenario's running
// jobs, gpuqd's `local:` block): they keep the same words and the same locations.
#include <initializer_list>
#include <map>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "spec/error.hpp"
#include "spec/types.hpp"
#include "spec/values.hpp"
#include "spec/yaml.hpp"

namespace gpuq::spec {

using Keys = std::span<const std::string_view>;

[[noreturn]] void fail_at(yaml::Node n, const Path& at, std::string reason);
void expect_map(yaml::Node n, const Path& at);
void expect_list(yaml::Node n, const Path& at);
// A scalar's text; `what` names what was expected when the node is not a scalar.
std::string_view text_of(yaml::Node n, const Path& at, const char* what = "a string");
std::string string_of(yaml::Node n, const Path& at);
std::int64_t int_of(yaml::Node n, const Path& at);
std::int32_t int32_of(yaml::Node n, const Path& at);
double number_of(yaml::Node n, const Path& at);
bool bool_of(yaml::Node n, const Path& at);
Quantity quantity_of(yaml::Node n, ResourceId r, const Path& at);
template <class E>
E enum_of(yaml::Node n, const Path& at);
// A resource name (a map's key; `at` is the map's path), interned into `names`.
ResourceId resource_of(yaml::Node key, Path& at, ResourceNames& names);
// {name: quantity, ...}: resources interned into `names`.
ResourceVec resources_of(yaml::Node n, Path& at, ResourceNames& names);
// {key: string, ...}, refused before it is read when it has more than `max_entries` (named
// `what` in the error: "labels", "variables").
std::map<std::string, std::string> string_map_of(yaml::Node n, Path& at, std::size_t max_entries,
                                                 const char* what);

// Runs f(); a SpecError from it that has no line and column yet gets `n`'s, or those of the node
// its path leads to below `n` (whose own path is `at`).
template <class F>
auto located(yaml::Node n, const Path& at, F&& f) -> decltype(f());

// Calls f(key, value) for each entry of the map `n`, with the key pushed on `at`. A key not in
// `allowed` (nor in `also`) is refused with the allowed keys and the nearest one.
template <class F>
void for_each_key(yaml::Node n, Path& at, std::initializer_list<std::string_view> allowed, F&& f,
                  Keys also = {});
// Each of `keys` must be in the map `n` ("<path>.<key>: is required" otherwise).
void require(yaml::Node n, Path& at, std::initializer_list<std::string_view> keys);
void refuse_unknown_key(yaml::Node key, const Path& at,
                        std::initializer_list<std::string_view> allowed, Keys also);

// A list of at most `max` strings (`what` names them in the error).
std::vector<std::string> read_names(yaml::Node v, Path& at, std::size_t max, const char* what);

// The specs. `also`: keys the caller reads itself (a scenario queue's usageHistory).
QueueSpec read_queue(yaml::Node n, Path& at, ResourceNames& names, Keys also = {});
// A Queue object as Kubernetes holds it (deploy/kubernetes/crd-queue.yaml): apiVersion
// gpuq.io/v1alpha1, kind Queue, metadata.name its name, spec its keys but name (errors name
// spec.<key>); status and other metadata are ignored.
inline constexpr std::string_view kQueueApiVersion = "gpuq.io/v1alpha1";
QueueSpec read_queue_object(yaml::Node n, Path& at, ResourceNames& names);
// A queue's kubernetes.podTemplate given as JSON text (the API's pod_template_json; `at` is its
// path): parsed, checked as read_queue checks the YAML key (a map of metadata and spec; no
// spec.nodeName or spec.schedulerName, which gpuq sets; at most one container), and returned as
// spec/yaml_json.hpp writes it. "" for "". Errors name the field, without a line and column.
std::string pod_template_from_json(std::string_view json, Path& at);
// A queue's kubernetes block (yaml_kubernetes.cpp).
QueueKubernetes read_queue_kubernetes(yaml::Node n, Path& at);
NodeSpec read_node(yaml::Node n, Path& at, ResourceNames& names, Keys also = {});

// Node constraints and taints (yaml_constraints.cpp), each checked where it is read, so an
// error names the key as written. affinity: a list of terms, each a list of {key, operator,
// values} (terms ORed, a term's requirements ANDed), or Kubernetes' own {nodeAffinity:
// {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions:
// [...]}]}}}.
std::map<std::string, std::string> read_node_selector(yaml::Node n, Path& at);
std::vector<std::vector<NodeRequirement>> read_affinity(yaml::Node n, Path& at);
std::vector<Toleration> read_tolerations(yaml::Node n, Path& at);
std::vector<Taint> read_taints(yaml::Node n, Path& at);

struct JobKeys {
  bool id_required = true;
  // command, env, workingDir, image and onNodeLoss (a job file for `gpuq submit -f`).
  bool run = false;
  // Resolve the priority into job.priority with these classes; null: keep only the text (the
  // server resolves it).
  const PriorityClasses* classes = nullptr;
  Keys also;  // read by the caller (a scenario's running jobs: admittedAt, nodes, flavor)
};
Submission read_job(yaml::Node n, Path& at, ResourceNames& names, const JobKeys& keys);

// `priorityClasses: {name: integer, ...}`.
PriorityClasses read_priority_classes(yaml::Node n, Path& at);
// The cluster-wide settings among a document's top-level keys: placement, nodeReservation,
// topology.levels and fairSharing (enabled, preemptionStrategies, usageHalfLife). Other keys
// are left to the caller.
SchedulingPolicy read_policy(yaml::Node root, Path& at);

// The entry of every YAML front end: the one document of `text` (several with content are an
// error), errors naming `source` (the file) and their line and column.
yaml::Document parse_document(std::string_view text, const std::string& source);
// Runs read() over `doc`; a SpecError from it gets the line and column of the field its path
// names (when it has none yet) and the source's name.
template <class F>
auto read_document(const yaml::Document& doc, const std::string& source, F&& read) -> decltype(read());

// ---------------------------------------------------------------------------------------------

template <class F>
auto read_document(const yaml::Document& doc, const std::string& source, F&& read) -> decltype(read()) {
  try {
    return read();
  } catch (SpecError& e) {
    if (!e.mark() && !e.path().empty()) e.locate(doc.at(e.path()).mark());
    e.from_source(source);
    throw;
  }
}

template <class F>
auto located(yaml::Node n, const Path& at, F&& f) -> decltype(f()) {
  try {
    return f();
  } catch (SpecError& e) {
    if (!e.mark()) e.locate(n.at(e.path(), at.parts().size()).mark());
    throw;
  }
}

template <class E>
E enum_of(yaml::Node n, const Path& at) {
  const std::string_view text = text_of(n, at);
  return located(n, at, [&] { return enum_value<E>(text, at); });
}

template <class F>
void for_each_key(yaml::Node n, Path& at, std::initializer_list<std::string_view> allowed, F&& f,
                  Keys also) {
  expect_map(n, at);
  for (std::size_t i = 0; i < n.size(); ++i) {
    const yaml::Node key = n.key(i);
    const std::string_view k = key.text();
    bool known = false;
    for (std::string_view a : allowed) known = known || a == k;
    for (std::string_view a : also) known = known || a == k;
    if (!known || k.empty()) refuse_unknown_key(key, at, allowed, also);
    Path::Key pk(at, k);
    f(k, n.value(i));
  }
}

}  // namespace gpuq::spec
