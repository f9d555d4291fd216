#pragma once
// gpuq queue specs as Queue objects, the form kubectl applies (deploy/kubernetes/crd-queue.yaml;
// docs/tasks/kubernetes.md, "Queues as Kubernetes objects"): apiVersion gpuq.io/v1alpha1, kind Queue,
// metadata.name, and the spec's keys as read_queue_object reads them, only those that differ
// from their defaults. Several are separated by `---`.
#include <string>
#include <vector>

#include "spec/types.hpp"

namespace gpuq::spec {

std::string write_queue_object(const QueueSpec& queue, const ResourceNames& names);
std::string write_queue_objects(const std::vector<QueueSpec>& queues, const ResourceNames& names);

}  // namespace gpuq::spec
