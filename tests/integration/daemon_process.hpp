#pragma once
// A real gpuqd child process for the integration tests: a temporary directory with a config and
// a state file, a free loopback port (gpuqd prints the one it got), gRPC stubs to it.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <thread>

#include <grpcpp/grpcpp.h>

#include "gpuq/v1/gpuq.grpc.pb.h"
#include "tests/support/gpuqd_child.hpp"

namespace gpuq::test {

namespace v1 = gpuq::v1;
namespace fs = std::filesystem;


inline const char* kConfig = R"(queues:
  - name: research
    cohort: lab
    quotas:
      - flavor: h100
        resources: {gpu: {nominal: 8}}
    preemption: {withinQueue: LowerPriority, reclaimWithinCohort: Any}
  - name: prod
    cohort: lab
    quotas:
      - flavor: h100
        resources: {gpu: {nominal: 8}}
nodes:
  - {name: n0, flavor: h100, capacity: {gpu: 8, cpu: 128, memory: 1Ti}}
  - {name: n1, flavor: h100, capacity: {gpu: 8, cpu: 128, memory: 1Ti}}
)";

// gpuqd with the local executor (4 virtual GPUs on node `box`, logs and run files in `dir`) and
// one queue `q` with all of them, preempting lower priorities within it. `local_extra`: more
// lines of `local:`; `resources`: the queue's nominal quota.
inline std::string local_executor_config(const fs::path& dir, const std::string& local_extra = "",
                                         const std::string& resources = "{gpu: {nominal: 4}}") {
  return "binder: local\n"
         "local:\n"
         "  node: box\n"
         "  nvidiaSmi: \"\"\n"
         "  gpus: 4\n"
         "  logDir: " + (dir / "logs").string() + "\n"
         "  runDir: " + (dir / "run").string() + "\n"
         // Each gpuqd of the tests a cgroup subtree of its own (they run side by side).
         "  cgroupRoot: gpuq-test-" + dir.filename().string() + "\n" + local_extra +
         "queues:\n"
         "  - name: q\n"
         "    quotas:\n"
         "      - flavor: default\n"
         "        resources: " + resources + "\n"
         "    preemption: {withinQueue: LowerPriority}\n";
}

// A gpuqd child process; the address comes from the line it prints on stdout.
class Daemon {
 public:
  explicit Daemon(const fs::path& dir, bool with_config = true, const std::string& config_text = kConfig) {
    const fs::path config = dir / "gpuqd.yaml";
    std::vector<std::string> args = {"--state-file", (dir / "state.db").string(), "--grpc", "127.0.0.1:0",
                                     "--http", "127.0.0.1:0"};
    if (with_config) {
      std::ofstream(config) << config_text;
      args.insert(args.begin(), {"--config", config.string()});
    }
    child_ = start_gpuqd(GPUQD_PATH, args, dir / "gpuqd.out", dir / "gpuqd.err", std::chrono::seconds(15));
    address_ = child_.address;
    http_port_ = child_.http_port;
    REQUIRE_MESSAGE(!address_.empty(), "gpuqd did not start; see " << (dir / "gpuqd.err"));
    auto channel = grpc::CreateChannel(address_, grpc::InsecureChannelCredentials());
    jobs = v1::Jobs::NewStub(channel);
    queues = v1::Queues::NewStub(channel);
    nodes = v1::Nodes::NewStub(channel);
  }
  ~Daemon() {
    jobs.reset();
    queues.reset();
    nodes.reset();
    stop(SIGTERM);
  }
  void stop(int sig) { child_.stop(sig); }

  const std::string& address() const { return address_; }
  const std::string& socket() const { return child_.socket; }
  const std::string& tcp() const { return child_.tcp; }
  int http_port() const { return http_port_; }

  // GET path on gpuqd's HTTP port: the status line and the body.
  std::string http_get(const std::string& path) const {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in sa{};
    sa.sin_family = AF_INET;
    sa.sin_port = htons(static_cast<std::uint16_t>(http_port_));
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    std::string got;
    if (::connect(fd, reinterpret_cast<sockaddr*>(&sa), sizeof sa) == 0) {
      const std::string req = "GET " + path + " HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n";
      (void)::write(fd, req.data(), req.size());
      char buf[4096];
      for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;) got.append(buf, static_cast<std::size_t>(n));
    }
    ::close(fd);
    return got;
  }

  std::unique_ptr<v1::Jobs::Stub> jobs;
  std::unique_ptr<v1::Queues::Stub> queues;
  std::unique_ptr<v1::Nodes::Stub> nodes;

 private:
  GpuqdChild child_;
  std::string address_;
  int http_port_ = 0;
};

// The calls most tests make, each in a fresh context.
inline grpc::Status submit(Daemon& d, const v1::SubmitJobRequest& r, v1::SubmitJobResponse* out = nullptr) {
  grpc::ClientContext ctx;
  v1::SubmitJobResponse resp;
  auto s = d.jobs->Submit(&ctx, r, &resp);
  if (out) *out = resp;
  return s;
}

inline v1::Job get(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  v1::GetJobRequest r;
  r.set_id(id);
  v1::GetJobResponse resp;
  auto s = d.jobs->Get(&ctx, r, &resp);
  REQUIRE_MESSAGE(s.ok(), s.error_message());
  return resp.job();
}

inline grpc::Status cancel(Daemon& d, const std::string& id) {
  grpc::ClientContext ctx;
  v1::CancelJobRequest r;
  r.set_id(id);
  v1::CancelJobResponse resp;
  return d.jobs->Cancel(&ctx, r, &resp);
}

}  // namespace gpuq::test
