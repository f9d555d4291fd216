// The SQLite store against real files in a temporary directory: round trips, upserts, failed
// commits.
#include <mutex>

#include "storage/codec.hpp"
#include "storage/job_rows.hpp"
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

TEST_CASE("every field of queues, nodes, jobs and events survives commit, close and reopen") {
  TempDir dir;
  const auto path = dir.file("state.db");
  ResourceNames names;
  const QueueSpec queue = make_queue(names);
  const NodeSpec node = make_node(names);
  const JobRecord full = make_full_job(names);
  JobRecord done = make_job(9, "ml-train", JobState::kSucceeded);
  done.finished_at = 4000;
  done.admitted_at = 3000;
  done.flavor = "a100";
  done.reason = "exit 0";
  const std::vector<EventRecord> events{make_event(1, "job-7", std::nullopt, JobState::kPending),
                                        make_event(2, "job-7", JobState::kPending, JobState::kAdmitted),
                                        make_event(3, "job-9", JobState::kRunning, JobState::kSucceeded)};

  auto check_state = [&](Store& store) {
    auto loaded = store.load();
    REQUIRE(loaded.ok());
    REQUIRE(loaded->queues.size() == 1);
    check_same(loaded->queues[0], queue);
    REQUIRE(loaded->nodes.size() == 1);
    check_same(loaded->nodes[0], node);
    REQUIRE(loaded->unfinished.size() == 1);  // job 9 is finished: not loaded
    check_same(loaded->unfinished[0], full);
    CHECK(loaded->last_event_seq == 3);
    CHECK(loaded->last_job_number == 9);
    auto got = store.job("job-9");
    REQUIRE(got.ok());
    REQUIRE(got->has_value());
    check_same(**got, done);
    auto missing = store.job("job-404");
    REQUIRE(missing.ok());
    CHECK_FALSE(missing->has_value());
    auto evs = store.events_after(0, 10);
    REQUIRE(evs.ok());
    REQUIRE(evs->size() == 3);
    for (std::size_t i = 0; i < 3; ++i) {
      CHECK((*evs)[i].seq == events[i].seq);
      CHECK((*evs)[i].at == events[i].at);
      CHECK((*evs)[i].job == events[i].job);
      CHECK((*evs)[i].queue == events[i].queue);
      CHECK((*evs)[i].from == events[i].from);
      CHECK((*evs)[i].to == events[i].to);
      CHECK((*evs)[i].reason == events[i].reason);
      CHECK((*evs)[i].flavor == events[i].flavor);
    }
    CHECK((*evs)[1].flavor == "h100");  // written on the event that admitted it
  };
  {
    auto store = open_ok(path, names);
    auto empty = store->load();
    REQUIRE(empty.ok());
    CHECK(empty->queues.empty());
    CHECK(empty->last_event_seq == 0);
    CHECK(empty->last_job_number == 0);
    Batch b;
    b.queues = {queue};
    b.nodes = {node};
    b.jobs = {full, done};
    b.events = events;
    REQUIRE(store->commit(b).ok());
    check_state(*store);
  }
  // A new process: a fresh ResourceNames where another resource took slot 3 first. The stored
  // names, not slot numbers, decide where "rdma/hca" lands.
  ResourceNames other;
  const ResourceId ib = *other.intern("infiniband");
  auto store = open_ok(path, other);
  auto loaded = store->load();
  REQUIRE(loaded.ok());
  const ResourceId rdma = *other.find("rdma/hca");
  CHECK(rdma != *names.find("rdma/hca"));
  REQUIRE(loaded->nodes.size() == 1);
  CHECK(loaded->nodes[0].capacity[rdma] == 4);
  CHECK(loaded->nodes[0].capacity[ib] == 0);
  REQUIRE(loaded->unfinished.size() == 1);
  CHECK(loaded->unfinished[0].spec.pod_sets[1].per_pod[rdma] == 1);
  CHECK(loaded->queues[0].quotas[0].resources[2].first == rdma);
  names = ResourceNames();
  (void)names.intern("infiniband");
  (void)names.intern("rdma/hca");
  // With the slots of this process, the reopened state is the same as what was written.
  store.reset();
  auto again = open_ok(path, names);
  const QueueSpec queue2 = make_queue(names);
  const NodeSpec node2 = make_node(names);
  const JobRecord full2 = make_full_job(names);
  auto l2 = again->load();
  REQUIRE(l2.ok());
  check_same(l2->queues[0], queue2);
  check_same(l2->nodes[0], node2);
  check_same(l2->unfinished[0], full2);
}

TEST_CASE("upserts replace by key, deleted queues stay deleted, load returns unfinished by number") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  QueueSpec a = make_queue(names);
  QueueSpec z = a;
  z.name = QueueName("zeta");
  b.queues = {z, a};
  for (std::uint64_t n : {5, 2, 9, 4}) b.jobs.push_back(make_job(n));
  REQUIRE(store->commit(b).ok());

  Batch b2;
  a.weight = 7;
  b2.queues = {a};
  b2.deleted_queues = {"zeta"};
  JobRecord four = make_job(4, "ml-train", JobState::kCancelled);
  four.finished_at = 3000;
  JobRecord five = make_job(5, "ml-train", JobState::kAdmitted);
  five.flavor = "h100";
  b2.jobs = {four, five};
  REQUIRE(store->commit(b2).ok());

  auto l = store->load();
  REQUIRE(l.ok());
  REQUIRE(l->queues.size() == 1);
  CHECK(l->queues[0].weight == 7);
  REQUIRE(l->unfinished.size() == 3);
  CHECK(l->unfinished[0].number == 2);
  CHECK(l->unfinished[1].number == 5);
  CHECK(l->unfinished[1].state == JobState::kAdmitted);
  CHECK(l->unfinished[1].flavor == "h100");
  CHECK(l->unfinished[2].number == 9);
  CHECK(l->last_job_number == 9);
  CHECK(store->commit(Batch{}).ok());
}

TEST_CASE("a failed commit writes nothing of its batch and the store stays usable") {
  TempDir dir;
  const auto path = dir.file("s.db");
  ResourceNames names;
  auto store = open_ok(path, names);
  Batch first;
  first.jobs = {make_job(1)};
  first.events = {make_event(1, "job-1", std::nullopt, JobState::kPending)};
  REQUIRE(store->commit(first).ok());

  SUBCASE("a constraint fails halfway: a second job with an existing id") {
    Batch bad;
    bad.queues = {make_queue(names)};
    bad.jobs = {make_job(2)};
    JobRecord dup = make_job(3);
    dup.spec.id = JobId("job-1");
    bad.jobs.push_back(dup);
    bad.events = {make_event(2, "job-2", std::nullopt, JobState::kPending)};
    auto r = store->commit(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == ErrorCode::kUnavailable);
    CHECK(r.error().find("UNIQUE") != std::string::npos);
    CHECK(r.error().find(path) != std::string::npos);
  }
  SUBCASE("another process holds the write lock") {
    sqlite3* other = nullptr;
    REQUIRE(sqlite3_open(path.c_str(), &other) == SQLITE_OK);
    REQUIRE(sqlite3_exec(other, "BEGIN IMMEDIATE", nullptr, nullptr, nullptr) == SQLITE_OK);
    Batch blocked;
    blocked.queues = {make_queue(names)};
    blocked.jobs = {make_job(2)};
    auto r = store->commit(blocked);
    sqlite3_exec(other, "ROLLBACK", nullptr, nullptr, nullptr);
    sqlite3_close(other);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == ErrorCode::kUnavailable);
    CHECK(r.error().find("locked") != std::string::npos);
  }
  SUBCASE("a job using a resource slot with no name") {
    Batch bad;
    JobRecord j = make_job(2);
    j.spec.pod_sets[0].per_pod[6] = 1;  // slot 6: never interned in `names`
    bad.jobs = {j};
    auto r = store->commit(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == ErrorCode::kInvalidArgument);
    CHECK(r.error().find("resource slot 6") != std::string::npos);
  }
  SUBCASE("a job without a number") {
    Batch bad;
    bad.jobs = {make_job(2), make_job(0)};
    auto r = store->commit(bad);
    REQUIRE_FALSE(r.ok());
    CHECK(r.code() == ErrorCode::kInvalidArgument);
  }
  auto check_intact = [&](Store& s) {
    auto l = s.load();
    REQUIRE(l.ok());
    CHECK(l->queues.empty());
    REQUIRE(l->unfinished.size() == 1);
    CHECK(l->unfinished[0].spec.id.value == "job-1");
    CHECK(l->last_event_seq == 1);
    CHECK(l->last_job_number == 1);
  };
  check_intact(*store);
  Batch later;
  later.jobs = {make_job(2)};
  later.events = {make_event(2, "job-2", std::nullopt, JobState::kPending)};
  REQUIRE(store->commit(later).ok());
  store.reset();
  auto reopened = open_ok(path, names);
  auto l = reopened->load();
  REQUIRE(l.ok());
  CHECK(l->unfinished.size() == 2);
  CHECK(l->last_event_seq == 2);
}


TEST_CASE("a queue without guardrails or roles is stored and read back without them; an empty submitters list stays set") {
  ResourceNames names;
  QueueSpec plain;
  plain.name = QueueName("plain");
  const std::string text = encode_queue(plain, names);
  CHECK(text.find("max_") == std::string::npos);  // stored as before the guardrails
  CHECK(text.find("submitters") == std::string::npos);
  CHECK(text.find("kubernetes") == std::string::npos);
  auto back = decode_queue(text, names);
  REQUIRE(back.ok());
  CHECK_FALSE(back->max_gpus_per_job);
  CHECK_FALSE(back->max_grace_period);
  CHECK_FALSE(back->submitters);
  CHECK(back->max_running_jobs_per_user == 0);
  CHECK(back->kubernetes.empty());

  plain.submitters = Members{};  // nobody but admins
  auto closed = decode_queue(encode_queue(plain, names), names);
  REQUIRE(closed.ok());
  REQUIRE(closed->submitters);
  CHECK(closed->submitters->empty());
}

TEST_CASE("jobRetention: finished jobs that ended before the cutoff go, with old events; the rest stay") {
  TempDir dir;
  ResourceNames names;
  auto store = open_ok(dir.file("s.db"), names);
  Batch b;
  b.queues = {make_queue(names)};
  // 1, 2: ended long ago; 3: ended after the cutoff; 4: unfinished, submitted long ago; 5: the
  // newest, ended long ago (kept: the highest number is where numbering goes on from).
  for (std::uint64_t n = 1; n <= 5; ++n) {
    JobRecord j = make_job(n, "ml-train", n == 4 ? JobState::kPending : JobState::kSucceeded);
    if (n != 4) j.finished_at = n == 3 ? 9000 : 100 + static_cast<Time>(n);
    b.jobs.push_back(j);
  }
  for (std::uint64_t s = 1; s <= 6; ++s) b.events.push_back(make_event(s, "job-1", std::nullopt, JobState::kPending));
  b.events.back().at = 100;  // the last event is old too, and stays
  REQUIRE(store->commit(b).ok());

  Batch prune;
  prune.jobs_prune_before = 5004;  // events 1..3 (at 5001..5003) are older
  CHECK_FALSE(prune.empty());
  REQUIRE(store->commit(prune).ok());
  auto has = [&](const std::string& id) { return store->has_job(id).value(); };
  CHECK_FALSE(has("job-1"));
  CHECK_FALSE(has("job-2"));
  CHECK(has("job-3"));
  CHECK(has("job-4"));
  CHECK(has("job-5"));
  auto evs = store->events_after(0, 10);
  REQUIRE(evs.ok());
  std::vector<std::uint64_t> seqs;
  for (const auto& e : *evs) seqs.push_back(e.seq);
  CHECK(seqs == std::vector<std::uint64_t>{4, 5, 6});
  auto l = store->load();
  REQUIRE(l.ok());
  CHECK(l->last_job_number == 5);
  CHECK(l->unfinished.size() == 1);
}

TEST_CASE("a queue's kubernetes block and maxRetries are kept in its row; a row written before them reads without them") {
  ResourceNames names;
  QueueSpec q;
  q.name = QueueName("vision");
  q.max_retries = 3;
  q.kubernetes.ns = "ml";
  q.kubernetes.allowed_images = {"nvcr.io/"};
  q.kubernetes.pod_template = R"({"spec":{"volumes":[{"name":"d","emptyDir":{}}]},"metadata":{"a":"\u0001\\"}})";
  const std::string text = encode_queue(q, names);
  CHECK(text.find(R"("max_retries":3)") != std::string::npos);
  CHECK(text.find(R"("kubernetes":{"namespace":"ml","default_image":"","allowed_images":["nvcr.io/"],"pod_template":)") !=
        std::string::npos);
  auto back = decode_queue(text, names);
  REQUIRE_MESSAGE(back.ok(), back.error());
  CHECK(back->max_retries == 3);
  CHECK(back->kubernetes == q.kubernetes);  // the template's text byte for byte

  // As a build before the block wrote it (and one with only some of its keys).
  const std::string old_row =
      R"({"name":"old","cohort":"","weight":1,"strategy":"BestEffortFIFO","quotas":[],)"
      R"("preemption":{"within_queue":"Never","reclaim_within_cohort":"Never","borrow_within_cohort":"Never",)"
      R"("min_runtime":0}})";
  auto old = decode_queue(old_row, names);
  REQUIRE_MESSAGE(old.ok(), old.error());
  CHECK(old->kubernetes.empty());
  CHECK(old->max_retries == 0);
  auto partial = decode_queue(old_row.substr(0, old_row.size() - 1) + R"(,"kubernetes":{"namespace":"ml"}})", names);
  REQUIRE_MESSAGE(partial.ok(), partial.error());
  CHECK(partial->kubernetes == QueueKubernetes{"ml", "", {}, ""});
}

// gpuqd keeps its pending jobs' records packed (daemon/core.hpp packed_): every field a row
// stores comes back, also what only the body's extras hold.
TEST_CASE("pack_job and unpack_job give back every stored field of a record") {
  ResourceNames names;
  JobRecord full = make_full_job(names);
  full.spec.expected_runtime = 600;
  full.spec.retries = 2;
  full.spec.array_id = "sweep";
  full.spec.array_index = 41;
  full.spec.array_throttle = 4;
  full.spec.singleton = true;
  full.run.tty = true;
  full.run.tty_size = "40x120";
  full.notify = {"http://hooks.example/a", {"started", "failed"}};
  full.held = true;
  full.retried = 1;
  full.after = {{AfterKind::kOk, "prep"}, {AfterKind::kNotOk, "other_3"}};
  full.gpu_use.samples = 12;
  full.gpu_use.util_sum = 900;
  full.gpu_use.memory_peak_mib = 70000;
  full.used = {12'345'678, std::int64_t{3} << 30};
  full.finished_at = 0;
  const std::string packed = pack_job(full, names);
  std::mutex mu;
  ResourceInterner interner(names, mu);
  JobRecord back;
  REQUIRE(unpack_job(packed, back, interner).ok());
  check_same(back, full);
  CHECK(back.spec.expected_runtime == full.spec.expected_runtime);
  CHECK(back.spec.retries == 2);
  CHECK(back.spec.array_id == "sweep");
  CHECK(back.spec.array_index == 41);
  CHECK(back.spec.array_throttle == 4);
  CHECK(back.spec.singleton);
  CHECK(back.run.tty);
  CHECK(back.run.tty_size == "40x120");
  CHECK(back.notify == full.notify);
  CHECK(back.held);
  CHECK(back.retried == 1);
  CHECK(back.after == full.after);
  CHECK(back.gpu_use.samples == 12);
  CHECK(back.gpu_use.util_sum == 900);
  CHECK(back.gpu_use.memory_peak_mib == 70000);
  CHECK(back.used.cpu_usec == 12'345'678);
  CHECK(back.used.memory_peak == std::int64_t{3} << 30);
  CHECK(pack_job(back, names) == packed);  // and packs the same again
  JobRecord unmeasured = full;  // never measured: nothing written, -1 read back
  unmeasured.used = {};
  JobRecord back2;
  REQUIRE(unpack_job(pack_job(unmeasured, names), back2, interner).ok());
  CHECK(back2.used.cpu_usec == -1);
  CHECK(back2.used.memory_peak == -1);

  // A damaged string is refused, not half read.
  JobRecord bad;
  CHECK_FALSE(unpack_job(packed.substr(0, 20), bad, interner).ok());
  CHECK_FALSE(unpack_job("x" + packed, bad, interner).ok());
}
