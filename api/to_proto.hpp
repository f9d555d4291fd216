#pragma once
// The engine's specs (scheduler/model.hpp) as the public API's messages (gpuq/v1/gpuq.proto).
// Quantities become exact Kubernetes notation that the server's parser reads back unchanged;
// enum values become the names the .proto comments list ("LowerPriority", "Cordoned", ...).
#include <optional>
#include <string>

#include "gpuq/v1/gpuq.grpc.pb.h"
#include "scheduler/model.hpp"
#include "scheduler/quantity.hpp"

namespace gpuq::api {

// gpu 2000 -> "2", 500 -> "500m"; cpu 4000 -> "4", 250 -> "250m"; memory 64 GiB -> "64Gi"
// (an exact multiple of Ki/Mi/Gi/Ti/Pi/Ei, else bytes); other resources as an integer count.
// parse_quantity(format_quantity(q, r), scale_of(r)) == q for every q.
std::string format_quantity(Quantity q, ResourceId r);

v1::QueueSpec to_proto(const QueueSpec& s, const ResourceNames& names);
v1::NodeSpec to_proto(const NodeSpec& s, const ResourceNames& names);
// The priority as its integer text; resources per pod that are non-zero.
v1::JobSpec to_proto(const JobSpec& s, const ResourceNames& names);
v1::JobState to_proto(JobState s);
// nullopt for JOB_STATE_UNSPECIFIED (and values this build does not know).
std::optional<JobState> from_proto(v1::JobState s);

}  // namespace gpuq::api
