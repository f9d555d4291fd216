#pragma once
// Requests to specs, field by field, with the spec layer's value readers and checks
// (spec/values.hpp, spec/validate.hpp): a value means the same and is refused in the same words
// as in a YAML file. No text round trip: one conversion and one validation per request. Errors
// name the field by its path under "spec" in the YAML keys' spelling
// ("spec.quotas[0].resources.gpu.nominal: \"x\" is not a quantity ..."), the value, and what
// is allowed; maps and lists larger than their limit are refused before they are copied.
//
// Thread safety: any thread (gpuqd converts on gRPC's threads, off the engine thread); `names`
// may be interned into concurrently (ResourceNames), `classes` is read only.
#include "gpuq/v1/gpuq.pb.h"
#include "spec/result.hpp"
#include "spec/types.hpp"

namespace gpuq::api {

Result<QueueSpec> from_proto(const v1::QueueSpec& q, ResourceNames& names);
Result<NodeSpec> from_proto(const v1::NodeSpec& n, ResourceNames& names);
// The priority resolved with `classes` (the text kept as written); submitted_at is left for the
// caller; an empty id is allowed (the server assigns one). Its resources must be names that a
// queue or node brought (spec::known_resource_value): a refused submit leaves no name behind.
Result<Submission> from_proto(const v1::JobSpec& j, const ResourceNames& names,
                              const PriorityClasses& classes);

}  // namespace gpuq::api
