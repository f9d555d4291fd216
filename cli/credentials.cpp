#include "cli/credentials.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "cli/requests.hpp"

namespace gpuq::cli {

namespace {

// `flag` if given, else the variable `var` (with `named` saying which it was).
std::string pick(const std::string& flag, const char* flag_name, const char* var, const Getenv& env,
                 std::string& named) {
  if (!flag.empty()) {
    named = flag_name;
    return flag;
  }
  const char* v = env(var);
  if (v != nullptr && *v != '\0') {
    named = std::string("$") + var;
    return v;
  }
  return "";
}

std::string read_file(const std::string& named, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw UsageError(named + " " + path + ": cannot be read");
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::string token_from_file(const std::string& named, const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) throw UsageError(named + " " + path + ": cannot be read");
  if (!S_ISREG(st.st_mode)) throw UsageError(named + " " + path + ": is not a regular file");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw UsageError(named + " " + path + ": mode " + mode +
                     " lets other accounts read the token; chmod 600 " + path);
  }
  if (st.st_size > 4096) throw UsageError(named + " " + path + ": is too large to hold a token");
  std::string text = read_file(named, path);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

bool loopback(const std::string& server) {
  std::string host = server;
  for (const char* scheme : {"dns:///", "dns:", "ipv4:", "ipv6:"})
    if (host.rfind(scheme, 0) == 0) host = host.substr(std::string(scheme).size());
  host = host.substr(0, host.rfind(':'));
  return host.rfind("127.", 0) == 0 || host == "localhost" || host == "[::1]";
}

}  // namespace

Credentials resolve_credentials(const CredentialFlags& flags, const std::string& server,
                                const Getenv& env) {
  Credentials c;
  std::string named;
  const char* env_token = env("GPUQ_TOKEN");
  const char* env_file = env("GPUQ_TOKEN_FILE");
  if (!flags.token.empty()) {
    named = "--token";
    c.token = flags.token;
  } else if (!flags.token_file.empty()) {
    named = "--token-file";
    c.token = token_from_file(named, flags.token_file);
  } else if (env_token != nullptr && *env_token != '\0') {
    named = "$GPUQ_TOKEN";
    c.token = env_token;
  } else if (env_file != nullptr && *env_file != '\0') {
    named = "$GPUQ_TOKEN_FILE";
    c.token = token_from_file(named, env_file);
  }
  if (!named.empty() && c.token.empty()) throw UsageError("the token from " + named + " is empty");
  if (!std::all_of(c.token.begin(), c.token.end(), [](char ch) { return ch > 0x20 && ch < 0x7f; }))
    throw UsageError("the token from " + named +
                     " has characters a token cannot have (spaces, control characters)");

  std::string ca_named, cert_named, key_named;
  const std::string ca = pick(flags.tls_ca, "--tls-ca", "GPUQ_TLS_CA", env, ca_named);
  const std::string cert = pick(flags.tls_cert, "--tls-cert", "GPUQ_TLS_CERT", env, cert_named);
  const std::string key = pick(flags.tls_key, "--tls-key", "GPUQ_TLS_KEY", env, key_named);
  if (cert.empty() != key.empty())
    throw UsageError(
        cert.empty()
            ? key_named + " needs --tls-cert (or $GPUQ_TLS_CERT): the certificate of the key"
            : cert_named + " needs --tls-key (or $GPUQ_TLS_KEY): the certificate's private key");
  if (!ca.empty() || !cert.empty()) {
    grpc::SslCredentialsOptions o;
    if (!ca.empty()) o.pem_root_certs = read_file(ca_named, ca);
    if (!cert.empty()) {
      o.pem_cert_chain = read_file(cert_named, cert);
      o.pem_private_key = read_file(key_named, key);
      c.client_cert = true;
    }
    c.tls = std::move(o);
  }
  if (!c.token.empty() && !c.tls && !loopback(server))
    throw UsageError(
        "refusing to send the token from " + named + " in clear to " + server +
        ": give --tls-ca (gpuqd serves TLS: README, Security) or reach gpuqd on loopback");
  return c;
}

}  // namespace gpuq::cli
