// A job's counts of requeues and preemptions go on from the state file's after a restart: before
// the engine was told them, a job preempted once before a restart and once after showed 1.
#include <doctest/doctest.h>

#include "daemon/core.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace daemon_restore_counts_test {

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

constexpr Time kT0 = 1'700'000'000;

void submit(Core& core, const std::string& id, std::int32_t priority, Time now) {
  Submission s;
  s.job = job(id, "a", res(gpus(8)), 1, priority);
  auto r = core.submit(std::move(s), now);
  INFO((r.ok() ? std::string() : r.error()));
  REQUIRE(r.ok());
}

// Turns until nothing changes (the none binder stops a victim and starts a job at once).
void settle(Core& core, Time& now) {
  for (int i = 0; i < 4; ++i) {
    auto r = core.end_turn(++now);
    INFO(r.error);
    REQUIRE(r.ok);
  }
}

std::int32_t preemptions(Core& core, const std::string& id) {
  auto rec = core.job(id);
  REQUIRE(rec.ok());
  return rec.value().preemptions;
}

TEST_CASE("preemptions counted before a restart are counted on after it") {
  TempDir dir;
  const CoreConfig config = preempting_core((dir.path / "gpuqd.db").string());
  Time now = kT0;
  {
    auto core = open_core(config, now);
    submit(*core, "low", 0, now);
    settle(*core, now);
    submit(*core, "high", 10, now);
    settle(*core, now);
    REQUIRE(preemptions(*core, "low") == 1);
    REQUIRE(core->cancel("high", now).ok());
    settle(*core, now);
    REQUIRE(core->job("low").value().state == JobState::kRunning);
  }
  auto core = open_core(config, ++now);
  CHECK(preemptions(*core, "low") == 1);
  submit(*core, "again", 10, now);
  settle(*core, now);
  CHECK(preemptions(*core, "low") == 2);
  const auto why = core->explain("low");
  REQUIRE(why.ok());
  CHECK(why.value().preemptions == 2);
}

}  // namespace daemon_restore_counts_test
