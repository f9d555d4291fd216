#pragma once
// Node constraints as kube-scheduler applies them (NodeAffinity and TaintToleration filters):
// whether a pod set's nodeSelector, required node affinity and tolerations allow a node, given
// its labels and taints. Pure functions of the values; the engine's placement and the
// kubernetes binder both use them.
#include <map>
#include <string>
#include <vector>

#include "spec/types.hpp"

namespace gpuq::spec {

bool matches(const NodeRequirement& r, const std::map<std::string, std::string>& labels);
bool tolerates(const Toleration& t, const Taint& taint);
// nodeSelector and required affinity against the labels (a term with no requirement matches
// nothing, as in Kubernetes), and every NoSchedule/NoExecute taint tolerated.
bool allows(const NodeConstraints& c, const std::map<std::string, std::string>& labels,
            const std::vector<Taint>& taints);
// The first taint of `taints` that `c` does not tolerate (PreferNoSchedule ones are
// preferences, never rules), or nullptr.
const Taint* untolerated(const NodeConstraints& c, const std::vector<Taint>& taints);

// A pod set's constraints on top of its job's, as every front end merges them: the pod set's
// nodeSelector pairs added (its value wins for a key both give), its affinity instead of the
// job's when it lists a term (terms are ORed: adding them would widen the job's), its
// tolerations added.
NodeConstraints merged(const NodeConstraints& job, NodeConstraints pod_set);
// `c` narrowed to nodes whose GPU model (label kGpuModelLabel) is one of `models`: the
// requirement is added to each affinity term (a term of its own when there is none), so it
// holds whichever term matches. Empty `models`: `c` unchanged.
void require_gpu_models(NodeConstraints& c, const std::vector<std::string>& models);

}  // namespace gpuq::spec
