// The real command line against a real gpuqd: what a user types, what they see.
#include <sstream>

#include "cli/cli.hpp"
#include "tests/integration/daemon_process.hpp"

using namespace gpuq::test;

namespace {

struct Run {
  int rc = 0;
  std::string out, err;
};

Run gpuq_cmd(const Daemon& d, std::vector<std::string> args) {
  args.insert(args.begin(), {"--server", d.address()});
  std::ostringstream out, err;
  Run r;
  r.rc = gpuq::cli::run_cli(args, out, err);
  r.out = out.str();
  r.err = err.str();
  return r;
}

}  // namespace

TEST_CASE("gpuq against gpuqd: submit, ls, show, queues, nodes, apply, cancel, usage, backup") {
  TempDir dir;
  Daemon d(dir.path);
  auto r = gpuq_cmd(d, {"submit", "--queue", "research", "--gpus", "2", "--name", "train", "--id", "t1",
                        "--", "python", "train.py"});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("t1") != std::string::npos);

  r = gpuq_cmd(d, {"ls"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("t1") != std::string::npos);
  CHECK(r.out.find("Running") != std::string::npos);

  r = gpuq_cmd(d, {"show", "t1", "-o", "json"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("\"python\"") != std::string::npos);
  CHECK(r.out.find("JOB_STATE_RUNNING") != std::string::npos);

  r = gpuq_cmd(d, {"queues"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("research") != std::string::npos);
  CHECK(r.out.find("prod") != std::string::npos);

  const fs::path file = dir.path / "more.yaml";
  std::ofstream(file) << "queues:\n  - name: extra\n    cohort: lab\n    quotas:\n      - flavor: h100\n"
                         "        resources: {gpu: {nominal: 2}}\n---\nnodes:\n"
                         "  - {name: n9, flavor: h100, capacity: {gpu: 4, cpu: 64, memory: 256Gi}}\n";
  r = gpuq_cmd(d, {"apply", "-f", file.string()});
  INFO(r.err);
  REQUIRE(r.rc == 0);
  r = gpuq_cmd(d, {"nodes"});
  REQUIRE(r.rc == 0);
  CHECK(r.out.find("n9") != std::string::npos);

  r = gpuq_cmd(d, {"nodes", "cordon", "n9"});
  CHECK(r.rc == 0);

  // A server-side error: the message and a non-zero exit.
  r = gpuq_cmd(d, {"submit", "--queue", "nosuch", "--gpus", "1", "--", "true"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("nosuch") != std::string::npos);

  r = gpuq_cmd(d, {"cancel", "t1", "missing"});
  CHECK(r.rc == 1);
  CHECK(r.err.find("missing") != std::string::npos);
  r = gpuq_cmd(d, {"show", "t1", "-o", "json"});
  CHECK(r.out.find("JOB_STATE_CANCELLED") != std::string::npos);

  r = gpuq_cmd(d, {"usage"});
  CHECK(r.rc == 0);

  const fs::path copy = dir.path / "copy.db";
  r = gpuq_cmd(d, {"admin", "backup", copy.string()});
  INFO(r.err);
  CHECK(r.rc == 0);
  CHECK(fs::file_size(copy) > 0);
}
