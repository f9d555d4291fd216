// The tokens table (schema 3): a created token and its revocation written with a batch and read
// back after a reopen; a row without a hash refused with nothing of the batch written.
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

namespace {

TokenRecord token(const std::string& id, const std::string& user, Time created) {
  return TokenRecord{id,
                     user,
                     std::string(64, 'a' + static_cast<char>(id.back() - '0')),
                     "ci runner",
                     "root",
                     created,
                     created + 3600,
                     0};
}

}  // namespace

TEST_CASE("tokens survive commit, close and reopen; a revocation replaces the row by id") {
  TempDir dir;
  const auto path = dir.file("s.db");
  {
    ResourceNames names;
    auto store = open_ok(path, names);
    Batch b;
    b.tokens = {token("id2", "bob", 200), token("id1", "alice", 100)};
    REQUIRE(store->commit(b).ok());
    TokenRecord revoked = token("id1", "alice", 100);
    revoked.revoked_at = 150;
    Batch r;
    r.tokens = {revoked};
    REQUIRE(store->commit(r).ok());
  }
  ResourceNames names;
  auto tokens = open_ok(path, names)->tokens();
  REQUIRE(tokens.ok());
  REQUIRE(tokens->size() == 2);
  const TokenRecord& a = (*tokens)[0];  // by creation time
  CHECK(a.id == "id1");
  CHECK(a.user == "alice");
  CHECK(a.hash == std::string(64, 'b'));
  CHECK(a.note == "ci runner");
  CHECK(a.created_by == "root");
  CHECK(a.created_at == 100);
  CHECK(a.expires_at == 3700);
  CHECK(a.revoked_at == 150);
  CHECK((*tokens)[1].id == "id2");
  CHECK((*tokens)[1].revoked_at == 0);
}

TEST_CASE("a token row without a SHA-256 hash is refused; nothing of the batch is written") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  auto store = open_ok(path, names);
  Batch b;
  b.queues.push_back(make_queue(names));
  TokenRecord bad = token("id1", "alice", 100);
  bad.hash = "secret-in-clear";
  b.tokens = {bad};
  auto r = store->commit(b);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kInvalidArgument);
  auto loaded = store->load();
  REQUIRE(loaded.ok());
  CHECK(loaded->queues.empty());
  CHECK(store->tokens()->empty());
}
