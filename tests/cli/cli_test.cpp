// The command line without a server: quantities and specs in the API's notation, requests built
// from flags and files, apply-file errors naming the field, time arguments, exit codes. What it
// prints (tables, JSON, YAML) is output_test.cpp.
#include "cli/cli.hpp"

#include <doctest/doctest.h>

#include <sys/socket.h>
#include <sys/stat.h>
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
#include "cli/credentials.hpp"
#include "cli/format.hpp"
#include "cli/requests.hpp"
#include "spec/error.hpp"
#include "spec/resources.hpp"
#include "spec/yaml_read.hpp"
#include "tests/support/files.hpp"

using namespace gpuq;
using namespace gpuq::cli;

namespace {

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
  CHECK_FALSE(s.working_dir_implicit());  // --workdir: asked for
  CHECK(s.image().empty());               // no --image: the queue's default
  REQUIRE(s.command_size() == 3);
  CHECK(s.command(2) == "--lr=0.1");
  CHECK_FALSE(s.has_preemptible());  // the server's default applies
  CHECK_FALSE(s.has_grace_period_seconds());

  f.preemptible = false;
  f.grace_period = 5;
  f.image = "nvcr.io/nvidia/pytorch:24.05-py3";
  r = submit_request_from_flags(f);
  CHECK(r.spec().image() == "nvcr.io/nvidia/pytorch:24.05-py3");
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

TEST_CASE("submit flags: --gpu-model, repeated, is a required affinity on the node's GPU model label") {
  SubmitFlags f;
  f.queue = "q";
  f.gpus = "1";
  f.gpu_models = {"V100M16", "V100M32"};
  const v1::PodSet ps = submit_request_from_flags(f).spec().pod_sets(0);
  REQUIRE(ps.affinity_size() == 1);
  REQUIRE(ps.affinity(0).match_expressions_size() == 1);
  const auto& r = ps.affinity(0).match_expressions(0);
  CHECK(r.key() == "gpuq.io/gpu-model");
  CHECK(r.operator_() == "In");
  CHECK(std::vector<std::string>(r.values().begin(), r.values().end()) ==
        std::vector<std::string>{"V100M16", "V100M32"});
  f.gpu_models = {""};
  CHECK(error_of([&] { submit_request_from_flags(f); }) ==
        "--gpu-model \"\": name a GPU model (the node label gpuq.io/gpu-model)");
}

TEST_CASE("submit flags: the working directory is absolute, the current one by default") {
  const std::filesystem::path cwd = std::filesystem::current_path();
  SubmitFlags f;
  f.queue = "team-a";
  f.command = {"python", "train.py"};
  // No --workdir: the job runs where it was submitted, which is said to be only that (a pod on
  // Kubernetes starts in its image's working directory instead).
  CHECK(submit_request_from_flags(f).spec().working_dir() == cwd.string());
  CHECK(submit_request_from_flags(f).spec().working_dir_implicit());
  // A relative --workdir is taken from the current directory.
  f.workdir = "runs/exp1";
  CHECK_FALSE(submit_request_from_flags(f).spec().working_dir_implicit());
  const std::string rel = submit_request_from_flags(f).spec().working_dir();
  CHECK(std::filesystem::path(rel).is_absolute());
  CHECK(rel == (cwd / "runs/exp1").string());
  // An absolute one is sent as typed.
  f.workdir = "/data/exp1";
  CHECK(submit_request_from_flags(f).spec().working_dir() == "/data/exp1");
  CHECK_FALSE(submit_request_from_flags(f).spec().working_dir_implicit());
  // No command: nothing runs, so no directory is sent.
  SubmitFlags bare;
  bare.queue = "team-a";
  CHECK(submit_request_from_flags(bare).spec().working_dir().empty());
  CHECK_FALSE(submit_request_from_flags(bare).spec().working_dir_implicit());
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
image: ghcr.io/lab/train:7
notify: {url: "http://hooks.example/gpuq", on: [started, failed]}
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
  CHECK_FALSE(s.working_dir_implicit());
  CHECK(s.image() == "ghcr.io/lab/train:7");
  // The job file's own notify: sent with the job (it was read and dropped before).
  CHECK(s.notify().url() == "http://hooks.example/gpuq");
  REQUIRE(s.notify().on_size() == 2);
  CHECK(s.notify().on(1) == "failed");

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
  // Back from now without the minus too (a time is never ahead of now this way).
  CHECK(parse_time_arg("7d", now) == now - 7 * 86400);
  CHECK(parse_time_arg("2w", now) == now - 14 * 86400);
  CHECK(parse_time_arg("90s", now) == now - 90);
  CHECK(parse_time_arg("-1h30m", now) == now - 5400);  // any duration with a unit (spec/duration.hpp)
  CHECK(parse_time_arg("1-12:00:00", now) == now - 129600);
  // ISO 8601: a date and time, UTC unless an offset says otherwise.
  CHECK(parse_time_arg("2024-01-01T12:30", now) == 1'704'067'200 + 45'000);
  CHECK(parse_time_arg("2024-01-01T12:30:15Z", now) == 1'704'067'200 + 45'015);
  CHECK(parse_time_arg("2024-01-01T12:30:00+02:00", now) == 1'704'067'200 + 45'000 - 7200);
  CHECK(parse_time_arg("2024-01-01T12:30:00-05:30", now) == 1'704'067'200 + 45'000 + 19'800);
  for (const char* bad : {"yesterday", "-7x", "-d", "d", "--7d", "2024-02-30", "2024-13-01", "7x", "-5",
                          "2024-01-01T25:00", "2024-01-01T12", "2024-01-01T12:30:00+2", "2024-01-01 12:30"})
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
  // Durations in Slurm's and Kubernetes' words.
  submit({"--max-runtime", "1h", "--grace-period", "90s", "--expected-runtime", "30:00", "--", "true"});
  CHECK(jobs.last.spec().max_runtime_seconds() == 3600);
  CHECK(jobs.last.spec().grace_period_seconds() == 90);
  CHECK(jobs.last.spec().expected_runtime_seconds() == 1800);
  submit({"--max-runtime", "1-12:00:00", "--", "true"});
  CHECK(jobs.last.spec().max_runtime_seconds() == 129600);
  submit({"--max-runtime", "5400", "--", "true"});
  CHECK(jobs.last.spec().max_runtime_seconds() == 5400);
  server->Shutdown();
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
  Run duration = run({"submit", "-q", "a", "--gpus", "1", "--max-runtime", "1x", "--", "true"});
  CHECK(duration.rc == 2);
  CHECK(duration.err.find("--max-runtime") != std::string::npos);
  CHECK(duration.err.find("\"1x\" is not a duration; use 90 (seconds), 90s, 15m, 2h, 1d, 1h30m, 1:30:00 or "
                          "1-12:00:00") != std::string::npos);
  CHECK(run({"usage", "--from", "yesterday"}).rc == 2);
  // usage's flags are checked before anything is sent: each error names the flag, the value and
  // what is allowed.
  Run by = run({"usage", "--by", "banana"});
  CHECK(by.rc == 2);
  CHECK(by.err == "gpuq: --by \"banana\" is not allowed; use queue, user, flavor or job\n");
  Run backwards = run({"usage", "--since", "2026-12-01", "--until", "2026-11-01"});
  CHECK(backwards.rc == 2);
  CHECK(backwards.err ==
        "gpuq: --since 2026-12-01 (2026-12-01T00:00:00Z) is after --until 2026-11-01 (2026-11-01T00:00:00Z); the "
        "period must start before it ends\n");
  Run page = run({"usage", "--page-size", "-1"});
  CHECK(page.rc == 2);
  CHECK(page.err == "gpuq: --page-size -1 is not allowed; use 1 to 1000 (0: the server's 100)\n");
  Run when = run({"usage", "--until", "soon"});
  CHECK(when.rc == 2);
  CHECK(when.err.find("gpuq: --until: time \"soon\": expected Unix seconds, a time back from now such as 7d") == 0);
  CHECK(run({"usage", "-o", "xml"}).rc == 2);
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

TEST_CASE("credentials: a token goes in clear only to loopback; its file is the caller's own, read once") {
  gpuq::test::TempDir dir;
  namespace fs = std::filesystem;
  const Getenv no_env = [](const char*) -> const char* { return nullptr; };
  CredentialFlags f;
  f.token = "gpuq_abc_secret";
  for (const char* ok :
       {"127.0.0.1:7433", "ipv4:127.0.0.1:7433", "localhost:7433", "[::1]:7433", "127.1.2.3:1", "localhost"})
    CHECK_MESSAGE(resolve_credentials(f, ok, no_env).token == f.token, ok);
  for (const char* far : {"127.evil.example:7433", "ipv4:127.0.0.1:1,10.0.0.5:7433", "dns://8.8.8.8/localhost:7433",
                          "10.0.0.5:7433", "[::2]:7433", "::1"}) {
    const std::string e = error_of([&] { resolve_credentials(f, far, no_env); });
    CHECK_MESSAGE(e.find("refusing to send the token from --token in clear to ") == 0, far << ": " << e);
    CHECK(e.find(f.token) == std::string::npos);
  }
  // A token file: the caller's, 0600, not through a link.
  const fs::path file = dir.path / "token";
  std::ofstream(file) << "gpuq_abc_fromfile\n";
  ::chmod(file.c_str(), 0600);
  f = {};
  f.token_file = file.string();
  CHECK(resolve_credentials(f, "127.0.0.1:1", no_env).token == "gpuq_abc_fromfile");
  const fs::path link = dir.path / "link";
  fs::create_symlink(file, link);
  f.token_file = link.string();
  CHECK(error_of([&] { resolve_credentials(f, "127.0.0.1:1", no_env); }).find("(a symbolic link: name the file itself)") !=
        std::string::npos);
  ::chmod(file.c_str(), 0640);
  f.token_file = file.string();
  CHECK(error_of([&] { resolve_credentials(f, "127.0.0.1:1", no_env); }) ==
        "--token-file " + file.string() + ": mode 0640 lets other accounts read the token; chmod 600 " + file.string());
}
