#pragma once
// One unary call of gpuqd's gRPC API over its Unix socket, spoken as plain HTTP/2 (nghttp2)
// without a gRPC channel: no threads, no channel stack, one connection, one stream. It is the
// same call on the wire (gRPC's HTTP/2 mapping: POST /package.Service/Method, a
// length-prefixed message, grpc-status and grpc-message in the trailers), so gpuqd answers it
// as any gRPC client's, and knows the caller the same way (SO_PEERCRED on the socket).
#include <optional>
#include <string>

#include <grpcpp/support/status.h>

namespace google::protobuf {
class MessageLite;
}

namespace gpuq::cli {

// The call's status, as a gRPC channel would give it; nullopt when nothing was sent because
// the socket could not be connected (the caller reports that through gRPC, as before).
// `timeout_s` <= 0: no deadline. `path`: the socket's path (without "unix:").
std::optional<grpc::Status> unix_unary(const std::string& path, const std::string& method,
                                       const google::protobuf::MessageLite& request,
                                       google::protobuf::MessageLite& response, double timeout_s);

// The socket path of a `unix:` server address (unix:PATH or unix:///ABSOLUTE), or nullopt for
// any other address.
std::optional<std::string> unix_socket_path(const std::string& server);

}  // namespace gpuq::cli
