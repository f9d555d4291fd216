#pragma once
// Pods and nodes as the kubernetes binder needs them, read from the API's JSON: what a pod asks
// for (its effective request, as kube-scheduler computes it), where it may run (nodeSelector,
// required node affinity, tolerations), whose it is (schedulerName, labels, annotations) and
// where it is in its life; what a node offers (allocatable, labels, taints, Ready,
// unschedulable). Quantities through the spec layer's parser; an error names the field.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "spec/error.hpp"
#include "spec/resources.hpp"
#include "spec/result.hpp"
#include "spec/types.hpp"

namespace gpuq::binder::k8s {

inline constexpr const char* kGpuResource = "nvidia.com/gpu";
// A fraction of one GPU, in milli-GPU, for a pod that asks for no whole GPU.
inline constexpr const char* kGpuMilliAnnotation = "gpuq.io/gpu-milli";

struct PodInfo {
  std::string ns;
  std::string name;
  std::string uid;
  std::string resource_version;
  std::string created;    // metadata.creationTimestamp (RFC 3339: compares as text)
  std::string scheduler;  // spec.schedulerName
  std::string node;       // spec.nodeName: bound
  std::string phase;      // Pending, Running, Succeeded, Failed, Unknown
  bool terminating = false;  // metadata.deletionTimestamp is set
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  std::optional<std::int32_t> priority;  // spec.priority (from its PriorityClass)
  // The effective request: per resource, the larger of the sum of the containers (with
  // restartable init containers) and the largest init container, plus the pod's overhead; a
  // missing request defaults to the limit, as the API server does. gpu in milli-GPU:
  // nvidia.com/gpu x 1000, or the gpuq.io/gpu-milli annotation for a shared GPU.
  ResourceVec request;
  NodeConstraints where;  // nodeSelector, required node affinity, tolerations
  std::int64_t grace_seconds = 30;  // spec.terminationGracePeriodSeconds
  std::string status_reason;        // status.reason ("Evicted", "DeadlineExceeded", ...)
  // Its containers' end (status.containerStatuses[].state.terminated): the first code other
  // than 0, else the first code; and that container's reason ("Error", "OOMKilled", ...).
  std::optional<int> exit_code;
  std::string exit_reason;

  bool terminal() const { return phase == "Succeeded" || phase == "Failed"; }
  std::string key() const { return ns + "/" + name; }
};

struct NodeInfo {
  std::string name;
  std::string resource_version;
  std::map<std::string, std::string> labels;
  ResourceVec allocatable;  // gpu in milli-GPU (whole GPUs), cpu millicores, memory bytes
  std::int64_t max_pods = 110;
  bool unschedulable = false;  // spec.unschedulable (cordoned)
  bool ready = false;          // the Ready condition is True
  std::vector<Taint> taints;
};

// Errors (kInvalidArgument) name the object and the field: `pod ml/train-0:
// spec.containers[0].resources.requests.cpu: quantity "x": not a number ...`.
Result<PodInfo> read_pod(const boost::json::object& pod);
Result<NodeInfo> read_node(const boost::json::object& node);
// A pod spec's nodeSelector, required node affinity and tolerations (`at`: the spec's path, for
// errors; SpecError when one cannot be read).
NodeConstraints constraints_at(const boost::json::object& spec, spec::Path& at);
// metadata.annotations[key] of any object; empty when it has none.
std::string annotation_of(const boost::json::object& obj, const std::string& key);

}  // namespace gpuq::binder::k8s
