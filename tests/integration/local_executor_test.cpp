// The local executor through a real gpuqd (binder: local, 4 virtual GPUs): real processes, their
// exit codes and signals, logs over the API, CUDA_VISIBLE_DEVICES, SIGTERM and grace periods, max
// runtime, cancel, preemption, and adoption after gpuqd is killed with SIGKILL.
#include <doctest/doctest.h>

#include <signal.h>
#include <sys/stat.h>

#include <algorithm>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/local_helpers.hpp"
#include "tests/support/files.hpp"

using namespace gpuq::test;

namespace {

struct JobOpts {
  std::string gpus = "1";
  int replicas = 1;
  std::string priority{};
  int grace = 30;
  int max_runtime = 0;
  std::string on_node_loss{};
};

v1::SubmitJobRequest job(const std::string& id, std::vector<std::string> command, const JobOpts& o = {}) {
  v1::SubmitJobRequest r;
  auto* s = r.mutable_spec();
  s->set_id(id);
  s->set_queue("q");
  s->set_priority(o.priority);
  auto* p = s->add_pod_sets();
  p->set_count(o.replicas);
  (*p->mutable_resources())["gpu"] = o.gpus;
  s->set_grace_period_seconds(o.grace);
  s->set_max_runtime_seconds(o.max_runtime);
  s->set_on_node_loss(o.on_node_loss);
  for (auto& c : command) s->add_command(c);
  return r;
}

std::vector<std::string> sh(const std::string& script) { return {"sh", "-c", script}; }

void cancel_ok(Daemon& d, const std::string& id) {
  auto s = cancel(d, id);
  REQUIRE_MESSAGE(s.ok(), s.error_message());
}



grpc::Status read_logs(Daemon& d, const std::string& id, int pod, std::string& out, bool follow = false) {
  grpc::ClientContext ctx;
  v1::LogsRequest r;
  r.set_id(id);
  r.set_pod(pod);
  r.set_follow(follow);
  auto reader = d.jobs->Logs(&ctx, r);
  v1::LogChunk c;
  while (reader->Read(&c)) out += c.data();
  return reader->Finish();
}

std::string logs(Daemon& d, const std::string& id, int pod = 0) {
  std::string out;
  auto s = read_logs(d, id, pod, out);
  REQUIRE_MESSAGE(s.ok(), s.error_message());
  return out;
}

// The ids Jobs.List gives for `states`, page by page (`page_size` a page).
std::vector<std::string> listed(Daemon& d, const std::vector<v1::JobState>& states, int page_size) {
  std::vector<std::string> ids;
  std::string token;
  do {
    grpc::ClientContext ctx;
    v1::ListJobsRequest r;
    for (auto s : states) r.add_states(s);
    r.set_page_size(page_size);
    r.set_page_token(token);
    v1::ListJobsResponse resp;
    auto st = d.jobs->List(&ctx, r, &resp);
    REQUIRE_MESSAGE(st.ok(), st.error_message());
    for (const auto& j : resp.jobs()) ids.push_back(j.spec().id());
    token = resp.next_page_token();
  } while (!token.empty());
  return ids;
}

std::set<std::string> split(const std::string& csv) {
  std::set<std::string> out;
  std::stringstream in(csv);
  for (std::string x; std::getline(in, x, ',');) out.insert(x);
  return out;
}


}  // namespace

TEST_CASE("local: exit codes and signals decide the end; output is kept and served; a bad command fails clearly") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  const fs::path noexec = dir.path / "noexec.sh";
  std::ofstream(noexec) << "#!/bin/sh\necho hi\n";
  ::chmod(noexec.c_str(), 0644);
  submit_ok(d, job("ok", sh("echo to-stdout; echo to-stderr >&2")));
  submit_ok(d, job("three", sh("exit 3")));
  submit_ok(d, job("killed", sh("kill -9 $$")));
  submit_ok(d, job("missing", {"no-such-command-gpuq"}));
  submit_ok(d, job("noexec", {noexec.string()}));

  CHECK(wait_state(d, "ok", v1::JOB_STATE_SUCCEEDED).exit_code() == 0);
  const std::string out = logs(d, "ok");
  CHECK(out.find("to-stdout\n") != std::string::npos);
  CHECK(out.find("to-stderr\n") != std::string::npos);
  v1::Job three = wait_state(d, "three", v1::JOB_STATE_FAILED);
  CHECK(three.exit_code() == 3);
  CHECK(three.reason() == "exit code 3");
  v1::Job killed = wait_state(d, "killed", v1::JOB_STATE_FAILED);
  CHECK(killed.exit_code() == 137);
  CHECK(killed.reason() == "killed by signal 9 (SIGKILL)");
  v1::Job missing = wait_state(d, "missing", v1::JOB_STATE_FAILED);
  CHECK(missing.reason().find("cannot run \"no-such-command-gpuq\": command not found") == 0);
  CHECK(logs(d, "missing").find("[gpuq] cannot run") != std::string::npos);
  CHECK(wait_state(d, "noexec", v1::JOB_STATE_FAILED).reason().find("Permission denied") != std::string::npos);

  // What the API refuses, and why.
  std::string ignored;
  CHECK(read_logs(d, "nope", 0, ignored).error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(read_logs(d, "ok", 1, ignored).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  auto empty = submit(d, job("empty", {}));
  CHECK(empty.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(empty.error_message().find("spec.command") != std::string::npos);
}

TEST_CASE("local: the job's environment is the job's alone: gpuq-shim, which may run as root, holds none of it") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  v1::SubmitJobRequest r = job("env", sh("echo ppid=$PPID; echo secret=$SECRET; echo lib=$LD_LIBRARY_PATH; sleep 30"));
  (*r.mutable_spec()->mutable_env())["SECRET"] = "s3cret";
  (*r.mutable_spec()->mutable_env())["LD_LIBRARY_PATH"] = "/nonexistent-gpuq";
  submit_ok(d, r);
  std::string out;
  for (int i = 0; i < 300 && out.find("lib=") == std::string::npos; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    out = logs(d, "env");
  }
  INFO(out);
  CHECK(out.find("secret=s3cret\n") != std::string::npos);
  CHECK(out.find("lib=/nonexistent-gpuq\n") != std::string::npos);
  const auto at = out.find("ppid=");
  REQUIRE(at != std::string::npos);
  const std::string shim = out.substr(at + 5, out.find('\n', at) - at - 5);
  std::ifstream in("/proc/" + shim + "/environ");
  const std::string shim_env((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::ifstream comm_in("/proc/" + shim + "/comm");
  std::string comm;
  std::getline(comm_in, comm);
  CHECK(comm == "gpuq-shim");
  CHECK(shim_env.rfind("PATH=", 0) == 0);
  CHECK(shim_env.find("SECRET") == std::string::npos);
  CHECK(shim_env.find("LD_LIBRARY_PATH") == std::string::npos);
  CHECK(shim_env.find('\0') == shim_env.size() - 1);  // PATH alone
  cancel_ok(d, "env");
}

TEST_CASE("local: CUDA_VISIBLE_DEVICES are disjoint across running jobs; fractional jobs share one GPU") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  const std::string report =
      "echo \"$CUDA_VISIBLE_DEVICES $GPUQ_GPU_MILLI $GPUQ_POD_INDEX $GPUQ_POD_COUNT $GPUQ_JOB_ID $GPUQ_QUEUE\" "
      "> " + dir.path.string() + "/$GPUQ_JOB_ID.$GPUQ_POD_INDEX; sleep 3";
  submit_ok(d, job("two", sh(report), {.gpus = "2"}));
  submit_ok(d, job("half-a", sh(report), {.gpus = "500m"}));
  submit_ok(d, job("half-b", sh(report), {.gpus = "500m"}));
  submit_ok(d, job("gang", sh(report), {.gpus = "1", .replicas = 2}));  // waits: 2 + 1 + 2 > 4
  for (const char* f : {"two.0", "half-a.0", "half-b.0"}) wait_file(dir.path / f);
  auto fields = [&](const std::string& f) {
    std::vector<std::string> out;
    std::stringstream in(slurp(dir.path / f));
    for (std::string x; in >> x;) out.push_back(x);
    return out;
  };
  const auto two = fields("two.0"), a = fields("half-a.0"), b = fields("half-b.0");
  REQUIRE(two.size() == 5);  // no GPUQ_GPU_MILLI for whole GPUs
  REQUIRE(a.size() == 6);
  REQUIRE(b.size() == 6);
  CHECK(split(two[0]).size() == 2);
  CHECK(two[1] == "0");  // pod index
  CHECK(two[2] == "1");  // pod count
  CHECK(two[3] == "two");
  CHECK(two[4] == "q");
  CHECK(a[0] == b[0]);  // the two halves share one GPU
  CHECK(a[1] == "500");
  CHECK(split(two[0]).count(a[0]) == 0);
  CHECK(get(d, "gang").state() == v1::JOB_STATE_PENDING);

  // The gang runs once the first jobs are done, one GPU per pod, numbered.
  wait_file(dir.path / "gang.0");
  wait_file(dir.path / "gang.1");
  const auto g0 = fields("gang.0"), g1 = fields("gang.1");
  REQUIRE(g0.size() == 5);
  REQUIRE(g1.size() == 5);
  CHECK(g0[0] != g1[0]);
  CHECK(g0[1] == "0");
  CHECK(g1[1] == "1");
  CHECK(g0[2] == "2");
  wait_state(d, "gang", v1::JOB_STATE_SUCCEEDED);
  CHECK(logs(d, "gang", 1).empty());  // its output went to a file
}

TEST_CASE("local: cancel sends SIGTERM; a job ignoring it is killed after its grace, and keeps its GPUs till then") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  const std::string p = dir.path.string();
  submit_ok(d, job("traps", sh("trap 'echo got TERM; exit 0' TERM; touch " + p + "/traps.ready; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"),
                {.gpus = "2", .grace = 30}));
  submit_ok(d, job("ignores", sh("trap '' TERM; touch " + p + "/ignores.ready; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"),
                {.gpus = "2", .grace = 2}));
  wait_file(dir.path / "traps.ready");
  wait_file(dir.path / "ignores.ready");
  wait_state(d, "traps", v1::JOB_STATE_RUNNING);
  cancel_ok(d, "traps");
  cancel_ok(d, "ignores");
  CHECK(get(d, "ignores").state() == v1::JOB_STATE_CANCELLED);  // at once
  // All four GPUs are wanted; two are still held by a process that ignores SIGTERM.
  submit_ok(d, job("next", sh("echo $CUDA_VISIBLE_DEVICES"), {.gpus = "4"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(1000));
  CHECK(get(d, "next").state() == v1::JOB_STATE_PENDING);
  // Still stopping, it is listed with the running jobs (gpuq ls), cancelled as it is, in number
  // order and across pages; a job cancelled before it started never is.
  submit_ok(d, job("held", sh("true"), {.gpus = "4"}));
  cancel_ok(d, "held");
  const std::vector<v1::JobState> unfinished{v1::JOB_STATE_PENDING, v1::JOB_STATE_RUNNING};
  for (int page : {1, 2, 100}) {
    CAPTURE(page);
    const auto ids = listed(d, unfinished, page);
    CHECK(std::find(ids.begin(), ids.end(), "ignores") != ids.end());
    CHECK(std::find(ids.begin(), ids.end(), "held") == ids.end());
    CHECK(ids.back() == "next");
  }
  CHECK(listed(d, {v1::JOB_STATE_PENDING}, 100) == std::vector<std::string>{"next"});
  wait_state(d, "next", v1::JOB_STATE_SUCCEEDED);
  CHECK(listed(d, unfinished, 1).empty());
  CHECK(split(logs(d, "next").substr(0, logs(d, "next").find('\n'))).size() == 4);
  CHECK(logs(d, "traps").find("got TERM") != std::string::npos);
  const std::string ignored = logs(d, "ignores");
  CHECK(ignored.find("[gpuq] grace period over") != std::string::npos);
  CHECK(get(d, "traps").reason() == "cancelled");
}

TEST_CASE("local: max runtime stops a job and fails it with that reason") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  submit_ok(d, job("slow", {"sleep", "60"}, {.grace = 1, .max_runtime = 1}));
  v1::Job j = wait_state(d, "slow", v1::JOB_STATE_FAILED);
  CHECK(j.reason().find("max runtime of 1 s exceeded") == 0);
  CHECK(j.exit_code() != 0);
}

TEST_CASE("local: a high-priority submit stops a low-priority process, which is requeued, and then runs") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  const std::string p = dir.path.string();
  submit_ok(d, job("low", sh("trap 'echo low got TERM; exit 0' TERM; touch " + p + "/low.ready; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"),
                {.gpus = "4", .priority = "0", .grace = 5}));
  wait_file(dir.path / "low.ready");
  fs::remove(dir.path / "low.ready");
  submit_ok(d, job("high", sh("echo high on $CUDA_VISIBLE_DEVICES"), {.gpus = "4", .priority = "100"}));
  wait_state(d, "high", v1::JOB_STATE_SUCCEEDED);
  CHECK(logs(d, "high").find("high on ") == 0);
  CHECK(logs(d, "low").find("low got TERM") != std::string::npos);
  const v1::Job low = get(d, "low");
  CHECK(low.preemptions() == 1);
  CHECK(low.preempted_by() == "high");
  // Requeued, it runs again once high is done.
  wait_file(dir.path / "low.ready");  // its trap is set again
  cancel_ok(d, "low");
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  std::string out;
  while (std::chrono::steady_clock::now() < until) {
    out = logs(d, "low");
    if (out.find("low got TERM") != out.rfind("low got TERM")) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  CHECK(out.find("low got TERM") != out.rfind("low got TERM"));  // the second attempt stopped too
}

TEST_CASE("local: a maxGracePeriod lowered after a job started caps its grace when it is preempted") {
  TempDir dir;
  Daemon d(dir.path, true, local_executor_config(dir.path));
  const std::string p = dir.path.string();
  // Started with an hour of grace, and it ignores SIGTERM.
  submit_ok(d, job("stubborn", sh("trap '' TERM; touch " + p + "/ready; sleep 1000"),
                   {.gpus = "4", .priority = "0", .grace = 3600}));
  wait_file(dir.path / "ready");
  // The queue's cap comes down to 1 s; the running job's shim still holds its hour.
  v1::ApplyQueueRequest apply;
  auto& q = *apply.mutable_spec();
  q.set_name("q");
  auto* quota = q.add_quotas();
  quota->set_flavor("default");
  (*quota->mutable_resources())["gpu"].set_nominal("4");
  q.mutable_preemption()->set_within_queue("LowerPriority");
  q.set_max_grace_period_seconds(1);
  {
    grpc::ClientContext ctx;
    v1::ApplyQueueResponse resp;
    const grpc::Status st = d.queues->Apply(&ctx, apply, &resp);
    REQUIRE_MESSAGE(st.ok(), st.error_message());
  }
  submit_ok(d, job("urgent", sh("echo urgent ran"), {.gpus = "4", .priority = "100", .grace = 1}));
  wait_state(d, "urgent", v1::JOB_STATE_SUCCEEDED);  // within the test's 30 s, not the hour
  CHECK(get(d, "stubborn").preempted_by() == "urgent");
  cancel_ok(d, "stubborn");
}

TEST_CASE("local: gpuqd killed with SIGKILL: running jobs are adopted, finished ones report, lost ones fail") {
  TempDir dir;
  const std::string p = dir.path.string();
  {
    Daemon d(dir.path, true, local_executor_config(dir.path));
    submit_ok(d, job("long", sh("touch " + p + "/long.ready; sleep 8; echo long done"), {.gpus = "2"}));
    submit_ok(d, job("quick", sh("touch " + p + "/quick.ready; sleep 1; exit 7"), {.gpus = "1"}));
    submit_ok(d, job("lost", sh("touch " + p + "/lost.ready; sleep 20"), {.gpus = "1", .on_node_loss = "Fail"}));
    for (const char* f : {"long.ready", "quick.ready", "lost.ready"}) wait_file(dir.path / f);
    wait_state(d, "lost", v1::JOB_STATE_RUNNING);
    d.stop(SIGKILL);
  }
  // While gpuqd is down: "quick" ends by itself; "lost" disappears with its supervisor.
  const auto pid = std::stoi(slurp(dir.path / "run" / "lost" / "pod-0.pid").substr(4));
  REQUIRE(::kill(pid, SIGKILL) == 0);
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));

  Daemon d(dir.path, true, local_executor_config(dir.path));
  CHECK(get(d, "long").state() == v1::JOB_STATE_RUNNING);
  v1::Job quick = wait_state(d, "quick", v1::JOB_STATE_FAILED);
  CHECK(quick.exit_code() == 7);
  // Its shell died with its supervisor, its `sleep` did not: with cgroups it is found and killed.
  CHECK(wait_state(d, "lost", v1::JOB_STATE_FAILED).reason().rfind("lost", 0) == 0);
  // "long" still holds 2 GPUs: a 3-GPU job waits for it, then gets exactly what it freed.
  submit_ok(d, job("after", sh("echo $CUDA_VISIBLE_DEVICES"), {.gpus = "3"}));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  CHECK(get(d, "after").state() == v1::JOB_STATE_PENDING);
  wait_state(d, "long", v1::JOB_STATE_SUCCEEDED);
  CHECK(logs(d, "long").find("long done") != std::string::npos);
  wait_state(d, "after", v1::JOB_STATE_SUCCEEDED);
}

TEST_CASE("local: what still runs for a job gpuqd does not hold running is killed at start, before scheduling") {
  TempDir dir;
  const std::string p = dir.path.string();
  pid_t shim = 0;
  {
    Daemon d(dir.path, true, local_executor_config(dir.path));
    submit_ok(d, job("stubborn", sh("trap '' TERM; touch " + p + "/stubborn.ready; i=0; while [ $i -lt 300 ]; do sleep 0.1; i=$((i+1)); done"),
                  {.gpus = "4", .grace = 60}));
    wait_file(dir.path / "stubborn.ready");
    shim = std::stoi(slurp(dir.path / "run" / "stubborn" / "pod-0.pid").substr(4));
    cancel_ok(d, "stubborn");  // Cancelled; its processes would hold the GPUs for 60 s
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    d.stop(SIGKILL);
  }
  REQUIRE(alive(shim));
  Daemon d(dir.path, true, local_executor_config(dir.path));
  CHECK_FALSE(alive(shim));  // gone before gpuqd served
  CHECK_FALSE(fs::exists(dir.path / "run" / "stubborn"));
  submit_ok(d, job("all", sh("echo $CUDA_VISIBLE_DEVICES"), {.gpus = "4"}));
  wait_state(d, "all", v1::JOB_STATE_SUCCEEDED);
}
