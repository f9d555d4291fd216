#include "daemon/tls.hpp"

#include <grpcpp/security/server_credentials.h>
#include <openssl/bio.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <spdlog/spdlog.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>

namespace gpuq::daemon {

namespace {

Result<std::string> read_pem(const std::string& field, const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    return Error{field + ": " + path + " cannot be read (" + std::strerror(errno) + ")",
                 ErrorCode::kInvalidArgument};
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct X509Free {
  void operator()(X509* x) const { X509_free(x); }
};
struct KeyFree {
  void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
};

std::unique_ptr<BIO, BioFree> bio_of(const std::string& pem) {
  return std::unique_ptr<BIO, BioFree>(BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size())));
}

std::unique_ptr<X509, X509Free> first_cert(const std::string& pem) {
  auto bio = bio_of(pem);
  return std::unique_ptr<X509, X509Free>(PEM_read_bio_X509(bio.get(), nullptr, nullptr, nullptr));
}

}  // namespace

Result<std::shared_ptr<grpc::ServerCredentials>> server_credentials(const TlsFiles& tls) {
  auto cert = read_pem("tls.cert", tls.cert);
  if (!cert) return Error{cert.error(), cert.code()};
  auto key = read_pem("tls.key", tls.key);
  if (!key) return Error{key.error(), key.code()};
  auto x509 = first_cert(cert.value());
  if (!x509)
    return Error{"tls.cert: " + tls.cert + " holds no PEM certificate",
                 ErrorCode::kInvalidArgument};
  auto key_bio = bio_of(key.value());
  std::unique_ptr<EVP_PKEY, KeyFree> pkey(
      PEM_read_bio_PrivateKey(key_bio.get(), nullptr, nullptr, nullptr));
  key_bio.reset();  // it reads key's text in place, which moves into the options below
  if (!pkey)
    return Error{
        "tls.key: " + tls.key +
            " holds no PEM private key (or one with a passphrase, which gpuqd cannot ask for)",
        ErrorCode::kInvalidArgument};
  if (X509_check_private_key(x509.get(), pkey.get()) != 1)
    return Error{"tls.key: " + tls.key + " is not the key of tls.cert " + tls.cert,
                 ErrorCode::kInvalidArgument};
  struct stat st {};
  if (::stat(tls.key.c_str(), &st) == 0 && (st.st_mode & 077) != 0)
    spdlog::warn(
        "event=tls_key_readable path={} mode={:o} note=\"others may read gpuqd's TLS key; chmod "
        "600 it\"",
        tls.key, st.st_mode & 0777);
  grpc::SslServerCredentialsOptions options;
  // The key moves into the options, which gRPC copies: no other copy is left here.
  options.pem_key_cert_pairs.push_back({std::move(key.value()), std::move(cert.value())});
  if (!tls.client_ca.empty()) {
    auto ca = read_pem("tls.clientCA", tls.client_ca);
    if (!ca) return Error{ca.error(), ca.code()};
    if (!first_cert(ca.value()))
      return Error{"tls.clientCA: " + tls.client_ca + " holds no PEM certificate",
                   ErrorCode::kInvalidArgument};
    options.pem_root_certs = ca.value();
    // Asked for and verified when sent, not required: token-only and anonymous clients connect.
    options.client_certificate_request = GRPC_SSL_REQUEST_CLIENT_CERTIFICATE_AND_VERIFY;
  }
  return grpc::SslServerCredentials(options);
}

}  // namespace gpuq::daemon
