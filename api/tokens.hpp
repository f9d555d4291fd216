#pragma once
// The bearer tokens gpuqd issued (docs/tasks/tenants-and-security.md), in memory so that checking a call's token
// reads no SQLite on gRPC's threads: loaded from the state file at start, and changed only once
// the turn that wrote a created or revoked token is on disk (so memory never holds a token the
// file does not). Found by the SHA-256 of the secret; the secret itself is never kept.
#include <optional>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "storage/store.hpp"

namespace gpuq::api {

class TokenTable {
 public:
  void reset(std::vector<storage::TokenRecord> all);
  // A token created or revoked (its write committed): replaces the one with its id.
  void put(const storage::TokenRecord& t);
  // The token this secret is, whatever its state (expired, revoked); nullopt: unknown.
  std::optional<storage::TokenRecord> find_secret(std::string_view secret) const;
  std::optional<storage::TokenRecord> find_id(const std::string& id) const;
  // `user`'s tokens ("": everyone's), by creation time.
  std::vector<storage::TokenRecord> list(const std::string& user) const;

 private:
  mutable std::shared_mutex mu_;
  std::unordered_map<std::string, storage::TokenRecord> by_hash_;
  std::unordered_map<std::string, std::string> hash_of_id_;
};

// Token fields as a person sends them: INVALID_ARGUMENT messages naming the field; "" when fine.
std::string bad_token_user(const std::string& user);
std::string bad_token_note(const std::string& note);
// "2026-11-26T14:40:00Z"
std::string utc_time(Time t);

}  // namespace gpuq::api
