#pragma once
// From the API's pods and nodes to gpuq's specs, as pure functions (the binder keeps the state):
// job ids, the queue a pod asks for, a job's Submission (one pod, or a gang's pods grouped into
// pod sets of equal pods), a node's NodeSpec (what gpuq may use of it), and the pod-group labels.
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "binder/kubernetes/objects.hpp"
#include "spec/types.hpp"

namespace gpuq::binder::k8s {

inline constexpr const char* kQueueLabel = "gpuq.io/queue";
inline constexpr const char* kKueueQueueLabel = "kueue.x-k8s.io/queue-name";
inline constexpr const char* kDefaultQueueAnnotation = "gpuq.io/default-queue";  // on a namespace
inline constexpr const char* kGroupLabel = "gpuq.io/pod-group";
inline constexpr const char* kGroupSizeAnnotation = "gpuq.io/pod-group-size";
inline constexpr const char* kGroupTimeoutAnnotation = "gpuq.io/pod-group-timeout";  // seconds
inline constexpr const char* kGpuProductLabel = "nvidia.com/gpu.product";
// Fractional GPUs (kube_share.cpp): on a sharer, the GPU it shares and the engine's index of it;
// on a reservation pod, the mark and what it holds ("node/index").
inline constexpr const char* kShareDeviceAnnotation = "gpuq.io/gpu-device";
inline constexpr const char* kShareSlotAnnotation = "gpuq.io/gpu-slot";
inline constexpr const char* kReservationLabel = "gpuq.io/reservation";
inline constexpr const char* kReservationForAnnotation = "gpuq.io/reservation-for";

struct TranslateOptions {
  std::string flavor_label = "gpuq.io/flavor";
  ResourceId pods = 0;  // the "pods" resource's slot (each pod takes one; nodes offer allocatable pods)
};

// "<namespace>.<name>-<5 hex of the uid>" (Kueue names workloads the same way): unique across a
// pod name's reuse, the same for the same pod after a restart, and at most 63 characters (the
// name is cut to fit).
std::string job_id_of(const std::string& ns, const std::string& name, const std::string& uid);

// The queue a pod asks for: its gpuq.io/queue label, else Kueue's queue-name label, else its
// namespace's gpuq.io/default-queue annotation (`ns_default`). nullopt: none, with `why` a
// message saying what to set.
std::optional<std::string> queue_of(const PodInfo& pod, const std::string& ns_default, std::string& why);

// Gangs as the ecosystem declares them (docs/tasks/kubernetes.md, "Gangs"), besides gpuq's own label:
inline constexpr const char* kKueueGroupLabel = "kueue.x-k8s.io/pod-group-name";
inline constexpr const char* kKueueGroupCountAnnotation = "kueue.x-k8s.io/pod-group-total-count";
inline constexpr const char* kLwsNameLabel = "leaderworkerset.sigs.k8s.io/name";
inline constexpr const char* kLwsGroupIndexLabel = "leaderworkerset.sigs.k8s.io/group-index";
inline constexpr const char* kLwsSizeAnnotation = "leaderworkerset.sigs.k8s.io/size";
inline constexpr const char* kCoschedulingLabel = "scheduling.x-k8s.io/pod-group";  // scheduler-plugins
inline constexpr const char* kVolcanoGroupAnnotation = "scheduling.k8s.io/group-name";
inline constexpr const char* kVolcanoGroupAnnotation2 = "scheduling.volcano.sh/group-name";
// The PodGroup objects a pod may name, by API group: scheduler-plugins' and Volcano's.
inline constexpr const char* kCoschedulingGroup = "scheduling.x-k8s.io";
inline constexpr const char* kVolcanoGroup = "scheduling.volcano.sh";
// A JobSet's pods (their label names it); the JobSet object gives the count.
inline constexpr const char* kJobSetNameLabel = "jobset.sigs.k8s.io/jobset-name";
inline constexpr const char* kJobSetGroup = "jobset.x-k8s.io";

// The PodGroup objects seen, by "API group/namespace/name": their spec.minMember; and the
// JobSets seen ("jobset.x-k8s.io/namespace/name"): their pods' count (each replicated Job's
// replicas times its parallelism, summed).
using PodGroupSizes = std::map<std::string, int>;

// A pod's gang, when something declares one: gpuq's label gpuq.io/pod-group with the annotation
// gpuq.io/pod-group-size; Kueue's label kueue.x-k8s.io/pod-group-name with the annotation
// kueue.x-k8s.io/pod-group-total-count; a LeaderWorkerSet's group (its name and group-index
// labels, its size annotation); scheduler-plugins' label scheduling.x-k8s.io/pod-group or
// Volcano's annotation scheduling.k8s.io/group-name, naming a PodGroup object whose minMember is
// the size; a JobSet's pods (label jobset.sigs.k8s.io/jobset-name), all of the JobSet's pods. `size` 0: not known yet or not valid, with `why` (a missing or bad count, a PodGroup
// not seen yet, two declarations that disagree on the size, naming both).
struct GroupRef {
  std::string name;        // as declared (the job's name)
  std::string key;         // unique in its namespace: the name, prefixed by its declarer but gpuq's
  int size = 0;
  bool at_least = false;   // a PodGroup's minMember: members beyond it are jobs of their own
  std::string podgroup;    // "API group/namespace/name" of the PodGroup it waits for, if any
};
// `unwatched`: the API groups (kCoschedulingGroup, kVolcanoGroup, kJobSetGroup) whose kind gpuqd
// does not watch, the API server not having served it at start; a pod naming an object of one
// waits, saying so and that a restart reads it.
std::optional<GroupRef> group_of(const PodInfo& pod, const PodGroupSizes& podgroups, std::string& why,
                                 const std::set<std::string>& unwatched = {});

// The job of these pods (one, or a whole gang, all in one namespace): equal pods (the same
// request and constraints) share a pod set; `order` gets the pods' keys in pod-set order, the
// order of an Admission's placements. Priority is the highest of the pods'.
Submission submission_of(const std::vector<const PodInfo*>& pods, const std::string& id, const std::string& queue,
                         const TranslateOptions& options, std::vector<std::string>& order);

// What gpuq may use of a node: allocatable less `foreign` (what pods of other schedulers bound
// there ask for); flavor from the flavor label, else nvidia.com/gpu.product, else "default";
// Cordoned when unschedulable or not Ready.
NodeSpec node_spec_of(const NodeInfo& node, const ResourceVec& foreign, const TranslateOptions& options);

// A pod's request as gpuq counts it: its effective request and one "pods".
ResourceVec pod_request(const PodInfo& pod, const TranslateOptions& options);

}  // namespace gpuq::binder::k8s
