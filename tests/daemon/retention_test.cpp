// Finished jobs leave gpuqd's memory once written, and their records leave the state file after
// jobRetention (docs/reference/gpuqd.yaml.5.md). Time is the test's (Core's `now`).
#include <doctest/doctest.h>

#include "daemon/config.hpp"
#include "daemon/core.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace daemon_retention_test {

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

namespace {

constexpr Time kT0 = 1'700'000'000;

CoreConfig retention_config(const std::string& file, Time retention) {
  CoreConfig c = one_node_core(file);
  c.job_retention = retention;
  return c;
}

void submit(Core& core, const std::string& id, Time now) {
  Submission s;
  s.job = job(id, "a", res(gpus(1)));
  REQUIRE(core.submit(std::move(s), now).ok());
}

}  // namespace

TEST_CASE("a finished job leaves the engine once written, and is still read from the file") {
  TempDir dir;
  auto core = open_core(retention_config((dir.path / "s.db").string(), 0), kT0);
  const std::size_t slots = core->engine().job_slots();
  for (int round = 0; round < 50; ++round) {
    const Time now = kT0 + 10 * round;
    for (int i = 0; i < 4; ++i) submit(*core, "r" + std::to_string(round) + "-" + std::to_string(i), now);
    REQUIRE(core->end_turn(now).ok);  // admitted, running (none binder)
    for (int i = 0; i < 4; ++i) REQUIRE(core->cancel("r" + std::to_string(round) + "-" + std::to_string(i), now + 1).ok());
    REQUIRE(core->end_turn(now + 1).ok);
  }
  // 200 jobs went through; the engine reused the same few slots.
  CHECK(core->engine().job_slots() <= slots + 8);
  CHECK(core->engine().job(JobId("r0-0")) == nullptr);
  auto r = core->job("r0-0");
  REQUIRE(r.ok());
  CHECK(r->state == JobState::kCancelled);
  // Its id stays taken: the file remembers it.
  Submission again;
  again.job = job("r0-0", "a", res(gpus(1)));
  CHECK(core->submit(std::move(again), kT0 + 1000).code() == ErrorCode::kAlreadyExists);
  CHECK(core->cancel("r0-0", kT0 + 1000).code() == ErrorCode::kFailedPrecondition);
}

TEST_CASE("jobRetention: finished records older than it go from the file, checked once a minute") {
  TempDir dir;
  auto core = open_core(retention_config((dir.path / "s.db").string(), 3600), kT0);
  submit(*core, "old", kT0);
  submit(*core, "running", kT0);
  REQUIRE(core->end_turn(kT0).ok);
  REQUIRE(core->cancel("old", kT0 + 1).ok());
  REQUIRE(core->end_turn(kT0 + 1).ok);
  submit(*core, "newest", kT0 + 2);
  REQUIRE(core->end_turn(kT0 + 2).ok);
  CHECK(core->store().has_job("old").value());
  // Checked at kT0 + 3600: "old" ended at kT0 + 1, not an hour before. At kT0 + 3610 it is,
  // but the last check was less than a minute ago.
  REQUIRE(core->end_turn(kT0 + 3600).ok);
  CHECK(core->store().has_job("old").value());
  REQUIRE(core->end_turn(kT0 + 3610).ok);
  CHECK(core->store().has_job("old").value());
  REQUIRE(core->end_turn(kT0 + 3663).ok);
  CHECK_FALSE(core->store().has_job("old").value());
  CHECK(core->job("old").code() == ErrorCode::kNotFound);
  CHECK(core->store().has_job("running").value());  // unfinished: never pruned
  CHECK(core->job("running")->state == JobState::kRunning);
}

TEST_CASE("jobRetention: 0 (keep for ever, the default) or a duration from 1h to 3650d") {
  CHECK(parse_config("", "gpuqd.yaml").core.job_retention == 0);
  CHECK(parse_config("jobRetention: 0\n", "gpuqd.yaml").core.job_retention == 0);
  CHECK(parse_config("jobRetention: 30d\n", "gpuqd.yaml").core.job_retention == 30 * 86400);
  CHECK(parse_config("jobRetention: 2h\n", "gpuqd.yaml").core.job_retention == 7200);
  auto error = [](const std::string& yaml) {
    try {
      (void)parse_config(yaml, "gpuqd.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK(error("jobRetention: 10m\n").find("jobRetention: \"10m\" is not allowed; use 3600s to") != std::string::npos);
  CHECK(error("jobRetention: soon\n").find("is not a duration") != std::string::npos);
}

}  // namespace daemon_retention_test
