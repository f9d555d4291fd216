// gpuq sim run's replay loop: virtual time through the real Engine, preemption restart and
// resume, node failures, max runtime, the outputs' numbers and their determinism.
#include <doctest/doctest.h>

#include <boost/json.hpp>

#include "sim/replay.hpp"
#include "sim/run_setup.hpp"
#include "sim/synth.hpp"

namespace gpuq::sim {
namespace {

NodeSpec node(const std::string& name, int gpus) {
  NodeSpec n;
  n.name = name;
  n.flavor = "default";
  n.capacity[kGpu] = gpus * kMilliPerGpu;
  n.capacity[kCpu] = 64000;
  n.capacity[kMemory] = Quantity{256} << 30;
  return n;
}

QueueSpec queue(const std::string& name, bool preempt = false) {
  QueueSpec q;
  q.name = QueueName(name);
  if (preempt) q.preemption.within_queue = WithinQueuePolicy::kLowerPriority;
  return q;
}

TraceJob job(const std::string& id, Time submit, int gpus, Time duration, std::int32_t priority = 0,
             const std::string& q = "a") {
  TraceJob j;
  j.id = id;
  j.tenant = q;
  j.queue = q;
  j.submit = submit;
  j.duration = duration;
  j.priority = priority;
  PodSet s;
  s.name = "main";
  s.per_pod[kGpu] = gpus * kMilliPerGpu;
  j.pod_sets.push_back(s);
  return j;
}

ReplayInput input(std::vector<TraceJob> jobs, std::vector<NodeSpec> nodes, std::vector<QueueSpec> queues) {
  ReplayInput in;
  in.label = "test";
  in.queues = std::move(queues);
  in.nodes = std::move(nodes);
  in.jobs = std::make_shared<const std::vector<TraceJob>>(std::move(jobs));
  in.grace_period = 0;
  return in;
}

double num(const boost::json::value& v) { return v.to_number<double>(); }

}  // namespace

TEST_CASE("jobs queue in virtual time, and wait and completion follow") {
  auto in = input({job("j1", 0, 2, 100), job("j2", 0, 2, 100), job("j3", 0, 2, 100), job("j4", 50, 4, 10)},
                  {node("n0", 4)}, {queue("a")});
  const ReplayResult r = run_replay(in);
  REQUIRE(r.jobs.size() == 4);
  CHECK(r.jobs[0].first_admit == 0);
  CHECK(r.jobs[0].finish == 100);
  CHECK(r.jobs[1].finish == 100);
  CHECK(r.jobs[2].first_admit == 100);  // FIFO: j3 before j4
  CHECK(r.jobs[2].finish == 200);
  CHECK(r.jobs[3].first_admit == 200);  // 4 GPUs free only when j3 ends
  CHECK(r.jobs[3].finish == 210);
  for (const JobOutcome& o : r.jobs) CHECK(o.state == JobState::kSucceeded);
  const auto& overall = r.summary.at("overall");
  CHECK(num(overall.at("wait").at("max")) == 150);
  CHECK(num(overall.at("wait").at("p50")) == 0);
  CHECK(num(overall.at("completion").at("max")) == 200);  // j3: 0 -> 200
  CHECK(overall.at("makespan").to_number<std::int64_t>() == 210);
  CHECK(overall.at("finished").to_number<std::int64_t>() == 4);
  // GPU-hours: 3 jobs x 2 GPUs x 100 s + 4 GPUs x 10 s = 640 GPU-seconds.
  CHECK(num(overall.at("gpu_hours_used")) == doctest::Approx(640.0 / 3600).epsilon(1e-5));
  // Allocation: 640 GPU-s over 4 GPUs x 210 s.
  CHECK(num(overall.at("alloc_ratio_mean")) == doctest::Approx(640.0 / 840).epsilon(1e-5));
  const auto& tl = r.summary.at("timeline");
  const std::size_t points = tl.at("t").as_array().size();
  CHECK(points > 2);
  CHECK(tl.at("gpu_by_queue").at("a").as_array().size() == points);
  CHECK(tl.at("pending_by_queue").at("a").as_array().size() == points);
  CHECK(tl.at("fragmentation").as_array().size() == points);
  const std::string csv = jobs_csv(in, r);
  CHECK_MESSAGE(csv.find("j4,a,0,4,50,200,210,150,160,Succeeded,0,0,0,\"n0[0,1,2,3]\",\n") != std::string::npos, csv);
}

TEST_CASE("a preempted job restarts from scratch, or resumes from its last checkpoint") {
  for (Time checkpoint : {Time{0}, Time{120}}) {
    CAPTURE(checkpoint);
    TraceJob low = job("low", 0, 4, 1000, 0);
    low.checkpoint_interval = checkpoint;
    auto in = input({low, job("high", 300, 4, 100, 100)}, {node("n0", 4)}, {queue("a", true)});
    const ReplayResult r = run_replay(in);
    CHECK(r.jobs[1].first_admit == 300);
    CHECK(r.jobs[1].finish == 400);
    CHECK(r.jobs[0].preemptions == 1);
    CHECK(r.jobs[0].state == JobState::kSucceeded);
    if (checkpoint == 0) {
      CHECK(r.jobs[0].lost_work == 300);
      CHECK(r.jobs[0].finish == 1400);
    } else {
      CHECK(r.jobs[0].lost_work == 60);  // 300 s run, checkpoints at 120 and 240
      CHECK(r.jobs[0].finish == 400 + 760);
    }
    const auto& overall = r.summary.at("overall");
    CHECK(overall.at("preemptions").to_number<std::int64_t>() == 1);
    CHECK(num(overall.at("gpu_hours_lost")) ==
          doctest::Approx(4.0 * static_cast<double>(r.jobs[0].lost_work) / 3600).epsilon(1e-5));
  }
}

TEST_CASE("a preempted job keeps its GPUs for its grace period") {
  auto in = input({job("low", 0, 4, 1000, 0), job("high", 300, 4, 100, 100)}, {node("n0", 4)},
                  {queue("a", true)});
  in.grace_period = 30;
  const ReplayResult r = run_replay(in);
  CHECK(r.jobs[1].first_admit == 330);
  CHECK(r.jobs[0].lost_work == 330);
  CHECK(r.jobs[0].first_admit == 0);
  CHECK(r.jobs[0].finish == 430 + 1000);
}

TEST_CASE("node failures requeue the jobs on the node; the node comes back") {
  auto in = input({job("j1", 0, 4, 100), job("j2", 0, 4, 100)}, {node("n0", 4), node("n1", 4)}, {queue("a")});
  in.node_events = parse_node_events("time,node,event\n50,n0,down\n500,n0,up\n", "events.csv");
  const ReplayResult r = run_replay(in);
  // j1 on n0 (pack, lowest node first) is lost at 50, then waits for n1 (j2 ends at 100).
  CHECK(r.jobs[0].lost_runs == 1);
  CHECK(r.jobs[0].lost_work == 50);
  CHECK(r.jobs[0].finish == 200);
  CHECK(r.jobs[1].finish == 100);
  CHECK(r.summary.at("overall").at("lost_runs").to_number<std::int64_t>() == 1);
  CHECK(r.summary.at("overall").at("preemptions").to_number<std::int64_t>() == 0);
}

TEST_CASE("max runtime ends a run as Failed; a job that can never fit is rejected") {
  TraceJob limited = job("limited", 0, 1, 500);
  limited.max_runtime = 100;
  auto in = input({limited, job("huge", 0, 16, 10)}, {node("n0", 4)}, {queue("a")});
  const ReplayResult r = run_replay(in);
  CHECK(r.jobs[0].state == JobState::kFailed);
  CHECK(r.jobs[0].finish == 100);
  CHECK(r.jobs[0].reason.find("max runtime of 100 s") != std::string::npos);
  CHECK(r.jobs[1].first_admit == -1);
  const std::string csv = jobs_csv(in, r);
  CHECK(csv.find("huge,a,0,16,0,,0,,,Rejected,") != std::string::npos);
  CHECK(r.summary.at("overall").at("rejected").to_number<std::int64_t>() == 1);
}

TEST_CASE("entitlement, share and Jain's index") {
  QueueSpec a = queue("a"), b = queue("b");
  for (QueueSpec* q : {&a, &b}) {
    q->cohort = "c";
    FlavorQuota f;
    f.flavor = "default";
    f.resources.push_back({kGpu, ResourceQuota{q == &a ? 3000 : 1000, std::nullopt, std::nullopt}});
    q->quotas.push_back(f);
  }
  // a uses 3 GPUs, b 1 GPU, over the same time: shares equal entitlements (0.75, 0.25).
  auto in = input({job("a1", 0, 3, 100, 0, "a"), job("b1", 0, 1, 100, 0, "b")}, {node("n0", 4)}, {a, b});
  const ReplayResult r = run_replay(in);
  const auto& queues = r.summary.at("queues").as_array();
  REQUIRE(queues.size() == 2);
  CHECK(num(queues[0].at("entitlement")) == doctest::Approx(0.75));
  CHECK(num(queues[0].at("share")) == doctest::Approx(0.75));
  CHECK(num(queues[1].at("share_vs_entitlement")) == doctest::Approx(1.0));
  CHECK(num(r.summary.at("overall").at("jain_index")) == doctest::Approx(1.0));
  CHECK(queues[0].at("wait_cdf").as_array().size() == 101);
}

TEST_CASE("the same inputs give byte-identical outputs") {
  SynthOptions s;
  s.jobs = 400;
  s.gpus = 32;
  s.queues = 3;
  s.load = 1.5;
  s.seed = 7;
  const std::string trace = synth_trace(s);
  CHECK(trace == synth_trace(s));
  auto jobs = parse_trace(trace, "synth.csv", TraceFormat::kNative);
  assign_queues(jobs, QueueRule::kTrace, {});
  std::vector<NodeSpec> nodes;
  for (int i = 0; i < 4; ++i) nodes.push_back(node("n" + std::to_string(i), 8));
  auto in = input(jobs, nodes, {queue("q0", true), queue("q1", true), queue("q2", true)});
  in.config.placement = PlacementPolicy::kFragAware;
  const ReplayResult first = run_replay(in);
  const ReplayResult second = run_replay(in);
  CHECK(jobs_csv(in, first) == jobs_csv(in, second));
  CHECK(boost::json::serialize(first.summary) == boost::json::serialize(second.summary));
  CHECK(first.summary.at("overall").at("finished").to_number<std::int64_t>() == 400);
  CHECK(first.summary.at("overall").at("preemptions").to_number<std::int64_t>() > 0);  // priority 100 jobs preempt
}

TEST_CASE("node events: errors name the file, line, column and what is allowed") {
  CHECK_THROWS_WITH(parse_node_events("time,node,event\n10,n0,crash\n", "ev.csv"),
                    "ev.csv:2:3: column \"event\": \"crash\" is not allowed (allowed: down, up)");
  CHECK_THROWS_WITH(parse_node_events("time,node,event\n-1,n0,down\n", "ev.csv"),
                    "ev.csv:2:1: column \"time\": \"-1\" is negative (allowed: 0..4503599627370496 seconds)");
  CHECK_THROWS_WITH(parse_node_events("time,node\n", "ev.csv"),
                    "ev.csv:1: column \"event\" is missing (found: \"time\", \"node\")");
  auto in = input({job("j1", 0, 1, 10)}, {node("n0", 4)}, {queue("a")});
  in.node_events = parse_node_events("time,node,event\n5,n9,down\n", "ev.csv");
  CHECK_THROWS_WITH(run_replay(in), "node event at 5: node \"n9\" is not in the cluster");
}

TEST_CASE("variant directory names") {
  CHECK(variant_slug("pack + a.yaml") == "pack-a");
  CHECK(variant_slug("frag-aware") == "frag-aware");
  CHECK(variant_slug("+++") == "variant");
}


TEST_CASE("the admission memo changes nothing: the same outputs with and without it, under overload") {
  // Overloaded traces (backlogs grow, the memo answers most decisions), pack and frag-aware,
  // with priority preemption and reclaim in one cohort, and without a cohort.
  // Quota-less queues too (the classic DRF share; no head-key memo there).
  for (const auto& [seed, load, policy, cohort, quotas] :
       {std::tuple{1, 1.3, PlacementPolicy::kPack, true, true},
        std::tuple{2, 1.6, PlacementPolicy::kFragAware, true, true},
        std::tuple{3, 1.2, PlacementPolicy::kSpread, false, true},
        std::tuple{4, 2.0, PlacementPolicy::kPack, false, true},
        std::tuple{5, 1.5, PlacementPolicy::kPack, false, false}}) {
    CAPTURE(seed);
    SynthOptions s;
    s.jobs = 1500;
    s.gpus = 64;
    s.queues = 4;
    s.load = load;
    s.seed = static_cast<std::uint64_t>(seed);
    auto jobs = parse_trace(synth_trace(s), "synth.csv", TraceFormat::kNative);
    assign_queues(jobs, QueueRule::kTrace, {});
    std::vector<NodeSpec> nodes;
    for (int i = 0; i < 8; ++i) nodes.push_back(node("n" + std::to_string(i), 8));
    std::vector<QueueSpec> queues;
    for (int q = 0; q < 4; ++q) {
      QueueSpec spec = queue("q" + std::to_string(q), true);
      FlavorQuota fq;
      fq.flavor = "default";
      fq.resources.push_back({kGpu, ResourceQuota{16 * kMilliPerGpu, std::nullopt, std::nullopt}});
      if (quotas) spec.quotas.push_back(fq);
      if (cohort) {
        spec.cohort = "all";
        spec.preemption.reclaim_within_cohort = ReclaimPolicy::kAny;
      }
      queues.push_back(spec);
    }
    auto in = input(jobs, nodes, queues);
    in.config.placement = policy;
    const ReplayResult with = run_replay(in);
    in.config.admission_memo = false;
    const ReplayResult without = run_replay(in);
    CHECK(jobs_csv(in, with) == jobs_csv(in, without));
    CHECK(boost::json::serialize(with.summary) == boost::json::serialize(without.summary));
  }
}

}  // namespace gpuq::sim
