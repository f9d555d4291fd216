#pragma once
// Bearer token secrets (docs/tasks/tenants-and-security.md): made from OpenSSL's RAND_bytes, known to gpuqd only
// by their SHA-256 (EVP). Nothing here is stored or logged; the secret leaves gpuqd once, in
// the reply to the admin who asked for it.
//
// A secret reads gpuq_<id>_<key>: the id (16 hex digits, public: listed and revoked by, named
// in refusals) and the key (32 random bytes, base64url without padding). The hash covers the
// whole secret, so the id alone is worth nothing.
#include <optional>
#include <string>
#include <string_view>

#include "spec/result.hpp"

namespace gpuq::auth {

struct NewToken {
  std::string id;
  std::string secret;  // shown once
  std::string hash;    // token_hash(secret)
};

// kUnavailable when the random generator fails.
Result<NewToken> new_token();
// SHA-256 of the secret, 64 lowercase hex digits.
std::string token_hash(std::string_view secret);
// The id in a secret of gpuq's form; nullopt for anything else.
std::optional<std::string> token_id(std::string_view secret);

}  // namespace gpuq::auth
