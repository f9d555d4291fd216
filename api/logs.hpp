#pragma once
// Jobs.Logs: a pod's output streamed from the binder's log file (api/logs.cpp).
#include <grpcpp/grpcpp.h>

#include "daemon/loop.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::api {

grpc::ServerWriteReactor<v1::LogChunk>* start_log_stream(daemon::Loop& loop, const v1::LogsRequest& req);

}  // namespace gpuq::api
