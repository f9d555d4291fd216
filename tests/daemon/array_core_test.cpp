// An array through the Core, with the engine keeping its waiting members as one block
// (EngineConfig::lazy_arrays): the members answer as jobs (Get, explain, reasons), whole-array
// and member commands work, admission takes members one by one, a restart restores the waiting
// members as a block again, and the engine's slots stay few throughout.
#include <algorithm>

#include <doctest/doctest.h>

#include "daemon/core.hpp"
#include "tests/daemon/core_fixture.hpp"
#include "tests/support/builders.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace daemon_array_core_test {

using namespace gpuq;
using namespace gpuq::daemon;
using namespace gpuq::test;

constexpr Time kT0 = 1'700'000'000;
constexpr int kMembers = 1000;

JobState state_of(Core& core, const std::string& id) {
  auto rec = core.job(id);
  INFO(id << ": " << (rec.ok() ? std::string() : rec.error()));
  REQUIRE(rec.ok());
  return rec.value().state;
}

void turns(Core& core, Time& now, int n = 3) {
  for (int i = 0; i < n; ++i) {
    auto r = core.end_turn(++now);
    INFO(r.error);
    REQUIRE(r.ok);
  }
}

std::size_t count(Core& core, JobState s) {
  std::size_t n = 0;
  for (int i = 0; i < kMembers; ++i) n += state_of(core, "arr_" + std::to_string(i)) == s;
  return n;
}

TEST_CASE("an array's waiting members are one engine block through the Core, a restart included") {
  TempDir dir;
  const CoreConfig config = one_node_core((dir.path / "state.db").string());
  Time now = kT0;
  {
    auto core = open_core(config, now);
    Submission s;
    s.job = job("arr", "a", res(gpus(1)));
    s.hold = true;
    for (int i = 0; i < kMembers; ++i) s.array.push_back(i);
    auto r = core->submit(std::move(s), now);
    INFO((r.ok() ? std::string() : r.error()));
    REQUIRE(r.ok());
    turns(*core, now);
    CHECK(core->engine().job_slots() < 4);  // one block, not a thousand jobs
    CHECK(count(*core, JobState::kPending) == kMembers);
    auto member = core->job("arr_500");
    REQUIRE(member.ok());
    CHECK(member.value().held);
    CHECK(core->reason(member.value()).find("gpuq release arr_500") != std::string::npos);
    auto x = core->explain("arr_500");
    REQUIRE(x.ok());
    CHECK(x.value().reason.find("held") != std::string::npos);

    // Released whole: the cycle admits the members that fit (8 GPUs, one each), in order.
    REQUIRE(core->release("arr", now, "ann").ok());
    turns(*core, now);
    CHECK(count(*core, JobState::kRunning) == 8);
    CHECK(state_of(*core, "arr_0") == JobState::kRunning);
    CHECK(state_of(*core, "arr_7") == JobState::kRunning);
    CHECK(state_of(*core, "arr_8") == JobState::kPending);
    auto waiting = core->explain("arr_100");
    REQUIRE(waiting.ok());
    CHECK(waiting.value().queue_position == 93);  // arr_8 .. arr_99 before it
    CHECK(waiting.value().queue_pending == kMembers - 8);
    CHECK(core->engine().job_slots() < 16);
    // One member alone: cancelled, and held.
    REQUIRE(core->cancel("arr_500", now, false, "cancelled by ann").ok());
    REQUIRE(core->hold("arr_600", now, "ann").ok());
    turns(*core, now);
    CHECK(state_of(*core, "arr_500") == JobState::kCancelled);
    CHECK(core->job("arr_600").value().held);
    CHECK_FALSE(core->job("arr_601").value().held);
  }
  {
    // A restart: the members that waited alike are one block again; the held one is its own.
    auto core = open_core(config, ++now);
    turns(*core, now);
    CHECK(core->engine().job_slots() < 24);
    CHECK(count(*core, JobState::kRunning) == 8);
    CHECK(count(*core, JobState::kPending) == kMembers - 9);
    CHECK(core->job("arr_600").value().held);
    auto waiting = core->explain("arr_100");
    REQUIRE(waiting.ok());
    CHECK(waiting.value().queue_position == 93);
    // The whole array cancelled: every unfinished member ends, the engine keeps none of them.
    REQUIRE(core->cancel("arr", now, false, "cancelled by ann").ok());
    turns(*core, now, 6);
    CHECK(count(*core, JobState::kCancelled) == kMembers);
    CHECK(core->engine().job_slots() < 24);
    for (QueueIdx q = 0; q < core->engine().queue_count(); ++q) CHECK(core->engine().pending_count(q) == 0);
  }
}

TEST_CASE("an array that waits for a dependency: each member's events are written, as any job's") {
  TempDir dir;
  const CoreConfig config = one_node_core((dir.path / "state.db").string());
  Time now = kT0;
  auto core = open_core(config, now);
  Submission first;
  first.job = job("before", "a", res(gpus(1)));
  first.hold = true;
  REQUIRE(core->submit(std::move(first), now).ok());
  turns(*core, now, 1);
  Submission s;
  s.job = job("deps", "a", res(gpus(1)));
  s.after.push_back(Dependency{AfterKind::kOk, "before"});
  for (int i = 0; i < 5; ++i) s.array.push_back(i);
  auto r = core->submit(std::move(s), now);
  INFO((r.ok() ? std::string() : r.error()));
  REQUIRE(r.ok());
  turns(*core, now, 1);
  auto events = core->store().events_after(0, 1000);
  REQUIRE(events.ok());
  for (int i = 0; i < 5; ++i) {
    const std::string id = "deps_" + std::to_string(i);
    CAPTURE(id);
    CHECK(std::count_if(events->begin(), events->end(), [&](const auto& e) { return e.job == id && !e.from; }) == 1);
    CHECK(core->job(id).value().state == JobState::kPending);
  }
}

}  // namespace daemon_array_core_test
