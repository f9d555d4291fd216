#include "storage/token_rows.hpp"

namespace gpuq::storage {

Result<void> write_token_rows(Stmt& put, const std::vector<TokenRecord>& tokens,
                              const std::function<Error(const std::string&)>& failed) {
  for (const TokenRecord& t : tokens) {
    if (t.id.empty() || t.hash.size() != 64)
      return Error{
          "commit: token \"" + t.id + "\" has no id or no SHA-256 hash; nothing was written",
          ErrorCode::kInvalidArgument};
    Stmt::Reset r(put);
    put.bind(1, t.id);
    put.bind(2, t.user);
    put.bind(3, t.hash);
    put.bind(4, t.note);
    put.bind(5, t.created_by);
    put.bind(6, t.created_at);
    put.bind(7, t.expires_at);
    put.bind(8, t.revoked_at);
    if (put.step() != SQLITE_DONE) return failed(t.id);
  }
  return Ok();
}

Result<std::vector<TokenRecord>> read_token_rows(Stmt& all, const std::function<Error()>& failed) {
  Stmt::Reset r(all);
  std::vector<TokenRecord> out;
  const int rc = all.each_row([&](const Stmt& row) {
    TokenRecord& t = out.emplace_back();
    t.id = row.text(0);
    t.user = row.text(1);
    t.hash = row.text(2);
    t.note = row.text(3);
    t.created_by = row.text(4);
    t.created_at = row.int64(5);
    t.expires_at = row.int64(6);
    t.revoked_at = row.int64(7);
  });
  if (rc != SQLITE_DONE) return failed();
  return out;
}

}  // namespace gpuq::storage
