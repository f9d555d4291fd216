// Arrays written at submission as one row (store.hpp: ArrayRows) and their members' rows after
// (Store::settle): every read gives what it gives for the same members written one row each,
// whether the members were settled by the writer, by a read or by the next open after a crash.
#include "storage/codec.hpp"
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
  a.indices = {4, 7, 9};
  a.first_seq = 5;
  EventRecord submitted{0, 3000, "", "ml-train", std::nullopt, JobState::kPending, "submitted", "alice", ""};
  EventRecord held{0, 3000, "", "ml-train", JobState::kPending, JobState::kPending, "held at submission", "alice", ""};
  a.each = {submitted, held};
  return a;
}

// The same members and events, one row each, as a batch without arrays writes them.
Batch eager(const ArrayRows& a) {
  Batch b;
  for (std::size_t p = 0; p < a.indices.size(); ++p) b.jobs.push_back(a.member(p));
  for (std::size_t p = 0; p < a.indices.size(); ++p)
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

// Every read of `lazy` equals the same read of `eager`.
void check_same_reads(Store& lazy, Store& eager) {
  for (const char* id : {"sweep_4", "sweep_7", "sweep_9", "job-2", "sweep_5", "sweep"}) {
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
  for (std::size_t limit : {1, 2, 3, 100})
    for (std::uint64_t after : {0, 2, 10, 11, 12}) {
      for (const std::vector<JobState>& states :
           {std::vector<JobState>{}, {JobState::kPending}, {JobState::kRunning}}) {
        JobFilter f;
        f.after_number = after;
        f.limit = limit;
        f.states = states;
        auto a = lazy.jobs(f);
        auto b = eager.jobs(f);
        REQUIRE(a.ok());
        REQUIRE(b.ok());
        REQUIRE(a->size() == b->size());
        for (std::size_t i = 0; i < a->size(); ++i) test::check_same((*a)[i], (*b)[i]);
      }
    }
  for (std::uint64_t seq : {0, 4, 5, 7, 10})
    for (std::size_t limit : {1, 4, 100})
      check_same_events(lazy.events_after(seq, limit).value(), eager.events_after(seq, limit).value());
  for (UsageBy by : {UsageBy::kQueue, UsageBy::kUser, UsageBy::kJob}) {
    UsageQuery q;
    q.by = by;
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
    }
  }
  auto a = lazy.load();
  auto b = eager.load();
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->last_event_seq == b->last_event_seq);
  CHECK(a->last_job_number == b->last_job_number);
  REQUIRE(a->unfinished.size() == b->unfinished.size());
  for (std::size_t i = 0; i < a->unfinished.size(); ++i) test::check_same(a->unfinished[i], b->unfinished[i]);
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

}  // namespace array_rows_test

using namespace array_rows_test;

TEST_CASE("an array's row reads as its members' rows: settled by the writer, by a read, or on the next open") {
  TempDir dir;
  ResourceNames names;
  const ArrayWorkload w = workload(names);
  auto eager_store = open_ok(dir.file("eager.db"), names);
  REQUIRE(eager_store->commit(w.before).ok());
  REQUIRE(eager_store->commit(as_eager(w.turn)).ok());

  SUBCASE("the writer settles after the commit") {
    auto lazy = open_ok(dir.file("lazy.db"), names);
    REQUIRE(lazy->commit(w.before).ok());
    REQUIRE(lazy->commit(w.turn).ok());
    CHECK(array_rows_on_disk(dir.file("lazy.db")) == 1);
    REQUIRE(lazy->settle().ok());
    CHECK(array_rows_on_disk(dir.file("lazy.db")) == 0);
    REQUIRE(lazy->settle().ok());  // nothing left: nothing done
    check_same_reads(*lazy, *eager_store);
  }
  SUBCASE("the first read settles, whichever it is") {
    for (int read = 0; read < 4; ++read) {
      CAPTURE(read);
      const std::string path = dir.file("lazy" + std::to_string(read) + ".db");
      auto lazy = open_ok(path, names);
      REQUIRE(lazy->commit(w.before).ok());
      // A snapshot from before the array: the read after the commit must not keep it.
      REQUIRE(lazy->has_job("job-2").value());
      REQUIRE(lazy->commit(w.turn).ok());
      if (read == 0) CHECK(lazy->has_job("sweep_9").value());
      if (read == 1) CHECK(lazy->jobs(JobFilter{}).value().size() == 4);
      if (read == 2) CHECK(lazy->events_after(0, 100).value().size() == 12);
      if (read == 3) CHECK(lazy->job("sweep_4").value().has_value());
      CHECK(array_rows_on_disk(path) == 0);
      check_same_reads(*lazy, *eager_store);
    }
  }
  SUBCASE("a crash before the settle: the next open settles, and counts on from the array's numbers") {
    {
      auto lazy = open_ok(dir.file("lazy.db"), names);
      REQUIRE(lazy->commit(w.before).ok());
      Batch turn = w.turn;
      turn.jobs.clear();  // only the array: its numbers and seqs are the last ones
      turn.events.clear();
      REQUIRE(lazy->commit(turn).ok());
    }  // closed without a settle or a read, as gpuqd killed between the two transactions
    CHECK(array_rows_on_disk(dir.file("lazy.db")) == 1);
    ResourceNames fresh;
    auto lazy = open_ok(dir.file("lazy.db"), fresh);
    auto loaded = lazy->load();
    REQUIRE(loaded.ok());
    CHECK(array_rows_on_disk(dir.file("lazy.db")) == 0);
    CHECK(loaded->last_job_number == 12);
    CHECK(loaded->last_event_seq == 10);
    REQUIRE(loaded->unfinished.size() == 4);
    CHECK(loaded->unfinished[3].spec.id.value == "sweep_9");
    CHECK(loaded->unfinished[3].held);
    Batch next;
    next.jobs.push_back(make_job(13));
    next.events.push_back(make_event(11, "job-13", std::nullopt, JobState::kPending));
    REQUIRE(lazy->commit(next).ok());
    CHECK(lazy->jobs(JobFilter{}).value().size() == 5);
    CHECK(lazy->events_after(0, 100).value().size() == 11);
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
  CHECK(array_rows_on_disk(path) == 1);  // kept for whoever mends it
}

TEST_CASE("has_job_with_prefix: one read for an array's member ids, an unsettled array's included") {
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
           {"sweep_", true}, {"sweep_9", true}, {"sweep_1", false}, {"", true}}) {
    CAPTURE(prefix);
    CHECK(store->has_job_with_prefix(prefix).value() == has);
  }
}
