// Node constraints and taints in the state file: kept across a restart (the full round trip is
// store_test's), and state written before they existed still loads, with none.
#include <mutex>

#include "storage/codec.hpp"
#include "storage/job_rows.hpp"
#include "tests/storage/store_fixtures.hpp"

using namespace gpuq;
using namespace gpuq::storage;
using namespace gpuq::storage::test;

namespace {

// The first column of the first row `sql` selects, as text.
std::string raw_text(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  sqlite3_stmt* s = nullptr;
  REQUIRE(sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr) == SQLITE_OK);
  std::string out;
  if (sqlite3_step(s) == SQLITE_ROW) out = reinterpret_cast<const char*>(sqlite3_column_text(s, 0));
  sqlite3_finalize(s);
  sqlite3_close(db);
  return out;
}

}  // namespace

TEST_CASE(
    "a job body keeps the old format without constraints; rows written before constraints load "
    "with none") {
  TempDir dir;
  const auto path = dir.file("state.db");
  ResourceNames names;
  const JobRecord plain = make_job(1);
  JobRecord constrained = make_job(2);
  constrained.spec.pod_sets[0].where.mut().node_selector = {{"zone", "z1"}};
  constrained.spec.pod_sets[0].where.mut().tolerations = {{"gpu", true, "", TaintEffect::kNoExecute}};
  {
    auto store = open_ok(path, names);
    Batch b;
    b.jobs = {plain, constrained};
    REQUIRE(store->commit(b).ok());
  }
  // Older builds read "j1;" bodies: a job without constraints is still written so.
  CHECK(raw_text(path, "SELECT body FROM jobs WHERE number = 1").rfind("j1;", 0) == 0);
  CHECK(raw_text(path, "SELECT body FROM jobs WHERE number = 2").rfind("j2;", 0) == 0);
  // A node as a build before taints wrote it: no "taints" key.
  raw_exec(path,
           "INSERT INTO nodes(name, spec) VALUES('legacy', "
           "'{\"name\":\"legacy\",\"flavor\":\"h100\",\"capacity\":"
           "{\"gpu\":8000},\"labels\":{\"zone\":\"z1\"},\"state\":\"Ready\"}')");
  auto store = open_ok(path, names);
  auto loaded = store->load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->nodes.size() == 1);
  CHECK(loaded->nodes[0].name == "legacy");
  CHECK(loaded->nodes[0].taints.empty());
  REQUIRE(loaded->unfinished.size() == 2);
  check_same(loaded->unfinished[0], plain);
  CHECK(loaded->unfinished[0].spec.pod_sets[0].where->empty());
  check_same(loaded->unfinished[1], constrained);
}

TEST_CASE("a stored body with an unknown operator or effect is refused, naming the job") {
  TempDir dir;
  const auto path = dir.file("state.db");
  ResourceNames names;
  JobRecord j = make_job(1);
  j.spec.pod_sets[0].where.mut().affinity = {{{"gen", LabelOperator::kGt, {"3"}}}};
  {
    auto store = open_ok(path, names);
    Batch b;
    b.jobs = {j};
    REQUIRE(store->commit(b).ok());
  }
  raw_exec(path, "UPDATE jobs SET body = replace(body, '2:Gt', '2:Gx') WHERE number = 1");
  auto store = open_ok(path, names);
  auto loaded = store->load();
  REQUIRE_FALSE(loaded.ok());
  CHECK(loaded.error().find("stored job job-1: body: unknown affinity operator") !=
        std::string::npos);
}

TEST_CASE("a job's expected runtime is kept in a \"j3;\" body, which only jobs that say one get") {
  TempDir dir;
  const auto path = dir.file("state.db");
  ResourceNames names;
  JobRecord expects = make_job(1);
  expects.spec.expected_runtime = 3600;
  expects.notify = NotifySpec{"http://hooks.example/a?token=x;y", {"started", "failed"}};
  JobRecord both = make_job(2);
  both.spec.expected_runtime = 60;
  both.spec.pod_sets[0].where.mut().node_selector = {{"zone", "z1"}};
  const JobRecord plain = make_job(3);
  {
    auto store = open_ok(path, names);
    Batch b;
    b.jobs = {expects, both, plain};
    REQUIRE(store->commit(b).ok());
  }
  CHECK(raw_text(path, "SELECT body FROM jobs WHERE number = 1").rfind("j3;", 0) == 0);
  CHECK(raw_text(path, "SELECT body FROM jobs WHERE number = 2").rfind("j3;", 0) == 0);
  CHECK(raw_text(path, "SELECT body FROM jobs WHERE number = 3").rfind("j1;", 0) == 0);
  auto store = open_ok(path, names);
  auto loaded = store->load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->unfinished.size() == 3);
  CHECK(loaded->unfinished[0].spec.expected_runtime == 3600);
  CHECK(loaded->unfinished[0].notify == expects.notify);
  CHECK(loaded->unfinished[1].notify.empty());
  CHECK(loaded->unfinished[1].spec.expected_runtime == 60);
  CHECK(loaded->unfinished[1].spec.pod_sets[0].where->node_selector.at("zone") == "z1");
  CHECK_FALSE(loaded->unfinished[2].spec.expected_runtime);
}

TEST_CASE("the batch features are kept in the body's extras: retries, array, singleton, dependencies") {
  TempDir dir;
  const auto path = dir.file("state.db");
  ResourceNames names;
  JobRecord j = make_job(1);
  j.spec.retries = 3;
  j.retried = 2;
  j.spec.array_id = "j7";
  j.spec.array_index = 12;
  j.spec.array_throttle = 4;
  j.spec.singleton = true;
  j.after = {Dependency{AfterKind::kOk, "j1"}, Dependency{AfterKind::kAny, "j7_3"}, Dependency{AfterKind::kNotOk, "a.b-c"}};
  {
    auto store = open_ok(path, names);
    Batch b;
    b.jobs = {j};
    REQUIRE(store->commit(b).ok());
  }
  auto store = open_ok(path, names);
  auto loaded = store->load();
  REQUIRE(loaded.ok());
  REQUIRE(loaded->unfinished.size() == 1);
  const JobRecord& back = loaded->unfinished[0];
  CHECK(back.spec.retries == 3);
  CHECK(back.retried == 2);
  CHECK(back.spec.array_id == "j7");
  CHECK(back.spec.array_index == 12);
  CHECK(back.spec.array_throttle == 4);
  CHECK(back.spec.singleton);
  CHECK(back.after == j.after);
}

TEST_CASE("a job's image and implicit working directory are body extras; a body written before them decodes without") {
  ResourceNames names;
  std::mutex mu;
  ResourceInterner interner(names, mu);
  JobRecord j = make_job(1);
  j.run.working_dir = "/home/alice";
  j.run.working_dir_implicit = true;
  j.run.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  const std::string body = encode_job_body(j, names);
  CHECK(body.rfind("j3;", 0) == 0);
  CHECK(body.find("5:image32:nvcr.io/nvidia/pytorch:24.05-py3") != std::string::npos);
  CHECK(body.find("16:workdir_implicit1:1") != std::string::npos);
  JobRecord back;
  REQUIRE(decode_job_body(body, back, interner).ok());
  CHECK(back.run.image == j.run.image);
  CHECK(back.run.working_dir == "/home/alice");
  CHECK(back.run.working_dir_implicit);

  // Each alone: the other stays unset.
  JobRecord image_only = make_job(2);
  image_only.run.image = "ghcr.io/lab/x:1";
  JobRecord back2;
  REQUIRE(decode_job_body(encode_job_body(image_only, names), back2, interner).ok());
  CHECK(back2.run.image == "ghcr.io/lab/x:1");
  CHECK_FALSE(back2.run.working_dir_implicit);

  // Neither: the body is as before ("j1;"), and bodies as older builds wrote them decode with
  // neither: a "j1;" one and a "j3;" one with another extra (tty).
  CHECK(encode_job_body(make_job(3), names).rfind("j1;", 0) == 0);
  const std::string j1 = "j1;1;6:worker2;1;3:gpu1000;0;0;1;30;0;7:Requeue0;0;4:/tmp0;";
  const std::string j3 = "j3;1;6:worker2;1;3:gpu1000;0;0;1;30;0;7:Requeue0;0;4:/tmp0;0;0;0;1;3:tty1:1";
  for (const std::string& old : {j1, j3}) {
    CAPTURE(old);
    JobRecord o;
    const auto r = decode_job_body(old, o, interner);
    REQUIRE_MESSAGE(r.ok(), r.error());
    CHECK(o.run.image.empty());
    CHECK_FALSE(o.run.working_dir_implicit);
    CHECK(o.run.working_dir == "/tmp");
    CHECK(o.spec.pod_sets.at(0).count == 2);
  }
}
