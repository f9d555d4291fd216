// Lazy arrays (EngineConfig::lazy_arrays, scheduler/arrays.cpp) against eager ones: two engines
// given the same random commands (arrays with throttles and holds among single jobs, cycles,
// starts and ends, cancels, holds, releases and updates of members, lost nodes, preemption)
// make the same decisions and events, count the same jobs, and say the same of every member
// (pending_reason and explain of a view, which is what job() of an eager member shows).
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <iterator>
#include <map>
#include <random>
#include <sstream>

#include "scheduler/what_if.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

std::string decisions_text(const std::vector<Decision>& ds) {
  std::ostringstream out;
  for (const Decision& d : ds) {
    if (const auto* a = std::get_if<Admission>(&d)) {
      out << "A " << a->job.value << " " << a->queue.value << " " << a->flavor;
      for (const PodPlacement& p : a->pods) {
        out << " " << p.pod_set << "@" << p.node << ":";
        for (int g : p.gpus) out << g << ",";
        out << "x" << p.gpu_milli;
      }
    } else {
      const auto& p = std::get<Preemption>(d);
      out << "P " << p.job.value << " by " << p.by.value << " " << to_string(p.reason) << " " << p.grace_period;
    }
    out << "\n";
  }
  return out.str();
}

std::string events_full(const std::vector<Event>& events) {
  std::ostringstream out;
  for (const Event& e : events)
    out << e.seq << " " << e.at << " " << e.job.value << " " << (e.from ? to_string(*e.from) : "-") << ">"
        << to_string(e.to) << " " << e.reason << " " << e.flavor << "\n";
  return out.str();
}

// What the engine says of one job, as a front end would show it.
std::string job_text(const Engine& e, const JobId& id) {
  auto v = e.view(id);
  if (!v) return id.value + ": none\n";
  std::ostringstream out;
  out << id.value << ": " << to_string(v->state) << " order " << v->order << " held " << v->held << " dependent "
      << v->dependent << " index " << v->spec.array_index << " prio " << v->spec.priority << " attempts "
      << v->attempts << " preemptions " << v->preemptions << "\n  reason: " << e.pending_reason(*v);
  if (!is_finished(v->state)) {
    const JobExplanation x = e.explain(*v);
    out << "\n  explain: " << x.reason << " | " << x.queue_position << "/" << x.queue_pending << " rank "
        << x.cycle_rank << "/" << x.cycle_queues << " nominal " << x.order.within_nominal << " flavor "
        << x.order.flavor << " share " << x.order.share;
  }
  return out.str() + "\n";
}

std::string counts_text(const Engine& e) {
  std::ostringstream out;
  for (QueueIdx q = 0; q < e.queue_count(); ++q) {
    const auto c = e.job_counts(q);
    out << e.queue_spec(q).name.value << " pending " << e.pending_count(q) << "=" << c.pending << " admitted "
        << c.admitted << " running " << c.running << " preempting " << c.preempting;
    for (const char* owner : {"ann", "bob"}) {
      const auto o = e.owner_jobs(q, owner);
      out << " " << owner << " " << o.pending << "/" << o.running;
    }
    out << "\n";
  }
  std::size_t position_sum = 0, entries = 0;
  for (const Engine::Queued& q : e.pending_in_queue_order()) {
    position_sum += q.position * e.members_of(*q.job);
    entries += e.members_of(*q.job);
  }
  out << "pending entries " << entries << "\n";
  (void)position_sum;
  return out.str();
}

// Over all runs: steps at which the lazy engine kept fewer job slots (members in blocks), and
// the most it saved, so a test that never made a block cannot pass unnoticed.
std::size_t g_steps_saving = 0, g_most_saved = 0, g_block_commands = 0;

struct Run {
  explicit Run(std::uint64_t seed) : rng(seed) {}
  std::mt19937_64 rng;
  int pick(int n) { return static_cast<int>(rng() % static_cast<std::uint64_t>(n)); }
  bool chance(int percent) { return pick(100) < percent; }
};

// One random run; the two engines must agree after every step.
void run(std::uint64_t seed) {
  Run r(seed);
  EngineConfig config;
  config.admission_memo = r.chance(70);
  config.stops_confirmed = r.chance(30);
  config.fair_sharing.enabled = r.chance(25);
  config.quota_only = r.chance(15);
  config.lazy_arrays = false;
  if (r.chance(20)) config.placement = PlacementPolicy::kFragAware;
  EngineConfig lazy_config = config;
  lazy_config.lazy_arrays = true;
  Engine eager(config), lazy(lazy_config);
  auto both = [&](auto&& f) {
    auto a = f(eager);
    auto b = f(lazy);
    return std::make_pair(std::move(a), std::move(b));
  };

  const int queues = 1 + r.pick(3);
  for (int q = 0; q < queues; ++q) {
    QueueSpec spec = queue("q" + std::to_string(q), r.chance(60) ? "c" : "", "h100",
                           {{kGpu, gpus(2 + r.pick(10))}, {kCpu, cores(64)}});
    if (r.chance(30)) spec.strategy = QueueingStrategy::kStrictFIFO;
    if (r.chance(30)) spec.max_running_jobs_per_user = 1 + r.pick(3);
    if (r.chance(50)) spec.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
    if (r.chance(40)) spec.preemption.reclaim_within_cohort = ReclaimPolicy::kAny;
    auto [a, b] = both([&](Engine& e) { return e.apply_queue(spec).ok(); });
    REQUIRE(a);
    REQUIRE(b);
  }
  const int nodes = 1 + r.pick(3);
  for (int n = 0; n < nodes; ++n) {
    const NodeSpec spec = node("n" + std::to_string(n), "h100", res(gpus(4 + 4 * r.pick(2)), cores(32), gib(256)));
    auto [a, b] = both([&](Engine& e) { return e.upsert_node(spec, 0).ok(); });
    REQUIRE(a);
    REQUIRE(b);
  }

  std::vector<JobId> ids;    // every job and member submitted
  std::map<std::string, std::vector<JobId>> arrays;  // every array's members, in order
  int next = 0;
  Time now = 1;
  for (int step = 0; step < 60; ++step) {
    CAPTURE(step);
    now += 1 + r.pick(3);
    const int what = r.pick(100);
    std::string done;
    if (what < 30) {  // a submission: a single job or an array
      const std::string qname = "q" + std::to_string(r.pick(queues));
      JobSpec spec = job("j" + std::to_string(next++), qname, res(gpus(r.chance(20) ? 0.5 : 1 + r.pick(4)), cores(1)),
                         1, r.pick(3), now);
      spec.owner = r.chance(50) ? "ann" : "bob";
      spec.preemptible = !r.chance(10);
      std::optional<std::string> hold;
      if (r.chance(20)) hold = "held at submission";
      if (r.chance(60)) {
        const int n = 2 + r.pick(12);
        std::vector<std::int32_t> indices;
        for (int i = 0, at = r.pick(3); i < n; ++i, at += 1 + r.pick(2)) indices.push_back(at);
        spec.array_id = spec.id.value;
        if (r.chance(30)) spec.array_throttle = 1 + r.pick(3);
        spec.id = JobId(spec.array_id + "_" + std::to_string(indices.front()));
        spec.array_index = indices.front();
        // Half the time the lazy engine gives the members' events once (MemberEvents, as gpuqd
        // asks): expanded, they are the eager engine's, seq for seq.
        const bool quiet = r.chance(50);
        std::string quiet_events;
        auto [a, b] = both([&](Engine& e) {
          auto tmpl = e.array_template(spec);
          if (!tmpl) return tmpl.error();
          Engine::MemberEvents given;
          auto s = e.submit_array(tmpl.value(), indices, now, hold, quiet && &e == &lazy ? &given : nullptr);
          if (s && !given.each.empty()) {
            std::vector<Event> all = e.take_events();
            std::uint64_t seq = given.first_seq;
            for (std::int32_t i : indices)
              for (Event ev : given.each) {
                ev.seq = seq++;
                ev.job = JobId(spec.array_id + "_" + std::to_string(i));
                all.push_back(std::move(ev));
              }
            quiet_events = events_full(all);
          }
          return s ? std::string("ok") : s.error();
        });
        REQUIRE(a == b);
        if (!quiet_events.empty()) CHECK(events_full(eager.take_events()) == quiet_events);
        if (a == "ok") {
          for (std::int32_t i : indices) {
            ids.push_back(JobId(spec.array_id + "_" + std::to_string(i)));
            arrays[spec.array_id].push_back(ids.back());
          }
        }
        done = "array " + spec.array_id + " " + a;
      } else {
        auto [a, b] = both([&](Engine& e) { return e.submit(spec, now, hold).ok(); });
        REQUIRE(a == b);
        if (a) ids.push_back(spec.id);
        done = "submit " + spec.id.value;
      }
    } else if (what < 55) {
      auto [a, b] = both([&](Engine& e) { return decisions_text(e.schedule(now)); });
      REQUIRE(a == b);
      done = "schedule";
      // Stats of the cycle: a block passed over counts each of its members.
      CHECK(eager.last_cycle().decisions == lazy.last_cycle().decisions);
      CHECK(eager.last_cycle().passed_over == lazy.last_cycle().passed_over);
      CHECK(eager.last_cycle().admitted == lazy.last_cycle().admitted);
      CHECK(eager.last_cycle().kept == lazy.last_cycle().kept);
    } else if (what < 66 && !arrays.empty()) {
      // A command on a whole array: the eager engine's members one by one, as gpuqd's Core
      // loops over them; the lazy one's block at once and the rest through `each`.
      auto a_it = arrays.begin();
      std::advance(a_it, r.pick(static_cast<int>(arrays.size())));
      const std::string& array = a_it->first;
      const auto command = static_cast<Engine::ArrayCommand>(r.pick(3));
      auto one = [&](Engine& e, const JobId& m) {
        const auto v = e.view(m);
        if (!v) return;
        if (command == Engine::ArrayCommand::kCancel) {
          if (!is_finished(v->state)) (void)e.cancel(m, now, "cancelled by ann");
        } else if (v->state == JobState::kPending && v->held != (command == Engine::ArrayCommand::kHold)) {
          (void)(command == Engine::ArrayCommand::kHold ? e.hold(m, now, "held by ann")
                                                         : e.release_hold(m, now, "released by ann"));
        }
      };
      const char* reason = command == Engine::ArrayCommand::kCancel ? "cancelled by ann"
                           : command == Engine::ArrayCommand::kHold ? "held by ann"
                                                                    : "released by ann";
      for (const JobId& m : a_it->second) one(eager, m);
      std::vector<std::string> members;
      for (const JobId& m : a_it->second) members.push_back(m.value);
      if (lazy.array_command(array, members, command, now, reason, [&](const JobId& m) { one(lazy, m); }))
        ++g_block_commands;
      else
        for (const JobId& m : a_it->second) one(lazy, m);
      done = "array command " + std::to_string(static_cast<int>(command)) + " on " + array;
    } else if (what < 69) {
      const std::string n = "n" + std::to_string(r.pick(nodes));
      auto [a, b] = both([&](Engine& e) { return e.observe(NodeLost{n}, now).ok(); });
      REQUIRE(a == b);
      done = "lost " + n;
    } else if (!ids.empty()) {
      const JobId id = ids[static_cast<std::size_t>(r.pick(static_cast<int>(ids.size())))];
      const int op = r.pick(10);
      const std::int32_t priority = r.pick(2) == 0 ? 0 : 2;
      auto [a, b] = both([&](Engine& e) -> std::string {
        Result<void> res = Ok();
        switch (op) {
          case 0: res = e.cancel(id, now); break;
          case 1: res = e.hold(id, now, "held by its user"); break;
          case 2: res = e.release_hold(id, now, "released"); break;
          case 3: res = e.update(id, Engine::JobUpdate{priority, std::nullopt, std::nullopt}, now, "updated"); break;
          case 4: res = e.observe(JobStarted{id}, now); break;
          case 5: res = e.observe(JobFinished{id, 0, ""}, now); break;
          case 6: res = e.observe(JobStopped{id}, now); break;
          case 7: res = e.hold(id, now, "waits for x", Engine::HoldKind::kDependency); break;
          case 8: res = e.release_hold(id, now, "x ended", Engine::HoldKind::kDependency); break;
          default: return e.forget(id) ? std::string("forgotten") : std::string("kept");  // slots reused
        }
        return res ? std::string("ok") : res.error();
      });
      REQUIRE(a == b);
      done = "op " + std::to_string(op) + " on " + id.value + ": " + a;
    }
    CAPTURE(done);
    REQUIRE(events_full(eager.take_events()) == events_full(lazy.take_events()));
    if (step % 7 == 6) {  // start estimates: a what-if on a copy of each
      WhatIfOptions o;
      o.runtime_of = [](const Job& j) { return std::optional<Time>(10 + static_cast<Time>(j.order % 7)); };
      const WhatIfResult a = estimate_starts(eager, now, o), b = estimate_starts(lazy, now, o);
      REQUIRE(a.pending == b.pending);
      REQUIRE(a.starts == b.starts);
    }
    REQUIRE(counts_text(eager) == counts_text(lazy));
    for (const JobId& id : ids) REQUIRE(job_text(eager, id) == job_text(lazy, id));
    if (lazy.job_slots() < eager.job_slots()) {
      ++g_steps_saving;
      g_most_saved = std::max(g_most_saved, eager.job_slots() - lazy.job_slots());
    }
  }
}

}  // namespace

TEST_CASE("lazy arrays: the same decisions, events, counts and answers as eager ones") {
  const char* env = std::getenv("GPUQ_LAZY_RUNS");
  const int runs = env ? std::atoi(env) : 300;
  const char* only = std::getenv("GPUQ_LAZY_SEED");
  for (int seed = only ? std::atoi(only) : 1; seed <= (only ? std::atoi(only) : runs); ++seed) {
    CAPTURE(seed);
    run(static_cast<std::uint64_t>(seed));
  }
  MESSAGE("steps with members in blocks: " << g_steps_saving << ", most slots saved: " << g_most_saved
                                           << ", commands on a block: " << g_block_commands);
  CHECK(g_steps_saving > 0);
  CHECK(g_block_commands > 0);
}
