// gpuqd's Core keeps the fair-share usage history across restarts (daemon/history.cpp): a
// checkpoint in the state file every usageCheckpointInterval and at a clean stop, set again at
// start; bad rows are named and skipped; the config key. Time is the test's (Core's `now`),
// except for the Loop, whose turns run on the clock but whose interval never passes here.
#include <doctest/doctest.h>
#include <spdlog/sinks/ringbuffer_sink.h>
#include <spdlog/spdlog.h>
#include <sqlite3.h>

#include <cmath>
#include <map>

#include "daemon/config.hpp"
#include "daemon/core.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "daemon/loop.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

namespace {

constexpr Time kHalfLife = 3600;
// Only warnings on the test's output (CapturedLog reads them).
const bool kQuiet = [] {
  spdlog::set_level(spdlog::level::warn);
  return true;
}();
constexpr Time kT0 = 1'700'000'000;

// Three quota-less queues (c stays idle) sharing one 8-GPU node; the none binder runs what is
// admitted at once.
CoreConfig config_for(const std::string& file, Time half_life = kHalfLife) {
  CoreConfig c = one_node_core(file, {"a", "b", "c"});
  c.engine.usage_half_life = half_life;
  c.usage_checkpoint_interval = 60;
  return c;
}

void submit(Core& core, const std::string& id, const std::string& queue, Quantity gpu, Time now) {
  Submission s;
  s.job = job(id, queue, res(gpu));
  auto r = core.submit(std::move(s), now);
  INFO((r.ok() ? std::string() : r.error()));
  REQUIRE(r.ok());
}

void end_turn(Core& core, Time now) {
  auto r = core.end_turn(now);
  INFO(r.error);
  REQUIRE(r.ok);
}

// queue -> its average GPU use (milli-GPU), from a snapshot.
std::map<std::string, double> gpu_averages(const std::vector<storage::HistoryRecord>& records) {
  std::map<std::string, double> out;
  for (const auto& h : records) out[h.queue] = h.average.count("gpu") ? h.average.at("gpu") : 0.0;
  return out;
}

std::vector<storage::HistoryRecord> stored_history(Core& core) {
  auto loaded = core.store().load();
  REQUIRE(loaded.ok());
  return loaded->history;
}

// Eight 1-GPU jobs from each of a and b at `now`; the jobs admitted, in the order of the cycle.
std::vector<std::string> admission_order(Core& core, Time now) {
  std::vector<std::string> admitted;
  core.set_event_sink([&](const storage::EventRecord& e) {
    if (e.to == JobState::kAdmitted) admitted.push_back(e.job);
  });
  for (int i = 0; i < 8; ++i) {
    submit(core, "a" + std::to_string(i), "a", gpus(1), now);
    submit(core, "b" + std::to_string(i), "b", gpus(1), now);
  }
  end_turn(core, now);
  core.set_event_sink({});
  return admitted;
}

void check_close(const std::map<std::string, double>& got,
                 const std::map<std::string, double>& want) {
  REQUIRE(got.size() == want.size());
  for (const auto& [queue, average] : want) {
    INFO("queue " << queue << ": " << got.at(queue) << " vs " << average);
    CHECK(std::abs(got.at(queue) - average) <= 1.0);  // restored to the nearest milli-GPU
  }
}

// The log lines of a test, to check what a warning names.
struct CapturedLog {
  std::shared_ptr<spdlog::sinks::ringbuffer_sink_mt> sink =
      std::make_shared<spdlog::sinks::ringbuffer_sink_mt>(256);
  std::shared_ptr<spdlog::logger> before = spdlog::default_logger();
  CapturedLog() { spdlog::set_default_logger(std::make_shared<spdlog::logger>("test", sink)); }
  ~CapturedLog() { spdlog::set_default_logger(before); }
  bool has(const std::string& text) const {
    for (const std::string& line : sink->last_formatted())
      if (line.find(text) != std::string::npos) return true;
    return false;
  }
};

void raw_exec(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  REQUIRE(sqlite3_open(path.c_str(), &db) == SQLITE_OK);
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  INFO((err != nullptr ? err : ""));
  sqlite3_free(err);
  sqlite3_close(db);
  REQUIRE(rc == SQLITE_OK);
}

}  // namespace

TEST_CASE(
    "a restart restores each queue's average as checkpointed, and the admission order with it") {
  TempDir dir;
  const std::string file = (dir.path / "gpuqd.db").string();
  const std::string left = (dir.path / "as-left.db").string();
  const CoreConfig config = config_for(file);
  const Time t1 = kT0 + kHalfLife, t2 = t1 + 600;
  std::map<std::string, double> at_stop, without_restart;
  std::vector<std::string> order_without_restart;
  {
    auto core = open_core(config, kT0);
    submit(*core, "big", "a", gpus(6), kT0);
    submit(*core, "small", "b", gpus(1), kT0);
    end_turn(*core, kT0);
    REQUIRE(core->cancel("big", t1).ok());
    REQUIRE(core->cancel("small", t1).ok());
    end_turn(*core, t1);  // a checkpoint is due: kT0 + 60 has passed
    at_stop = gpu_averages(core->history_snapshot(t1));
    check_close(at_stop, {{"a", 3000}, {"b", 500}, {"c", 0}});  // one half-life of 6 and 1 GPUs
    check_close(gpu_averages(stored_history(*core)), at_stop);
    // The file as this gpuqd leaves it, for the one that starts after it; this one goes on.
    REQUIRE(core->store().backup_to(left).ok());
    order_without_restart = admission_order(*core, t2);
    without_restart = gpu_averages(core->history_snapshot(t2));
  }
  auto restarted = open_core(config_for(left), t2);
  const std::vector<std::string> order = admission_order(*restarted, t2);
  check_close(gpu_averages(restarted->history_snapshot(t2)), without_restart);
  CHECK(order == order_without_restart);
  // The history decides it: a, which used six times what b did, gets 3 GPUs of 8, not 4.
  CHECK(std::count_if(order.begin(), order.end(),
                      [](const std::string& id) { return id[0] == 'a'; }) == 3);
  CHECK(order.size() == 8);
}

TEST_CASE("the time from the checkpoint to the restart counts with the jobs restored as running") {
  TempDir dir;
  const CoreConfig config = config_for((dir.path / "gpuqd.db").string());
  const Time checkpoint = kT0 + 1200, restart = checkpoint + 1800;
  std::map<std::string, double> expected, checkpointed;
  {
    auto core = open_core(config, kT0);
    submit(*core, "early", "a", gpus(4), kT0);  // ends before the checkpoint: only history has it
    submit(*core, "run", "a", gpus(4), kT0);
    end_turn(*core, kT0);
    REQUIRE(core->cancel("early", kT0 + 600).ok());
    end_turn(*core, kT0 + 600);
    end_turn(*core, checkpoint);
    checkpointed = gpu_averages(stored_history(*core));
    REQUIRE(checkpointed.size() == 3);
    // Had it not stopped: the average at the restart, with the job running all along.
    expected = gpu_averages(core->history_snapshot(restart));
  }  // stopped without a last checkpoint (SIGKILL)
  auto core = open_core(config, restart);
  auto job = core->job("run");
  REQUIRE(job.ok());
  CHECK(job->state == JobState::kRunning);
  end_turn(*core, restart);
  const auto got = gpu_averages(core->history_snapshot(restart));
  check_close(got, expected);
  CHECK(got.at("a") > checkpointed.at("a") + 500);  // 30 minutes of 4 GPUs on top of it
}

TEST_CASE(
    "a checkpoint is written once the interval from the config has passed, and at a clean stop") {
  TempDir dir;
  CoreConfig config = config_for((dir.path / "gpuqd.db").string());
  {
    auto core = open_core(config, kT0);
    submit(*core, "run", "b", gpus(2), kT0);
    end_turn(*core, kT0);
    end_turn(*core, kT0 + 59);
    CHECK(stored_history(*core).empty());
    end_turn(*core, kT0 + 60);
    const auto stored = stored_history(*core);
    REQUIRE(stored.size() == 3);
    CHECK(stored[1].queue == "b");
    CHECK(stored[1].at == kT0 + 60);
    end_turn(*core, kT0 + 119);
    CHECK(stored_history(*core)[1].at == kT0 + 60);
    end_turn(*core, kT0 + 120);
    CHECK(stored_history(*core)[1].at == kT0 + 120);
  }
  // The Loop runs turns on the clock; a day's interval never passes here, so what is on disk
  // after stop() is the clean stop's checkpoint.
  TempDir other;
  config = config_for((other.path / "gpuqd.db").string());
  config.usage_checkpoint_interval = 86400;
  auto core = open_core(config, Loop::now());
  {
    Loop loop(*core);
    loop.start();
    loop.run_sync([](Core& c) { submit(c, "run", "a", gpus(2), Loop::now()); });
    loop.stop();
  }
  const auto stored = stored_history(*core);
  REQUIRE(stored.size() == 3);
  CHECK(stored[0].queue == "a");
  CHECK(stored[0].at > 0);
}

TEST_CASE(
    "bad history rows never stop gpuqd from starting; each warning names the field and value") {
  TempDir dir;
  const std::string file = (dir.path / "gpuqd.db").string();
  const CoreConfig config = config_for(file);
  {
    auto core = open_core(config, kT0);
    end_turn(*core, kT0);
  }
  raw_exec(file,
           "INSERT INTO usage_history(queue, at, average) VALUES"
           "('a', 1700000000, '{\"gpu\": -5}'),"
           "('b', 1700000000, '{\"gpu\": 2000, \"warp-drive\": 3}'),"
           "('c', 1700000000, 'not json'),"
           "('ghost', 1700000000, '{\"gpu\": 1}')");
  CapturedLog log;
  auto core = open_core(config, kT0);
  check_close(gpu_averages(core->history_snapshot(kT0)), {{"a", 0}, {"b", 2000}, {"c", 0}});
  CHECK(log.has("event=usage_history_skipped queue=a field=average.gpu value=-5"));
  CHECK(log.has("event=usage_history_resource_dropped queue=b field=average.warp-drive value=3"));
  CHECK(log.has("usage history of queue \"c\": malformed stored JSON"));
  CHECK(log.has("event=usage_history_skipped queue=ghost reason=\"no queue of this name here\""));
}

TEST_CASE("apply_history sets the engine's history from records and writes it with the next turn") {
  TempDir dir;
  auto core = open_core(config_for((dir.path / "gpuqd.db").string()), kT0);
  CapturedLog log;
  core->apply_history({{"a", kT0 - kHalfLife, {{"gpu", 8000}}},
                       {"b", kT0 + 500, {{"gpu", 1000}}},  // a clock ahead: taken as now
                       {"ghost", kT0, {{"gpu", 1}}}},
                      kT0);
  CHECK(log.has("queue=ghost"));
  check_close(gpu_averages(core->history_snapshot(kT0)), {{"a", 4000}, {"b", 1000}, {"c", 0}});
  end_turn(*core, kT0 + 1);  // before the interval, but records were applied
  check_close(gpu_averages(stored_history(*core)), gpu_averages(core->history_snapshot(kT0 + 1)));
}

TEST_CASE("without usageHalfLife nothing of the history is kept or written") {
  TempDir dir;
  auto core = open_core(config_for((dir.path / "gpuqd.db").string(), 0), kT0);
  submit(*core, "run", "a", gpus(1), kT0);
  end_turn(*core, kT0);
  end_turn(*core, kT0 + 600);
  CHECK(core->history_snapshot(kT0 + 600).empty());
  CHECK_FALSE(core->checkpoint_history());
  CHECK(stored_history(*core).empty());
}

TEST_CASE("usageCheckpointInterval: a duration from 1s to 24h, 60s by default") {
  CHECK(parse_config("", "gpuqd.yaml").core.usage_checkpoint_interval == 60);
  CHECK(
      parse_config("usageCheckpointInterval: 90\n", "gpuqd.yaml").core.usage_checkpoint_interval ==
      90);
  CHECK(
      parse_config("usageCheckpointInterval: 5m\n", "gpuqd.yaml").core.usage_checkpoint_interval ==
      300);
  CHECK(
      parse_config("usageCheckpointInterval: 1h\n", "gpuqd.yaml").core.usage_checkpoint_interval ==
      3600);
  auto error = [](const std::string& yaml) {
    try {
      (void)parse_config(yaml, "gpuqd.yaml");
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string zero = error("usageCheckpointInterval: 0s\n");
  CHECK(zero.find("usageCheckpointInterval: \"0s\" is not allowed; use 1s to 86400s") !=
        std::string::npos);
  const std::string soon = error("usageCheckpointInterval: soon\n");
  CHECK(soon.find("usageCheckpointInterval: \"soon\" is not a duration") != std::string::npos);
  CHECK(error("usageCheckpointInterval: 25h\n").find("is not allowed") != std::string::npos);
}
