// gpuqd's configuration through the real binary: what its start refuses, and --check-config,
// which says the same without starting (no state file, no listener).
#include <doctest/doctest.h>

#include <sys/wait.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>

#include "tests/support/files.hpp"

using namespace gpuq::test;
namespace fs = std::filesystem;

namespace {

struct Outcome {
  int rc = -1;      // exit status, -1 when it did not exit
  std::string out;  // stdout
  std::string err;  // stderr
};

// gpuqd run in `dir` with `config` as its config file (dir/gpuqd.yaml) and `flags` after it.
Outcome gpuqd_with(const TempDir& dir, const std::string& config, const std::string& flags) {
  std::ofstream(dir.path / "gpuqd.yaml") << config;
  const std::string cmd = "cd " + dir.path.string() + " && " + GPUQD_PATH + " --config " +
                          (dir.path / "gpuqd.yaml").string() + " " + flags + " >" + (dir.path / "out").string() +
                          " 2>" + (dir.path / "err").string();
  const int status = std::system(cmd.c_str());
  Outcome o;
  o.rc = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  o.out = slurp(dir.path / "out");
  o.err = slurp(dir.path / "err");
  return o;
}

}  // namespace

TEST_CASE("gpuqd: a bad config is refused at start, naming the file, line, column and field") {
  TempDir dir;
  const std::string file = (dir.path / "gpuqd.yaml").string();
  const std::string start = "--state-file " + (dir.path / "s.db").string() + " --grpc 127.0.0.1:0 --http 127.0.0.1:0";
  auto o = gpuqd_with(dir, "placment: spread\n", start);
  CHECK(o.rc == 2);
  CHECK(o.err.find(file + ":1:1: placment: unknown key; did you mean placement? allowed here: grpc, http") !=
        std::string::npos);
  o = gpuqd_with(dir,
                 "queues:\n  - name: q\n    quotas:\n      - flavor: h100\n        resources:\n"
                 "          gpu: {nominal: 8, borrowingLimit: 4}\n",
                 start);
  CHECK(o.rc == 2);
  CHECK(o.err.find(file + ":6:45: queues[0].quotas[0].resources.gpu.borrowingLimit: \"4\" needs the queue to be in a "
                          "cohort") != std::string::npos);
  o = gpuqd_with(dir, "grpc: 127.0.0.1:1\ngrpc: 127.0.0.1:2\n", start);
  CHECK(o.rc == 2);
  CHECK(o.err.find(file + ":2:1: grpc: is listed twice in this map (first at line 1, column 1)") != std::string::npos);
  o = gpuqd_with(dir, "binder: local\nlocal:\n  labels: {\"rack a\": r1}\n", start);
  CHECK(o.rc == 2);
  CHECK(o.err.find(file + ":3:22: local.labels.rack a: \"rack a\" is not a label key: it holds ' '") !=
        std::string::npos);
  o = gpuqd_with(dir, "nodes:\n  - {name: n/1, flavor: h100, capacity: {gpu: 8}}\n", start);
  CHECK(o.rc == 2);
  CHECK(o.err.find(file + ":2:12: nodes[0].name: \"n/1\" is not a name: it holds '/'") != std::string::npos);
  CHECK_FALSE(fs::exists(dir.path / "s.db"));  // nothing was started, no state file made
}

TEST_CASE("gpuqd --check-config: what the start would refuse, without starting") {
  TempDir dir;
  const std::string file = (dir.path / "gpuqd.yaml").string();
  auto o = gpuqd_with(dir,
                      "priorityClasses: {high: 100, low: -10}\nqueues:\n  - {name: a, allowedPriorityClasses: [high]}\n"
                      "nodes:\n  - {name: n1, flavor: h100, capacity: {gpu: 8}}\n",
                      "--check-config");
  CHECK(o.rc == 0);
  CHECK(o.out == "gpuqd: " + file + ": valid (binder none, 1 queue(s), 1 node(s) declared)\n");
  // A reader's error, with its line and column.
  o = gpuqd_with(dir, "maxRequestBytes: 12\n", "--check-config");
  CHECK(o.rc == 2);
  CHECK(o.err.find(file + ":1:18: maxRequestBytes: 12 is not allowed; use 1024 to 67108864") != std::string::npos);
  // What only the start found before: a class gpuqd does not have.
  o = gpuqd_with(dir, "priorityClasses: {high: 100}\nqueues:\n  - {name: a, allowedPriorityClasses: [bogus]}\n",
                 "--check-config");
  CHECK(o.rc == 2);
  CHECK(o.err == "gpuqd: " + file + ": queue \"a\": allowedPriorityClasses[0]: \"bogus\" is not a priority "
                                    "class; gpuqd's classes are high (priorityClasses in its config)\n");
  CHECK_FALSE(fs::exists(dir.path / "gpuqd.db"));  // the default state file was not opened
}
