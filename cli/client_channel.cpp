// The gRPC channel: gpuq-full's (streams, TCP, TLS, GPUQ_TRANSPORT=grpc) and the tests' run_cli.
// The quick gpuq links quick.cpp's channel_unary instead and no gRPC at all.
#include <grpcpp/impl/client_unary_call.h>
#include <grpcpp/impl/codegen/proto_utils.h>
#include <grpcpp/impl/rpc_method.h>

#include <chrono>

#include "cli/client.hpp"

namespace gpuq::cli {

std::shared_ptr<grpc::Channel> Context::channel() {
  if (!channel_)
    channel_ = grpc::CreateChannel(server(), credentials().tls ? grpc::SslCredentials(*credentials().tls)
                                                               : grpc::InsecureChannelCredentials());
  return channel_;
}

std::unique_ptr<grpc::ClientContext> Context::call(bool stream_without_deadline) {
  auto ctx = std::make_unique<grpc::ClientContext>();
  if (!credentials().token.empty()) ctx->AddMetadata("authorization", "Bearer " + credentials().token);
  if (!stream_without_deadline && timeout_s > 0)
    ctx->set_deadline(std::chrono::system_clock::now() +
                      std::chrono::milliseconds(static_cast<std::int64_t>(timeout_s * 1000)));
  return ctx;
}

grpc::Status Context::channel_unary(const char* method, const google::protobuf::MessageLite& req,
                                    google::protobuf::MessageLite& resp) {
  auto c = call();
  return grpc::internal::BlockingUnaryCall<google::protobuf::MessageLite, google::protobuf::MessageLite,
                                           google::protobuf::MessageLite, google::protobuf::MessageLite>(
      channel().get(), grpc::internal::RpcMethod(method, grpc::internal::RpcMethod::NORMAL_RPC), c.get(), req,
      &resp);
}

}  // namespace gpuq::cli
