// The SQLite store: refusing bad files, migrations, listing, events, backup, big loads (usage:
// usage_store_test.cpp).
#include "storage/schema.hpp"
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;
TEST_CASE("a file written by a newer gpuqd is refused and left as it is") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  open_ok(path, names).reset();
  raw_exec(path, "UPDATE meta SET value = '" + std::to_string(kSchemaVersion + 1) +
                     "' WHERE key = 'schema_version'");
  auto r = Store::open(path, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  const std::string versions = "newer gpuqd (schema " + std::to_string(kSchemaVersion + 1) +
                               ", this build knows " + std::to_string(kSchemaVersion) + ")";
  CHECK(r.error().find(versions) != std::string::npos);
  CHECK(r.error().find("upgrade gpuqd or restore a backup") != std::string::npos);
  CHECK(r.error().find(path) != std::string::npos);
}

TEST_CASE("a file that is not SQLite is refused, named, and left untouched") {
  TempDir dir;
  const auto path = dir.file("s.db");
  std::string garbage(10000, 'x');
  garbage.replace(0, 20, "this is not sqlite!!");
  std::ofstream(path, std::ios::binary) << garbage;
  ResourceNames names;
  auto r = Store::open(path, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  CHECK(r.error().find(path) != std::string::npos);
  CHECK(r.error().find("not a database") != std::string::npos);
  CHECK(r.error().find("gpuq admin backup") != std::string::npos);
  CHECK(r.error().find("move the file away") != std::string::npos);
  CHECK(read_all(path) == garbage);
  CHECK_FALSE(fs::exists(path + "-wal"));
}

TEST_CASE("a SQLite file of another program is refused") {
  TempDir dir;
  const auto path = dir.file("other.db");
  raw_exec(path, "CREATE TABLE photos(id INTEGER PRIMARY KEY, data BLOB)");
  ResourceNames names;
  auto r = Store::open(path, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  CHECK(r.error().find("another program") != std::string::npos);
  raw_exec(path, "PRAGMA application_id = 1234");
  auto r2 = Store::open(path, names);
  REQUIRE_FALSE(r2.ok());
  CHECK(r2.error().find("application_id 1234") != std::string::npos);
}

TEST_CASE("a corrupt gpuq file is refused") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  { open_ok(path, names); }  // the schema's pages: all of the empty file
  const std::size_t schema_bytes = read_all(path).size();
  {
    auto store = open_ok(path, names);
    Batch b;
    for (std::uint64_t n = 1; n <= 300; ++n) b.jobs.push_back(make_job(n));
    REQUIRE(store->commit(b).ok());
  }  // the last connection checkpoints the WAL into the file
  std::string bytes = read_all(path);
  REQUIRE(bytes.size() > schema_bytes + 8 * 4096);
  for (std::size_t i = schema_bytes; i < bytes.size() - 4096; i += 7) bytes[i] = static_cast<char>(0xA5);
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
  auto r = Store::open(path, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  CHECK(r.error().find(path) != std::string::npos);
  CHECK(r.error().find("gpuq admin backup") != std::string::npos);
  // With the check in the background (gpuqd's start), the same refusal comes from checked(),
  // and nothing can be written before it.
  {
    auto bg = Store::open(path, names, Store::Check::kInBackground);
    REQUIRE(bg.ok());  // the damage is past the pages open() reads
    auto c = (*bg)->checked();
    REQUIRE_FALSE(c.ok());
    CHECK(c.code() == ErrorCode::kFailedPrecondition);
    CHECK(c.error().find("corrupt") != std::string::npos);
    Batch b;
    b.jobs.push_back(make_job(1000));
    CHECK_FALSE((*bg)->commit(b).ok());
  }
  CHECK(read_all(path) == bytes);  // the file is as it was
}

TEST_CASE("a sound file passes the background check") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  { open_ok(path, names); }
  auto bg = Store::open(path, names, Store::Check::kInBackground);
  REQUIRE(bg.ok());
  CHECK((*bg)->checked().ok());
  Batch b;
  b.jobs.push_back(make_job(1));
  CHECK((*bg)->commit(b).ok());
}

TEST_CASE("a state file that cannot be created is unavailable") {
  TempDir dir;
  ResourceNames names;
  const auto path = dir.file("missing-dir/s.db");
  auto r = Store::open(path, names);
  REQUIRE_FALSE(r.ok());
  CHECK(r.code() == ErrorCode::kUnavailable);
  CHECK(r.error().find(path) != std::string::npos);
}

TEST_CASE("migrations run in order in one transaction; a failing step leaves the old version") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  {
    auto store = open_ok(path, names);  // a fresh file goes 0 -> 1 -> ... through the same path
    Batch b;
    b.jobs = {make_job(1)};
    REQUIRE(store->commit(b).ok());
  }
  auto steps = migrations();
  REQUIRE(steps.size() == static_cast<std::size_t>(kSchemaVersion));
  SqliteError e;
  Db db = Db::open(path, SQLITE_OPEN_READWRITE, e);
  REQUIRE(db);
  auto version = [&] {
    sqlite3_stmt* s = nullptr;
    sqlite3_prepare_v2(db.get(), "SELECT value FROM meta WHERE key='schema_version'", -1, &s, nullptr);
    REQUIRE(sqlite3_step(s) == SQLITE_ROW);
    std::string v = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
    sqlite3_finalize(s);
    return v;
  };
  const int v = kSchemaVersion;
  CHECK(version() == std::to_string(v));

  auto broken = steps;
  broken.push_back({"ALTER TABLE jobs ADD COLUMN labels TEXT NOT NULL DEFAULT '';"
                    "CREATE TABLE oops(x INTEGER); INSERT INTO nowhere VALUES(1);"});
  auto err = migrate(db, v, v + 1, broken);
  REQUIRE(err.has_value());
  CHECK(err->message.find("migration to schema " + std::to_string(v + 1)) != std::string::npos);
  CHECK(version() == std::to_string(v));
  CHECK(db.exec("SELECT labels FROM jobs").has_value());  // the first statement was undone

  auto good = steps;
  good.push_back({"ALTER TABLE jobs ADD COLUMN labels TEXT NOT NULL DEFAULT '{}';"});
  REQUIRE_FALSE(migrate(db, v, v + 1, good).has_value());
  CHECK(version() == std::to_string(v + 1));
  CHECK_FALSE(db.exec("SELECT labels FROM jobs").has_value());
  CHECK(migrate(db, v + 1, v + 2, good).has_value());  // no step past the last
}

TEST_CASE("listing pages by number and filters by queue, state and owner") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  for (std::uint64_t n = 1; n <= 250; ++n) {
    JobRecord j = make_job(n, n % 2 == 0 ? "even" : "odd",
                           n % 5 == 0 ? JobState::kFailed : JobState::kPending);
    if (n % 3 == 0) j.spec.owner = "bob";
    b.jobs.push_back(j);
  }
  REQUIRE(store->commit(b).ok());

  std::vector<std::uint64_t> seen;
  JobFilter f;
  f.limit = 100;
  for (;;) {
    auto page = store->jobs(f);
    REQUIRE(page.ok());
    if (page->empty()) break;
    CHECK(page->size() <= 100);
    for (const auto& j : *page) seen.push_back(j.number);
    f.after_number = page->back().number;
  }
  REQUIRE(seen.size() == 250);
  for (std::size_t i = 0; i < seen.size(); ++i) CHECK(seen[i] == i + 1);

  JobFilter q;
  q.queue = "even";
  q.states = {JobState::kFailed};
  q.after_number = 20;
  q.limit = 3;
  auto page = store->jobs(q);
  REQUIRE(page.ok());
  REQUIRE(page->size() == 3);
  CHECK((*page)[0].number == 30);
  CHECK((*page)[1].number == 40);
  CHECK((*page)[2].number == 50);

  JobFilter o;
  o.owner = "bob";
  o.states = {JobState::kPending, JobState::kFailed};
  o.limit = 1000;
  auto bobs = store->jobs(o);
  REQUIRE(bobs.ok());
  CHECK(bobs->size() == 83);  // multiples of 3 up to 250

  // Unfinished states alone (gpuq ls) take the index of unfinished jobs: the same answers.
  JobFilter u;
  u.states = {JobState::kPending, JobState::kRunning};
  u.owner = "bob";
  u.after_number = 100;
  u.limit = 7;
  auto pending = store->jobs(u);
  REQUIRE(pending.ok());
  REQUIRE(pending->size() == 7);
  CHECK((*pending)[0].number == 102);
  CHECK((*pending)[1].number == 108);  // 105 failed
  CHECK((*pending)[6].number == 126);  // 120 failed
  JobFilter none;
  none.queue = "nobody";
  CHECK(store->jobs(none)->empty());
}

TEST_CASE("events are replayed after a sequence number, in order, a page at a time") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  for (std::uint64_t s = 1; s <= 50; ++s)
    b.events.push_back(make_event(s, "job-1", JobState::kPending, JobState::kAdmitted));
  REQUIRE(store->commit(b).ok());
  auto page = store->events_after(10, 5);
  REQUIRE(page.ok());
  REQUIRE(page->size() == 5);
  CHECK(page->front().seq == 11);
  CHECK(page->back().seq == 15);
  CHECK(store->events_after(50, 5)->empty());
}

TEST_CASE("a backup taken while the engine thread commits opens and loads consistently") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  auto store = open_ok(path, names);
  Batch setup;
  setup.queues = {make_queue(names)};
  REQUIRE(store->commit(setup).ok());

  constexpr std::uint64_t kBatches = 150, kPerBatch = 20;
  std::atomic<bool> failed{false};
  std::thread writer([&] {
    std::uint64_t n = 0;
    for (std::uint64_t b = 0; b < kBatches; ++b) {
      Batch batch;
      for (std::uint64_t i = 0; i < kPerBatch; ++i) {
        ++n;  // one job and its submit event per number: seq == number in every committed state
        batch.jobs.push_back(make_job(n));
        batch.events.push_back(make_event(n, "job-" + std::to_string(n), std::nullopt, JobState::kPending));
      }
      if (!store->commit(batch).ok()) failed = true;
    }
  });
  std::vector<std::string> copies;
  for (int i = 0; i < 3; ++i) {
    copies.push_back(dir.file("backup-" + std::to_string(i) + ".db"));
    auto r = store->backup_to(copies.back());
    const std::string why = r.ok() ? std::string() : r.error();
    INFO(why);
    CHECK(r.ok());
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  writer.join();
  CHECK_FALSE(failed);
  for (const auto& copy : copies) {
    CHECK_FALSE(fs::exists(copy + ".partial"));
    ResourceNames fresh;
    auto backup = open_ok(copy, fresh);
    auto l = backup->load();
    REQUIRE(l.ok());
    CHECK(l->queues.size() == 1);
    CHECK(l->last_job_number % kPerBatch == 0);  // whole batches only
    CHECK(l->unfinished.size() == l->last_job_number);
    CHECK(l->last_event_seq == l->last_job_number);
  }
  CHECK(store->backup_to(path).code() == ErrorCode::kInvalidArgument);
}

TEST_CASE("load of many jobs (streamed in many chunks from a helper thread) keeps number order and every field") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  constexpr std::uint64_t kJobs = 25'000;  // a dozen chunks of 2,048
  {
    auto store = open_ok(path, names);
    Batch b;
    for (std::uint64_t n = 1; n <= kJobs; ++n) {
      JobRecord j = make_job(n * 2);  // gaps in numbering
      j.spec.pod_sets[0].per_pod[*names.intern(n % 2 ? "rdma/hca" : "fpga")] = static_cast<Quantity>(n);
      j.run.working_dir = "/a/directory/long/enough/for/the/heap/" + std::to_string(n);
      b.jobs.push_back(j);
    }
    JobRecord done = make_job(1, "ml-train", JobState::kSucceeded);
    b.jobs.push_back(done);
    REQUIRE(store->commit(b).ok());
  }
  ResourceNames fresh;
  auto store = open_ok(path, fresh);
  auto l = store->load();
  REQUIRE(l.ok());
  REQUIRE(l->unfinished.size() == kJobs);
  const auto rdma = *fresh.find("rdma/hca");
  const auto fpga = *fresh.find("fpga");
  bool all_good = true;
  for (std::uint64_t i = 0; i < kJobs; ++i) {
    const auto& j = l->unfinished[i];
    const std::uint64_t n = i + 1;
    all_good = all_good && j.number == n * 2 && j.spec.id.value == "job-" + std::to_string(n * 2) &&
               j.spec.pod_sets[0].per_pod[n % 2 ? rdma : fpga] == static_cast<Quantity>(n) &&
               j.spec.pod_sets[0].per_pod[kGpu] == 1000 &&
               j.run.working_dir == "/a/directory/long/enough/for/the/heap/" + std::to_string(n);
  }
  CHECK(all_good);
  CHECK(l->last_job_number == kJobs * 2);

  // A damaged body anywhere is reported, not skipped.
  store.reset();
  raw_exec(path, "UPDATE jobs SET body = 'j1;garbage' WHERE number = 30000");
  auto damaged = open_ok(path, fresh);
  auto bad = damaged->load();
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.code() == ErrorCode::kFailedPrecondition);
  CHECK(bad.error().find("job-30000") != std::string::npos);
  CHECK(bad.error().find(path) != std::string::npos);
}


TEST_CASE("streamed load: chunks in submission order, and an error from the taker stops it") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  constexpr std::uint64_t kJobs = 10'000;
  auto store = open_ok(path, names);
  {
    Batch b;
    for (std::uint64_t n = 1; n <= kJobs; ++n) b.jobs.push_back(make_job(n));
    REQUIRE(store->commit(b).ok());
  }
  std::size_t counted = 0, chunks = 0;
  std::uint64_t last = 0;
  bool ordered = true;
  auto all = store->load(
      [&](Loaded& meta) {
        counted = meta.unfinished_count;
        return Result<void>(Ok());
      },
      [&](std::vector<JobRecord>& chunk) {
        ++chunks;
        for (const JobRecord& j : chunk) {
          ordered = ordered && j.number == last + 1;
          last = j.number;
        }
        return Result<void>(Ok());
      });
  REQUIRE(all.ok());
  CHECK(counted == kJobs);
  CHECK(last == kJobs);
  CHECK(ordered);
  CHECK(chunks > 1);

  std::size_t taken = 0;
  auto stopped = store->load([](Loaded&) { return Result<void>(Ok()); },
                             [&](std::vector<JobRecord>& chunk) -> Result<void> {
                               taken += chunk.size();
                               if (taken > 3000) return Error{"taker is full", ErrorCode::kResourceExhausted};
                               return Ok();
                             });
  REQUIRE_FALSE(stopped.ok());
  CHECK(stopped.error() == "taker is full");
  CHECK(taken < kJobs);
  // The store is usable after it.
  Batch b;
  b.jobs.push_back(make_job(kJobs + 1));
  CHECK(store->commit(b).ok());
}

TEST_CASE("the state file is gpuqd's alone: made 0600, and an existing 0644 one (with its WAL) made so") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  auto mode_of = [](const std::string& p) { return std::filesystem::status(p).permissions() & std::filesystem::perms::all; };
  const auto only_owner = std::filesystem::perms::owner_read | std::filesystem::perms::owner_write;
  {
    auto s = open_ok(path, names);
    CHECK(mode_of(path) == only_owner);
    CHECK(mode_of(path + "-wal") == only_owner);
  }
  const auto loose = only_owner | std::filesystem::perms::group_read | std::filesystem::perms::others_read;
  std::filesystem::permissions(path, loose);
  CHECK(make_private(path) == path + " was 0644");
  CHECK(mode_of(path) == only_owner);
  CHECK(make_private(path).empty());
  auto again = Store::open(path, names);
  REQUIRE(again.ok());
  CHECK(mode_of(path) == only_owner);
}

TEST_CASE("the WAL is checkpointed to its end and reused while reads go on between commits") {
  // Each commit follows a read (as Submit's id checks do); SQLite's own autocheckpoint ran inside
  // COMMIT, behind the reads' snapshot, so the WAL never restarted and grew with every commit.
  TempDir dir;
  ResourceNames names;
  const fs::path file = dir.file("s.db");
  auto store = open_ok(file, names);
  std::uint64_t n = 0;
  for (int commit = 0; commit < 300; ++commit) {
    REQUIRE(store->has_job("job-" + std::to_string(n)).ok());
    Batch b;
    for (int i = 0; i < 20; ++i) {
      JobRecord j = make_job(++n);
      j.run.command = {std::string(2000, 'x')};
      b.jobs.push_back(std::move(j));
    }
    REQUIRE(store->commit(b).ok());
  }
  // 12 MB of rows went through it; the WAL holds about 1,000 pages (4 MiB) and a commit at most.
  const auto wal = fs::file_size(fs::path(file.string() + "-wal"));
  CAPTURE(wal);
  CHECK(wal < 6u * 1024 * 1024);
  auto last = store->job("job-" + std::to_string(n));
  REQUIRE(last.ok());
  CHECK(last.value().has_value());
}
