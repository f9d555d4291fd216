// GPU use and the idle policy (daemon/gpu_use.hpp): the per-job accumulator on its own, then
// through gpuqd's Core (none binder, a real state file, the test's clock): samples of the node's
// GPUs reach the job placed on them, the mean survives a restart and shows in usage(), an idle
// job is warned once per idle stretch and then cancelled with a reason that says so.
#include <doctest/doctest.h>

#include <algorithm>

#include "daemon/core.hpp"
#include "daemon/gpu_use.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

namespace daemon_gpu_use_test {

constexpr Time kT0 = 1'700'000'000;

binder::GpuReading gpu(int index, int util, std::int64_t memory = 0) { return {index, util, memory}; }

TEST_CASE("the accumulator: a rounded mean per sample, the peak memory over its GPUs, idle stretches") {
  storage::GpuUse use;
  CHECK_FALSE(use.mean());
  CHECK_FALSE(add_gpu_sample(use, {}, kT0, 1));  // none of its GPUs read: nothing
  CHECK(use.samples == 0);

  const std::vector<binder::GpuReading> busy = {gpu(0, 90, 1000), gpu(1, 81, 500)};
  CHECK(add_gpu_sample(use, busy, kT0, 1));
  CHECK(use.samples == 1);
  CHECK(use.util_sum == 86);  // (90 + 81) / 2 = 85.5, rounded
  CHECK(use.memory_peak_mib == 1500);
  CHECK(use.idle_since == 0);

  const std::vector<binder::GpuReading> idle = {gpu(0, 0, 200), gpu(1, 1, 200)};  // 1% is idle at threshold 1
  CHECK(add_gpu_sample(use, idle, kT0 + 10, 1));
  CHECK(use.idle_since == kT0 + 10);
  CHECK(add_gpu_sample(use, idle, kT0 + 20, 1));
  CHECK(use.idle_since == kT0 + 10);  // the stretch goes on from its first idle sample
  CHECK(use.memory_peak_mib == 1500);
  CHECK(*use.mean() == doctest::Approx((86.0 + 1 + 1) / 3));
  add_gpu_sample(use, idle, kT0 + 30, 0);  // at threshold 0, 1% is busy
  CHECK(use.idle_since == 0);

  // One busy GPU of two ends the stretch, and the next stretch may be warned of again.
  use.idle_since = kT0;
  use.idle_warned = true;
  const std::vector<binder::GpuReading> half = {gpu(0, 0), gpu(1, 50)};
  add_gpu_sample(use, half, kT0 + 40, 1);
  CHECK(use.idle_since == 0);
  CHECK_FALSE(use.idle_warned);
}

TEST_CASE("the idle policy: warn once per stretch after warnAfter, cancel after cancelAfter") {
  IdlePolicy p;
  p.warn_after = 3600;
  p.cancel_after = 6 * 3600;
  storage::GpuUse use;
  CHECK(idle_action(use, p, kT0) == IdleAction::kNone);  // not idle
  use.idle_since = kT0;
  CHECK(idle_action(use, p, kT0 + 3599) == IdleAction::kNone);
  CHECK(idle_action(use, p, kT0 + 3600) == IdleAction::kWarn);
  use.idle_warned = true;
  CHECK(idle_action(use, p, kT0 + 7200) == IdleAction::kNone);
  CHECK(idle_action(use, p, kT0 + 6 * 3600) == IdleAction::kCancel);
  use.idle_warned = false;
  CHECK(idle_action(use, p, kT0 + 7 * 3600) == IdleAction::kCancel);  // past both: cancelled, not warned
  CHECK(idle_action(use, IdlePolicy{}, kT0 + 100 * 3600) == IdleAction::kNone);  // no policy

  CHECK(idle_duration_text(6 * 3600) == "6h0m");
  CHECK(idle_duration_text(3600 + 61) == "1h1m");
  CHECK(idle_duration_text(150) == "2m30s");
  CHECK(idle_duration_text(5) == "5s");
  CHECK(gpus_text({0, 1}) == "GPUs 0,1");
  CHECK(gpus_text({3}) == "GPU 3");
}

TEST_CASE("through the Core: samples reach the jobs on those GPUs; idle jobs are warned, then cancelled") {
  TempDir dir;
  CoreConfig c = one_node_core((dir.path / "state.db").string(), {"a", "b"});
  c.start_specs = [](ResourceNames&, std::vector<QueueSpec>& qs, std::vector<NodeSpec>& nodes) {
    QueueSpec a = unlimited_queue("a");
    a.idle.warn_after = 60;
    a.idle.cancel_after = 120;
    qs = {a, unlimited_queue("b")};
    nodes = {node("n", "h100", res(gpus(8)))};
  };
  auto core = open_core(c, kT0);
  auto submit = [&](const std::string& id, const std::string& queue) {
    Submission s;
    s.job = job(id, queue, res(gpus(2)));
    REQUIRE(core->submit(std::move(s), kT0).ok());
  };
  submit("idle", "a");
  submit("busy", "a");
  submit("other", "b");
  REQUIRE(core->end_turn(kT0).ok);
  auto gpus_of = [&](const std::string& id) {
    std::vector<int> out;
    const storage::JobRecord rec = core->job(id).value();
    for (const auto& p : rec.placement) out.insert(out.end(), p.gpus.begin(), p.gpus.end());
    return out;
  };
  REQUIRE(core->job("idle").value().state == JobState::kRunning);
  // Every GPU of the node: the busy job's at 90%, the rest idle.
  auto sample = [&](Time at) {
    binder::GpuSample s;
    s.node = "n";
    const auto busy = gpus_of("busy");
    for (int g = 0; g < 8; ++g)
      s.gpus.push_back(gpu(g, std::count(busy.begin(), busy.end(), g) ? 90 : 0, 100));
    core->observe_gpus(s, at);
    REQUIRE(core->end_turn(at).ok);
  };
  binder::GpuSample elsewhere{"another-node", {gpu(0, 50)}};
  core->observe_gpus(elsewhere, kT0);
  CHECK(core->job("idle").value().gpu_use.samples == 0);  // not its node

  for (Time t = 0; t <= 60; t += 30) sample(kT0 + t);
  auto idle = core->job("idle").value();
  CHECK(idle.gpu_use.samples == 3);
  CHECK(*idle.gpu_use.mean() == 0);
  CHECK(idle.gpu_use.memory_peak_mib == 200);
  CHECK(idle.gpu_use.idle_since == kT0);
  CHECK(core->job("busy").value().gpu_use.util_sum == 270);
  CHECK(core->job("busy").value().gpu_use.idle_since == 0);
  const auto notes = [&](const std::string& job) {
    std::vector<storage::EventRecord> out;
    auto events = core->store().events_after(0, 1000);
    REQUIRE(events.ok());
    for (const auto& e : events.value())
      if (e.job == job && e.from && *e.from == e.to) out.push_back(e);
    return out;
  };
  REQUIRE(notes("idle").size() == 1);
  CHECK(notes("idle")[0].reason.find("idle for 1m0s on GPUs ") == 0);
  CHECK(notes("idle")[0].to == JobState::kRunning);
  CHECK(notes("other").empty());  // queue b has no idle policy
  sample(kT0 + 90);
  CHECK(notes("idle").size() == 1);  // once per stretch
  sample(kT0 + 120);
  idle = core->job("idle").value();
  CHECK(idle.state == JobState::kCancelled);
  CHECK(idle.reason.find("cancelled: idle for 2m0s on GPUs ") == 0);
  CHECK(idle.reason.find("idle.cancelAfter 2m0s") != std::string::npos);
  CHECK(core->job("busy").value().state == JobState::kRunning);
  CHECK(core->job("other").value().state == JobState::kRunning);

  // The finished job's use was written with it; the running ones' at their 10th sample.
  for (Time t = 150; t <= 330; t += 30) sample(kT0 + t);
  core.reset();
  core = open_core(c, kT0 + 400);
  CHECK(core->job("idle").value().gpu_use.samples == 5);
  CHECK(core->job("busy").value().gpu_use.samples == 10);
  CHECK(core->job("busy").value().gpu_use.util_sum == 900);
  CHECK(core->job("busy").value().gpu_use.idle_since == 0);

  storage::UsageQuery q;
  q.by = storage::UsageBy::kQueue;
  q.since = kT0;
  q.until = kT0 + 400;
  q.now = kT0 + 400;
  auto rows = core->store().usage(q);
  REQUIRE(rows.ok());
  const auto row = [&](const std::string& key) {
    return *std::find_if(rows.value().begin(), rows.value().end(), [&](const auto& r) { return r.key == key; });
  };
  // Queue a: "idle" (0%) held 2 GPUs for 120 s, "busy" (90%) for 400 s.
  CHECK(*row("a").gpu_util() == doctest::Approx(90.0 * 400 / 520));
  CHECK(row("a").sampled_held == 2000 * 520);
  CHECK(*row("b").gpu_util() == doctest::Approx(0));
}

}  // namespace daemon_gpu_use_test
