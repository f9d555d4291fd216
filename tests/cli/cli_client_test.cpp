// run_cli against an in-process gRPC server on a loopback port that implements the contract's
// services with canned answers (gpuqd's own integration tests drive the real daemon). Checks what
// goes over the wire and what the user sees: pagination followed, errors by code name, partial
// failures, apply order, streams, the backup file.
#include <doctest/doctest.h>
#include <grpcpp/grpcpp.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "cli/cli.hpp"
#include "gpuq/v1/gpuq.grpc.pb.h"

using namespace gpuq;

namespace {

struct Seen {
  std::mutex mu;
  std::vector<v1::SubmitJobRequest> submits;
  std::vector<v1::ListJobsRequest> lists;
  std::vector<std::string> applied;  // "queue/a", "node/n1"
  std::vector<std::string> cancelled;
  v1::UsageRequest usage;
};

class FakeJobs final : public v1::Jobs::Service {
 public:
  explicit FakeJobs(Seen& s) : seen_(s) {}
  grpc::Status Submit(grpc::ServerContext*, const v1::SubmitJobRequest* r,
                      v1::SubmitJobResponse* out) override {
    std::lock_guard lock(seen_.mu);
    seen_.submits.push_back(*r);
    if (r->spec().id() == "taken")
      return {grpc::StatusCode::ALREADY_EXISTS, "job id \"taken\" is in use"};
    *out->mutable_job()->mutable_spec() = r->spec();
    out->mutable_job()->mutable_spec()->set_id(r->spec().id().empty() ? "j-1" : r->spec().id());
    out->mutable_job()->set_state(v1::JOB_STATE_PENDING);
    return grpc::Status::OK;
  }
  // 250 jobs, served page by page; the token is the next index.
  grpc::Status List(grpc::ServerContext*, const v1::ListJobsRequest* r,
                    v1::ListJobsResponse* out) override {
    std::lock_guard lock(seen_.mu);
    seen_.lists.push_back(*r);
    const int start = r->page_token().empty() ? 0 : std::stoi(r->page_token());
    const int size = std::min(r->page_size() > 0 ? r->page_size() : 100, 100);
    for (int i = start; i < std::min(start + size, 250); ++i) {
      v1::Job* j = out->add_jobs();
      j->mutable_spec()->set_id("job-" + std::to_string(i));
      j->mutable_spec()->set_queue("q");
      j->set_state(v1::JOB_STATE_RUNNING);
    }
    if (start + size < 250) out->set_next_page_token(std::to_string(start + size));
    return grpc::Status::OK;
  }
  grpc::Status Cancel(grpc::ServerContext*, const v1::CancelJobRequest* r,
                      v1::CancelJobResponse* out) override {
    std::lock_guard lock(seen_.mu);
    seen_.cancelled.push_back(r->id());
    if (r->id() == "missing")
      return {grpc::StatusCode::NOT_FOUND, "job \"missing\" does not exist"};
    out->mutable_job()->set_state(v1::JOB_STATE_CANCELLED);
    return grpc::Status::OK;
  }
  grpc::Status Watch(grpc::ServerContext*, const v1::WatchJobsRequest* r,
                     grpc::ServerWriter<v1::JobEvent>* w) override {
    for (std::uint64_t s = r->from_seq() + 1; s <= r->from_seq() + 3; ++s) {
      v1::JobEvent e;
      e.set_seq(s);
      e.set_job_id("j" + std::to_string(s));
      e.set_queue(r->queue());
      e.set_to(v1::JOB_STATE_PENDING);
      w->Write(e);
    }
    return grpc::Status::OK;
  }

 private:
  Seen& seen_;
};

class FakeQueues final : public v1::Queues::Service {
 public:
  explicit FakeQueues(Seen& s) : seen_(s) {}
  grpc::Status Apply(grpc::ServerContext*, const v1::ApplyQueueRequest* r,
                     v1::ApplyQueueResponse* out) override {
    std::lock_guard lock(seen_.mu);
    if (r->spec().name() == "refused")
      return {grpc::StatusCode::INVALID_ARGUMENT, "spec.cohort: refused"};
    seen_.applied.push_back("queue/" + r->spec().name());
    *out->mutable_queue()->mutable_spec() = r->spec();
    return grpc::Status::OK;
  }
  grpc::Status List(grpc::ServerContext*, const v1::ListQueuesRequest*,
                    v1::ListQueuesResponse* out) override {
    auto* q = out->add_queues();
    q->mutable_spec()->set_name("team-a");
    auto* u = q->add_usage();
    u->set_resource("gpu");
    u->set_nominal(8000);
    u->set_used(1500);
    q->set_pending(2);
    return grpc::Status::OK;
  }

 private:
  Seen& seen_;
};

class FakeNodes final : public v1::Nodes::Service {
 public:
  explicit FakeNodes(Seen& s) : seen_(s) {}
  grpc::Status Apply(grpc::ServerContext*, const v1::ApplyNodeRequest* r,
                     v1::ApplyNodeResponse*) override {
    std::lock_guard lock(seen_.mu);
    seen_.applied.push_back("node/" + r->spec().name());
    return grpc::Status::OK;
  }
  grpc::Status Cordon(grpc::ServerContext*, const v1::NodeNameRequest* r,
                      v1::NodeResponse* out) override {
    out->mutable_node()->mutable_spec()->set_name(r->name());
    out->mutable_node()->mutable_spec()->set_state("Cordoned");
    return grpc::Status::OK;
  }

 private:
  Seen& seen_;
};

class FakeAdmin final : public v1::Admin::Service {
 public:
  explicit FakeAdmin(Seen& s) : seen_(s) {}
  grpc::Status Backup(grpc::ServerContext*, const v1::BackupRequest*,
                      grpc::ServerWriter<v1::BackupChunk>* w) override {
    for (int i = 0; i < 3; ++i) {
      v1::BackupChunk c;
      c.set_data(std::string(1000, static_cast<char>('a' + i)));
      if (i == 0) c.set_total_bytes(3000);
      w->Write(c);
    }
    return grpc::Status::OK;
  }
  grpc::Status Usage(grpc::ServerContext*, const v1::UsageRequest* r,
                     v1::UsageResponse* out) override {
    std::lock_guard lock(seen_.mu);
    seen_.usage = *r;
    out->set_from(r->from());
    out->set_to(r->to());
    auto* u = out->add_usage();
    u->set_queue("team-a");
    u->set_flavor("h100");
    u->set_gpu_hours(42.25);
    u->set_jobs(7);
    return grpc::Status::OK;
  }

 private:
  Seen& seen_;
};

struct FakeServer {
  Seen seen;
  FakeJobs jobs{seen};
  FakeQueues queues{seen};
  FakeNodes nodes{seen};
  FakeAdmin admin{seen};
  std::unique_ptr<grpc::Server> server;
  std::string address;

  FakeServer() {
    int port = 0;
    grpc::ServerBuilder b;
    b.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    b.RegisterService(&jobs);
    b.RegisterService(&queues);
    b.RegisterService(&nodes);
    b.RegisterService(&admin);
    server = b.BuildAndStart();
    address = "127.0.0.1:" + std::to_string(port);
  }
  ~FakeServer() { server->Shutdown(); }

  struct Run {
    int rc;
    std::string out, err;
  };
  Run run(std::vector<std::string> args) {
    args.insert(args.begin(), {"--server", address});
    std::ostringstream out, err;
    int rc = cli::run_cli(args, out, err);
    return {rc, out.str(), err.str()};
  }
};

}  // namespace

TEST_CASE("submit sends the spec and prints the id; server errors print message and code") {
  FakeServer s;
  auto r = s.run({"submit", "-q", "team-a", "--gpus", "0.5", "--replicas", "2", "--owner", "al",
                  "--preemptible=false", "--", "python", "-c", "print(1)"});
  CHECK(r.rc == 0);
  CHECK(r.out == "job/j-1 submitted (Pending)\n");
  REQUIRE(s.seen.submits.size() == 1);
  const auto& spec = s.seen.submits[0].spec();
  CHECK(spec.pod_sets(0).resources().at("gpu") == "500m");
  CHECK(spec.pod_sets(0).count() == 2);
  CHECK(spec.owner() == "al");
  CHECK_FALSE(spec.preemptible());
  REQUIRE(spec.command_size() == 3);
  CHECK(spec.command(1) == "-c");

  r = s.run({"submit", "-q", "team-a", "--id", "taken", "--", "true"});
  CHECK(r.rc == 1);
  CHECK(r.err == "gpuq: job id \"taken\" is in use (ALREADY_EXISTS)\n");

  const auto file = std::filesystem::temp_directory_path() / "gpuq-cli-test-job.yaml";
  std::ofstream(file)
      << "queue: q\npriority: critical\npods: [{resources: {gpu: 1}}]\ncommand: [sleep, '1']\n";
  r = s.run({"submit", "-f", file.string(), "-o", "json"});
  CHECK(r.rc == 0);
  auto job = boost::json::parse(r.out);
  CHECK(job.at("spec").at("priority").as_string() == "critical");
  CHECK(job.at("state").as_string() == "JOB_STATE_PENDING");
  std::filesystem::remove(file);
}

TEST_CASE("ls follows pages, hides finished jobs by default, stops at --limit") {
  FakeServer s;
  auto r = s.run({"ls", "-o", "json"});
  CHECK(r.rc == 0);
  auto v = boost::json::parse(r.out);
  CHECK(v.at("jobs").as_array().size() == 250);
  CHECK(s.seen.lists.size() == 3);
  CHECK(s.seen.lists[0].states_size() == 4);  // Pending, Admitted, Running, Preempting
  CHECK(s.seen.lists[2].page_token() == "200");

  s.seen.lists.clear();
  r = s.run({"ls", "--all", "--limit", "120", "--queue", "q"});
  CHECK(r.rc == 0);
  CHECK(s.seen.lists.size() == 2);
  CHECK(s.seen.lists[0].states_size() == 0);
  CHECK(s.seen.lists[0].queue() == "q");
  CHECK(s.seen.lists[1].page_size() == 20);
  std::istringstream lines(r.out);
  int n = 0;
  for (std::string l; std::getline(lines, l);) ++n;
  CHECK(n == 121);  // header + 120

  s.seen.lists.clear();
  r = s.run({"ls", "--state", "failed", "--state", "Cancelled"});
  REQUIRE(s.seen.lists.size() == 3);
  CHECK(s.seen.lists[0].states_size() == 2);
  CHECK(s.seen.lists[0].states(0) == v1::JOB_STATE_FAILED);
}

TEST_CASE("cancel tries every id and exits 1 when any failed") {
  FakeServer s;
  auto r = s.run({"cancel", "a", "missing", "b"});
  CHECK(r.rc == 1);
  CHECK(s.seen.cancelled == std::vector<std::string>{"a", "missing", "b"});
  CHECK(r.out == "job/a cancelled (Cancelled)\njob/b cancelled (Cancelled)\n");
  CHECK(r.err == "gpuq: job \"missing\" does not exist (NOT_FOUND)\n");
  CHECK(s.run({"cancel", "a"}).rc == 0);
}

TEST_CASE("apply sends every queue and node in order and stops at a refusal") {
  FakeServer s;
  const auto file = std::filesystem::temp_directory_path() / "gpuq-cli-test-apply.yaml";
  std::ofstream(file)
      << "queues:\n  - name: a\nnodes:\n  - {name: n1, flavor: f, capacity: {gpu: 8}}\n"
         "---\nkind: Queue\nname: b\n";
  auto r = s.run({"apply", "-f", file.string()});
  CHECK(r.rc == 0);
  CHECK(r.out == "queue/a applied\nnode/n1 applied\nqueue/b applied\n");
  CHECK(s.seen.applied == std::vector<std::string>{"queue/a", "node/n1", "queue/b"});

  s.seen.applied.clear();
  std::ofstream(file) << "queues:\n  - name: a\n  - name: refused\n  - name: c\n";
  r = s.run({"apply", "-f", file.string()});
  CHECK(r.rc == 1);
  CHECK(s.seen.applied == std::vector<std::string>{"queue/a"});
  CHECK(r.err.find("queue/refused not applied") != std::string::npos);
  CHECK(r.err.find("spec.cohort: refused (INVALID_ARGUMENT)") != std::string::npos);

  s.seen.applied.clear();
  std::ofstream(file) << "queues:\n  - name: a\n---\nqueues:\n  - name: b\n    weight: -1\n";
  r = s.run({"apply", "-f", file.string()});
  CHECK(r.rc == 2);
  CHECK(s.seen.applied.empty());  // checked whole before anything is sent
  CHECK(r.err.find("document 2: queues[0].weight") != std::string::npos);
  std::filesystem::remove(file);
}

TEST_CASE("queues, nodes cordon, watch, usage and backup") {
  FakeServer s;
  auto r = s.run({"queues"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("team-a") != std::string::npos);
  CHECK(r.out.find("8/1.5/0") != std::string::npos);

  r = s.run({"nodes", "cordon", "n7"});
  CHECK(r.rc == 0);
  CHECK(r.out == "node/n7 cordoned (Cordoned)\n");

  r = s.run({"watch", "--from", "10", "--queue", "q"});
  CHECK(r.rc == 0);
  CHECK(r.out.find("11 - job/j11 queue/q submitted -> Pending\n") == 0);
  CHECK(r.out.find("13 - job/j13") != std::string::npos);
  r = s.run({"watch", "-o", "json"});
  std::istringstream events(r.out);
  std::string first;
  std::getline(events, first);
  CHECK(boost::json::parse(first).at("seq").as_string() == "1");

  r = s.run({"usage", "--from", "100", "--to", "2024-01-01", "--queue", "team-a"});
  CHECK(r.rc == 0);
  CHECK(s.seen.usage.from() == 100);
  CHECK(s.seen.usage.to() == 1'704'067'200);
  CHECK(s.seen.usage.queue() == "team-a");
  CHECK(r.out.find("42.25") != std::string::npos);

  const auto dir = std::filesystem::temp_directory_path() / "gpuq-cli-test-backup";
  std::filesystem::create_directories(dir);
  const auto dest = dir / "state.db";
  r = s.run({"admin", "backup", dest.string()});
  CHECK(r.rc == 0);
  CHECK(r.out == "wrote 3000 bytes to " + dest.string() + "\n");
  CHECK(std::filesystem::file_size(dest) == 3000);
  CHECK_FALSE(std::filesystem::exists(dest.string() + ".tmp"));
  std::filesystem::remove_all(dir);
}
