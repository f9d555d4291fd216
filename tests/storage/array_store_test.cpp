// Arrays kept as one row while their members are unchanged (store.hpp: ArrayRows): every read
// gives what it gives for the same members written one row each, as members split off their
// row, after a reopen, and for a row written by schema 8; and a random differential run of
// arrays, splits and jobs against a store written one row each.
#include <cstdlib>
#include <random>

#include "storage/store.hpp"
#include "storage/usage.hpp"
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

namespace array_rows_test {

// Three members (indices 4, 7, 9), numbers 10 to 12, submitted and held: events 5 to 10.
ArrayRows make_array(ResourceNames& names) {
  ArrayRows a;
  a.first = make_full_job(names);
  a.first.state = JobState::kPending;
  a.first.placement.clear();
  a.first.flavor.clear();
  a.first.admitted_at = 0;
  a.first.held = true;
  a.first.reason = "held at submission";
  a.first.number = 10;
  a.first.spec.array_id = "sweep";
  a.first.spec.array_index = 4;
  a.first.spec.id = JobId("sweep_4");
  a.indices = IndexRanges::of({4, 7, 9});
  a.first_seq = 5;
  EventRecord submitted{0, 3000, "", "ml-train", std::nullopt, JobState::kPending, "submitted", "alice", ""};
  EventRecord held{0, 3000, "", "ml-train", JobState::kPending, JobState::kPending, "held at submission", "alice", ""};
  a.each = {submitted, held};
  return a;
}

// The same members and events, one row each, as a batch without arrays writes them.
Batch eager(const ArrayRows& a) {
  Batch b;
  for (std::uint64_t p = 0; p < a.count(); ++p) b.jobs.push_back(a.member(p));
  for (std::uint64_t p = 0; p < a.count(); ++p)
    for (std::size_t t = 0; t < a.each.size(); ++t) b.events.push_back(a.event(p, t));
  return b;
}

void check_same_events(const std::vector<EventRecord>& a, const std::vector<EventRecord>& b) {
  REQUIRE(a.size() == b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    CAPTURE(i);
    CHECK(a[i].seq == b[i].seq);
    CHECK(a[i].at == b[i].at);
    CHECK(a[i].job == b[i].job);
    CHECK(a[i].queue == b[i].queue);
    CHECK(a[i].from == b[i].from);
    CHECK(a[i].to == b[i].to);
    CHECK(a[i].reason == b[i].reason);
    CHECK(a[i].flavor == b[i].flavor);
  }
}

// job() and has_job() of `lazy` equal `eager`'s for id.
void check_same_job(Store& lazy, Store& eager, const std::string& id) {
  CAPTURE(id);
  auto a = lazy.job(id);
  auto b = eager.job(id);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->has_value() == b->has_value());
  if (a->has_value()) {
    test::check_same(**a, **b);
    CHECK((*a)->held == (*b)->held);
    CHECK((*a)->spec.array_index == (*b)->spec.array_index);
    CHECK((*a)->spec.array_id == (*b)->spec.array_id);
  }
  CHECK(lazy.has_job(id).value() == eager.has_job(id).value());
}

// jobs(f) of `lazy` equals `eager`'s.
void check_same_page(Store& lazy, Store& eager, const JobFilter& f) {
  auto a = lazy.jobs(f);
  auto b = eager.jobs(f);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    test::check_same((*a)[i], (*b)[i]);
    CHECK((*a)[i].held == (*b)[i].held);
  }
}

// load() of `lazy` (members as records) equals `eager`'s.
void check_same_load(Store& lazy, Store& eager) {
  auto a = lazy.load();
  auto b = eager.load();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->last_event_seq == b->last_event_seq);
  CHECK(a->last_job_number == b->last_job_number);
  CHECK(a->unfinished_count == b->unfinished_count);
  REQUIRE(a->unfinished.size() == b->unfinished.size());
  for (std::size_t i = 0; i < a->unfinished.size(); ++i) {
    test::check_same(a->unfinished[i], b->unfinished[i]);
    CHECK(a->unfinished[i].held == b->unfinished[i].held);
  }
}

// usage() of `lazy` equals `eager`'s for q, over a period holding every job.
void check_same_usage(Store& lazy, Store& eager, UsageQuery q) {
  CAPTURE(static_cast<int>(q.by));
  CAPTURE(q.after_number);
  q.until = 100'000;
  q.now = 100'000;
  auto a = lazy.usage(q);
  auto b = eager.usage(q);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  REQUIRE(a->size() == b->size());
  for (std::size_t i = 0; i < a->size(); ++i) {
    CHECK((*a)[i].key == (*b)[i].key);
    CHECK((*a)[i].number == (*b)[i].number);
    CHECK((*a)[i].unfinished == (*b)[i].unfinished);
    CHECK((*a)[i].state == (*b)[i].state);
    CHECK((*a)[i].held == (*b)[i].held);
    CHECK((*a)[i].succeeded == (*b)[i].succeeded);
    CHECK((*a)[i].cancelled == (*b)[i].cancelled);
    CHECK((*a)[i].waited == (*b)[i].waited);
    CHECK((*a)[i].wait_p50 == (*b)[i].wait_p50);
    CHECK((*a)[i].wait_p90 == (*b)[i].wait_p90);
  }
}

// Every read of `lazy` equals the same read of `eager`.
void check_same_reads(Store& lazy, Store& eager) {
  for (const char* id : {"sweep_4", "sweep_7", "sweep_9", "job-2", "sweep_5", "sweep"}) check_same_job(lazy, eager, id);
  for (std::size_t limit : {1, 2, 3, 100})
    for (std::uint64_t after : {0, 2, 10, 11, 12}) {
      for (const std::vector<JobState>& states :
           {std::vector<JobState>{}, {JobState::kPending}, {JobState::kRunning}}) {
        JobFilter f;
        f.after_number = after;
        f.limit = limit;
        f.states = states;
        check_same_page(lazy, eager, f);
      }
    }
  for (std::uint64_t seq : {0, 4, 5, 7, 10})
    for (std::size_t limit : {1, 4, 100})
      check_same_events(lazy.events_after(seq, limit).value(), eager.events_after(seq, limit).value());
  for (UsageBy by : {UsageBy::kQueue, UsageBy::kUser, UsageBy::kJob}) {
    UsageQuery q;
    q.by = by;
    check_same_usage(lazy, eager, q);
  }
  check_same_load(lazy, eager);
}

std::int64_t array_rows_on_disk(const std::string& path) {
  return std::stoll(test::query_one(path, "SELECT count(*) FROM array_rows"));
}

// Before the array: a job and its events 1-4; the array's turn also admits member 7 (its own row
// and events 11-12, kept over the array's row for it).
struct ArrayWorkload {
  Batch before, turn;
};

ArrayWorkload workload(ResourceNames& names) {
  ArrayWorkload w;
  w.before.jobs.push_back(make_job(2));
  for (std::uint64_t s = 1; s <= 4; ++s)
    w.before.events.push_back(make_event(s, "job-2", std::nullopt, JobState::kPending));
  ArrayRows a = make_array(names);
  w.turn.arrays.push_back(a);
  JobRecord seven = a.member(1);
  seven.state = JobState::kRunning;
  seven.held = false;
  seven.admitted_at = 3001;
  seven.flavor = "h100";
  seven.reason = "started";
  w.turn.jobs.push_back(seven);
  w.turn.events.push_back(make_event(11, "sweep_7", JobState::kPending, JobState::kAdmitted));
  w.turn.events.push_back(make_event(12, "sweep_7", JobState::kAdmitted, JobState::kRunning));
  return w;
}

Batch as_eager(const Batch& turn) {
  Batch b = eager(turn.arrays.at(0));
  b.jobs.erase(b.jobs.begin() + 1);  // member 7: its own row
  for (const JobRecord& j : turn.jobs) b.jobs.push_back(j);
  for (const EventRecord& e : turn.events) b.events.push_back(e);
  return b;
}

// Every read of `lazy` equals `eager`'s: each id (and some that are not), pages of every
// filter from every number, events from every seq, usage by every grouping, the load.
void check_differential(Store& lazy, Store& eager, const std::vector<JobRecord>& known, std::uint64_t last_number,
                        std::uint64_t last_seq) {
  std::vector<std::string> ids{"arr0_999", "arr1_", "job-0", "arr9_1"};
  for (const JobRecord& j : known) ids.push_back(j.spec.id.value);
  for (const std::string& id : ids) {
    check_same_job(lazy, eager, id);
    if (eager.has_job_with_prefix(id).value()) CHECK(lazy.has_job_with_prefix(id).value());
  }
  const std::vector<std::vector<JobState>> filters{{}, {JobState::kPending}, {JobState::kRunning, JobState::kSucceeded}};
  for (std::uint64_t after = 0; after <= last_number; after += 3)
    for (std::size_t limit : {1, 7, 1000})
      for (const auto& states : filters)
        for (const char* queue : {"", "ml-eval"})
          for (const char* owner : {"", "bob"}) {
            JobFilter f;
            f.after_number = after;
            f.limit = limit;
            f.states = states;
            f.queue = queue;
            f.owner = owner;
            check_same_page(lazy, eager, f);
          }
  // Folded (ls): paged by the entries' last numbers, the runs expanded, the same jobs in order.
  for (const auto& states : filters)
    for (std::size_t limit : {1, 3}) {
      JobFilter all;
      all.states = states;
      all.limit = 100'000;
      std::vector<std::string> want;
      auto every = eager.jobs(all);
      REQUIRE(every.ok());
      for (const JobRecord& j : *every) want.push_back(j.spec.id.value);
      std::vector<std::string> got;
      JobFilter f = all;
      f.fold = true;
      f.limit = limit;
      while (true) {
        auto page = lazy.list(f);
        REQUIRE(page.ok());
        if (page->empty()) break;
        for (const ListEntry& e : *page) {
          if (e.members.empty()) {
            got.push_back(e.job.spec.id.value);
            CHECK(e.last_number == e.job.number);
            continue;
          }
          CHECK(e.members.size() >= 2);
          CHECK(e.last_number == e.job.number + e.members.size() - 1);
          CHECK(e.job.spec.array_index == static_cast<std::int32_t>(e.members.at(0)));
          for (std::uint64_t k = 0; k < e.members.size(); ++k)
            got.push_back(e.job.spec.array_id + "_" + std::to_string(e.members.at(k)));
        }
        f.after_number = page->back().last_number;
      }
      CHECK(got == want);
    }
  for (std::uint64_t seq = 0; seq <= last_seq; seq += 2)
    for (std::size_t limit : {1, 5, 1000})
      check_same_events(lazy.events_after(seq, limit).value(), eager.events_after(seq, limit).value());
  for (UsageBy by : {UsageBy::kQueue, UsageBy::kUser, UsageBy::kFlavor, UsageBy::kJob})
    for (std::uint64_t after : {0, 5}) {
      UsageQuery q;
      q.by = by;
      q.after_number = after;
      q.limit = by == UsageBy::kJob ? 4 : 0;
      check_same_usage(lazy, eager, q);
    }
  check_same_load(lazy, eager);
}

}  // namespace array_rows_test

using namespace array_rows_test;

TEST_CASE("an array's row reads as its members' rows, as members split off it, after a reopen, and from schema 8") {
  TempDir dir;
  ResourceNames names;
  const ArrayWorkload w = workload(names);
  auto eager_store = open_ok(dir.file("eager.db"), names);
  REQUIRE(eager_store->commit(w.before).ok());
  REQUIRE(eager_store->commit(as_eager(w.turn)).ok());
  const std::string path = dir.file("lazy.db");
  auto lazy = open_ok(path, names);
  REQUIRE(lazy->commit(w.before).ok());
  REQUIRE(lazy->commit(w.turn).ok());
  // Member 7 (position 1) was admitted in the array's turn: split at once.
  CHECK(test::query_one(path, "SELECT unsplit FROM array_rows") == "0,2");
  CHECK(test::query_one(path, "SELECT count(*) FROM jobs") == "2");
  check_same_reads(*lazy, *eager_store);

  SUBCASE("a member split later: its row and the array's unsplit positions, in one commit") {
    Batch cancel;
    JobRecord nine = make_array(names).member(2);
    nine.state = JobState::kCancelled;
    nine.held = false;
    nine.finished_at = 3005;
    nine.reason = "cancelled by alice";
    cancel.jobs.push_back(nine);
    cancel.events.push_back(make_event(13, "sweep_9", JobState::kPending, JobState::kCancelled));
    REQUIRE(lazy->commit(cancel).ok());
    REQUIRE(eager_store->commit(cancel).ok());
    CHECK(test::query_one(path, "SELECT unsplit FROM array_rows") == "0");
    check_same_reads(*lazy, *eager_store);
    cancel.jobs[0] = make_array(names).member(0);
    cancel.jobs[0].state = JobState::kCancelled;
    cancel.events[0] = make_event(14, "sweep_4", JobState::kPending, JobState::kCancelled);
    REQUIRE(lazy->commit(cancel).ok());
    REQUIRE(eager_store->commit(cancel).ok());
    CHECK(test::query_one(path, "SELECT unsplit FROM array_rows") == "");
    check_same_reads(*lazy, *eager_store);
    SUBCASE("retention drops the row once every member has its own and they are pruned") {
      Batch prune;
      prune.jobs_prune_before = 1'000'000;
      REQUIRE(lazy->commit(prune).ok());
      REQUIRE(eager_store->commit(prune).ok());
      CHECK(array_rows_on_disk(path) == 0);
      check_same_reads(*lazy, *eager_store);
    }
  }
  SUBCASE("reopened: the load gives the unsplit members as runs, in their places by number") {
    lazy.reset();
    ResourceNames fresh;
    auto again = open_ok(path, fresh);
    check_same_reads(*again, *eager_store);
    std::vector<std::string> order;
    std::vector<std::size_t> runs;
    storage::Loaded meta;
    auto r = again->load([&](Loaded& m) { meta = m; return Result<void>(Ok()); },
                         [&](std::vector<JobRecord>& chunk) {
                           for (const JobRecord& j : chunk) order.push_back(j.spec.id.value);
                           return Result<void>(Ok());
                         },
                         [&](MemberRun& run) {
                           order.push_back(run.first.spec.id.value);
                           runs.push_back(run.indices.size());
                           CHECK(run.first.held);
                           return Result<void>(Ok());
                         });
    REQUIRE(r.ok());
    CHECK(order == std::vector<std::string>{"job-2", "sweep_4", "sweep_7", "sweep_9"});
    CHECK(runs == std::vector<std::size_t>{1, 1});
    CHECK(meta.unfinished_count == 4);
    CHECK(meta.unfinished_in_rows == 2);
    CHECK(meta.last_job_number == 12);
    CHECK(meta.last_event_seq == 12);
  }
  SUBCASE("a row written by schema 8 (gpuqd stopped before its settle) is filled in at the next open") {
    lazy.reset();
    // As schema 8 had it: no columns of v9, indices one by one, the version 8.
    raw_exec(path,
             "DROP INDEX array_rows_by_array; DROP INDEX array_rows_by_last_seq; DROP INDEX array_rows_unsplit; "
             "ALTER TABLE array_rows DROP COLUMN array_id; ALTER TABLE array_rows DROP COLUMN last_number; "
             "ALTER TABLE array_rows DROP COLUMN last_seq; ALTER TABLE array_rows DROP COLUMN unsplit; "
             "UPDATE array_rows SET indices = '4,7,9'; UPDATE meta SET value = '8' WHERE key = 'schema_version'");
    CHECK(test::schema_version(path) == "8");
    ResourceNames fresh;
    auto again = open_ok(path, fresh);
    CHECK(test::schema_version(path) == "9");
    CHECK(test::query_one(path, "SELECT unsplit || ' ' || array_id || ' ' || last_number FROM array_rows") ==
          "0,2 sweep 12");
    check_same_reads(*again, *eager_store);
  }
}

TEST_CASE("an array's row that does not decode stops the reads with an error naming it, and loses nothing") {
  TempDir dir;
  ResourceNames names;
  const std::string path = dir.file("state.db");
  {
    auto store = open_ok(path, names);
    Batch b;
    b.arrays.push_back(make_array(names));
    REQUIRE(store->commit(b).ok());
  }
  raw_exec(path, "UPDATE array_rows SET events = '[{\"at\": 1}]'");
  auto store = open_ok(path, names);
  auto r = store->jobs(JobFilter{});
  REQUIRE_FALSE(r.ok());
  CHECK(r.error().find("array sweep (row 10): events: {\"at\":1} is not an event") != std::string::npos);
  CHECK(r.code() == ErrorCode::kFailedPrecondition);
  CHECK_FALSE(store->load().ok());
  CHECK_FALSE(store->job("sweep_7").ok());
  CHECK(array_rows_on_disk(path) == 1);  // kept for whoever mends it
}

TEST_CASE("has_job_with_prefix: one read for an array's member ids, those in its row included") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("state.db"), names);
  Batch b;
  b.jobs.push_back(make_job(2));
  b.jobs.back().spec.id = JobId("x_5");
  b.arrays.push_back(make_array(names));
  REQUIRE(store->commit(b).ok());
  for (const auto& [prefix, has] : std::vector<std::pair<std::string, bool>>{
           {"x_", true}, {"x", true}, {"x_5", true}, {"x_5_", false}, {"y_", false}, {"w", false},
           {"sweep_", true}, {"sweep_9", true}, {"swe", true}, {"sweeps", false}, {"", true}}) {
    CAPTURE(prefix);
    CHECK(store->has_job_with_prefix(prefix).value() == has);
  }
  // "May": an array of that id whose indices may begin so (they are not looked at).
  CHECK(store->has_job_with_prefix("sweep_1").value());
  for (const char* id : {"sweep_4", "sweep_7", "sweep_9"}) CHECK(store->has_job(id).value());
  for (const char* id : {"sweep_5", "sweep_07", "sweep_", "sweep", "_4", "sweep_99999999999"}) {
    CAPTURE(id);
    CHECK_FALSE(store->has_job(id).value());
    CHECK_FALSE(store->job(id).value().has_value());
  }
}

TEST_CASE("IndexRanges: ranges text, rank, at and erase") {
  auto r = IndexRanges::parse("0-4,7,9-10");
  REQUIRE(r.has_value());
  CHECK(r->size() == 8);
  CHECK(r->text() == "0-4,7,9-10");
  CHECK(r->rank(7) == 5);
  CHECK_FALSE(r->rank(5).has_value());
  CHECK(r->at(6) == 9);
  CHECK(r->erase(2));
  CHECK_FALSE(r->erase(2));
  CHECK(r->text() == "0-1,3-4,7,9-10");
  CHECK(r->at(2) == 3);
  CHECK(IndexRanges::parse("1,2,3")->text() == "1-3");
  for (const char* bad : {"3,1", "1-", "a", "2-1", "1,,2", "1,", "1-3,2"}) {
    CAPTURE(bad);
    CHECK_FALSE(IndexRanges::parse(bad).has_value());
  }
  CHECK(IndexRanges::parse("")->empty());
  CHECK(IndexRanges::of({0, 1, 2, 5}).text() == "0-2,5");
  const IndexRanges x = *IndexRanges::parse("0-4,7,9-10");
  CHECK(x.slice(3, 6).text() == "3-4,7,9");
  CHECK(x.slice(0, 0).text() == "0");
  CHECK(x.slice(5, 7).text() == "7,9-10");
}

TEST_CASE("differential: arrays kept as rows read as the same members written one row each") {
#ifdef __SANITIZE_ADDRESS__
  const unsigned default_runs = 10;  // the sanitized build: the same code, a tenth of the time
#else
  const unsigned default_runs = 40;
#endif
  const unsigned runs = std::getenv("GPUQ_ARRAY_STORE_RUNS") ? static_cast<unsigned>(std::atoi(std::getenv("GPUQ_ARRAY_STORE_RUNS"))) : default_runs;
  const unsigned first = std::getenv("GPUQ_ARRAY_STORE_SEED") ? static_cast<unsigned>(std::atoi(std::getenv("GPUQ_ARRAY_STORE_SEED"))) : 1;
  for (unsigned seed = first; seed < first + runs; ++seed) {
    CAPTURE(seed);
    std::mt19937 rng(seed);
    auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
    TempDir dir;
    ResourceNames names;
    auto lazy = open_ok(dir.file("lazy.db"), names);
    auto eager_store = open_ok(dir.file("eager.db"), names);
    std::uint64_t number = 0, seq = 0;
    std::vector<JobRecord> known;  // every job and member, as last written
    const std::vector<std::string> queues{"ml-train", "ml-eval"}, owners{"alice", "bob"};
    for (int step = 0; step < 30; ++step) {
      Batch lazy_b, eager_b;
      const int op = pick(3);
      if (op == 0) {  // an array
        ArrayRows a;
        a.first = make_job(number + 1, queues[pick(2)]);
        a.first.spec.owner = owners[pick(2)];
        a.first.spec.array_id = "arr" + std::to_string(step);
        a.first.held = pick(2) == 0;
        a.first.reason = a.first.held ? "held at submission" : "";
        std::vector<std::int32_t> ix;
        for (std::int32_t i = pick(3), n = 1 + pick(12); static_cast<int>(ix.size()) < n; i += 1 + pick(3) / 2)
          ix.push_back(i);
        a.indices = IndexRanges::of(ix);
        a.first.spec.array_index = ix[0];
        a.first.spec.id = JobId(a.first.spec.array_id + "_" + std::to_string(ix[0]));
        a.first_seq = seq + 1;
        a.each.push_back({0, a.first.spec.submitted_at, "", a.first.spec.queue.value, std::nullopt, JobState::kPending,
                          "submitted", a.first.spec.owner, ""});
        if (a.first.held)
          a.each.push_back({0, a.first.spec.submitted_at, "", a.first.spec.queue.value, JobState::kPending,
                            JobState::kPending, "held at submission", a.first.spec.owner, ""});
        number += a.count();
        seq = a.last_seq();
        lazy_b.arrays.push_back(a);
        Batch e = eager(a);
        eager_b.jobs = e.jobs;
        eager_b.events = e.events;
        for (std::uint64_t p = 0; p < a.count(); ++p) known.push_back(a.member(p));
      } else if (op == 1) {  // a job of its own
        JobRecord j = make_job(++number, queues[pick(2)]);
        j.spec.owner = owners[pick(2)];
        known.push_back(j);
        lazy_b.jobs.push_back(j);
        lazy_b.events.push_back(make_event(++seq, j.spec.id.value, std::nullopt, JobState::kPending));
      }
      // Some jobs or members change: admitted, finished, cancelled (a member splits).
      for (int c = pick(4); c > 0 && !known.empty(); --c) {
        JobRecord& j = known[static_cast<std::size_t>(pick(static_cast<int>(known.size())))];
        const JobState from = j.state;
        if (from == JobState::kPending && pick(2) == 0) {
          j.state = JobState::kRunning;
          j.held = false;
          j.admitted_at = j.spec.submitted_at + 10 + pick(100);
          j.flavor = "h100";
          j.reason = "";
        } else if (from == JobState::kPending || from == JobState::kRunning) {
          j.state = pick(2) == 0 ? JobState::kSucceeded : JobState::kCancelled;
          j.finished_at = 90'000 + pick(1000);
        } else {
          continue;
        }
        bool again = false;
        for (JobRecord& x : lazy_b.jobs) again = again || (x.number == j.number && ((x = j), true));
        if (!again) lazy_b.jobs.push_back(j);
        lazy_b.events.push_back(make_event(++seq, j.spec.id.value, from, j.state));
      }
      for (const JobRecord& j : lazy_b.jobs) eager_b.jobs.push_back(j);
      for (const EventRecord& e : lazy_b.events) eager_b.events.push_back(e);
      // Pruning with events of this batch the newest (an array's events go together, once a
      // later event exists: storage/README.md, Arrays).
      if (pick(6) == 0 && !lazy_b.events.empty()) lazy_b.jobs_prune_before = eager_b.jobs_prune_before = 90'000 + pick(1000);
      REQUIRE(lazy->commit(lazy_b).ok());
      REQUIRE(eager_store->commit(eager_b).ok());
    }
    check_differential(*lazy, *eager_store, known, number, seq);
    lazy.reset();
    ResourceNames fresh;
    auto reopened = open_ok(dir.file("lazy.db"), fresh);
    check_differential(*reopened, *eager_store, known, number, seq);
  }
}
