#pragma once
// What the API server does to pods in particular: defaults and validation on create, the spec's
// immutability on update, the binding subresource, and graceful deletion (a pod on a node gets a
// deletionTimestamp and is removed by its kubelet after the grace period).
#include <boost/json.hpp>
#include <cstdint>
#include <map>
#include <optional>
#include <string>

#include "tests/kubefake/store.hpp"

namespace gpuq::kubefake {

// Resource amounts in milli-units by resource name ("cpu", "memory", "nvidia.com/gpu", "pods").
using Amounts = std::map<std::string, std::int64_t, std::less<>>;

// Defaults (restartPolicy, schedulerName, terminationGracePeriodSeconds, requests from limits,
// tolerations, ...), validation (422) and the initial status (Pending, qosClass).
void prepare_pod_create(json::object& pod);
// Refuses (422) an update that changes the spec beyond what the real server allows.
void check_pod_update(const json::object& old_pod, const json::object& new_pod);

// What the pod asks of its node, as kube-scheduler and the kubelet count it: per resource the
// larger of the containers' sum and the largest init container, plus spec.overhead; and 1 pod.
Amounts pod_requests(const json::object& pod);
bool pod_terminal(const json::object& pod);  // Succeeded or Failed
bool pod_ready(const json::object& pod);     // condition Ready True
std::string pod_phase(const json::object& pod);

// POST .../pods/NAME/binding. Throws 404/409/400/422 as the real server; returns the bound pod.
ObjectPtr bind_pod(Store::Txn& txn, const ObjectKey& key, const json::object& binding);

// DELETE of a pod: graceful when it is on a node and not terminal (deletionTimestamp and
// deletionGracePeriodSeconds set; its kubelet removes it later), at once otherwise. Returns the
// pod as it is after the call and whether it is gone.
struct PodDeletion {
  ObjectPtr pod;
  bool gone = false;
};
PodDeletion delete_pod(Store::Txn& txn, const ObjectPtr& pod, std::optional<std::int64_t> grace);

// Sets (or replaces) the condition of `type` in status.conditions, keeping its
// lastTransitionTime when its status does not change.
void set_condition(json::object& status, const std::string& type, const std::string& value,
                   const std::string& reason = "", const std::string& message = "");

}  // namespace gpuq::kubefake
