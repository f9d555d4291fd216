#pragma once
// Admin.Usage (`gpuq usage`): accounting over the state file (storage/usage.hpp) as the API
// shows it, a page at a time, restricted to what the caller may see (docs/tasks/tenants-and-security.md), with
// costs from gpuqd's prices. Internal to api/.
#include <grpcpp/grpcpp.h>

#include "api/services.hpp"
#include "daemon/loop.hpp"

namespace gpuq::api {

// One page of usage for `access`. Runs the read here, on the caller's (gRPC's) thread, through
// the store's own usage connection: never on the engine thread. The engine thread is visited
// only to read a queue's viewers, when they decide what the caller may see.
grpc::Status usage_page(daemon::Loop& loop, const Readers& readers, const Access& access,
                        const v1::UsageRequest& req, v1::UsageResponse& resp);

}  // namespace gpuq::api
