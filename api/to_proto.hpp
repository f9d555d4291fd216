#pragma once
// The engine's specs (scheduler/model.hpp) as the public API's messages (gpuq/v1/gpuq.proto).
// Quantities become exact Kubernetes notation that the server's parser reads back unchanged;
// enum values become the names the .proto comments list ("LowerPriority", "Cordoned", ...).
#include <optional>
#include <string>

#include "gpuq/v1/gpuq.pb.h"
#include "scheduler/model.hpp"
#include "spec/resources.hpp"

namespace gpuq::api {

v1::QueueSpec to_proto(const QueueSpec& s, const ResourceNames& names);
v1::NodeSpec to_proto(const NodeSpec& s, const ResourceNames& names);
// The priority as its integer text; resources per pod that are non-zero.
v1::JobSpec to_proto(const JobSpec& s, const ResourceNames& names);
v1::JobState to_proto(JobState s);
void put_notify(const NotifySpec& n, v1::Notify* out);
// nullopt for JOB_STATE_UNSPECIFIED (and values this build does not know).
std::optional<JobState> from_proto(v1::JobState s);

}  // namespace gpuq::api
