#pragma once
// Who the command line says it is over TCP (docs/tasks/tenants-and-security.md): a bearer token and/or TLS with a
// client certificate. Through gpuqd's Unix socket neither is used (the kernel says who calls).
//
// The token comes from --token, else --token-file, else $GPUQ_TOKEN, else $GPUQ_TOKEN_FILE (a
// file or the environment keeps it out of `ps`; --token is for a quick try). A token file must
// be a regular file of the caller's own, no other account may read (chmod 600), not a symbolic
// link; so must the --tls-key file. TLS is used when --tls-ca or
// --tls-cert is given (else $GPUQ_TLS_CA, $GPUQ_TLS_CERT, $GPUQ_TLS_KEY): --tls-ca verifies gpuqd
// (default: the system's roots), --tls-cert and --tls-key present a client certificate.
// A token is never sent in clear to an address other than loopback (one literal 127.x.y.z or
// [::1], or localhost; no address lists, no DNS authority). Errors (UsageError, exit 2)
// name the flag or variable and the file, never the token.
#include <grpcpp/security/credentials.h>

#include <functional>
#include <optional>
#include <string>

namespace gpuq::cli {

struct CredentialFlags {
  std::string token, token_file, tls_ca, tls_cert, tls_key;
};

struct Credentials {
  std::string token;  // "": none
  std::optional<grpc::SslCredentialsOptions> tls;
  bool client_cert = false;
};

using Getenv = std::function<const char*(const char*)>;
// For the TCP server `server` (HOST:PORT).
Credentials resolve_credentials(const CredentialFlags& flags, const std::string& server,
                                const Getenv& env);

}  // namespace gpuq::cli
