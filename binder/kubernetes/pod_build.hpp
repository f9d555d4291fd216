#pragma once
// Jobs submitted through gpuqd's API (gpuq submit, a batch script, the gRPC API) on the
// kubernetes binder: the checks and defaults at submission, and the pods (and, for a gang, the
// headless Service) gpuqd makes for an admission, as pure functions from the job, its queue's
// `kubernetes` block and the placement. kube_submitted.cpp sends them.
//
// A pod is the queue's pod template (the admin's: service account, runtime class, node
// selector, tolerations, security context, volumes, image pull secrets, its first container's
// mounts and settings) with what gpuq sets on top: the namespace, a name, labels and
// annotations tying it to its job, spec.nodeName (the engine's placement: creating the pod bound
// is its one write), spec.schedulerName, restartPolicy Never (a failed run is retried by gpuq,
// as a new set of pods), the grace period; and in its container the submitter's image, command,
// environment, working directory and resources. Nothing a submitter gives reaches the pod spec
// outside its container's image, command, env, workingDir and resources.
#include <cstdint>
#include <string>
#include <vector>

#include <boost/json/object.hpp>

#include "scheduler/model.hpp"
#include "spec/resources.hpp"
#include "spec/result.hpp"
#include "spec/types.hpp"
#include "storage/store.hpp"

namespace gpuq::binder::k8s {

// On a pod gpuqd made for a submitted job: the job's id (exact), its owner, its rank.
inline constexpr const char* kJobIdAnnotation = "gpuq.io/job-id";
inline constexpr const char* kOwnerAnnotation = "gpuq.io/owner";
// Labels, for kubectl -l: the job (its id made a label value), the run (one set of pods of one
// admission; the headless Service selects it), the rank.
inline constexpr const char* kJobLabel = "gpuq.io/job";
inline constexpr const char* kRunLabel = "gpuq.io/run";
inline constexpr const char* kRankLabel = "gpuq.io/rank";
inline constexpr int kMasterPort = 29500;  // MASTER_PORT, torchrun's default

// A submission's checks on the kubernetes binder, and its defaults: the image (the queue's
// default when it names none; within allowedImages), the queue's namespace, and the template's
// node selector, affinity and tolerations added to every pod set's constraints (the engine
// places by them; the pod carries them too). `pods`: the "pods" resource's slot (each pod takes
// one of a node's pods), 0 for none. An error names the field (spec.image, the queue's
// kubernetes.namespace) with the code to answer. A share of one GPU (less than 1000 milli-GPU
// per pod) is taken through a reservation pod, as for pods users make: the pod asks no
// nvidia.com/gpu and gets NVIDIA_VISIBLE_DEVICES from its gpuq.io/gpu-device annotation, which
// gpuqd writes when it makes the pod (the template should give the NVIDIA runtime class).
Result<void> prepare_submission(Submission& sub, const QueueSpec& queue, ResourceId pods);

// What one admission of a submitted job makes.
struct PodsToMake {
  std::string ns;
  std::vector<std::string> names;      // in pod order (the Admission's)
  std::vector<boost::json::object> pods;
  std::vector<PodPlacement> where;     // each pod's placement: its node, its GPUs
  std::vector<int> slot;               // a share of one GPU: the engine's index of it; -1: whole GPUs
  std::string service;                 // a gang's headless Service ("" : none)
  boost::json::object service_object;  // its body, ownerReferences added once the pods exist
  bool tty = false;                    // gpuq run: its one container has stdin and a terminal
  std::string tty_size;                // "ROWSxCOLS" (RunSpec::tty_size)
};

struct PodInput {
  const storage::JobRecord* job = nullptr;
  const QueueKubernetes* queue = nullptr;
  std::vector<PodPlacement> placement;  // the Admission's pods, in pod-set order
  std::string scheduler_name = "gpuq";
  std::string run;  // a nonce unique to this admission (5 lowercase hex or letters)
};
Result<PodsToMake> make_pods(const PodInput& in);

// A job id as a DNS-1123 label prefix (lowercase letters, digits, '-'), at most `max` long,
// with a short hash of the exact id so that two ids that read alike stay apart.
std::string name_of_job(const std::string& id, std::size_t max = 40);
// The gpuq.io/job label's value for a job id: the id when it is a valid label value, else its
// name_of_job.
std::string label_value_of(const std::string& id);

}  // namespace gpuq::binder::k8s
