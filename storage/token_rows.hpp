#pragma once
// The bearer token rows (table tokens, schema 3): a batch's records written, all of them read.
// Only the secret's hash is ever here (docs/tasks/tenants-and-security.md).
#include <functional>
#include <string>
#include <vector>

#include "storage/sqlite_db.hpp"
#include "storage/store.hpp"

namespace gpuq::storage {

// `put` is kPutToken; `failed` makes the error for a failed step, given the token's id.
inline constexpr const char* kPutToken =
    "INSERT OR REPLACE INTO tokens(id, user, hash, note, created_by, created_at, expires_at, "
    "revoked_at) "
    "VALUES(?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)";
Result<void> write_token_rows(Stmt& put, const std::vector<TokenRecord>& tokens,
                              const std::function<Error(const std::string&)>& failed);

// `all` is kAllTokens (on the reader connection, in its snapshot).
inline constexpr const char* kAllTokens =
    "SELECT id, user, hash, note, created_by, created_at, expires_at, revoked_at FROM tokens "
    "ORDER BY created_at, id";
Result<std::vector<TokenRecord>> read_token_rows(Stmt& all, const std::function<Error()>& failed);

}  // namespace gpuq::storage
