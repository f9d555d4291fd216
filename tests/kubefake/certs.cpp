#include "tests/kubefake/certs.hpp"

#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/pem.h>
#include <openssl/rand.h>
#include <openssl/x509v3.h>

#include <stdexcept>
#include <vector>

namespace gpuq::kubefake {

namespace {

struct BioFree {
  void operator()(BIO* b) const { BIO_free(b); }
};
struct ExtFree {
  void operator()(X509_EXTENSION* e) const { X509_EXTENSION_free(e); }
};
struct X509Free {
  void operator()(X509* c) const { X509_free(c); }
};
struct BnFree {
  void operator()(BIGNUM* b) const { BN_free(b); }
};

void check(bool ok, const char* what) {
  if (!ok) throw std::runtime_error(std::string("kubefake: OpenSSL failed: ") + what);
}

EVP_PKEY* new_key() {
  EVP_PKEY* k = EVP_PKEY_Q_keygen(nullptr, nullptr, "EC", "P-256");
  check(k != nullptr, "EC P-256 key generation");
  return k;
}

std::string pem_of(X509* cert) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  check(bio && PEM_write_bio_X509(bio.get(), cert) == 1, "PEM_write_bio_X509");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

std::string pem_of(EVP_PKEY* key) {
  std::unique_ptr<BIO, BioFree> bio(BIO_new(BIO_s_mem()));
  check(bio && PEM_write_bio_PrivateKey(bio.get(), key, nullptr, nullptr, 0, nullptr, nullptr) == 1,
        "PEM_write_bio_PrivateKey");
  char* data = nullptr;
  long n = BIO_get_mem_data(bio.get(), &data);
  return std::string(data, static_cast<std::size_t>(n));
}

void add_ext(X509* cert, X509* issuer, int nid, const char* value) {
  X509V3_CTX ctx;
  X509V3_set_ctx_nodb(&ctx);
  X509V3_set_ctx(&ctx, issuer, cert, nullptr, nullptr, 0);
  std::unique_ptr<X509_EXTENSION, ExtFree> ext(X509V3_EXT_conf_nid(nullptr, &ctx, nid, value));
  check(ext != nullptr, value);
  check(X509_add_ext(cert, ext.get(), -1) == 1, "X509_add_ext");
}

// A certificate for `key` named `cn`, valid from an hour ago (clock skew) for `days`, signed by
// `issuer` (self-issued when null); sign() signs it.
X509* new_cert(EVP_PKEY* key, const std::string& cn, X509* issuer, long days) {
  std::unique_ptr<X509, X509Free> owned(X509_new());
  X509* cert = owned.get();
  check(cert != nullptr, "X509_new");
  check(X509_set_version(cert, 2) == 1, "X509_set_version");
  std::vector<unsigned char> serial(16);
  check(RAND_bytes(serial.data(), static_cast<int>(serial.size())) == 1, "RAND_bytes");
  serial[0] &= 0x7f;  // a positive serial
  std::unique_ptr<BIGNUM, BnFree> bn(
      BN_bin2bn(serial.data(), static_cast<int>(serial.size()), nullptr));
  check(bn && BN_to_ASN1_INTEGER(bn.get(), X509_get_serialNumber(cert)) != nullptr, "serial");
  X509_gmtime_adj(X509_getm_notBefore(cert), -3600);
  X509_gmtime_adj(X509_getm_notAfter(cert), days * 24 * 3600);
  check(X509_set_pubkey(cert, key) == 1, "X509_set_pubkey");
  X509_NAME* name = X509_get_subject_name(cert);
  check(X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
                                   reinterpret_cast<const unsigned char*>(cn.c_str()), -1, -1,
                                   0) == 1,
        "subject");
  check(X509_set_issuer_name(cert, issuer == nullptr ? name : X509_get_subject_name(issuer)) == 1,
        "issuer");
  return owned.release();
}

void sign(X509* cert, EVP_PKEY* key) { check(X509_sign(cert, key, EVP_sha256()) > 0, "X509_sign"); }

}  // namespace

Pki::Pki() : ca_key_(new_key()) {
  ca_cert_.reset(new_cert(ca_key_.get(), "kubefake-ca", nullptr, 3650));
  X509* ca = ca_cert_.get();
  add_ext(ca, ca, NID_basic_constraints, "critical,CA:TRUE");
  add_ext(ca, ca, NID_key_usage, "critical,keyCertSign,cRLSign,digitalSignature");
  add_ext(ca, ca, NID_subject_key_identifier, "hash");
  add_ext(ca, ca, NID_authority_key_identifier, "keyid:always");
  sign(ca, ca_key_.get());
  ca_pem_ = pem_of(ca);

  std::unique_ptr<EVP_PKEY, KeyFree> key(new_key());
  std::unique_ptr<X509, CertFree> cert(new_cert(key.get(), "kube-apiserver", ca, 365));
  add_ext(cert.get(), ca, NID_basic_constraints, "critical,CA:FALSE");
  add_ext(cert.get(), ca, NID_key_usage, "critical,digitalSignature,keyEncipherment");
  add_ext(cert.get(), ca, NID_ext_key_usage, "serverAuth");
  add_ext(cert.get(), ca, NID_subject_alt_name, "IP:127.0.0.1,DNS:localhost");
  add_ext(cert.get(), ca, NID_subject_key_identifier, "hash");
  add_ext(cert.get(), ca, NID_authority_key_identifier, "keyid:always");
  sign(cert.get(), ca_key_.get());
  serving_ = {pem_of(cert.get()), pem_of(key.get())};
}

Pki::~Pki() = default;

PemPair Pki::issue_client(const std::string& common_name) const {
  std::unique_ptr<EVP_PKEY, KeyFree> key(new_key());
  X509* ca = ca_cert_.get();
  std::unique_ptr<X509, CertFree> cert(new_cert(key.get(), common_name, ca, 365));
  add_ext(cert.get(), ca, NID_basic_constraints, "critical,CA:FALSE");
  add_ext(cert.get(), ca, NID_key_usage, "critical,digitalSignature");
  add_ext(cert.get(), ca, NID_ext_key_usage, "clientAuth");
  add_ext(cert.get(), ca, NID_authority_key_identifier, "keyid:always");
  sign(cert.get(), ca_key_.get());
  return {pem_of(cert.get()), pem_of(key.get())};
}

}  // namespace gpuq::kubefake
