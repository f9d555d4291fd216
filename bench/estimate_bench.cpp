// estimate_bench: how close gpuq's start-time estimates come to the real starts. A trace is
// replayed through the Engine in virtual time (as `gpuq sim run` does: arrivals and ends on one
// clock, a cycle after each instant, admitted jobs start at once); at a sample of submissions,
// right after the job is submitted, the what-if (scheduler/what_if.hpp) runs on a copy of the
// engine and predicts its start. After the replay each prediction is compared with the job's
// real first admission.
//
// What each job "declares" (Philly has durations only, BENCHMARKS.md says how they are made):
//   limit: its maxRuntime, the smallest of 1h 2h 4h 8h 12h 1d 2d 3d 7d 14d 30d at least twice its
//          duration (a user who knows roughly how long it runs and leaves a margin);
//   runtimeEstimate of its queue: the median duration of that queue's jobs in the trace.
// Modes compared:
//   limit     Slurm's view (squeue --start): every job runs to its limit (WhatIfOptions kLimit);
//   estimate  gpuq's default: each job runs its queue's runtimeEstimate, within its limit;
//   exact     the job's own true duration (as if each job declared expectedRuntime exactly):
//             the error left is what the future brings (later arrivals of higher share).
//
//   build/bench/estimate_bench --trace data/traces/gavel-philly-vc/seed0
//       --cluster examples/sim/philly-cluster.yaml --queues examples/sim/philly-equal.yaml --every 10
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <queue>
#include <tuple>
#include <unordered_map>

#include <CLI/CLI.hpp>

#include "scheduler/what_if.hpp"
#include "sim/run_setup.hpp"

using namespace gpuq;

namespace {

constexpr Time kHour = 3600;

Time limit_for(Time duration) {
  for (Time l : {1 * kHour, 2 * kHour, 4 * kHour, 8 * kHour, 12 * kHour, 24 * kHour, 48 * kHour, 72 * kHour,
                 168 * kHour, 336 * kHour, 720 * kHour})
    if (l >= 2 * duration) return l;
  return 2 * duration;
}

struct End {
  Time at;
  std::uint64_t seq;
  std::string job;
  Time admitted_at;
  bool operator>(const End& o) const { return std::tie(at, seq) > std::tie(o.at, o.seq); }
};

struct Sample {
  std::string job;
  Time submit = 0;
  std::optional<Time> estimate[3];
};

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[static_cast<std::size_t>(p * static_cast<double>(v.size() - 1) + 0.5)];
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"start-time estimates against the real starts, on a replayed trace"};
  sim::RunOptions run;
  std::string queues;
  std::size_t every = 10;
  app.add_option("--trace", run.trace, "trace file or Philly folder")->required();
  app.add_option("--cluster", run.cluster, "nodes YAML or CSV")->required();
  app.add_option("--queues", queues, "queue YAML");
  app.add_option("--every", every, "estimate every N-th submission (default 10)");
  CLI11_PARSE(app, argc, argv);
  if (!queues.empty()) run.queue_files = {queues};
  sim::PreparedRuns prepared = sim::prepare_runs(run);
  sim::ReplayInput& in = prepared.variants.at(0);
  const std::vector<sim::TraceJob>& trace = *in.jobs;

  // Each queue's runtimeEstimate: the median duration of its jobs.
  std::map<std::string, std::vector<Time>> durations;
  std::unordered_map<std::string, Time> duration_of;
  for (const sim::TraceJob& t : trace) {
    durations[t.queue].push_back(t.duration);
    duration_of[t.id] = t.duration;
  }
  Engine live(in.config);
  for (QueueSpec q : in.queues) {
    auto& d = durations[q.name.value];
    if (!d.empty()) {
      std::sort(d.begin(), d.end());
      q.runtime_estimate = d[d.size() / 2];
    }
    if (auto r = live.apply_queue(q); !r) return std::fprintf(stderr, "queue: %s\n", r.error().c_str()), 1;
  }
  for (const NodeSpec& n : in.nodes)
    if (auto r = live.upsert_node(n, 0); !r) return std::fprintf(stderr, "node: %s\n", r.error().c_str()), 1;

  WhatIfOptions modes[3];
  modes[0].runtime = WhatIfOptions::Runtime::kLimit;
  modes[1].runtime = WhatIfOptions::Runtime::kExpected;
  modes[2].runtime_of = [&](const Job& j) -> std::optional<Time> { return duration_of.at(j.spec.id.value); };
  const char* names[3] = {"limit (Slurm)", "estimate (gpuq)", "exact runtimes"};
  double what_if_seconds[3] = {0, 0, 0};
  double copy_seconds = 0, copy_max = 0;  // the engine's copy: the part gpuqd does on its engine thread
  std::size_t pending_max = 0;

  std::priority_queue<End, std::vector<End>, std::greater<>> ends;
  std::uint64_t seq = 0;
  std::unordered_map<std::string, Time> started;
  std::vector<Sample> samples;
  std::size_t next = 0;
  const auto cycle = [&](Time t) {
    for (int round = 0; round < 8; ++round) {
      const auto decisions = live.schedule(t);
      if (decisions.empty()) break;
      for (const Decision& d : decisions)
        if (const auto* a = std::get_if<Admission>(&d)) {
          (void)live.observe(JobStarted{a->job}, t);
          started.emplace(a->job.value, t);
          ends.push(End{t + duration_of.at(a->job.value), seq++, a->job.value, t});
        } else if (const auto* p = std::get_if<Preemption>(&d)) {
          (void)live.observe(JobStopped{p->job}, t);
        }
    }
    (void)live.take_events();
  };
  const auto wall0 = std::chrono::steady_clock::now();
  while (next < trace.size() || !ends.empty()) {
    Time t = next < trace.size() ? trace[next].submit : ends.top().at;
    if (!ends.empty()) t = std::min(t, ends.top().at);
    while (!ends.empty() && ends.top().at == t) {
      const End e = ends.top();
      ends.pop();
      const Job* j = live.job(JobId(e.job));
      if (j != nullptr && j->state == JobState::kRunning && j->admitted_at == e.admitted_at) {
        (void)live.observe(JobFinished{j->spec.id, 0, {}}, t);
        (void)live.forget(JobId(e.job));  // as gpuqd does: the engine holds live jobs only
      }
    }
    for (; next < trace.size() && trace[next].submit == t; ++next) {
      const sim::TraceJob& tj = trace[next];
      JobSpec s;
      s.id = JobId(tj.id);
      s.queue = QueueName(tj.queue);
      s.priority = tj.priority;
      s.submitted_at = t;
      s.pod_sets = tj.pod_sets;
      s.max_runtime = limit_for(tj.duration);
      s.grace_period = in.grace_period;
      if (!live.submit(s, t)) continue;
      if (next % every != 0) continue;
      Sample sample{tj.id, t, {}};
      {
        const auto c0 = std::chrono::steady_clock::now();
        const Engine copy = live;
        const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
        copy_seconds += s;
        copy_max = std::max(copy_max, s);
        pending_max = std::max(pending_max, copy.pending_in_submission_order().size());
      }
      for (int m = 0; m < 3; ++m) {
        const auto w0 = std::chrono::steady_clock::now();
        const WhatIfResult w = estimate_starts(live, t, modes[m]);
        what_if_seconds[m] += std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
        if (auto it = w.starts.find(tj.id); it != w.starts.end()) sample.estimate[m] = it->second;
      }
      samples.push_back(std::move(sample));
    }
    cycle(t);
  }
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - wall0).count();

  std::printf("trace %s: %zu jobs, %zu estimates (every %zu-th submission), replay with estimates %.1f s\n",
              run.trace.c_str(), trace.size(), samples.size(), every, wall);
  std::printf("%-16s %8s %8s %10s %10s %10s %10s %9s\n", "mode", "jobs", "no est.", "med |err|", "p90 |err|",
              "waited med", "waited p90", "ms/est");
  for (int m = 0; m < 3; ++m) {
    std::vector<double> all, waited;
    std::size_t none = 0;
    for (const Sample& s : samples) {
      auto it = started.find(s.job);
      if (it == started.end()) continue;
      if (!s.estimate[m]) {
        ++none;
        continue;
      }
      const double err = std::abs(static_cast<double>(*s.estimate[m] - it->second));
      all.push_back(err);
      if (it->second > s.submit) waited.push_back(err);
    }
    std::printf("%-16s %8zu %8zu %9.0fs %9.0fs %9.0fs %9.0fs %9.2f\n", names[m], all.size() + none, none,
                percentile(all, 0.5), percentile(all, 0.9), percentile(waited, 0.5), percentile(waited, 0.9),
                1000 * what_if_seconds[m] / static_cast<double>(std::max<std::size_t>(1, samples.size())));
  }
  std::size_t waited = 0;
  for (const Sample& s : samples)
    if (auto it = started.find(s.job); it != started.end() && it->second > s.submit) ++waited;
  std::printf("sampled jobs that waited: %zu of %zu\n", waited, samples.size());
  std::printf("engine copy (gpuqd's engine thread): mean %.2f ms, max %.2f ms; most pending at a sample %zu\n",
              1000 * copy_seconds / static_cast<double>(std::max<std::size_t>(1, samples.size())), 1000 * copy_max,
              pending_max);
  return 0;
}
