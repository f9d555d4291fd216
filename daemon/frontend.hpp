#pragma once
// The API gpuqd serves. Implemented above the daemon, by api/ (the gRPC services of gpuq.v1;
// make_frontend is defined in api/services.cpp and linked into gpuqd), so that daemon/ includes
// nothing of api/: the daemon owns the engine thread and the state, the API only posts work to it.
#include <chrono>
#include <memory>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "auth/roles.hpp"
#include "auth/unix_listener.hpp"
#include "daemon/http.hpp"
#include "daemon/loop.hpp"

namespace gpuq::daemon {

class Frontend {
 public:
  virtual ~Frontend() = default;
  virtual void register_with(grpc::ServerBuilder& builder) = 0;
  // Once, before serving: wires committed events to watch streams, learns the resource names and
  // priority classes requests are read with.
  virtual void attach(Core& core) = 0;
  // Once, before serving: calls through `socket` are their callers' and checked against the
  // roles (auth/roles.hpp; nullptr: no socket); TCP calls are anonymous unless `trust_tcp`
  // (config insecure: true).
  virtual void guard(const auth::UnixListener* socket, auth::Admins admins, bool trust_tcp) = 0;
  // Once, before serving: TCP callers may be known by the bearer tokens gpuqd issued (`tokens`,
  // as the state file holds them) and, when `client_certs` (gpuqd verifies client certificates:
  // tls.clientCA), by their certificate (docs/tasks/tenants-and-security.md).
  virtual void identify_tcp(std::vector<storage::TokenRecord> tokens, bool client_certs) = 0;
  // Ends every stream (shutdown).
  virtual void close() = 0;
};

std::unique_ptr<Frontend> make_frontend(Loop& loop);

// The web dashboard on the HTTP port (web/README.md; defined in web/dashboard.cpp and linked into
// gpuqd): its page, and a read-only JSON API whose every call is a call of the gRPC API through
// `channel` (the server's in-process channel) with the browser's bearer token, each with
// `deadline`, so the gate decides what each viewer sees exactly as for `gpuq` over TCP.
HttpHandler make_dashboard(std::shared_ptr<grpc::Channel> channel, std::chrono::milliseconds deadline);

}  // namespace gpuq::daemon
