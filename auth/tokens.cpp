#include "auth/tokens.hpp"

#include <openssl/evp.h>
#include <openssl/rand.h>

#include <array>

namespace gpuq::auth {

namespace {

constexpr std::string_view kPrefix = "gpuq_";
constexpr std::size_t kIdBytes = 8, kKeyBytes = 32;

std::string hex(const unsigned char* p, std::size_t n) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(2 * n);
  for (std::size_t i = 0; i < n; ++i) {
    out.push_back(kDigits[p[i] >> 4]);
    out.push_back(kDigits[p[i] & 15]);
  }
  return out;
}

std::string base64url(const unsigned char* p, std::size_t n) {
  std::string out(4 * ((n + 2) / 3) + 1, '\0');
  const int len =
      EVP_EncodeBlock(reinterpret_cast<unsigned char*>(out.data()), p, static_cast<int>(n));
  out.resize(static_cast<std::size_t>(len));
  while (!out.empty() && out.back() == '=') out.pop_back();
  for (char& c : out) c = c == '+' ? '-' : c == '/' ? '_' : c;
  return out;
}

}  // namespace

Result<NewToken> new_token() {
  std::array<unsigned char, kIdBytes + kKeyBytes> random{};
  if (RAND_bytes(random.data(), static_cast<int>(random.size())) != 1)
    return Error{"the random generator failed (OpenSSL RAND_bytes); no token was made",
                 ErrorCode::kUnavailable};
  NewToken t;
  t.id = hex(random.data(), kIdBytes);
  t.secret = std::string(kPrefix) + t.id + "_" + base64url(random.data() + kIdBytes, kKeyBytes);
  t.hash = token_hash(t.secret);
  OPENSSL_cleanse(random.data(), random.size());
  return t;
}

std::string token_hash(std::string_view secret) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(secret.data(), secret.size(), digest, &n, EVP_sha256(), nullptr);
  return hex(digest, n);
}

std::optional<std::string> token_id(std::string_view secret) {
  if (secret.substr(0, kPrefix.size()) != kPrefix) return std::nullopt;
  const std::string_view id = secret.substr(kPrefix.size(), 2 * kIdBytes);
  if (id.size() != 2 * kIdBytes || secret.size() <= kPrefix.size() + id.size() ||
      secret[kPrefix.size() + id.size()] != '_')
    return std::nullopt;
  for (char c : id)
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return std::nullopt;
  return std::string(id);
}

}  // namespace gpuq::auth
