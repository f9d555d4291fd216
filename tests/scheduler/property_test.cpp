// A seeded property test: thousands of random clusters, queues and job streams. After every cycle
// the invariants are recomputed from the jobs themselves, independently of the engine's own
// bookkeeping, and the whole run is repeated to check that it is byte-for-byte deterministic.
#include <doctest/doctest.h>

#include <cstdlib>
#include <random>
#include <sstream>

#include "tests/scheduler/invariants.hpp"
#include "tests/support/builders.hpp"

using namespace gpuq;
using namespace gpuq::test;

namespace {

struct World {
  std::mt19937_64 rng;
  explicit World(std::uint64_t seed) : rng(seed) {}
  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); }
  bool chance(int percent) { return pick(1, 100) <= percent; }
};

const std::vector<std::string> kFlavors = {"h100", "a100"};

std::vector<QueueSpec> random_queues(World& w) {
  std::vector<QueueSpec> out;
  int n = w.pick(1, 4);
  for (int i = 0; i < n; ++i) {
    QueueSpec q;
    q.name = QueueName("q" + std::to_string(i));
    q.weight = w.pick(1, 3);
    q.strategy = w.chance(25) ? QueueingStrategy::kStrictFIFO : QueueingStrategy::kBestEffortFIFO;
    if (!w.chance(15)) {
      if (w.chance(75)) q.cohort = "c" + std::to_string(w.pick(0, 1));
      int flavors = w.pick(1, 2);
      for (int f = 0; f < flavors; ++f) {
        FlavorQuota fq;
        fq.flavor = kFlavors[(i + f) % 2];
        ResourceQuota gpu{gpus(w.pick(0, 12)), std::nullopt, std::nullopt};
        if (!q.cohort.empty() && w.chance(40)) gpu.borrowing_limit = gpus(w.pick(0, 6));
        if (!q.cohort.empty() && w.chance(40)) gpu.lending_limit = gpus(w.pick(0, 8));
        fq.resources.emplace_back(kGpu, gpu);
        if (w.chance(50)) fq.resources.emplace_back(kCpu, ResourceQuota{cores(w.pick(8, 128)), std::nullopt, std::nullopt});
        q.quotas.push_back(fq);
      }
    }
    out.push_back(q);
  }
  return out;
}

std::vector<NodeSpec> random_nodes(World& w, int queues) {
  std::vector<NodeSpec> out;
  int n = w.pick(1, 6);
  for (int i = 0; i < n; ++i) {
    NodeSpec s = node("n" + std::to_string(i), kFlavors[w.pick(0, 1)],
                      res(gpus(w.pick(0, 8)), cores(w.pick(8, 64)), gib(w.pick(16, 256))),
                      {{"zone", "z" + std::to_string(i % 2)}, {"rack", "r" + std::to_string(i % 3)}});
    if (w.chance(10)) s.state = w.chance(50) ? NodeState::kCordoned : NodeState::kDraining;
    if (w.chance(10)) s.dedicated_to = QueueName("q" + std::to_string(w.pick(0, queues - 1)));
    if (w.chance(15))
      s.taints.push_back(
          {"gpu", "broken", w.chance(50) ? TaintEffect::kNoSchedule : TaintEffect::kNoExecute});
    if (w.chance(10)) s.taints.push_back({"spot", "", TaintEffect::kPreferNoSchedule});
    out.push_back(s);
  }
  return out;
}

// Node constraints on about one pod set in four: a zone, racks, or a toleration of the taint.
NodeConstraints random_constraints(World& w) {
  NodeConstraints c;
  if (!w.chance(25)) return c;
  if (w.chance(50)) c.node_selector = {{"zone", "z" + std::to_string(w.pick(0, 1))}};
  if (w.chance(30))
    c.affinity = {{{"rack",
                    w.chance(70) ? LabelOperator::kIn : LabelOperator::kNotIn,
                    {"r" + std::to_string(w.pick(0, 2))}}}};
  if (w.chance(50)) c.tolerations = {{"gpu", true, "", std::nullopt}};
  return c;
}

JobSpec random_job(World& w, int id, int queues, Time now) {
  JobSpec j;
  j.id = JobId("j" + std::to_string(id));
  j.queue = QueueName("q" + std::to_string(w.pick(0, queues - 1)));
  j.priority = w.pick(0, 3);
  j.submitted_at = now;
  int sets = w.chance(80) ? 1 : 2;
  for (int s = 0; s < sets; ++s) {
    Quantity gpu = 0;
    int kind = w.pick(0, 9);
    if (kind < 3) gpu = 250 * w.pick(1, 3);       // a share of one GPU
    else if (kind < 9) gpu = gpus(w.pick(1, 4));  // whole GPUs
    j.pod_sets.push_back(PodSet{"s" + std::to_string(s), w.pick(1, 3),
                                res(gpu, cores(w.pick(0, 16)), gib(w.pick(0, 32))),
                                random_constraints(w)});
  }
  if (j.pod_sets[0].per_pod.is_zero()) j.pod_sets[0].per_pod[kCpu] = cores(1);
  j.exclusive = w.chance(5);
  if (w.chance(10)) j.flavors = {kFlavors[w.pick(0, 1)]};
  j.on_node_loss = w.chance(50) ? NodeLossPolicy::kRequeue : NodeLossPolicy::kFail;
  return j;
}

std::string serialize(const std::vector<Decision>& ds, const std::vector<Event>& events) {
  std::ostringstream out;
  for (const auto& d : ds) {
    const Admission& a = admission(d);
    out << "A " << a.job.value << " " << a.queue.value << " " << a.flavor;
    for (const auto& p : a.pods) {
      out << " " << p.pod_set << "@" << p.node << ":";
      for (int g : p.gpus) out << g << ",";
      out << p.gpu_milli;
    }
    out << "\n";
  }
  for (const auto& ev : events)
    out << "E " << ev.seq << " " << ev.at << " " << ev.job.value << " "
        << (ev.from ? to_string(*ev.from) : "-") << ">" << to_string(ev.to) << " " << ev.reason << "\n";
  return out.str();
}

// Cycles that left a queue early (none_can_fit) and gang retries, over all runs: the checks
// above must have seen those paths for their verdict to mean anything.
std::uint64_t g_queues_dropped = 0;
std::uint64_t g_extra_passes = 0;

// One random run; returns its transcript. Checks the invariants after every cycle.
std::string run(std::uint64_t seed, bool check) {
  World w(seed);
  EngineConfig config;
  config.placement = w.chance(50) ? PlacementPolicy::kPack : PlacementPolicy::kSpread;
  if (w.chance(30)) config.topology_levels = {"zone", "rack"};
  Engine e(config);
  auto queues = random_queues(w);
  for (const auto& q : queues) REQUIRE(e.apply_queue(q).ok());
  for (const auto& n : random_nodes(w, static_cast<int>(queues.size()))) REQUIRE(e.upsert_node(n, 0).ok());

  std::string transcript;
  std::vector<std::string> ids;
  std::uint64_t last_seq = 0;
  int next_id = 0;
  for (Time now = 1; now <= 12; ++now) {
    for (int k = w.pick(0, 6); k > 0; --k) {
      auto r = e.submit(random_job(w, next_id++, static_cast<int>(queues.size()), now), now);
      if (r.ok()) ids.push_back("j" + std::to_string(next_id - 1));
      else REQUIRE(r.code() == ErrorCode::kRejected);
    }
    for (const auto& id : ids) {
      const Job* j = e.job(JobId(id));
      if (j->state == JobState::kAdmitted && w.chance(50)) REQUIRE(e.observe(JobStarted{JobId(id)}, now).ok());
      else if (j->holds_resources() && w.chance(25)) REQUIRE(e.observe(JobFinished{JobId(id), w.pick(0, 1), {}}, now).ok());
      else if (j->state == JobState::kPending && w.chance(5)) REQUIRE(e.cancel(JobId(id), now).ok());
    }
    if (w.chance(10) && e.cluster().size() > 0) {
      const auto& victim = e.cluster().node(static_cast<NodeIdx>(w.pick(0, static_cast<int>(e.cluster().size()) - 1)));
      REQUIRE(e.observe(NodeLost{victim.name}, now).ok());
    }
    auto decisions = e.schedule(now);
    g_queues_dropped += e.last_cycle().queues_dropped;
    g_extra_passes += e.last_cycle().passes - 1;
    auto events = e.take_events();
    for (const auto& ev : events) {
      REQUIRE(ev.seq > last_seq);
      last_seq = ev.seq;
    }
    transcript += serialize(decisions, events);
    if (check) {
      const auto jobs = jobs_of(e, ids);
      check_nodes(e, jobs);
      check_domains(e, kFlavors.size());
      check_quotas(e, jobs);
      check_maximal(e);
    }
  }
  return transcript;
}

int runs() {
  const char* env = std::getenv("GPUQ_PROPERTY_RUNS");
  return env ? std::atoi(env) : 3000;
}

}  // namespace

TEST_CASE("random clusters, queues and job streams keep every invariant after every cycle") {
  const int n = runs();
  for (int seed = 1; seed <= n; ++seed) {
    CAPTURE(seed);
    (void)run(static_cast<std::uint64_t>(seed), /*check=*/true);
  }
  if (n >= 1000) {
    CHECK(g_queues_dropped > 0);
    CHECK(g_extra_passes > 0);
  }
  MESSAGE("queues left early: " << g_queues_dropped << ", extra gang passes: " << g_extra_passes);
}

TEST_CASE("the same inputs twice give byte-identical decisions and events") {
  const int n = runs() / 4;
  for (int seed = 1; seed <= n; ++seed) {
    CAPTURE(seed);
    std::string first = run(static_cast<std::uint64_t>(seed), false);
    REQUIRE(first == run(static_cast<std::uint64_t>(seed), false));
  }
}
