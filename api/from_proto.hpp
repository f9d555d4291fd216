#pragma once
// Requests to engine specs. Every check the scenario format makes is made here too, by the same
// code: a queue or node is converted to the scenario keys and parsed by sim/spec_yaml; a job
// (every Submit) is read field by field with the same value readers (sim/spec_values). An error
// names the field by its path under "spec" in the scenario's spelling
// ("spec.quotas[0].resources.gpu.nominal: \"x\" is not a quantity ..."), the value, and what
// is allowed.
#include "gpuq/v1/gpuq.pb.h"
#include "scheduler/engine.hpp"

namespace gpuq::api {

Result<QueueSpec> from_proto(const v1::QueueSpec& q, ResourceNames& names);
Result<NodeSpec> from_proto(const v1::NodeSpec& n, ResourceNames& names);
// submitted_at is left for the caller; on_node_loss is read here.
Result<JobSpec> from_proto(const v1::JobSpec& j, ResourceNames& names, const PriorityClasses& classes);

}  // namespace gpuq::api
