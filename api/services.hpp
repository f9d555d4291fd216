#pragma once
// The gRPC services of gpuq.v1 (callback API: no thread per request). Each handler validates
// what it can, posts the work to the engine thread (daemon::Loop) and answers once the turn that
// ran it is on disk. Thin: the rules live in the engine and the Core.
#include <memory>

#include <grpcpp/grpcpp.h>

#include "daemon/loop.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::api {

grpc::Status to_status(const Error& e);
grpc::Status to_status(ErrorCode code, const std::string& message);

class WatchHub;

// Owns the four services; register them with a ServerBuilder, keep this alive while serving.
class Services {
 public:
  explicit Services(daemon::Loop& loop);
  ~Services();
  void register_with(grpc::ServerBuilder& builder);
  // Called once on the engine thread: wires committed events to Watch streams.
  void attach(daemon::Core& core);
  // Ends every Watch stream (shutdown).
  void close_watches();

 private:
  daemon::Loop& loop_;
  std::shared_ptr<WatchHub> hub_;
  std::unique_ptr<v1::Jobs::CallbackService> jobs_;
  std::unique_ptr<v1::Queues::CallbackService> queues_;
  std::unique_ptr<v1::Nodes::CallbackService> nodes_;
  std::unique_ptr<v1::Admin::CallbackService> admin_;
};

}  // namespace gpuq::api
