#pragma once
// The fake's PKI, made at start with OpenSSL and kept in memory: a CA, a serving certificate for
// 127.0.0.1 and localhost, and client certificates on demand. All keys are EC P-256.
#include <openssl/evp.h>
#include <openssl/x509.h>

#include <memory>
#include <string>

namespace gpuq::kubefake {

struct PemPair {
  std::string cert_pem;
  std::string key_pem;
};

class Pki {
 public:
  Pki();  // makes the CA and the serving certificate
  ~Pki();
  Pki(const Pki&) = delete;
  Pki& operator=(const Pki&) = delete;

  const std::string& ca_pem() const { return ca_pem_; }
  const PemPair& serving() const { return serving_; }
  // A clientAuth certificate with subject CN=common_name, signed by the CA.
  PemPair issue_client(const std::string& common_name) const;

 private:
  struct KeyFree {
    void operator()(EVP_PKEY* k) const { EVP_PKEY_free(k); }
  };
  struct CertFree {
    void operator()(X509* c) const { X509_free(c); }
  };
  std::unique_ptr<EVP_PKEY, KeyFree> ca_key_;
  std::unique_ptr<X509, CertFree> ca_cert_;
  std::string ca_pem_;
  PemPair serving_;
};

}  // namespace gpuq::kubefake
