#pragma once
// What gpuqd answers with: the daemon's records and statuses (daemon/core.hpp, storage/) as the
// public API's messages. Server side only; the command line reads these messages.
#include "daemon/core.hpp"
#include "gpuq/v1/gpuq.pb.h"

namespace gpuq::api {

// The spec as submitted (the priority as written, what runs), its state, the reason the Core
// gives for it now, and its placement.
v1::Job to_proto(const storage::JobRecord& r, const daemon::Core& core);
v1::JobEvent to_proto(const storage::EventRecord& e);
v1::QueueStatus to_proto(const daemon::QueueStatus& s, const daemon::Core& core);
v1::NodeStatus to_proto(const daemon::NodeStatus& s, const daemon::Core& core);
v1::JobExplanation to_proto(const JobExplanation& e, const ResourceNames& names, Time computed_at);

}  // namespace gpuq::api
