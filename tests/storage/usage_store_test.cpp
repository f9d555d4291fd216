// Accounting over the state file (storage/usage.hpp): a job's attempts from its events, and the
// rows per queue, user, flavor and job read from a real SQLite file.
#include "storage/schema.hpp"
#include "storage/usage_rows.hpp"
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

namespace {

constexpr Time h = 3600;
constexpr std::int64_t kGpuSecond = 1000;  // milli-GPU-seconds of one GPU for one second

StateChange change(Time at, std::optional<JobState> from, JobState to,
                   const std::string& flavor = "") {
  return {at, from, to, flavor};
}

JobFacts facts(JobState state, Time submitted, Time admitted, Time finished,
               const std::string& flavor, std::int32_t attempts = 0, std::int32_t preemptions = 0) {
  JobFacts j;
  j.number = 1;
  j.id = "j";
  j.queue = "a";
  j.owner = "alice";
  j.state = state;
  j.submitted_at = submitted;
  j.admitted_at = admitted;
  j.finished_at = finished;
  j.flavor = flavor;
  j.gpu_milli = 2000;
  j.attempts = attempts;
  j.preemptions = preemptions;
  return j;
}

void check_attempt(const Attempt& a, Time start, Time end, const std::string& flavor,
                   bool preempted) {
  CHECK(a.start == start);
  CHECK(a.end == end);
  CHECK(a.flavor == flavor);
  CHECK(a.preempted == preempted);
}

using JS = JobState;

}  // namespace

TEST_CASE(
    "attempts: every admission of a job preempted and requeued, each with its flavor; the "
    "preempted one lost") {
  const std::vector<StateChange> events = {change(100, std::nullopt, JS::kPending),
                                           change(110, JS::kPending, JS::kAdmitted, "h100"),
                                           change(111, JS::kAdmitted, JS::kRunning, "h100"),
                                           change(200, JS::kRunning, JS::kPreempting, "h100"),
                                           change(230, JS::kPreempting, JS::kPending),
                                           change(300, JS::kPending, JS::kAdmitted, "a100"),
                                           change(301, JS::kAdmitted, JS::kRunning, "a100"),
                                           change(400, JS::kRunning, JS::kSucceeded)};
  const auto a = attempts_of(facts(JS::kSucceeded, 100, 300, 400, "a100", 1, 1), events, 9999);
  REQUIRE(a.attempts.size() == 2);
  check_attempt(a.attempts[0], 110, 230, "h100", true);  // held until it stopped, not until chosen
  check_attempt(a.attempts[1], 300, 400, "a100", false);
  CHECK(a.first_admitted == 110);  // the first admission, not the row's last
  CHECK(a.last_flavor == "a100");
}

TEST_CASE("attempts: a victim whose stop was refused runs on in the same attempt, not preempted") {
  const std::vector<StateChange> events = {change(0, std::nullopt, JS::kPending),
                                           change(10, JS::kPending, JS::kAdmitted, "h100"),
                                           change(11, JS::kAdmitted, JS::kRunning, "h100"),
                                           change(50, JS::kRunning, JS::kPreempting, "h100"),
                                           change(60, JS::kPreempting, JS::kRunning, "h100"),
                                           change(100, JS::kRunning, JS::kFailed)};
  const auto a = attempts_of(facts(JS::kFailed, 0, 10, 100, "h100"), events, 9999);
  REQUIRE(a.attempts.size() == 1);
  check_attempt(a.attempts[0], 10, 100, "h100", false);
}

TEST_CASE(
    "attempts: a change that left no event ends the attempt where the events last showed it") {
  SUBCASE("gpuqd restarted while the job was being preempted: it waited again, then was admitted") {
    const std::vector<StateChange> events = {change(0, std::nullopt, JS::kPending),
                                             change(10, JS::kPending, JS::kAdmitted, "h100"),
                                             change(11, JS::kAdmitted, JS::kRunning, "h100"),
                                             change(50, JS::kRunning, JS::kPreempting, "h100"),
                                             change(120, JS::kPending, JS::kAdmitted, "h100"),
                                             change(121, JS::kAdmitted, JS::kRunning, "h100")};
    const auto a = attempts_of(facts(JS::kRunning, 0, 120, 0, "h100", 0, 1), events, 200);
    REQUIRE(a.attempts.size() == 2);
    check_attempt(a.attempts[0], 10, 50, "h100", true);
    check_attempt(a.attempts[1], 120, 200, "h100", false);  // still running: up to now
    CHECK(a.first_admitted == 10);
  }
  SUBCASE("requeued at a restart and still waiting") {
    const std::vector<StateChange> events = {change(0, std::nullopt, JS::kPending),
                                             change(10, JS::kPending, JS::kAdmitted, "h100"),
                                             change(50, JS::kAdmitted, JS::kPreempting, "h100")};
    const auto a = attempts_of(facts(JS::kPending, 0, 0, 0, "", 0, 1), events, 200);
    REQUIRE(a.attempts.size() == 1);
    check_attempt(a.attempts[0], 10, 50, "h100", true);
  }
  SUBCASE("ended without an event (it could not be restored at a start): at the row's end") {
    const std::vector<StateChange> events = {change(0, std::nullopt, JS::kPending),
                                             change(10, JS::kPending, JS::kAdmitted, "h100"),
                                             change(11, JS::kAdmitted, JS::kRunning, "h100")};
    const auto a = attempts_of(facts(JS::kFailed, 0, 10, 90, "h100"), events, 200);
    REQUIRE(a.attempts.size() == 1);
    check_attempt(a.attempts[0], 10, 90, "h100", false);
  }
}

TEST_CASE("attempts where jobRetention pruned events: the row stands in for what is gone") {
  SUBCASE("no events left: the row's one admission") {
    const auto running = attempts_of(facts(JS::kRunning, 0, 100, 0, "h100"), {}, 500);
    REQUIRE(running.attempts.size() == 1);
    check_attempt(running.attempts[0], 100, 500, "h100", false);
    CHECK(running.first_admitted == 100);
    const auto done = attempts_of(facts(JS::kSucceeded, 0, 100, 300, "h100"), {}, 500);
    REQUIRE(done.attempts.size() == 1);
    check_attempt(done.attempts[0], 100, 300, "h100", false);
    // Waiting again after a preemption: it holds nothing, and its first admission is unknown.
    const auto requeued = attempts_of(facts(JS::kPending, 0, 0, 0, "", 1, 1), {}, 500);
    CHECK(requeued.attempts.empty());
    CHECK_FALSE(requeued.first_admitted);
  }
  SUBCASE(
      "the first kept event is not the submission; the job held GPUs then, since its admission") {
    const std::vector<StateChange> events = {change(500, JS::kRunning, JS::kSucceeded)};
    const auto a = attempts_of(facts(JS::kSucceeded, 0, 100, 500, "h100"), events, 900);
    REQUIRE(a.attempts.size() == 1);
    check_attempt(a.attempts[0], 100, 500, "h100", false);
    CHECK(a.first_admitted == 100);  // never requeued: its one admission
  }
  SUBCASE(
      "re-admitted after the first kept event: the attempt before counts from that event only") {
    const std::vector<StateChange> events = {change(500, JS::kRunning, JS::kPreempting, "h100"),
                                             change(510, JS::kPreempting, JS::kPending),
                                             change(600, JS::kPending, JS::kAdmitted, "h100")};
    const auto a = attempts_of(facts(JS::kAdmitted, 0, 600, 0, "h100", 1, 1), events, 900);
    REQUIRE(a.attempts.size() == 2);
    check_attempt(a.attempts[0], 500, 510, "h100", true);
    check_attempt(a.attempts[1], 600, 900, "h100", false);
    CHECK_FALSE(a.first_admitted);  // before the kept events: not known
  }
}

namespace {

// A job row and its events, as gpuqd writes them. `steps`: (time, to-state, flavor) after the
// submission at `submitted`.
struct Written {
  JobRecord job;
  std::vector<EventRecord> events;
};

Written written(std::uint64_t number, const std::string& queue, const std::string& owner,
                Time submitted, std::vector<std::tuple<Time, JobState, std::string>> steps) {
  Written w;
  w.job = make_job(number, queue);  // 2 pods x 1 GPU
  w.job.spec.owner = owner;
  w.job.spec.submitted_at = submitted;
  JobState state = JobState::kPending;
  w.events.push_back({0, submitted, w.job.spec.id.value, queue, std::nullopt, state, "", "", ""});
  for (const auto& [at, to, flavor] : steps) {
    w.events.push_back({0, at, w.job.spec.id.value, queue, state, to, "", "", flavor});
    if (to == JobState::kAdmitted) {
      w.job.admitted_at = at;
      w.job.flavor = flavor;
    }
    if (to == JobState::kPending && state == JobState::kPreempting) {
      ++w.job.attempts;
      ++w.job.preemptions;
      w.job.admitted_at = 0;
      w.job.flavor.clear();
    }
    if (is_finished(to)) w.job.finished_at = at;
    state = to;
  }
  w.job.state = state;
  return w;
}

// The period [2h, 10h) at 12h:
//  1 a alice: admitted 1h on h100, preempted at 3h, admitted 4h on a100, succeeded 6h
//  2 a bob:   submitted 2h, admitted 2.5h on h100, running
//  3 b alice: submitted 5h, cancelled 7h while pending
//  4 b bob:   submitted 3h, admitted 3h10m on h100, failed 4h
//  5 b alice: submitted 11h (after the period)
//  6 a alice: submitted 1h, pending
//  7 a alice: ran from 0.1h to 1h (before the period)
std::vector<Written> period_jobs() {
  using S = JobState;
  return {
      written(1, "a", "alice", 0,
              {{1 * h, S::kAdmitted, "h100"},
               {1 * h, S::kRunning, "h100"},
               {3 * h, S::kPreempting, "h100"},
               {3 * h, S::kPending, ""},
               {4 * h, S::kAdmitted, "a100"},
               {4 * h + 1, S::kRunning, "a100"},
               {6 * h, S::kSucceeded, ""}}),
      written(2, "a", "bob", 2 * h,
              {{2 * h + h / 2, S::kAdmitted, "h100"}, {2 * h + h / 2, S::kRunning, "h100"}}),
      written(3, "b", "alice", 5 * h, {{7 * h, S::kCancelled, ""}}),
      written(4, "b", "bob", 3 * h, {{3 * h + 600, S::kAdmitted, "h100"}, {4 * h, S::kFailed, ""}}),
      written(5, "b", "alice", 11 * h, {}),
      written(6, "a", "alice", 1 * h, {}),
      written(7, "a", "alice", 0, {{h / 10, S::kAdmitted, "h100"}, {1 * h, S::kSucceeded, ""}}),
  };
}

std::unique_ptr<Store> store_with(const std::string& path, ResourceNames& names,
                                  const std::vector<Written>& jobs) {
  auto store = open_ok(path, names);
  Batch b;
  for (const Written& w : jobs) {
    b.jobs.push_back(w.job);
    for (EventRecord e : w.events) b.events.push_back(std::move(e));
  }
  std::stable_sort(b.events.begin(), b.events.end(),
                   [](const auto& x, const auto& y) { return x.at < y.at; });
  for (std::size_t i = 0; i < b.events.size(); ++i) b.events[i].seq = i + 1;
  REQUIRE(store->commit(b).ok());
  return store;
}

std::vector<UsageRow> usage_ok(Store& store, UsageQuery q) {
  auto rows = store.usage(q);
  INFO((rows.ok() ? std::string() : rows.error()));
  REQUIRE(rows.ok());
  return std::move(rows).value();
}

UsageQuery period(UsageBy by) {
  UsageQuery q;
  q.by = by;
  q.since = 2 * h;
  q.until = 10 * h;
  q.now = 12 * h;
  return q;
}

std::vector<std::string> keys(const std::vector<UsageRow>& rows) {
  std::vector<std::string> out;
  for (const auto& r : rows) out.push_back(r.key);
  return out;
}

}  // namespace

TEST_CASE(
    "usage from the state file: each admission clipped to the period, lost to preemption, outcomes "
    "and waits") {
  TempDir dir;
  ResourceNames names;
  auto store = store_with(dir.file("s.db"), names, period_jobs());
  const std::int64_t two_gpus_hour = 2 * kGpuSecond * h;

  SUBCASE("by queue") {
    const auto rows = usage_ok(*store, period(UsageBy::kQueue));
    REQUIRE(keys(rows) == std::vector<std::string>{"a", "b"});
    const UsageRow& a = rows[0];
    // 1: [2h, 3h) on h100 (preempted: lost) and [4h, 6h) on a100; 2: [2.5h, 10h) on h100.
    CHECK(a.held ==
          std::map<std::string, std::int64_t>{{"a100", 2 * two_gpus_hour},
                                              {"h100", two_gpus_hour + 15 * two_gpus_hour / 2}});
    CHECK(a.lost == two_gpus_hour);
    CHECK(a.succeeded == 1);
    CHECK(a.failed == 0);
    CHECK(a.cancelled == 0);
    CHECK(a.unfinished == 2);  // 2 running, 6 pending
    CHECK(a.waited == 1);      // 2, half an hour; 1 was first admitted before the period
    CHECK(a.wait_p50 == 1800);
    CHECK(a.wait_p90 == 1800);
    const UsageRow& b = rows[1];
    CHECK(b.held == std::map<std::string, std::int64_t>{{"h100", 2 * kGpuSecond * 3000}});
    CHECK(b.lost == 0);
    CHECK(b.failed == 1);
    CHECK(b.cancelled == 1);
    CHECK(b.unfinished == 0);  // 5 came after the period
    CHECK(b.waited == 1);
    CHECK(b.wait_p50 == 600);
  }
  SUBCASE("by user: nearest-rank percentiles of the waits") {
    const auto rows = usage_ok(*store, period(UsageBy::kUser));
    REQUIRE(keys(rows) == std::vector<std::string>{"alice", "bob"});
    CHECK(rows[0].held_total() == 3 * two_gpus_hour);
    CHECK(rows[0].lost == two_gpus_hour);
    CHECK(rows[0].succeeded == 1);
    CHECK(rows[0].cancelled == 1);
    CHECK(rows[0].unfinished == 1);
    CHECK(rows[0].waited == 0);
    CHECK(rows[1].held_total() == 15 * two_gpus_hour / 2 + 2 * kGpuSecond * 3000);
    CHECK(rows[1].waited == 2);
    CHECK(rows[1].wait_p50 == 600);
    CHECK(rows[1].wait_p90 == 1800);
  }
  SUBCASE("by flavor: each admission under its own; jobs never admitted under \"\"") {
    const auto rows = usage_ok(*store, period(UsageBy::kFlavor));
    REQUIRE(keys(rows) == std::vector<std::string>{"", "a100", "h100"});
    CHECK(rows[0].held.empty());
    CHECK(rows[0].cancelled == 1);
    CHECK(rows[0].unfinished == 1);
    CHECK(rows[1].held_total() == 2 * two_gpus_hour);
    CHECK(rows[1].lost == 0);
    CHECK(rows[1].succeeded == 1);  // 1 ended on a100
    CHECK(rows[2].held_total() == two_gpus_hour + 15 * two_gpus_hour / 2 + 2 * kGpuSecond * 3000);
    CHECK(rows[2].lost == two_gpus_hour);
    CHECK(rows[2].failed == 1);
    CHECK(rows[2].unfinished == 1);
    CHECK(rows[2].waited == 2);
  }
  SUBCASE("by job: in submission order, only jobs with something in the period") {
    const auto rows = usage_ok(*store, period(UsageBy::kJob));
    REQUIRE(keys(rows) == std::vector<std::string>{"job-1", "job-2", "job-3", "job-4", "job-6"});
    CHECK(rows[0].number == 1);
    CHECK(rows[0].queue == "a");
    CHECK(rows[0].user == "alice");
    CHECK(rows[0].flavor == "a100");
    CHECK(rows[0].state == JobState::kSucceeded);
    CHECK(rows[0].held_total() == 3 * two_gpus_hour);
    CHECK(rows[0].lost == two_gpus_hour);
    CHECK(rows[1].state == JobState::kRunning);
    CHECK(rows[1].unfinished == 1);
    CHECK(rows[1].wait_p50 == 1800);
    CHECK(rows[4].held.empty());
    CHECK(rows[4].unfinished == 1);
  }
  SUBCASE(
      "a running job counts up to now when the period ends later, and the whole period to its "
      "end") {
    UsageQuery q = period(UsageBy::kJob);
    q.until = 20 * h;  // now is 12h
    q.queue = "a";
    q.user = "bob";
    auto rows = usage_ok(*store, q);
    REQUIRE(keys(rows) == std::vector<std::string>{"job-2"});
    CHECK(rows[0].held_total() == 19 * two_gpus_hour / 2);  // 2.5h .. 12h
    q.since = 0;
    q.until = 0;  // an empty period: nothing
    CHECK(usage_ok(*store, q).empty());
  }
}

TEST_CASE(
    "usage pages: groups after a key (\"\" is one), jobs after a number; filters by queue and "
    "user") {
  TempDir dir;
  ResourceNames names;
  auto store = store_with(dir.file("s.db"), names, period_jobs());
  UsageQuery q = period(UsageBy::kFlavor);
  q.limit = 1;
  CHECK(keys(usage_ok(*store, q)) == std::vector<std::string>{""});
  q.after_key = "";
  q.limit = 5;
  CHECK(keys(usage_ok(*store, q)) == std::vector<std::string>{"a100", "h100"});
  q.after_key = "h100";
  CHECK(usage_ok(*store, q).empty());

  q = period(UsageBy::kJob);
  q.limit = 2;
  CHECK(keys(usage_ok(*store, q)) == std::vector<std::string>{"job-1", "job-2"});
  q.after_number = 2;
  CHECK(keys(usage_ok(*store, q)) == std::vector<std::string>{"job-3", "job-4"});
  q.after_number = 4;
  CHECK(keys(usage_ok(*store, q)) == std::vector<std::string>{"job-6"});

  q = period(UsageBy::kUser);
  q.queue = "b";
  CHECK(keys(usage_ok(*store, q)) == std::vector<std::string>{"alice", "bob"});
  q = period(UsageBy::kQueue);
  q.user = "bob";
  const auto bob = usage_ok(*store, q);
  REQUIRE(keys(bob) == std::vector<std::string>{"a", "b"});
  CHECK(bob[0].unfinished == 1);
  CHECK(bob[1].failed == 1);
  q.queue = "nosuch";
  CHECK(usage_ok(*store, q).empty());
}

TEST_CASE(
    "usage after jobRetention pruned a running job's old events: its row's admission counts") {
  TempDir dir;
  ResourceNames names;
  using S = JobState;
  auto store = store_with(
      dir.file("s.db"), names,
      {written(1, "a", "alice", 50, {{100, S::kAdmitted, "h100"}, {101, S::kRunning, "h100"}}),
       written(2, "a", "alice", 600, {})});
  Batch prune;
  prune.jobs_prune_before = 500;  // events before 500 go; job 1 is unfinished: its row stays
  REQUIRE(store->commit(prune).ok());
  REQUIRE(store->events_after(0, 10)->size() == 1);  // only job 2's submission is left
  UsageQuery q;
  q.by = UsageBy::kJob;
  q.since = 0;
  q.until = 1000;
  q.now = 1000;
  const auto rows = usage_ok(*store, q);
  REQUIRE(keys(rows) == std::vector<std::string>{"job-1", "job-2"});
  CHECK(rows[0].held == std::map<std::string, std::int64_t>{{"h100", 900 * 2 * kGpuSecond}});
  CHECK(rows[0].waited == 1);
  CHECK(rows[0].wait_p50 == 50);
}

TEST_CASE(
    "a state file of schema 5 opens, its events gain a flavor and an index by job, and its usage "
    "counts") {
  TempDir dir;
  const auto path = dir.file("v5.db");
  ResourceNames names;
  {
    SqliteError e;
    Db db = Db::open(path, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, e);
    REQUIRE(db);
    const std::vector<Migration> five(migrations().begin(), migrations().begin() + 5);
    REQUIRE_FALSE(migrate(db, 0, 5, five).has_value());
  }
  // What a build of schema 5 wrote: a job preempted once, now running on h100 (events without
  // a flavor column).
  raw_exec(path,
           "INSERT INTO jobs(number, id, queue, owner, name, state, priority, priority_text, "
           "submitted_at, "
           "admitted_at, finished_at, flavor, gpu_milli, attempts, preemptions, exit_code, "
           "preempted_by, reason, "
           "body) VALUES(1, 'old', 'a', 'alice', '', 2, 0, '', 100, 400, 0, 'h100', 4000, 1, 1, 0, "
           "'', '', 'j1;');"
           "INSERT INTO events(seq, at, job, queue, from_state, to_state, reason) VALUES"
           "(1, 100, 'old', 'a', NULL, 0, ''), (2, 110, 'old', 'a', 0, 1, ''), (3, 111, 'old', "
           "'a', 1, 2, ''),"
           "(4, 200, 'old', 'a', 2, 3, 'preempted'), (5, 210, 'old', 'a', 3, 0, ''), (6, 400, "
           "'old', 'a', 0, 1, ''),"
           "(7, 401, 'old', 'a', 1, 2, '');");
  CHECK(schema_version(path) == "5");
  auto store = open_ok(path, names);
  CHECK(schema_version(path) == std::to_string(kSchemaVersion));
  auto evs = store->events_after(0, 10);
  REQUIRE(evs.ok());
  REQUIRE(evs->size() == 7);
  CHECK((*evs)[1].flavor.empty());  // written before flavors were
  UsageQuery q;
  q.by = UsageBy::kFlavor;
  q.since = 0;
  q.until = 1000;
  q.now = 500;
  const auto rows = usage_ok(*store, q);
  REQUIRE(keys(rows) == std::vector<std::string>{"h100"});      // the row's flavor stands in
  CHECK(rows[0].held_total() == (100 + 100) * 4 * kGpuSecond);  // [110, 210) and [400, 500)
  CHECK(rows[0].lost == 100 * 4 * kGpuSecond);
  CHECK(rows[0].waited == 1);
  CHECK(rows[0].wait_p50 == 10);
}

TEST_CASE(
    "usage reads through indexes: unfinished and recently finished jobs, each job's events, jobs "
    "by number") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  open_ok(path, names).reset();
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  auto plan = [&](const char* sql) {
    sqlite3_stmt* s = nullptr;
    const std::string explain = std::string("EXPLAIN QUERY PLAN ") + sql;
    REQUIRE(sqlite3_prepare_v2(db, explain.c_str(), -1, &s, nullptr) == SQLITE_OK);
    std::string out;
    while (sqlite3_step(s) == SQLITE_ROW)
      out += std::string(reinterpret_cast<const char*>(sqlite3_column_text(s, 3))) + "; ";
    sqlite3_finalize(s);
    return out;
  };
  const std::string unfinished = plan(kUsageUnfinished), finished = plan(kUsageFinished),
                    events = plan(kUsageEvents), jobs = plan(kUsageJobs);
  sqlite3_close(db);
  CHECK_MESSAGE(unfinished.find("INDEX jobs_unfinished") != std::string::npos, unfinished);
  CHECK_MESSAGE(finished.find("INDEX jobs_by_finished (finished_at>?)") != std::string::npos,
                finished);
  CHECK_MESSAGE(events.find("INDEX events_by_job (job=?") != std::string::npos, events);
  CHECK_MESSAGE(jobs.find("INTEGER PRIMARY KEY (rowid>?)") != std::string::npos, jobs);
  CHECK_MESSAGE(jobs.find("TEMP B-TREE") == std::string::npos,
                jobs);  // no sort: pages stream in order
}
