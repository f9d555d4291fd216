// The usage history table: written with a batch, read back by load(), the v1 -> v2 migration, and
// rows that do not decode.
#include <limits>

#include "storage/codec.hpp"
#include "storage/schema.hpp"
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

namespace {

HistoryRecord history(const std::string& queue, Time at, std::map<std::string, double> average) {
  return HistoryRecord{queue, at, std::move(average)};
}

void check_same(const HistoryRecord& a, const HistoryRecord& b) {
  CHECK(a.queue == b.queue);
  CHECK(a.at == b.at);
  CHECK(a.average == b.average);  // the JSON numbers round-trip every bit of a double
}

}  // namespace

TEST_CASE("usage history survives commit, close and reopen, by queue and resource name") {
  TempDir dir;
  const auto path = dir.file("s.db");
  const std::vector<HistoryRecord> written{
      history("ml-train", 1'700'000'123, {{"gpu", 3000.000123456789}, {"rdma/hca", 0.25}}),
      history("vision", 1'700'000'000, {}),  // a queue that used nothing: its `at` only
  };
  {
    ResourceNames names;
    auto store = open_ok(path, names);
    Batch b;
    b.history = written;
    REQUIRE(store->commit(b).ok());
  }
  ResourceNames names;
  auto loaded = open_ok(path, names)->load();
  REQUIRE(loaded.ok());
  CHECK(loaded->history_skipped.empty());
  REQUIRE(loaded->history.size() == 2);
  check_same(loaded->history[0], written[0]);
  check_same(loaded->history[1], written[1]);
}

TEST_CASE("a checkpoint replaces the queue's row; a deleted queue's history goes with it") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch first;
  first.history = {history("a", 100, {{"gpu", 8000}}), history("b", 100, {{"gpu", 1000}})};
  REQUIRE(store->commit(first).ok());
  Batch second;
  second.history = {history("a", 160, {{"gpu", 7000.5}})};
  second.deleted_queues = {"b"};
  REQUIRE(store->commit(second).ok());
  auto loaded = store->load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->history.size() == 1);
  check_same(loaded->history[0], history("a", 160, {{"gpu", 7000.5}}));
}

TEST_CASE("a negative or non-finite history value is refused; nothing of the batch is written") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  for (double bad : {-3.0, std::nan(""), std::numeric_limits<double>::infinity()}) {
    Batch b;
    b.jobs = {make_job(1)};
    b.history = {history("ok", 100, {{"gpu", 1.0}}),
                 history("vision", 100, {{"cpu", 5}, {"gpu", bad}})};
    auto r = store->commit(b);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == ErrorCode::kInvalidArgument);
    CHECK(r.error().find("usage history of queue vision: gpu is ") != std::string::npos);
    auto loaded = store->load();
    REQUIRE(loaded.ok());
    CHECK(loaded->history.empty());
    CHECK(loaded->unfinished.empty());
  }
  Batch good;
  good.history = {history("ok", 100, {{"gpu", 1.0}})};
  CHECK(store->commit(good).ok());  // the store is still usable
}

TEST_CASE("a state file of schema 1, without the history table, opens and is migrated") {
  TempDir dir;
  const auto path = dir.file("v1.db");
  ResourceNames names;
  const QueueSpec queue = make_queue(names);
  {
    // The file as a build of schema 1 left it: its one step, a queue and an unfinished job.
    SqliteError e;
    Db db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, e);
    REQUIRE(db);
    REQUIRE_FALSE(migrate(db, 0, 1, {migrations()[0]}).has_value());
  }
  raw_exec(path, "INSERT INTO queues(name, spec) VALUES('ml-train', '" +
                     encode_queue(queue, names) + "')");
  CHECK(schema_version(path) == "1");
  {
    auto store = open_ok(path, names);
    auto loaded = store->load();
    REQUIRE(loaded.ok());
    CHECK(loaded->history.empty());  // every queue starts without history, as before
    REQUIRE(loaded->queues.size() == 1);
    check_same(loaded->queues[0], queue);
    Batch b;
    b.history = {history("ml-train", 500, {{"gpu", 2000}})};
    REQUIRE(store->commit(b).ok());
  }
  CHECK(schema_version(path) == std::to_string(kSchemaVersion));
  auto loaded = open_ok(path, names)->load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->history.size() == 1);
  check_same(loaded->history[0], history("ml-train", 500, {{"gpu", 2000}}));
}

TEST_CASE("a history row that does not decode is left out, named, and the load goes on") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  open_ok(path, names).reset();
  raw_exec(path,
           "INSERT INTO usage_history(queue, at, average) VALUES"
           "('a', 100, '{\"gpu\": \"lots\"}'), ('b', 100, 'not json'), ('c', 100, '[1, 2]'),"
           "('d', 100, '{\"gpu\": 1500.5, \"unheard-of\": 7}')");
  auto loaded = open_ok(path, names)->load();
  REQUIRE(loaded.ok());
  // Only the form is the store's to judge: names and values are checked by the daemon.
  REQUIRE(loaded->history.size() == 1);
  check_same(loaded->history[0], history("d", 100, {{"gpu", 1500.5}, {"unheard-of", 7}}));
  REQUIRE(loaded->history_skipped.size() == 3);
  const auto& skipped = loaded->history_skipped;
  CHECK(skipped[0].find(path) != std::string::npos);
  CHECK(skipped[0].find(
            "usage history of queue \"a\": average of \"gpu\" is \"lots\", not a number") !=
        std::string::npos);
  CHECK(skipped[1].find("queue \"b\": malformed stored JSON") != std::string::npos);
  CHECK(skipped[2].find("queue \"c\"") != std::string::npos);
}
