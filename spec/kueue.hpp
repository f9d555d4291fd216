#pragma once
// Kueue's objects (kueue.x-k8s.io: ResourceFlavor, ClusterQueue, Cohort, LocalQueue) to gpuq's
// queue specs and back, for migrating a Kueue setup (`gpuq apply -f`, `gpuq queues export
// --format kueue`). The mapping, field by field, is cli/README.md's "Migrating from Kueue".
//
// Reading maps every field that has a meaning in gpuq, warns once for each field it ignores (the
// object, the field path and why), and refuses, as a SpecError naming the object, the field,
// the value and what is allowed, what it cannot map faithfully. Pure: no I/O.
#include <string>
#include <string_view>
#include <vector>

#include "spec/resources.hpp"
#include "spec/types.hpp"
#include "spec/yaml.hpp"

namespace gpuq::spec {

// "kueue.x-k8s.io/..." : the apiVersion of a Kueue object.
bool is_kueue_api_version(std::string_view api_version);

struct KueueImport {
  std::vector<QueueSpec> queues;     // one per ClusterQueue, in file order, each validated
  ResourceNames names;               // the resources the queues' quotas name
  std::vector<std::string> flavors;  // the ResourceFlavors the file declares, in file order
  // One line per ignored field or object: "FILE:LINE:COL: ClusterQueue team-a-cq:
  // spec.namespaceSelector is ignored: gpuq queues are not bound to namespaces".
  std::vector<std::string> warnings;
};

// Every document of `docs` is a Kubernetes object (apiVersion and kind); those of Kueue are
// read, others are warned about and skipped. Errors name `source`, the line and column:
// `FILE:LINE:COL: ClusterQueue "q": spec.preemption.withinClusterQueue: "X" is not allowed; ...`.
KueueImport read_kueue(const std::vector<yaml::Document>& docs, const std::string& source);

// Kueue YAML (kueue.x-k8s.io/v1beta1) for `queues`: one ResourceFlavor per flavor they use (in
// order of first use; no node labels: gpuq nodes carry their flavor), then one ClusterQueue per
// queue. Cohorts need no object (Kueue's are implicit and gpuq's are flat). read_kueue of the
// text gives the same specs back, except for what Kueue cannot say: each such field is named in
// `warnings` ("queue team-a: maxPendingJobs 10 is not exported: ..."), and a queue without
// quotas is left out with a warning. A queue whose flavors Kueue cannot group (a resource in two
// resource groups) is refused with a SpecError naming the queue and the flavors.
std::string write_kueue(const std::vector<QueueSpec>& queues, const ResourceNames& names,
                        std::vector<std::string>& warnings);

}  // namespace gpuq::spec
