// The command line without a server: quantities and specs in the API's notation, requests built
// from flags and files, apply-file errors naming the field, tables that fit 80 columns, JSON and
// YAML a script can rely on, time arguments, exit codes.
#include "cli/cli.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>

#include <boost/json.hpp>
#include <grpcpp/grpcpp.h>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "api/to_proto.hpp"
#include "cli/client.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "spec/error.hpp"
#include "spec/quantity.hpp"
#include "spec/yaml_read.hpp"
#include "tests/support/files.hpp"

using namespace gpuq;
using namespace gpuq::cli;

namespace {

void check_lines_fit(const std::string& text, std::size_t width = 80) {
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    INFO(line);
    CHECK(line.size() <= width);
  }
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

struct Run {
  int rc;
  std::string out, err;
};
Run run(const std::vector<std::string>& args) {
  std::ostringstream out, err;
  int rc = run_cli(args, out, err);
  return {rc, out.str(), err.str()};
}

}  // namespace

// A spec read from YAML text by the spec layer.
template <class F>
auto read_yaml(const std::string& text, F read) {
  const auto doc = spec::yaml::parse_one(text);
  spec::Path at;
  return read(doc.root(), at);
}

TEST_CASE("to_proto of specs uses the .proto's names and notation") {
  ResourceNames names;
  auto q = read_yaml(R"(
name: team-a
cohort: research
weight: 2
queueingStrategy: StrictFIFO
quotas:
  - flavor: h100
    resources:
      gpu: {nominal: 8, borrowingLimit: "500m"}
      memory: {nominal: 1Ti, lendingLimit: 64Gi}
preemption:
  withinQueue: LowerOrNewerEqualPriority
  reclaimWithinCohort: Any
  borrowWithinCohort: {policy: LowerPriority, maxPriorityThreshold: 5}
  minRuntime: 600
)",
                     [&](spec::yaml::Node n, spec::Path& at) { return spec::read_queue(n, at, names); });
  v1::QueueSpec p = api::to_proto(q, names);
  CHECK(p.name() == "team-a");
  CHECK(p.cohort() == "research");
  CHECK(p.weight() == 2.0);
  CHECK(p.queueing_strategy() == "StrictFIFO");
  REQUIRE(p.quotas_size() == 1);
  CHECK(p.quotas(0).flavor() == "h100");
  const auto& gpu = p.quotas(0).resources().at("gpu");
  CHECK(gpu.nominal() == "8");
  CHECK(gpu.borrowing_limit() == "500m");
  CHECK_FALSE(gpu.has_lending_limit());
  const auto& mem = p.quotas(0).resources().at("memory");
  CHECK(mem.nominal() == "1Ti");
  CHECK(mem.lending_limit() == "64Gi");
  CHECK(p.preemption().within_queue() == "LowerOrNewerEqualPriority");
  CHECK(p.preemption().reclaim_within_cohort() == "Any");
  CHECK(p.preemption().borrow_within_cohort() == "LowerPriority");
  CHECK(p.preemption().max_priority_threshold() == 5);
  CHECK(p.preemption().min_runtime_seconds() == 600);

  QueueSpec plain;
  plain.name = QueueName("b");
  v1::QueueSpec pp = api::to_proto(plain, names);
  CHECK(pp.queueing_strategy() == "BestEffortFIFO");
  CHECK(pp.preemption().within_queue() == "Never");
  CHECK_FALSE(pp.preemption().has_max_priority_threshold());

  auto n = read_yaml(R"(
{name: n1, flavor: h100, capacity: {gpu: 8, cpu: 192, memory: 2Ti}, labels: {zone: z1},
 state: Cordoned, dedicatedTo: team-a})",
                     [&](spec::yaml::Node y, spec::Path& at) { return spec::read_node(y, at, names); });
  v1::NodeSpec np = api::to_proto(n, names);
  CHECK(np.state() == "Cordoned");
  CHECK(np.capacity().at("gpu") == "8");
  CHECK(np.capacity().at("cpu") == "192");
  CHECK(np.capacity().at("memory") == "2Ti");
  CHECK(np.labels().at("zone") == "z1");
  CHECK(np.dedicated_to() == "team-a");

  JobSpec j;
  j.id = JobId("j1");
  j.queue = QueueName("team-a");
  j.priority = -5;
  PodSet ps;
  ps.name = "workers";
  ps.count = 4;
  ps.per_pod[kGpu] = 500;
  ps.per_pod[kMemory] = Quantity{16} << 30;
  j.pod_sets.push_back(ps);
  j.max_runtime = 3600;
  j.on_node_loss = NodeLossPolicy::kFail;
  v1::JobSpec jp = api::to_proto(j, names);
  CHECK(jp.priority() == "-5");
  REQUIRE(jp.pod_sets_size() == 1);
  CHECK(jp.pod_sets(0).count() == 4);
  CHECK(jp.pod_sets(0).resources().at("gpu") == "500m");
  CHECK(jp.pod_sets(0).resources().at("memory") == "16Gi");
  CHECK(jp.pod_sets(0).resources().count("cpu") == 0);
  CHECK(jp.max_runtime_seconds() == 3600);
  CHECK(jp.on_node_loss() == "Fail");
  CHECK(jp.preemptible());
  CHECK(jp.grace_period_seconds() == 30);

  CHECK(api::to_proto(JobState::kPending) == v1::JOB_STATE_PENDING);
  CHECK(api::to_proto(JobState::kPreempting) == v1::JOB_STATE_PREEMPTING);
  CHECK(api::to_proto(JobState::kCancelled) == v1::JOB_STATE_CANCELLED);
}

TEST_CASE("submit flags become a SubmitJobRequest") {
  SubmitFlags f;
  f.queue = "team-a";
  f.gpus = "0.5";
  f.cpu = "250m";
  f.memory = "16Gi";
  f.replicas = 2;
  f.priority = "high";
  f.flavors = {"h100", "a100"};
  f.env = {"A=1", "B=x=y"};
  f.workdir = "/tmp";
  f.command = {"python", "train.py", "--lr=0.1"};
  f.owner = "alice";
  v1::SubmitJobRequest r = submit_request_from_flags(f);
  const auto& s = r.spec();
  CHECK(s.queue() == "team-a");
  CHECK(s.owner() == "alice");
  CHECK(s.priority() == "high");
  CHECK(s.id().empty());
  REQUIRE(s.pod_sets_size() == 1);
  CHECK(s.pod_sets(0).count() == 2);
  CHECK(s.pod_sets(0).resources().at("gpu") == "500m");
  CHECK(s.pod_sets(0).resources().at("cpu") == "250m");
  CHECK(s.pod_sets(0).resources().at("memory") == "16Gi");
  CHECK(s.flavors_size() == 2);
  CHECK(s.env().at("B") == "x=y");
  CHECK(s.working_dir() == "/tmp");
  REQUIRE(s.command_size() == 3);
  CHECK(s.command(2) == "--lr=0.1");
  CHECK_FALSE(s.has_preemptible());  // the server's default applies
  CHECK_FALSE(s.has_grace_period_seconds());

  f.preemptible = false;
  f.grace_period = 5;
  r = submit_request_from_flags(f);
  CHECK(r.spec().has_preemptible());
  CHECK_FALSE(r.spec().preemptible());
  CHECK(r.spec().grace_period_seconds() == 5);

  SubmitFlags bad = f;
  bad.gpus = "1500m";
  CHECK(error_of([&] { submit_request_from_flags(bad); }).find("--gpus") != std::string::npos);
  bad = f;
  bad.memory = "0.5";
  CHECK(error_of([&] { submit_request_from_flags(bad); }).find("--memory") != std::string::npos);
  bad = f;
  bad.env = {"NOEQUALS"};
  CHECK(error_of([&] { submit_request_from_flags(bad); }).find("NAME=VALUE") != std::string::npos);
  bad = f;
  bad.queue.clear();
  CHECK(error_of([&] { submit_request_from_flags(bad); }).find("--queue") != std::string::npos);
}

TEST_CASE("submit flags: --node-selector and --toleration become the pod set's constraints") {
  SubmitFlags f;
  f.queue = "q";
  f.gpus = "1";
  f.node_selector = {"zone=z1", "gpuq.io/pool=a=b"};
  f.tolerations = {"gpu=broken:NoSchedule", "spot=yes", "maint:NoExecute", "any"};
  const v1::PodSet ps = submit_request_from_flags(f).spec().pod_sets(0);
  CHECK(ps.node_selector().at("zone") == "z1");
  CHECK(ps.node_selector().at("gpuq.io/pool") == "a=b");
  REQUIRE(ps.tolerations_size() == 4);
  CHECK((ps.tolerations(0).key() == "gpu" && ps.tolerations(0).operator_() == "Equal" &&
         ps.tolerations(0).value() == "broken" && ps.tolerations(0).effect() == "NoSchedule"));
  CHECK((ps.tolerations(1).value() == "yes" && ps.tolerations(1).effect().empty()));
  CHECK((ps.tolerations(2).key() == "maint" && ps.tolerations(2).operator_() == "Exists" &&
         ps.tolerations(2).effect() == "NoExecute"));
  CHECK((ps.tolerations(3).key() == "any" && ps.tolerations(3).operator_() == "Exists"));

  SubmitFlags bad = f;
  bad.node_selector = {"zone"};
  CHECK(error_of([&] { submit_request_from_flags(bad); }) ==
        "--node-selector \"zone\": expected KEY=VALUE (a node label)");
  bad = f;
  bad.tolerations = {"gpu=x:Never"};
  CHECK(error_of([&] { submit_request_from_flags(bad); }) ==
        "--toleration \"gpu=x:Never\": effect \"Never\" is not NoSchedule, PreferNoSchedule or "
        "NoExecute");
  bad.tolerations = {"=x"};
  CHECK(error_of([&] { submit_request_from_flags(bad); }).find("expected KEY=VALUE:EFFECT") !=
        std::string::npos);

  // gpuq show prints them under the pod set.
  v1::Job job;
  *job.mutable_spec() = submit_request_from_flags(f).spec();
  const std::string shown = job_detail(job, 0);
  CHECK(shown.find("    node selector: gpuq.io/pool=a=b zone=z1\n") != std::string::npos);
  CHECK(shown.find("    tolerates:     gpu=broken:NoSchedule spot=yes:* maint:NoExecute any:*\n") !=
        std::string::npos);
}

TEST_CASE("submit flags: the working directory is absolute, the current one by default") {
  const std::filesystem::path cwd = std::filesystem::current_path();
  SubmitFlags f;
  f.queue = "team-a";
  f.command = {"python", "train.py"};
  // No --workdir: the job runs where it was submitted.
  CHECK(submit_request_from_flags(f).spec().working_dir() == cwd.string());
  // A relative --workdir is taken from the current directory.
  f.workdir = "runs/exp1";
  const std::string rel = submit_request_from_flags(f).spec().working_dir();
  CHECK(std::filesystem::path(rel).is_absolute());
  CHECK(rel == (cwd / "runs/exp1").string());
  // An absolute one is sent as typed.
  f.workdir = "/data/exp1";
  CHECK(submit_request_from_flags(f).spec().working_dir() == "/data/exp1");
  // No command: nothing runs, so no directory is sent.
  SubmitFlags bare;
  bare.queue = "team-a";
  CHECK(submit_request_from_flags(bare).spec().working_dir().empty());
}

TEST_CASE("submit flags: a job that asks for nothing is refused naming --gpus and what is allowed") {
  SubmitFlags f;
  f.queue = "q";
  f.gpus = "0";
  CHECK_THROWS_WITH_AS(submit_request_from_flags(f),
                       "--gpus \"0\" asks for no GPU, and nothing else is asked: give --gpus above 0 (2, or 500m for "
                       "half of one), or --cpu or --memory for a job without GPUs",
                       UsageError);
  f.cpu = "2";  // a job without GPUs
  CHECK(submit_request_from_flags(f).spec().pod_sets(0).resources().at("cpu") == "2");
  f.gpus = "-1";
  CHECK_THROWS_AS(submit_request_from_flags(f), UsageError);
}

TEST_CASE("logs requests: --pod must be >= 0") {
  v1::LogsRequest r = logs_request("j1", 3, true);
  CHECK(r.id() == "j1");
  CHECK(r.pod() == 3);
  CHECK(r.follow());
  CHECK(r.offset() == 0);
  CHECK_THROWS_AS(logs_request("j1", -1, false), UsageError);
  // Refused before anything is sent (nothing listens on port 1).
  for (const std::vector<std::string>& pod :
       std::vector<std::vector<std::string>>{{"--pod=-1"}, {"--pod", "-2"}}) {
    std::vector<std::string> args = {"--server", "127.0.0.1:1", "logs", "j1"};
    args.insert(args.end(), pod.begin(), pod.end());
    Run bad = run(args);
    INFO(bad.err);
    CHECK(bad.rc == 2);
    CHECK(bad.out.empty());
    CHECK(bad.err.find("--pod") != std::string::npos);
  }
  CHECK(run({"logs"}).rc == 2);                      // no ID
  CHECK(run({"logs", "j1", "--pod", "x"}).rc == 2);  // not a number
  // A valid request goes to the server; an unreachable one is exit 1.
  Run down = run({"--server", "127.0.0.1:1", "--timeout", "10", "logs", "j1", "-f"});
  CHECK(down.rc == 1);
  CHECK(down.out.empty());
  CHECK(down.err.find("127.0.0.1:1") != std::string::npos);
}

TEST_CASE("a job file becomes a SubmitJobRequest; errors name the field") {
  const std::string yaml = R"(
queue: team-a
name: train
priority: high
pods:
  - {name: workers, count: 4, resources: {gpu: 2, cpu: 16, memory: 64Gi}}
flavors: [h100]
preemptible: false
maxRuntime: 7200
onNodeLoss: Fail
command: [torchrun, train.py]
env: {EPOCHS: "10"}
workingDir: /data
)";
  v1::SubmitJobRequest r = submit_request_from_yaml(yaml, "job.yaml", "bob");
  const auto& s = r.spec();
  CHECK(s.id().empty());
  CHECK(s.queue() == "team-a");
  CHECK(s.owner() == "bob");
  CHECK(s.priority() == "high");
  REQUIRE(s.pod_sets_size() == 1);
  CHECK(s.pod_sets(0).name() == "workers");
  CHECK(s.pod_sets(0).count() == 4);
  CHECK(s.pod_sets(0).resources().at("gpu") == "2");
  CHECK(s.pod_sets(0).resources().at("memory") == "64Gi");
  CHECK(s.has_preemptible());
  CHECK_FALSE(s.preemptible());
  CHECK_FALSE(s.has_grace_period_seconds());
  CHECK(s.max_runtime_seconds() == 7200);
  CHECK(s.on_node_loss() == "Fail");
  CHECK(s.command_size() == 2);
  CHECK(s.env().at("EPOCHS") == "10");
  CHECK(s.working_dir() == "/data");

  auto withid = submit_request_from_yaml(
      "id: j-1\nowner: carol\nqueue: q\npods: [{resources: {gpu: 1}}]\n", "j.yaml", "bob");
  CHECK(withid.spec().id() == "j-1");
  CHECK(withid.spec().owner() == "carol");

  auto err = [](const std::string& text) {
    return error_of([&] { submit_request_from_yaml(text, "j.yaml", "u"); });
  };
  CHECK(err("queue: q\npods: [{resources: {gpu: 1}}]\ncolour: red\n").find("j.yaml:3:1: colour: unknown key") ==
        0);
  CHECK(err("queue: q\npods: [{resources: {gpu: lots}}]\n").find("pods[0].resources.gpu") !=
        std::string::npos);
  CHECK(err("pods: [{resources: {gpu: 1}}]\n").find("j.yaml:1:1: queue: is required") == 0);
  CHECK(err("queue: q\npods: [{resources: {gpu: 1}}]\nonNodeLoss: Maybe\n").find("onNodeLoss") !=
        std::string::npos);
  CHECK(err("queue: q\npods: [{resources: {gpu: 1}}]\nsubmittedAt: 5\n").find("submittedAt") !=
        std::string::npos);
  CHECK(err("queue: [\n").find("j.yaml") == 0);
}

TEST_CASE("apply files: documents separated by ---, both forms, errors name line, column and field") {
  CHECK(parse_apply_file("---\nqueues: [{name: x}]\n...\n", "f.yaml").size() == 1);
  CHECK(parse_apply_file("queues: [{name: x}]\n---\n# only a comment\n---\nnodes: []\n", "f.yaml").size() == 1);

  const std::string file = R"(
queues:
  - name: a
    quotas: [{flavor: h100, resources: {gpu: {nominal: 8}}}]
  - name: b
nodes:
  - {name: n1, flavor: h100, capacity: {gpu: 8}}
---
kind: Queue
name: c
cohort: research
---
kind: Node
name: n2
flavor: h100
capacity: {gpu: 4, memory: 1Ti}
state: Draining
)";
  auto items = parse_apply_file(file, "cluster.yaml");
  REQUIRE(items.size() == 5);
  CHECK(items[0].queue->name() == "a");
  CHECK(items[0].queue->quotas(0).resources().at("gpu").nominal() == "8");
  CHECK(items[1].queue->name() == "b");
  CHECK(items[2].node->name() == "n1");
  CHECK(items[3].queue->cohort() == "research");
  CHECK(items[4].node->state() == "Draining");
  CHECK(items[4].node->capacity().at("memory") == "1Ti");

  auto err = [](const std::string& text) {
    return error_of([&] { parse_apply_file(text, "f.yaml"); });
  };
  CHECK(err("queues:\n  - name: a\n---\nqueues:\n  - name: b\n    quotas: [{flavor: x, resources: "
            "{gpu: {nominal: -z}}}]\n")
            .find("f.yaml:6:53: queues[0].quotas[0].resources.gpu.nominal: quantity \"-z\": not a number") == 0);
  CHECK(err("nodes:\n  - {name: n, flavor: f, capacity: {gpu: 1.5}}\n")
            .find("f.yaml:2:42: nodes[0].capacity.gpu: \"1500m\" is not a whole number of GPUs") == 0);
  CHECK(err("kind: Pod\nname: x\n").find("Queue or Node") != std::string::npos);
  CHECK(err("kind: Queue\nname: x\nwieght: 2\n").find("f.yaml:3:1: wieght: unknown key; did you mean weight?") == 0);
  CHECK(err("queue:\n  - name: a\n").find("queue") != std::string::npos);
  CHECK(err("queues:\n  - name: a\n    usageHistory: {gpu: 1}\n").find("queues[0].usageHistory") !=
        std::string::npos);
  CHECK(err("# nothing\n").find("no documents") != std::string::npos);
  CHECK(err("queues: [\n").find("f.yaml") == 0);
}

TEST_CASE("time arguments for usage") {
  const std::int64_t now = 1'700'000'000;
  CHECK(parse_time_arg("", now) == 0);
  CHECK(parse_time_arg("1690000000", now) == 1'690'000'000);
  CHECK(parse_time_arg("-7d", now) == now - 7 * 86400);
  CHECK(parse_time_arg("-24h", now) == now - 86400);
  CHECK(parse_time_arg("-30m", now) == now - 1800);
  CHECK(parse_time_arg("2024-01-01", now) == 1'704'067'200);
  CHECK(parse_time_arg("2024-02-29", now) == 1'709'164'800);
  for (const char* bad : {"yesterday", "-7x", "-d", "2024-02-30", "2024-13-01", "7d", "-5"})
    CHECK_THROWS_AS(parse_time_arg(bad, now), UsageError);
}

TEST_CASE("server address: --server, then GPUQ_SERVER, then a gpuqd socket where there is one, then TCP") {
  CHECK(resolve_server("h:1", "e:2") == "h:1");
  CHECK(resolve_server("", "e:2") == "e:2");
  CHECK(resolve_server("", "") == "127.0.0.1:7433");
  CHECK(resolve_server("", nullptr) == "127.0.0.1:7433");
  // A gpuqd socket at ./var/gpuqd.sock (where run.sh's gpuqd makes it) comes before TCP.
  gpuq::test::TempDir dir;
  std::filesystem::create_directory(dir.path / "var");
  const int fd = ::socket(AF_UNIX, SOCK_STREAM, 0);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, (dir.path / "var" / "gpuqd.sock").c_str());
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0);
  const auto here = std::filesystem::current_path();
  std::filesystem::current_path(dir.path);
  const std::string found = resolve_server("", nullptr);
  std::filesystem::current_path(here);
  ::close(fd);
  CHECK(found == "unix:" + (dir.path / "var" / "gpuqd.sock").string());
  CHECK(resolve_server("", "e:2") == "e:2");
}

namespace {

v1::Job make_job(const std::string& id, const std::string& queue, v1::JobState state,
                 const std::string& gpu, int count, const std::string& reason) {
  v1::Job j;
  j.mutable_spec()->set_id(id);
  j.mutable_spec()->set_queue(queue);
  auto* ps = j.mutable_spec()->add_pod_sets();
  ps->set_count(count);
  (*ps->mutable_resources())["gpu"] = gpu;
  j.set_state(state);
  j.set_reason(reason);
  j.set_submitted_at(1000);
  return j;
}

}  // namespace

TEST_CASE("tables fit 80 columns and show human units") {
  std::vector<v1::Job> jobs = {
      make_job(
          "a-very-long-job-identifier-that-goes-on-and-on-forever", "research-team-with-long-name",
          v1::JOB_STATE_PENDING, "500m", 3,
          "waiting for quota: queue research-team-with-long-name needs 4 more gpu in flavor h100"),
      make_job("short", "q", v1::JOB_STATE_RUNNING, "2", 4, "")};
  const std::string t = jobs_table(jobs, false, 1300);
  check_lines_fit(t);
  CHECK(t.find("ID") == 0);
  CHECK(t.find("~") != std::string::npos);
  CHECK(t.find("1.5") != std::string::npos);  // 3 pods x 500m
  CHECK(t.find("Running") != std::string::npos);
  CHECK(t.find("5m") != std::string::npos);  // 300 s old
  const std::string wide = jobs_table(jobs, true, 1300);
  CHECK(wide.find(jobs[0].spec().id()) != std::string::npos);  // wide never truncates

  v1::ListQueuesResponse qs;
  auto* q = qs.add_queues();
  q->mutable_spec()->set_name("machine-learning-research-platform-team");
  q->mutable_spec()->set_cohort("a-cohort-with-a-rather-long-name");
  for (const char* flavor : {"h100", "a100"}) {
    auto* u = q->add_usage();
    u->set_flavor(flavor);
    u->set_resource("gpu");
    u->set_nominal(8000);
    u->set_used(10500);
    u->set_borrowed(2500);
  }
  q->set_share(0.4567);
  q->set_pending(123456);
  q->set_running(7);
  const std::string qt = queues_table(qs, false);
  check_lines_fit(qt);
  CHECK(qt.find("GPU NOMINAL/USED/BORROWED") != std::string::npos);
  CHECK(qt.find("16/21/5") != std::string::npos);
  CHECK(qt.find("0.46") != std::string::npos);
  CHECK(qt.find("123456") != std::string::npos);

  v1::ListNodesResponse ns;
  auto* n = ns.add_nodes();
  n->mutable_spec()->set_name("gpu-node-with-a-very-long-hostname.cluster.example.com");
  n->mutable_spec()->set_flavor("h100-80gb-sxm5-nvlink");
  n->set_gpus(8);
  n->set_gpus_free(3);
  (*n->mutable_capacity())["cpu"] = 192000;
  (*n->mutable_used())["cpu"] = 64500;
  (*n->mutable_capacity())["memory"] = std::int64_t{2} << 40;
  (*n->mutable_used())["memory"] = std::int64_t{3} << 29;  // 1.5Gi
  const std::string nt = nodes_table(ns, false);
  check_lines_fit(nt);
  CHECK(nt.find("3/8") != std::string::npos);
  CHECK(nt.find("64.5/192") != std::string::npos);
  CHECK(nt.find("1.5Gi/2Ti") != std::string::npos);
  CHECK(nt.find("Ready") != std::string::npos);

  v1::UsageResponse ur;
  ur.set_to(1'700'000'000);
  auto* u = ur.add_usage();
  u->set_queue("a");
  u->set_flavor("h100");
  u->set_gpu_hours(12.5);
  u->set_jobs(3);
  const std::string ut = usage_table(ur);
  check_lines_fit(ut);
  CHECK(ut.find("12.50") != std::string::npos);
  CHECK(ut.find("TOTAL") != std::string::npos);

  CHECK(human_milli(1500) == "1.5");
  CHECK(human_milli(250) == "0.25");
  CHECK(human_milli(-500) == "-0.5");
  CHECK(human_bytes(std::int64_t{64} << 30) == "64Gi");
  CHECK(human_bytes(100) == "100");
  CHECK(human_age(45) == "45s");
  CHECK(human_age(7200) == "2h");
  CHECK(human_age(3 * 86400) == "3d");
  CHECK(cli::truncate("abcdef", 4) == "abc~");

  v1::JobEvent e;
  e.set_seq(42);
  e.set_at(1'700'000'000);
  e.set_job_id("j1");
  e.set_queue("q");
  e.set_to(v1::JOB_STATE_PENDING);
  CHECK(event_line(e) == "42 2023-11-14T22:13:20Z job/j1 queue/q submitted -> Pending");
}

TEST_CASE("control characters and terminal escapes are shown escaped in tables, show and watch") {
  CHECK(escaped("plain text, ünïcode ✓") == "plain text, ünïcode ✓");
  CHECK(escaped("a\x1b[2Jb") == "a\\x1b[2Jb");
  CHECK(escaped("line\nnext\ttab\rcr\x7f") == "line\\nnext\\ttab\\rcr\\x7f");
  CHECK(escaped("c1 \xc2\x9b" "31m") == "c1 \\u009b31m");  // U+009B, CSI to some terminals
  CHECK(escaped("bad \xff\xc3") == "bad \\xff\\xc3");        // not UTF-8
  CHECK(escaped("back\\slash") == "back\\slash");

  std::vector<v1::Job> jobs = {make_job("j1", "q", v1::JOB_STATE_PENDING, "1", 1, "reason\x1b]0;owned\x07")};
  jobs[0].mutable_spec()->set_name("evil\x1b[31mname\n");
  for (const std::string& t : {jobs_table(jobs, false, 1300), jobs_table(jobs, true, 1300),
                               job_detail(jobs[0], 1300)}) {
    INFO(t);
    CHECK(t.find('\x1b') == std::string::npos);
    CHECK(t.find('\x07') == std::string::npos);
    CHECK(t.find("reason\\x1b]0;owned\\x07") != std::string::npos);
  }
  CHECK(jobs_table(jobs, true, 1300).find("evil\\x1b[31mname\\n") != std::string::npos);
  const std::string detail = job_detail(jobs[0], 1300);
  CHECK(detail.find("Name:        evil\\x1b[31mname\\n\n") != std::string::npos);

  v1::ListNodesResponse ns;
  auto* n = ns.add_nodes();
  n->mutable_spec()->set_name("n0");
  (*n->mutable_spec()->mutable_labels())["k"] = "v\x1b";
  CHECK(nodes_table(ns, true).find("k=v\\x1b") != std::string::npos);

  v1::JobEvent e;
  e.set_seq(1);
  e.set_job_id("j1");
  e.set_queue("q");
  e.set_to(v1::JOB_STATE_FAILED);
  e.set_reason("exit\n\x1b[1A");
  CHECK(event_line(e).find(": exit\\n\\x1b[1A") != std::string::npos);

  // A server's message in an error is escaped too.
  std::ostringstream out, err;
  Context ctx(out, err);
  CHECK(ctx.fail(grpc::Status(grpc::StatusCode::NOT_FOUND, "job \"\x1b[2J\" does not exist")) == 1);
  CHECK(err.str() == "gpuq: job \"\\x1b[2J\" does not exist (NOT_FOUND)\n");
}

namespace {

// A Jobs service that keeps the last SubmitJobRequest: what `gpuq submit` made of its arguments.
class RecordingJobs final : public v1::Jobs::Service {
 public:
  grpc::Status Submit(grpc::ServerContext*, const v1::SubmitJobRequest* req, v1::SubmitJobResponse* resp) override {
    last = *req;
    resp->mutable_job()->mutable_spec()->set_id("j1");
    return grpc::Status::OK;
  }
  v1::SubmitJobRequest last;
};

}  // namespace

TEST_CASE("submit: everything after -- is the command, also after a repeated option") {
  RecordingJobs jobs;
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&jobs);
  auto server = builder.BuildAndStart();
  REQUIRE(server);
  const std::string addr = "127.0.0.1:" + std::to_string(port);
  const auto submit = [&](std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", addr, "submit", "-q", "q", "--gpus", "1"});
    std::ostringstream out, err;
    const int rc = run_cli(args, out, err);
    INFO(err.str());
    CHECK(rc == 0);
    return std::vector<std::string>(jobs.last.spec().command().begin(), jobs.last.spec().command().end());
  };
  using V = std::vector<std::string>;
  CHECK(submit({"--env", "A=1", "--", "sh", "-c", "echo $A"}) == V{"sh", "-c", "echo $A"});
  CHECK(jobs.last.spec().env().at("A") == "1");
  CHECK(submit({"--env", "A=1", "--env", "B=2", "--", "sh", "-c", "echo $A $B"}) == V{"sh", "-c", "echo $A $B"});
  CHECK(jobs.last.spec().env().size() == 2);
  CHECK(submit({"--flavor", "h100", "--node-selector", "zone=a", "--toleration", "gpu", "--", "python", "-m", "x",
                "--flag", "--"}) == V{"python", "-m", "x", "--flag", "--"});
  CHECK(submit({"--", "--looks-like-an-option"}) == V{"--looks-like-an-option"});
  server->Shutdown();
}

TEST_CASE("json output is protobuf's JSON with field names and every field; yaml the same data") {
  v1::ListJobsResponse r;
  *r.add_jobs() = make_job("123", "q", v1::JOB_STATE_RUNNING, "2", 1, "");
  const std::string json = to_json(r);
  CHECK(json == to_json(r));
  auto v = boost::json::parse(json);
  const auto& job = v.at("jobs").at(0);
  CHECK(job.at("state").as_string() == "JOB_STATE_RUNNING");
  CHECK(job.at("spec").at("pod_sets").at(0).at("resources").at("gpu").as_string() == "2");
  CHECK(job.at("reason").as_string() == "");            // defaults are printed
  CHECK(job.at("submitted_at").as_string() == "1000");  // int64 as a string (proto3 JSON)
  CHECK(job.at("attempts").as_int64() == 0);
  CHECK(v.as_object().contains("next_page_token"));

  const std::string yaml = to_yaml(r);
  const auto doc = spec::yaml::parse_one(yaml);
  const auto y = doc.root().find("jobs").item(0);
  CHECK(y.find("spec").find("id").text() == "123");
  CHECK(y.find("spec").find("id").quoted());  // a string that looks like a number is quoted
  CHECK(y.find("state").text() == "JOB_STATE_RUNNING");
  CHECK(y.find("attempts").text() == "0");
  CHECK(yaml.find("placement: []") != std::string::npos);  // empty lists inline
  v1::QueueStatus q;
  q.set_share(0.4567);
  CHECK(to_yaml(q).find("share: 0.4567\n") != std::string::npos);

  CHECK(parse_state("running") == v1::JOB_STATE_RUNNING);
  CHECK(parse_state("JOB_STATE_FAILED") == v1::JOB_STATE_FAILED);
  CHECK_THROWS_AS(parse_state("sleeping"), UsageError);
  CHECK_THROWS_AS(parse_output_format("xml"), UsageError);
}

TEST_CASE("run_cli: exit codes without a server") {
  CHECK(run({"--help"}).rc == 0);
  CHECK(run({}).rc == 2);
  CHECK(run({"frobnicate"}).rc == 2);
  CHECK(run({"submit", "--gpus", "1", "--", "true"}).rc == 2);  // no --queue
  CHECK(run({"submit", "-q", "a", "--gpus", "1500m", "--", "x"}).err.find("--gpus") !=
        std::string::npos);
  Run clash = run({"submit", "-f", "x.yaml", "-q", "a"});
  CHECK(clash.rc == 2);  // -f takes the whole job from the file
  CHECK(clash.err.find("--queue") != std::string::npos);
  CHECK(run({"ls", "-o", "xml"}).rc == 2);
  CHECK(run({"usage", "--from", "yesterday"}).rc == 2);
  Run missing = run({"apply", "-f", "/nonexistent/cluster.yaml"});
  CHECK(missing.rc == 2);
  CHECK(missing.err.find("/nonexistent/cluster.yaml") != std::string::npos);

  // Nothing listens on port 1: the error names the address and how to fix it.
  Run down = run({"--server", "127.0.0.1:1", "--timeout", "10", "queues"});
  CHECK(down.rc == 1);
  CHECK(down.out.empty());
  CHECK(down.err.find("127.0.0.1:1") != std::string::npos);
  CHECK(down.err.find("scripts/run.sh") != std::string::npos);
  Run cancel = run({"cancel", "a", "b", "--server", "127.0.0.1:1"});
  CHECK(cancel.rc == 1);
}

TEST_CASE("status codes are reported by name") {
  CHECK(std::string(code_name(grpc::StatusCode::NOT_FOUND)) == "NOT_FOUND");
  CHECK(std::string(code_name(grpc::StatusCode::FAILED_PRECONDITION)) == "FAILED_PRECONDITION");
  CHECK(is_unreachable(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "failed to connect to all addresses")));
  CHECK_FALSE(is_unreachable(
      grpc::Status(grpc::StatusCode::UNAVAILABLE, "the state could not be written")));
  std::ostringstream out, err;
  Context ctx(out, err);
  CHECK(ctx.fail(grpc::Status(grpc::StatusCode::NOT_FOUND, "job \"x\" does not exist")) == 1);
  CHECK(err.str() == "gpuq: job \"x\" does not exist (NOT_FOUND)\n");
}
