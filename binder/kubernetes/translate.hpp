#pragma once
// From the API's pods and nodes to gpuq's specs, as pure functions (the binder keeps the state):
// job ids, the queue a pod asks for, a job's Submission (one pod, or a gang's pods grouped into
// pod sets of equal pods), a node's NodeSpec (what gpuq may use of it), and the pod-group labels.
#include <map>
#include <optional>
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

// A pod's gang, when it has the pod-group label: its name and size (the annotation; 0 when it
// is missing or not a positive number, with `why`).
struct GroupRef {
  std::string name;
  int size = 0;
};
std::optional<GroupRef> group_of(const PodInfo& pod, std::string& why);

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
