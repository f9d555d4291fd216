// Whole-process tests: a real gpuqd on a free loopback port with a temporary state file, driven
// over real gRPC. Restarts reuse the state file.
#include <doctest/doctest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <functional>
#include <regex>
#include <set>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

#include <sqlite3.h>

#include "tests/integration/daemon_process.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

v1::SubmitJobRequest job(const std::string& id, const std::string& queue, const std::string& gpus,
                         const std::string& priority = "") {
  v1::SubmitJobRequest r;
  r.mutable_spec()->set_id(id);
  r.mutable_spec()->set_queue(queue);
  r.mutable_spec()->set_priority(priority);
  auto* p = r.mutable_spec()->add_pod_sets();
  (*p->mutable_resources())["gpu"] = gpus;
  r.mutable_spec()->add_command("sleep");
  r.mutable_spec()->add_command("60");
  return r;
}

}  // namespace

TEST_CASE("gpuqd: submit, get, list, cancel, and the same state after a restart") {
  TempDir dir;
  {
    Daemon d(dir.path);
    v1::SubmitJobResponse resp;
    auto s = submit(d, job("a", "research", "4"), &resp);
    REQUIRE_MESSAGE(s.ok(), s.error_message());
    CHECK(resp.job().spec().id() == "a");
    CHECK(resp.job().state() == v1::JOB_STATE_RUNNING);  // the none binder starts it at once
    CHECK(resp.job().placement_size() == 1);
    REQUIRE(submit(d, job("b", "research", "8")).ok());
    REQUIRE(submit(d, job("c", "prod", "7")).ok());       // no node has 7 GPUs free: c waits
    REQUIRE(submit(d, job("", "prod", "1")).ok());         // a server-assigned id
    CHECK(get(d, "c").state() == v1::JOB_STATE_PENDING);
    CHECK_FALSE(get(d, "c").reason().empty());

    grpc::ClientContext ctx;
    v1::ListJobsRequest lr;
    lr.set_page_size(2);
    v1::ListJobsResponse page;
    REQUIRE(d.jobs->List(&ctx, lr, &page).ok());
    CHECK(page.jobs_size() == 2);
    CHECK(page.jobs(0).spec().id() == "a");
    CHECK_FALSE(page.next_page_token().empty());
    grpc::ClientContext ctx2;
    lr.set_page_token(page.next_page_token());
    v1::ListJobsResponse page2;
    REQUIRE(d.jobs->List(&ctx2, lr, &page2).ok());
    CHECK(page2.jobs_size() == 2);
    CHECK(page2.next_page_token().empty());

    grpc::ClientContext cctx;
    v1::CancelJobRequest cr;
    cr.set_id("a");
    v1::CancelJobResponse cresp;
    REQUIRE(d.jobs->Cancel(&cctx, cr, &cresp).ok());
    CHECK(cresp.job().state() == v1::JOB_STATE_CANCELLED);
  }
  // Restart on the same file, without the config: everything comes from the state file.
  Daemon d(dir.path, /*with_config=*/false);
  CHECK(get(d, "a").state() == v1::JOB_STATE_CANCELLED);
  CHECK(get(d, "b").state() == v1::JOB_STATE_RUNNING);
  CHECK(get(d, "c").state() == v1::JOB_STATE_RUNNING);  // a's GPUs went to c after the cancel
  grpc::ClientContext ctx;
  v1::ListQueuesResponse qs;
  REQUIRE(d.queues->List(&ctx, v1::ListQueuesRequest{}, &qs).ok());
  CHECK(qs.queues_size() == 2);
  // A client-supplied id is never reused, also across restarts.
  auto dup = submit(d, job("a", "research", "1"));
  CHECK(dup.error_code() == grpc::StatusCode::ALREADY_EXISTS);
}

TEST_CASE("gpuqd: bad input gets the right code and a message naming the field; the daemon keeps serving") {
  TempDir dir;
  Daemon d(dir.path);
  auto s = submit(d, job("x", "research", "banana"));
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message().find("gpu") != std::string::npos);
  CHECK(s.error_message().find("banana") != std::string::npos);
  CHECK(submit(d, job("x", "nosuch", "1")).error_code() != grpc::StatusCode::OK);
  CHECK(submit(d, job("bad id!", "research", "1")).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(submit(d, job("x", "research", "1", "nonsense")).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  {
    grpc::ClientContext ctx;
    v1::GetJobRequest r;
    r.set_id("missing");
    v1::GetJobResponse resp;
    CHECK(d.jobs->Get(&ctx, r, &resp).error_code() == grpc::StatusCode::NOT_FOUND);
  }
  {
    // A 10 MB command line is refused, not stored.
    auto big = job("big", "research", "1");
    big.mutable_spec()->add_command(std::string(10 << 20, 'x'));
    CHECK(submit(d, big).error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    grpc::ClientContext ctx;
    v1::GetJobRequest r;
    r.set_id("big");
    v1::GetJobResponse resp;
    CHECK(d.jobs->Get(&ctx, r, &resp).error_code() == grpc::StatusCode::NOT_FOUND);
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyQueueRequest r;
    r.mutable_spec()->set_name("q2");
    auto* fq = r.mutable_spec()->add_quotas();
    fq->set_flavor("h100");
    (*fq->mutable_resources())["gpu"].set_nominal("-3");
    v1::ApplyQueueResponse resp;
    auto st = d.queues->Apply(&ctx, r, &resp);
    CHECK(st.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(st.error_message().find("nominal") != std::string::npos);
  }
  // Still serving.
  CHECK(submit(d, job("ok", "research", "1")).ok());
}

TEST_CASE("gpuqd: a 200000-label node and a 100000-variable job are refused by their limits; others are served meanwhile") {
  TempDir dir;
  Daemon d(dir.path);
  // About 3 MB each, under the 4 MiB request limit: these reach gpuqd, which reads them off the
  // engine thread and refuses them by size (spec/limits.hpp). Before the spec layer a request
  // like this froze the engine thread for minutes.
  v1::ApplyNodeRequest node;
  node.mutable_spec()->set_name("wide");
  node.mutable_spec()->set_flavor("h100");
  (*node.mutable_spec()->mutable_capacity())["gpu"] = "8";
  for (int i = 0; i < 200'000; ++i) (*node.mutable_spec()->mutable_labels())["l" + std::to_string(i)] = "v";
  auto env_job = job("env", "research", "1");
  for (int i = 0; i < 100'000; ++i) (*env_job.mutable_spec()->mutable_env())["V" + std::to_string(i)] = "x";

  // While four of each are in flight, a client keeps asking for the queues (an engine-thread
  // call). The deadline is not a measurement: it turns a frozen engine thread into a failure
  // instead of a hang.
  std::atomic<int> big_done{0};
  std::vector<std::thread> big;
  std::vector<grpc::Status> node_status(4), job_status(4);
  for (int k = 0; k < 4; ++k) {
    big.emplace_back([&, k] {
      grpc::ClientContext ctx;
      v1::ApplyNodeResponse resp;
      node_status[k] = d.nodes->Apply(&ctx, node, &resp);
      job_status[k] = submit(d, env_job);
      ++big_done;
    });
  }
  int answered = 0, failed = 0;
  do {
    grpc::ClientContext ctx;
    ctx.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(60));
    v1::ListQueuesResponse qs;
    if (d.queues->List(&ctx, v1::ListQueuesRequest{}, &qs).ok() && qs.queues_size() == 2) ++answered;
    else ++failed;
  } while (big_done.load() < 4);
  for (auto& t : big) t.join();
  CHECK(failed == 0);
  CHECK(answered >= 1);
  for (int k = 0; k < 4; ++k) {
    CHECK(node_status[k].error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(node_status[k].error_message() == "spec.labels: has 200000 labels; at most 1024 are allowed");
    CHECK(job_status[k].error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(job_status[k].error_message() == "spec.env: has 100000 variables; at most 4096 are allowed");
  }
  // Nothing of them was kept, and the daemon goes on.
  grpc::ClientContext ctx;
  v1::ListNodesResponse nodes;
  REQUIRE(d.nodes->List(&ctx, v1::ListNodesRequest{}, &nodes).ok());
  for (const auto& n : nodes.nodes()) CHECK(n.spec().name() != "wide");
  CHECK(submit(d, job("after", "research", "1")).ok());
}

TEST_CASE("gpuqd: watch replays events from a sequence number, then streams live ones") {
  TempDir dir;
  Daemon d(dir.path);
  REQUIRE(submit(d, job("w1", "research", "1")).ok());
  grpc::ClientContext ctx;
  v1::WatchJobsRequest r;
  r.set_from_seq(0);
  auto reader = d.jobs->Watch(&ctx, r);
  v1::JobEvent e;
  REQUIRE(reader->Read(&e));
  CHECK(e.job_id() == "w1");
  CHECK(e.to() == v1::JOB_STATE_PENDING);
  const std::uint64_t first = e.seq();
  REQUIRE(reader->Read(&e));
  CHECK(e.seq() > first);
  REQUIRE(submit(d, job("w2", "research", "1")).ok());
  bool saw_w2 = false;
  for (int i = 0; i < 10 && !saw_w2; ++i) {
    REQUIRE(reader->Read(&e));
    saw_w2 = e.job_id() == "w2";
  }
  CHECK(saw_w2);
  ctx.TryCancel();
}

TEST_CASE("gpuqd: a failed write answers UNAVAILABLE, keeps nothing of it, and the next turn works") {
  TempDir dir;
  Daemon d(dir.path);
  REQUIRE(submit(d, job("before", "research", "1")).ok());
  // Another process holds the write lock: gpuqd's transaction cannot commit.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open((dir.path / "state.db").c_str(), &db) == SQLITE_OK);
  REQUIRE(sqlite3_exec(db, "BEGIN EXCLUSIVE", nullptr, nullptr, nullptr) == SQLITE_OK);
  auto failed = submit(d, job("during", "research", "1"));
  CHECK(failed.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(failed.error_message().find("retry") != std::string::npos);
  REQUIRE(sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr) == SQLITE_OK);
  sqlite3_close(db);
  // The state is what is on disk: "during" was never acknowledged and is not there.
  grpc::ClientContext ctx;
  v1::GetJobRequest r;
  r.set_id("during");
  v1::GetJobResponse resp;
  CHECK(d.jobs->Get(&ctx, r, &resp).error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(get(d, "before").state() == v1::JOB_STATE_RUNNING);
  REQUIRE(submit(d, job("after", "research", "1")).ok());
  CHECK(get(d, "after").state() == v1::JOB_STATE_RUNNING);
}

TEST_CASE("gpuqd: a held array is one row on disk; a member admitted or cancelled gets its own") {
  TempDir dir;
  Daemon d(dir.path);
  auto r = job("arr", "research", "1");
  r.mutable_spec()->set_array("0-49");
  r.mutable_spec()->set_hold(true);
  REQUIRE(submit(d, r).ok());
  grpc::ClientContext ctx;
  v1::CancelJobRequest cancel;
  cancel.set_id("arr_7");
  v1::CancelJobResponse cancelled;
  REQUIRE(d.jobs->Cancel(&ctx, cancel, &cancelled).ok());
  // Read the file beside gpuqd: what is on disk once the answers came.
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open_v2((dir.path / "state.db").c_str(), &db, SQLITE_OPEN_READONLY, nullptr) == SQLITE_OK);
  sqlite3_busy_timeout(db, 5000);
  const auto text = [&](const char* sql) {
    sqlite3_stmt* st = nullptr;
    REQUIRE(sqlite3_prepare_v2(db, sql, -1, &st, nullptr) == SQLITE_OK);
    const int rc = sqlite3_step(st);
    std::string out = rc == SQLITE_ROW && sqlite3_column_text(st, 0)
                          ? reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) : "-";
    sqlite3_finalize(st);
    return out;
  };
  CHECK(text("SELECT count(*) FROM array_rows") == "1");
  CHECK(text("SELECT unsplit FROM array_rows") == "0-6,8-49");
  CHECK(text("SELECT group_concat(id) FROM jobs WHERE id LIKE 'arr\\_%' ESCAPE '\\'") == "arr_7");
  sqlite3_close(db);
  CHECK(get(d, "arr_49").state() == v1::JOB_STATE_PENDING);
  CHECK(get(d, "arr_7").state() == v1::JOB_STATE_CANCELLED);
}

TEST_CASE("gpuqd: every call refuses bad input with the right code and names what is wrong") {
  TempDir dir;
  Daemon d(dir.path);
  REQUIRE(submit(d, job("done", "research", "1")).ok());
  auto channel_ok = [](const grpc::Status& s, grpc::StatusCode code, const std::string& word) {
    CHECK(s.error_code() == code);
    CHECK_MESSAGE(s.error_message().find(word) != std::string::npos, s.error_message());
  };
  {
    grpc::ClientContext ctx;
    v1::CancelJobRequest r;
    r.set_id("nosuch");
    v1::CancelJobResponse resp;
    channel_ok(d.jobs->Cancel(&ctx, r, &resp), grpc::StatusCode::NOT_FOUND, "nosuch");
  }
  {
    grpc::ClientContext c1, c2;
    v1::CancelJobRequest r;
    r.set_id("done");
    v1::CancelJobResponse resp;
    REQUIRE(d.jobs->Cancel(&c1, r, &resp).ok());
    channel_ok(d.jobs->Cancel(&c2, r, &resp), grpc::StatusCode::FAILED_PRECONDITION, "already ended");
  }
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest r;
    r.set_page_size(5000);
    v1::ListJobsResponse resp;
    channel_ok(d.jobs->List(&ctx, r, &resp), grpc::StatusCode::INVALID_ARGUMENT, "page_size");
  }
  {
    grpc::ClientContext ctx;
    v1::ListJobsRequest r;
    r.set_page_token("zz");
    v1::ListJobsResponse resp;
    channel_ok(d.jobs->List(&ctx, r, &resp), grpc::StatusCode::INVALID_ARGUMENT, "page_token");
  }
  {
    grpc::ClientContext ctx;
    v1::GetQueueRequest r;
    r.set_name("nosuch");
    v1::GetQueueResponse resp;
    channel_ok(d.queues->Get(&ctx, r, &resp), grpc::StatusCode::NOT_FOUND, "nosuch");
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyQueueRequest r;
    r.mutable_spec()->set_name("q3");
    r.mutable_spec()->set_queueing_strategy("Whenever");
    v1::ApplyQueueResponse resp;
    channel_ok(d.queues->Apply(&ctx, r, &resp), grpc::StatusCode::INVALID_ARGUMENT, "Whenever");
  }
  {
    grpc::ClientContext ctx;
    v1::DeleteQueueRequest r;
    r.set_name("nosuch");
    v1::DeleteQueueResponse resp;
    channel_ok(d.queues->Delete(&ctx, r, &resp), grpc::StatusCode::NOT_FOUND, "nosuch");
  }
  {
    grpc::ClientContext ctx;
    v1::ApplyNodeRequest r;
    r.mutable_spec()->set_name("n5");
    r.mutable_spec()->set_flavor("h100");
    (*r.mutable_spec()->mutable_capacity())["gpu"] = "eight";
    v1::ApplyNodeResponse resp;
    channel_ok(d.nodes->Apply(&ctx, r, &resp), grpc::StatusCode::INVALID_ARGUMENT, "eight");
  }
  {
    grpc::ClientContext ctx;
    v1::NodeNameRequest r;
    r.set_name("nosuch");
    v1::NodeResponse resp;
    channel_ok(d.nodes->Cordon(&ctx, r, &resp), grpc::StatusCode::NOT_FOUND, "nosuch");
  }
  {
    // Usage: each refusal names the field, the value and what is allowed.
    auto admin = v1::Admin::NewStub(grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
    auto usage = [&](const std::function<void(v1::UsageRequest&)>& set, const std::string& says) {
      grpc::ClientContext ctx;
      v1::UsageRequest r;
      set(r);
      v1::UsageResponse resp;
      channel_ok(admin->Usage(&ctx, r, &resp), grpc::StatusCode::INVALID_ARGUMENT, says);
    };
    usage([](auto& r) { r.set_since(100), r.set_until(50); },
          "since: 100 is after until: 50; the period must start at or before its end");
    usage([](auto& r) { r.set_since(-5); }, "since: -5 is before 1970; use Unix seconds, 0 for the beginning");
    usage([](auto& r) { r.set_by(static_cast<v1::UsageBy>(9)); },
          "by: 9 is not a grouping; use USAGE_BY_QUEUE, USAGE_BY_USER, USAGE_BY_FLAVOR or USAGE_BY_JOB");
    usage([](auto& r) { r.set_page_size(-1); }, "page_size: -1 is not allowed; use 0 (100 rows) to 1000");
    usage([](auto& r) { r.set_by(v1::USAGE_BY_JOB), r.set_page_token("k:research"); },
          "page_token: \"k:research\" is not a token this server gave for this grouping");
  }
  // Still serving after all of it.
  CHECK(submit(d, job("fine", "research", "1")).ok());
}

TEST_CASE("gpuqd: pending jobs get start-time estimates from the engine's what-if run") {
  TempDir dir;
  // research's jobs run an hour unless they say otherwise; estimates every second.
  std::string config = kConfig;
  config.replace(config.find("    preemption: {withinQueue"), 0, "    runtimeEstimate: 3600\n");
  Daemon d(dir.path, true, config + "estimateInterval: 1s\n");
  // research and prod fill both nodes (research runs its estimate, prod its maxRuntime of 30 min).
  REQUIRE(submit(d, job("r1", "research", "8")).ok());
  auto p1 = job("p1", "prod", "8");
  p1.mutable_spec()->set_max_runtime_seconds(1800);
  REQUIRE(submit(d, p1).ok());
  // Waiting: w1 (research, says it runs 10 min) and w2 (research, 4 GPUs).
  auto w1 = job("w1", "research", "8");
  w1.mutable_spec()->set_expected_runtime_seconds(600);
  REQUIRE(submit(d, w1).ok());
  REQUIRE(submit(d, job("w2", "research", "4")).ok());
  v1::Job g;
  for (int i = 0; i < 100 && (g = get(d, "w2")).estimate_computed_at() == 0; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  REQUIRE(g.estimate_computed_at() > 0);
  const std::int64_t r1_at = get(d, "r1").admitted_at();
  const std::int64_t p1_at = get(d, "p1").admitted_at();
  // p1 ends first (30 min): w1 takes its node; r1's node frees at r1 + 1 h, where w2 goes, unless
  // w1 has ended by then (10 min after p1), which it has: w2 starts at p1 + 30 min + 10 min.
  CHECK(get(d, "w1").estimated_start() == p1_at + 1800);
  CHECK(g.estimated_start() == std::min(r1_at + 3600, p1_at + 1800 + 600));
  CHECK(get(d, "w1").spec().expected_runtime_seconds() == 600);
  CHECK(get(d, "r1").estimated_start() == 0);  // running: none
  // A job the queue's guardrails refuse nothing for, but which says more than its limit: refused.
  auto bad = job("bad", "research", "1");
  bad.mutable_spec()->set_max_runtime_seconds(100);
  bad.mutable_spec()->set_expected_runtime_seconds(200);
  const grpc::Status refused = submit(d, bad);
  CHECK(refused.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(refused.error_message().find("expectedRuntime") != std::string::npos);
  const std::string m = d.http_get("/metrics");
  CHECK(m.find("gpuq_estimate_duration_seconds_count{phase=\"what_if\"}") != std::string::npos);
}

TEST_CASE("Usage pages: page_size rows a reply, the token names the last one sent, until no more") {
  TempDir dir;
  Daemon d(dir.path);
  for (const char* id : {"u1", "u2", "u3"}) REQUIRE(submit(d, job(id, "research", "1")).ok());
  REQUIRE(submit(d, job("p1", "prod", "1")).ok());
  auto admin = v1::Admin::NewStub(grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials()));
  auto pages = [&](v1::UsageBy by) {
    std::vector<std::string> keys, tokens;
    v1::UsageRequest r;
    r.set_by(by);
    r.set_page_size(1);
    do {
      grpc::ClientContext ctx;
      v1::UsageResponse resp;
      const grpc::Status st = admin->Usage(&ctx, r, &resp);
      REQUIRE_MESSAGE(st.ok(), st.error_message());
      CHECK(resp.rows_size() <= 1);
      for (const auto& row : resp.rows()) keys.push_back(row.key());
      tokens.push_back(resp.next_page_token());
      r.set_page_token(resp.next_page_token());
      r.set_until(resp.until());  // the same period on every page
    } while (!r.page_token().empty());
    return std::pair{keys, tokens};
  };
  const auto [jobs, job_tokens] = pages(v1::USAGE_BY_JOB);
  CHECK(jobs == std::vector<std::string>{"u1", "u2", "u3", "p1"});  // submission order
  CHECK(job_tokens == std::vector<std::string>{"1", "2", "3", ""});
  const auto [queues, queue_tokens] = pages(v1::USAGE_BY_QUEUE);
  CHECK(queues == std::vector<std::string>{"prod", "research"});
  CHECK(queue_tokens == std::vector<std::string>{"k:prod", ""});
}

TEST_CASE("gpuqd: /metrics, /healthz and /readyz") {
  TempDir dir;
  Daemon d(dir.path);
  REQUIRE(submit(d, job("m1", "research", "2")).ok());
  REQUIRE(submit(d, job("m2", "prod", "2")).ok());
  REQUIRE(submit(d, job("m3", "research", "8")).ok());  // research 10 of 8: borrows 2 of prod's idle 6
  CHECK(d.http_get("/healthz").find("200 OK") != std::string::npos);
  CHECK(d.http_get("/readyz").find("200 OK") != std::string::npos);
  CHECK(d.http_get("/nope").find("404") != std::string::npos);
  std::string m = d.http_get("/metrics");
  INFO(m);
  CHECK(m.find("200 OK") != std::string::npos);
  CHECK(m.find("# TYPE gpuq_pending_jobs gauge") != std::string::npos);
  CHECK(m.find("gpuq_running_jobs{queue=\"research\"} 2") != std::string::npos);
  CHECK(m.find("gpuq_admitted_active_jobs{queue=\"prod\"} 1") != std::string::npos);
  // In the resource's own units (GPUs), per flavor; what research borrows, prod lends.
  const std::string r = "{flavor=\"h100\",queue=\"research\",resource=\"gpu\"} ";
  const std::string p = "{flavor=\"h100\",queue=\"prod\",resource=\"gpu\"} ";
  CHECK(m.find("gpuq_queue_resource_usage" + r + "10") != std::string::npos);
  CHECK(m.find("gpuq_queue_nominal_quota" + p + "8") != std::string::npos);
  CHECK(m.find("gpuq_queue_resource_borrowed" + r + "2") != std::string::npos);
  CHECK(m.find("gpuq_queue_resource_lent" + p + "2") != std::string::npos);
  CHECK(m.find("gpuq_queue_resource_lent" + r + "0") != std::string::npos);
  CHECK(m.find("gpuq_admitted_jobs_total{queue=\"research\"} 2") != std::string::npos);
  CHECK(m.find("gpuq_admission_wait_time_seconds_count{queue=\"prod\"} 1") != std::string::npos);
  CHECK(m.find("gpuq_cycle_duration_seconds_count ") != std::string::npos);
  CHECK(m.find("gpuq_store_commit_duration_seconds_bucket{le=\"+Inf\"} ") != std::string::npos);
  CHECK(m.find("gpuq_store_commits_total ") != std::string::npos);

  // A higher priority in research takes m3's place (research preempts lower priorities within
  // it); cancelling m1 ends it.
  REQUIRE(submit(d, job("hi", "research", "8", "10")).ok());
  CHECK(get(d, "hi").state() == v1::JOB_STATE_RUNNING);
  grpc::ClientContext cctx;
  v1::CancelJobRequest cr;
  cr.set_id("m1");
  v1::CancelJobResponse cresp;
  REQUIRE(d.jobs->Cancel(&cctx, cr, &cresp).ok());
  m = d.http_get("/metrics");
  CHECK(m.find("gpuq_preempted_jobs_total{preempting_queue=\"research\",queue=\"research\",reason=\"InQueue\"} 1") !=
        std::string::npos);
  CHECK(m.find("gpuq_finished_jobs_total{queue=\"research\",state=\"Cancelled\"} 1") != std::string::npos);
  CHECK(m.find("gpuq_pending_jobs{queue=\"research\"} 1") != std::string::npos);  // m3, requeued

  // Every metric deploy/grafana's dashboard queries is one gpuqd serves.
  std::ifstream in(GPUQ_DASHBOARD);
  const std::string board((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const std::regex name(R"(gpuq_[a-z_]+)");
  std::set<std::string> queried;
  for (auto it = std::sregex_iterator(board.begin(), board.end(), name); it != std::sregex_iterator(); ++it)
    queried.insert(std::regex_replace(it->str(), std::regex("_(bucket|sum|count)$"), ""));
  CHECK(queried.size() >= 12);
  for (const std::string& q : queried) CHECK_MESSAGE(m.find("# TYPE " + q + " ") != std::string::npos, q);
}

namespace {

grpc::Status apply_queue(Daemon& d, const std::string& name, int max_pending) {
  grpc::ClientContext ctx;
  v1::ApplyQueueRequest r;
  r.mutable_spec()->set_name(name);
  r.mutable_spec()->set_max_pending_jobs(max_pending);
  auto* fq = r.mutable_spec()->add_quotas();
  fq->set_flavor("h100");
  (*fq->mutable_resources())["gpu"].set_nominal("1");  // no cohort: one 1-GPU job runs, the rest wait
  v1::ApplyQueueResponse resp;
  return d.queues->Apply(&ctx, r, &resp);
}

grpc::Status delete_queue(Daemon& d, const std::string& name) {
  grpc::ClientContext ctx;
  v1::DeleteQueueRequest r;
  r.set_name(name);
  v1::DeleteQueueResponse resp;
  return d.queues->Delete(&ctx, r, &resp);
}

}  // namespace

TEST_CASE("gpuqd: a queue's pending limit, and deleting a queue") {
  TempDir dir;
  {
    Daemon d(dir.path);
    REQUIRE(apply_queue(d, "tmp", 2).ok());
    REQUIRE(submit(d, job("t0", "tmp", "1")).ok());
    CHECK(get(d, "t0").state() == v1::JOB_STATE_RUNNING);
    REQUIRE(submit(d, job("t1", "tmp", "1")).ok());
    REQUIRE(submit(d, job("t2", "tmp", "1")).ok());
    CHECK(get(d, "t1").state() == v1::JOB_STATE_PENDING);
    auto full = submit(d, job("t3", "tmp", "1"));
    CHECK(full.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
    CHECK(full.error_message().find("maxPendingJobs") != std::string::npos);
    CHECK(full.error_message().find("\"tmp\"") != std::string::npos);
    // The refused job was not kept, so its id is free.
    {
      grpc::ClientContext ctx;
      v1::GetJobRequest r;
      r.set_id("t3");
      v1::GetJobResponse resp;
      CHECK(d.jobs->Get(&ctx, r, &resp).error_code() == grpc::StatusCode::NOT_FOUND);
    }
    // Other queues have no limit.
    CHECK(submit(d, job("p1", "prod", "1")).ok());

    auto busy = delete_queue(d, "tmp");
    CHECK(busy.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(busy.error_message().find("2 pending") != std::string::npos);
    auto declared = delete_queue(d, "research");
    CHECK(declared.error_code() == grpc::StatusCode::FAILED_PRECONDITION);
    CHECK(declared.error_message().find("config") != std::string::npos);

    REQUIRE(cancel(d, "t1").ok());
    REQUIRE(submit(d, job("t3", "tmp", "1")).ok());  // room again
    REQUIRE(cancel(d, "t0").ok());
    REQUIRE(cancel(d, "t2").ok());
    REQUIRE(cancel(d, "t3").ok());
    REQUIRE(delete_queue(d, "tmp").ok());
    CHECK(delete_queue(d, "tmp").error_code() == grpc::StatusCode::NOT_FOUND);
    CHECK(submit(d, job("t4", "tmp", "1")).error_code() == grpc::StatusCode::NOT_FOUND);
    // Its finished jobs stay readable.
    CHECK(get(d, "t1").state() == v1::JOB_STATE_CANCELLED);
  }
  {
    // The deletion is on disk; the name can be used again.
    Daemon d(dir.path, /*with_config=*/false);
    grpc::ClientContext ctx;
    v1::ListQueuesResponse qs;
    REQUIRE(d.queues->List(&ctx, v1::ListQueuesRequest{}, &qs).ok());
    CHECK(qs.queues_size() == 2);
    REQUIRE(apply_queue(d, "tmp", 0).ok());
    REQUIRE(submit(d, job("t5", "tmp", "1")).ok());
    CHECK(get(d, "t5").state() == v1::JOB_STATE_RUNNING);
    // Without the config, research is an ordinary queue: with no jobs, it can go.
    CHECK(delete_queue(d, "research").error_code() == grpc::StatusCode::OK);
  }
}

TEST_CASE("gpuqd: a running job keeps its GPU indices across a restart") {
  TempDir dir;
  std::vector<int> before;
  {
    Daemon d(dir.path);
    REQUIRE(submit(d, job("wide", "research", "4")).ok());
    REQUIRE(submit(d, job("kept", "research", "2")).ok());
    const v1::Job kept = get(d, "kept");
    REQUIRE(kept.state() == v1::JOB_STATE_RUNNING);
    REQUIRE(kept.placement_size() == 1);
    before.assign(kept.placement(0).gpus().begin(), kept.placement(0).gpus().end());
    // Free the GPUs before it on its node: chosen afresh, the restored job would move there.
    REQUIRE(cancel(d, "wide").ok());
  }
  Daemon d(dir.path);
  const v1::Job kept = get(d, "kept");
  REQUIRE(kept.state() == v1::JOB_STATE_RUNNING);
  REQUIRE(kept.placement_size() == 1);
  const std::vector<int> after(kept.placement(0).gpus().begin(), kept.placement(0).gpus().end());
  CHECK(after == before);
  // The freed GPUs go to the next job, not the restored job's.
  v1::SubmitJobResponse resp;
  REQUIRE(submit(d, job("next", "research", "2"), &resp).ok());
  const v1::Job next = get(d, "next");
  if (next.placement(0).node() == kept.placement(0).node())
    for (int g : next.placement(0).gpus()) CHECK(std::find(after.begin(), after.end(), g) == after.end());
}

TEST_CASE("gpuqd: its gRPC reflection service finds gpuq.v1's services by name, as grpcurl describe asks") {
  // gpuq.proto's descriptors reach protobuf's pool only when first asked for
  // (api/proto/lazy_descriptors.cmake); gpuqd asks at start, or reflection would not know them.
  TempDir dir;
  Daemon d(dir.path);
  auto channel = grpc::CreateChannel(d.address(), grpc::InsecureChannelCredentials());
  grpc::ClientContext ctx;
  std::unique_ptr<grpc::ClientReaderWriter<grpc::ByteBuffer, grpc::ByteBuffer>> stream(
      grpc::internal::ClientReaderWriterFactory<grpc::ByteBuffer, grpc::ByteBuffer>::Create(
          channel.get(),
          grpc::internal::RpcMethod("/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo",
                                    grpc::internal::RpcMethod::BIDI_STREAMING),
          &ctx));
  // ServerReflectionRequest{file_containing_symbol (4): "gpuq.v1.Jobs"}, encoded by hand.
  const std::string symbol = "gpuq.v1.Jobs";
  const std::string request = std::string(1, '\x22') + static_cast<char>(symbol.size()) + symbol;
  grpc::Slice slice(request);
  REQUIRE(stream->Write(grpc::ByteBuffer(&slice, 1)));
  stream->WritesDone();
  grpc::ByteBuffer reply;
  REQUIRE(stream->Read(&reply));
  std::vector<grpc::Slice> parts;
  REQUIRE(reply.Dump(&parts).ok());
  std::string bytes;
  for (const auto& p : parts) bytes.append(reinterpret_cast<const char*>(p.begin()), p.size());
  // A file_descriptor_response holding gpuq/v1/gpuq.proto (an error_response would say NOT_FOUND;
  // the echoed request names only the symbol).
  CHECK(bytes.find("gpuq/v1/gpuq.proto") != std::string::npos);
  CHECK(bytes.find("SubmitJobRequest") != std::string::npos);
  CHECK(stream->Finish().ok());
}
