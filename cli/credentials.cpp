#include "cli/credentials.hpp"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
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

// A secret's file (a token, a TLS key): opened once, never through a link, and checked on what
// was opened (a regular file of this account that no other account may read), so that the
// check and the read see the same file.
std::string secret_from_file(const std::string& named, const std::string& path, const char* what,
                             std::size_t max_bytes) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
  if (fd < 0)
    throw UsageError(named + " " + path + ": cannot be read: " + std::strerror(errno) +
                     (errno == ELOOP ? " (a symbolic link: name the file itself)" : ""));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw UsageError(named + " " + path + ": cannot be read: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) throw UsageError(named + " " + path + ": is not a regular file");
  if (st.st_uid != ::getuid())
    throw UsageError(named + " " + path + ": belongs to uid " + std::to_string(st.st_uid) + ", not to you (uid " +
                     std::to_string(::getuid()) + "); keep " + what + " in a file of your own");
  if ((st.st_mode & 077) != 0) {
    char mode[8];
    std::snprintf(mode, sizeof mode, "%04o", static_cast<unsigned>(st.st_mode & 07777));
    throw UsageError(named + " " + path + ": mode " + mode + " lets other accounts read " + what + "; chmod 600 " +
                     path);
  }
  if (static_cast<std::uintmax_t>(st.st_size) > max_bytes)
    throw UsageError(named + " " + path + ": is too large to hold " + what);
  std::string text(static_cast<std::size_t>(st.st_size), '\0');
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::read(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw UsageError(named + " " + path + ": cannot be read");
    done += static_cast<std::size_t>(n);
  }
  return text;
}

std::string token_from_file(const std::string& named, const std::string& path) {
  std::string text = secret_from_file(named, path, "the token", 4096);
  while (!text.empty() && (text.back() == '\n' || text.back() == '\r' || text.back() == ' '))
    text.pop_back();
  return text;
}

// Whether `server` (a gRPC target) is this machine's loopback and nothing else: one literal
// address in 127.0.0.0/8 or [::1], or localhost (a port or not). Lists and DNS authorities are not.
bool loopback(const std::string& server) {
  std::string host = server;
  for (const char* scheme : {"dns:///", "ipv4:", "ipv6:"})
    if (host.rfind(scheme, 0) == 0) host = host.substr(std::string(scheme).size());
  if (host.find(',') != std::string::npos || host.find('/') != std::string::npos) return false;
  if (const auto colon = host.rfind(':'); colon != std::string::npos) host = host.substr(0, colon);  // the port
  if (host == "localhost") return true;
  if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
    in6_addr a6{};
    return ::inet_pton(AF_INET6, host.substr(1, host.size() - 2).c_str(), &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
  }
  in_addr a4{};
  return ::inet_pton(AF_INET, host.c_str(), &a4) == 1 && (ntohl(a4.s_addr) >> 24) == 127;
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
      o.pem_private_key = secret_from_file(key_named, key, "the private key", 1 << 20);
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
