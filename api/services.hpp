#pragma once
// The gRPC services of gpuq.v1 (callback API: no thread per request). Each handler validates
// what it can, posts the work to the engine thread (daemon::Loop) and answers once the turn that
// ran it is on disk. Thin: the rules live in the engine and the Core.
#include <memory>

#include <grpcpp/grpcpp.h>

#include "api/access.hpp"
#include "daemon/frontend.hpp"
#include "daemon/loop.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"

namespace gpuq::api {

grpc::Status to_status(const Error& e);
grpc::Status to_status(ErrorCode code, const std::string& message);

class WatchHub;

// What requests are read with: the daemon's resource names (interned into from any thread) and
// its priority classes (fixed at start). Set by Services::attach before serving.
struct Readers {
  ResourceNames* names = nullptr;
  const PriorityClasses* classes = nullptr;
  const Gate* gate = nullptr;  // who calls and what they may do (api/access.hpp)
  TokenTable* tokens = nullptr;  // the bearer tokens (api/tokens.hpp)
  // Admin.Usage reads the store from gRPC's threads (its own connection) and prices with these
  // (fixed at start).
  storage::Store* store = nullptr;
  const daemon::Prices* prices = nullptr;
};

// Owns the four services; register them with a ServerBuilder, keep this alive while serving.
// Requests are read into specs on gRPC's threads (api/from_proto.hpp), so the engine thread
// only runs the command.
class Services final : public daemon::Frontend {
 public:
  explicit Services(daemon::Loop& loop);
  ~Services() override;
  void register_with(grpc::ServerBuilder& builder) override;
  void attach(daemon::Core& core) override;
  void guard(const auth::UnixListener* socket, auth::Admins admins, bool trust_tcp) override;
  void identify_tcp(std::vector<storage::TokenRecord> tokens, bool client_certs) override;
  void close() override;

 private:
  daemon::Loop& loop_;
  Gate gate_;
  TokenTable tokens_;
  bool client_certs_ = false;
  Readers readers_;
  std::shared_ptr<WatchHub> hub_;
  std::unique_ptr<v1::Jobs::CallbackService> jobs_;
  std::unique_ptr<v1::Queues::CallbackService> queues_;
  std::unique_ptr<v1::Nodes::CallbackService> nodes_;
  std::unique_ptr<v1::Admin::CallbackService> admin_;
};

}  // namespace gpuq::api
