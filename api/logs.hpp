#pragma once
// Jobs.Logs: a pod's output streamed from the binder's log file (api/logs.cpp), once `may_read`
// allows the caller to read that job (its owner, its queue's viewers and admins).
#include <functional>
#include <string>

#include <grpcpp/grpcpp.h>

#include "daemon/loop.hpp"
#include "storage/store.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::api {

grpc::ServerWriteReactor<v1::LogChunk>* start_log_stream(daemon::Loop& loop, const v1::LogsRequest& req,
                                                         const std::function<grpc::Status(const storage::JobRecord& job)>& may_read);

// Jobs.Input: bytes typed into a running job's terminal (spec.tty), given to its binder
// (Binder::write_input) once `may_write` allows the caller (its owner and admins).
grpc::Status send_input(daemon::Loop& loop, const v1::InputRequest& req,
                        const std::function<grpc::Status(const storage::JobRecord& job)>& may_write);

}  // namespace gpuq::api
