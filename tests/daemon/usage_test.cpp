// Accounting through gpuqd's Core (engine + none binder + a real state file): what usage()
// reads back is what the engine did, with a clock the test controls, across a restart; and the
// config's prices (docs/reference/gpuqd.yaml.5.md).
#include <doctest/doctest.h>

#include "daemon/config.hpp"
#include "daemon/core.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace daemon_usage_test {

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

namespace {

constexpr Time kT0 = 1'700'000'000;
constexpr std::int64_t kEightGpuSeconds = 8 * 1000;  // milli-GPU-seconds of 8 GPUs for a second

void submit(Core& core, const std::string& id, const std::string& owner, std::int32_t priority,
            Time now) {
  Submission s;
  s.job = job(id, "a", res(gpus(8)), 1, priority);
  s.job.owner = owner;
  REQUIRE(core.submit(std::move(s), now).ok());
}

void turn(Core& core, Time now) { REQUIRE(core.end_turn(now).ok); }

std::vector<storage::UsageRow> usage(Core& core, storage::UsageBy by, Time until, Time now) {
  storage::UsageQuery q;
  q.by = by;
  q.since = kT0;
  q.until = until;
  q.now = now;
  auto rows = core.store().usage(q);
  REQUIRE(rows.ok());
  return std::move(rows).value();
}

JobState state_of(Core& core, const std::string& id) { return core.job(id).value().state; }

}  // namespace

TEST_CASE(
    "usage is what the engine did: a preempted job's two admissions, the preemptor's, a wait; the "
    "same after a restart") {
  TempDir dir;
  const CoreConfig config = preempting_core((dir.path / "s.db").string());
  std::vector<storage::UsageRow> by_job_before;
  {
    auto core = open_core(config, kT0);
    submit(*core, "low", "alice", 0, kT0);
    turn(*core, kT0);  // low runs from kT0
    submit(*core, "high", "bob", 100, kT0 + 100);
    turn(*core, kT0 + 100);  // high preempts low (the none binder stops it at once) and runs
    REQUIRE(state_of(*core, "low") == JobState::kPending);
    REQUIRE(state_of(*core, "high") == JobState::kRunning);
    submit(*core, "w", "alice", 0, kT0 + 200);
    turn(*core, kT0 + 200);
    core->observe(JobFinished{JobId("high"), 0, ""}, kT0 + 400);
    turn(*core, kT0 + 400);  // high succeeded; low (submitted before w) runs again
    REQUIRE(state_of(*core, "low") == JobState::kRunning);
    REQUIRE(state_of(*core, "w") == JobState::kPending);
    REQUIRE(core->cancel("low", kT0 + 1000).ok());
    turn(*core, kT0 + 1000);  // w runs from kT0 + 1000
    REQUIRE(state_of(*core, "w") == JobState::kRunning);

    const auto jobs = usage(*core, storage::UsageBy::kJob, kT0 + 1500, kT0 + 1500);
    REQUIRE(jobs.size() == 3);
    CHECK(jobs[0].key == "low");
    CHECK(jobs[0].held ==
          std::map<std::string, std::int64_t>{{"h100", (100 + 600) * kEightGpuSeconds}});
    CHECK(jobs[0].lost == 100 * kEightGpuSeconds);
    CHECK(jobs[0].cancelled == 1);
    CHECK(jobs[0].wait_p50 == 0);
    CHECK(jobs[1].key == "high");
    CHECK(jobs[1].held_total() == 300 * kEightGpuSeconds);
    CHECK(jobs[1].lost == 0);
    CHECK(jobs[1].succeeded == 1);
    CHECK(jobs[2].key == "w");
    CHECK(jobs[2].held_total() == 500 * kEightGpuSeconds);  // running: up to the period's end
    CHECK(jobs[2].unfinished == 1);
    CHECK(jobs[2].wait_p50 == 800);

    const auto queues = usage(*core, storage::UsageBy::kQueue, kT0 + 1500, kT0 + 1500);
    REQUIRE(queues.size() == 1);
    CHECK(queues[0].held_total() == 1500 * kEightGpuSeconds);  // the node was never idle
    CHECK(queues[0].lost == 100 * kEightGpuSeconds);
    CHECK(queues[0].waited == 3);
    CHECK(queues[0].wait_p50 == 0);
    CHECK(queues[0].wait_p90 == 800);
    const auto users = usage(*core, storage::UsageBy::kUser, kT0 + 1500, kT0 + 1500);
    REQUIRE(users.size() == 2);
    CHECK(users[0].key == "alice");
    CHECK(users[0].held_total() == 1200 * kEightGpuSeconds);
    CHECK(users[1].key == "bob");
    CHECK(users[1].held_total() == 300 * kEightGpuSeconds);
    by_job_before = jobs;
  }
  // gpuqd stops and starts again later; w is restored as running, and nothing is counted twice
  // or lost: the same period reads the same, and w's admission goes on across the restart.
  auto core = open_core(config, kT0 + 1600);
  turn(*core, kT0 + 1600);
  REQUIRE(state_of(*core, "w") == JobState::kRunning);
  const auto after = usage(*core, storage::UsageBy::kJob, kT0 + 1500, kT0 + 1700);
  REQUIRE(after.size() == by_job_before.size());
  for (std::size_t i = 0; i < after.size(); ++i) {
    CHECK(after[i].key == by_job_before[i].key);
    CHECK(after[i].held == by_job_before[i].held);
    CHECK(after[i].lost == by_job_before[i].lost);
    CHECK(after[i].succeeded == by_job_before[i].succeeded);
    CHECK(after[i].cancelled == by_job_before[i].cancelled);
    CHECK(after[i].unfinished == by_job_before[i].unfinished);
    CHECK(after[i].wait_p50 == by_job_before[i].wait_p50);
  }
  const auto now = usage(*core, storage::UsageBy::kJob, kT0 + 5000, kT0 + 1700);
  CHECK(now[2].held_total() == 700 * kEightGpuSeconds);
}

TEST_CASE(
    "prices and currency: per flavor, finite numbers from 0; errors name the key and what is "
    "allowed") {
  const Config c = parse_config("prices: {h100: 2.5, a100: 0}\ncurrency: EUR\n", "gpuqd.yaml");
  CHECK(c.core.prices.per_gpu_hour == std::map<std::string, double>{{"a100", 0.0}, {"h100", 2.5}});
  CHECK(c.core.prices.currency == "EUR");
  CHECK(parse_config("", "gpuqd.yaml").core.prices.per_gpu_hour.empty());
  auto error = [](const std::string& yaml) {
    try {
      (void)parse_config(yaml, "gpuqd.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("(accepted)");
  };
  CHECK_MESSAGE(error("prices: {h100: -1}\n")
                        .find("prices.h100: \"-1\" is negative; a price per GPU-hour is a number 0 "
                              "or more") != std::string::npos,
                error("prices: {h100: -1}\n"));
  CHECK(error("prices: {h100: cheap}\n").find("prices.h100: \"cheap\" is not a number") !=
        std::string::npos);
  CHECK(error("prices: {h100: .nan}\n").find("prices.h100") != std::string::npos);
  CHECK(error("prices: {h100: 1e999}\n").find("prices.h100") != std::string::npos);
  CHECK(error("prices: [2.5]\n").find("prices") != std::string::npos);
  CHECK(error("prices: {\"bad flavor\": 1}\n").find("is not a name") != std::string::npos);
  CHECK(error("currency: \"\"\n").find("currency: \"\" is not allowed; use 1 to 16 bytes") !=
        std::string::npos);
  CHECK(error("currency: ABCDEFGHIJKLMNOPQ\n").find("currency:") != std::string::npos);
}

}  // namespace daemon_usage_test
