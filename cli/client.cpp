#include "cli/client.hpp"

#include <chrono>
#include <cstdlib>

#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "cli/unix_call.hpp"

namespace gpuq::cli {

const std::string& Context::server() {
  if (server_.empty()) server_ = resolve_server(server_flag, std::getenv("GPUQ_SERVER"));
  return server_;
}

// Through the socket (unix:) the kernel says who calls: no token, no TLS.
const Credentials& Context::credentials() {
  if (!credentials_)
    credentials_ = server().rfind("unix:", 0) == 0
                       ? Credentials{}
                       : resolve_credentials(credential_flags, server(), [](const char* v) { return std::getenv(v); });
  return *credentials_;
}

bool Context::server_knows_caller() {
  return server().rfind("unix:", 0) == 0 || !credentials().token.empty() || credentials().client_cert;
}

std::optional<std::string> Context::socket_path() {
  if (const char* t = std::getenv("GPUQ_TRANSPORT"); t != nullptr && std::string_view(t) == "grpc") return std::nullopt;
  return unix_socket_path(server());
}

std::optional<grpc::Status> Context::unix_unary(const char* method, const google::protobuf::MessageLite& req,
                                                google::protobuf::MessageLite& resp) {
  const auto path = socket_path();
  if (!path) return std::nullopt;
  auto st = cli::unix_unary(*path, method, req, resp, timeout_s);
  if (st) ++answered_;
  return st;
}

const char* code_name(grpc::StatusCode code) {
  switch (code) {
    case grpc::StatusCode::OK:
      return "OK";
    case grpc::StatusCode::CANCELLED:
      return "CANCELLED";
    case grpc::StatusCode::UNKNOWN:
      return "UNKNOWN";
    case grpc::StatusCode::INVALID_ARGUMENT:
      return "INVALID_ARGUMENT";
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return "DEADLINE_EXCEEDED";
    case grpc::StatusCode::NOT_FOUND:
      return "NOT_FOUND";
    case grpc::StatusCode::ALREADY_EXISTS:
      return "ALREADY_EXISTS";
    case grpc::StatusCode::PERMISSION_DENIED:
      return "PERMISSION_DENIED";
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return "RESOURCE_EXHAUSTED";
    case grpc::StatusCode::FAILED_PRECONDITION:
      return "FAILED_PRECONDITION";
    case grpc::StatusCode::ABORTED:
      return "ABORTED";
    case grpc::StatusCode::OUT_OF_RANGE:
      return "OUT_OF_RANGE";
    case grpc::StatusCode::UNIMPLEMENTED:
      return "UNIMPLEMENTED";
    case grpc::StatusCode::INTERNAL:
      return "INTERNAL";
    case grpc::StatusCode::UNAVAILABLE:
      return "UNAVAILABLE";
    case grpc::StatusCode::DATA_LOSS:
      return "DATA_LOSS";
    case grpc::StatusCode::UNAUTHENTICATED:
      return "UNAUTHENTICATED";
    default:
      return "UNKNOWN";
  }
}

bool is_unreachable(const grpc::Status& status) {
  if (status.error_code() != grpc::StatusCode::UNAVAILABLE) return false;
  // gRPC's own connection errors; the daemon's UNAVAILABLE ("the state could not be written")
  // says none of these.
  const std::string& m = status.error_message();
  for (const char* s :
       {"failed to connect", "Connection refused", "DNS resolution failed",
        "connections to all backends failing", "Socket closed", "No address", "Connection reset"})
    if (m.find(s) != std::string::npos) return true;
  return false;
}

int Context::fail(const grpc::Status& status) {
  if (is_unreachable(status)) {
    err << "gpuq: cannot reach the gpuq daemon at " << server() << " (" << escaped(status.error_message())
        << "); start it with scripts/run.sh, or point --server or "
        << "GPUQ_SERVER at a running gpuqd"
        << (credentials_ && credentials_->tls
                ? "; over TLS, also check that --tls-ca signed gpuqd's certificate and that gpuqd's tls.clientCA "
                  "signed --tls-cert"
                : "")
        << "\n";
  } else if (status.error_code() == grpc::StatusCode::DEADLINE_EXCEEDED) {
    err << "gpuq: no answer from " << server() << " within " << timeout_s
        << " s (DEADLINE_EXCEEDED); is it overloaded? --timeout SECONDS waits longer\n";
  } else {
    err << "gpuq: " << escaped(status.error_message()) << " (" << code_name(status.error_code()) << ")\n";
  }
  return 1;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace gpuq::cli
