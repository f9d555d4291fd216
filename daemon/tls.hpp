#pragma once
// gpuqd's TLS on its gRPC TCP listener (config `tls`, docs/tasks/tenants-and-security.md). gRPC's own credentials
// do the TLS; the files are read and checked here first (OpenSSL) so that a wrong path or a key
// that does not match its certificate stops gpuqd with the field named, not with gRPC's "cannot
// listen". With clientCA, client certificates are asked for and verified against it, but not
// required: a token-only or anonymous client still connects over TLS.
#include <grpcpp/security/server_credentials.h>

#include <memory>
#include <optional>
#include <string>

#include "spec/result.hpp"

namespace gpuq::daemon {

struct TlsFiles {
  std::string cert;       // PEM: the server's certificate (chain)
  std::string key;        // PEM: its private key
  std::string client_ca;  // PEM: the CAs client certificates are verified against; "": none asked
};

// The listener's credentials, or an error naming the field, the file and what is wrong.
Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFiles& tls);

}  // namespace gpuq::daemon
