// gpuq sim: scenario, fill, run and synth. No server; everything runs in this process.
#include <memory>
#include <sstream>

#include <boost/json.hpp>

#include "cli/commands.hpp"
#include "cli/requests.hpp"
#include "sim/fill.hpp"
#include "sim/openb.hpp"
#include "sim/run_setup.hpp"
#include "sim/scenario.hpp"
#include "sim/synth.hpp"

namespace gpuq::cli {
namespace {

struct FillOptions {
  std::string nodes, pods, seeds = "42", policies = "frag-aware";
  double target = 1.3;
  bool json = false, skip_bad_rows = false;
};

PlacementPolicy policy_named(const std::string& name) {
  for (PlacementPolicy p : {PlacementPolicy::kPack, PlacementPolicy::kSpread, PlacementPolicy::kFragAware})
    if (name == to_string(p)) return p;
  throw UsageError("--policy \"" + name + "\" is not a placement policy; use pack, spread or frag-aware");
}

int run_fill(Context& ctx, const FillOptions& o) {
  if (!(o.target > 0 && o.target <= 10)) throw UsageError("--target " + std::to_string(o.target) + " is not allowed; use more than 0 and at most 10");
  std::vector<std::uint64_t> seeds;
  try {
    seeds = sim::parse_seeds(o.seeds);
  } catch (const std::invalid_argument& e) {
    throw UsageError(e.what());
  }
  std::vector<PlacementPolicy> policies;
  std::stringstream names(o.policies);
  for (std::string n; std::getline(names, n, ',');) policies.push_back(policy_named(n));
  if (policies.empty()) throw UsageError("--policy: give at least one of pack, spread, frag-aware");
  sim::TraceReadOptions read{o.skip_bad_rows};
  sim::TraceReadReport node_report, pod_report;
  const auto nodes = sim::read_openb_nodes(o.nodes, read, &node_report);
  const auto pods = sim::read_openb_pods(o.pods, read, &pod_report);
  for (const auto* r : {&node_report, &pod_report})
    if (r->skipped > 0) ctx.err << "gpuq: skipped " << r->skipped << " malformed rows of " << (r == &node_report ? o.nodes : o.pods) << " (--skip-bad-rows)\n";
  std::vector<sim::FillSummary> summaries;
  for (PlacementPolicy p : policies) {
    std::vector<sim::FillRun> runs;
    for (std::uint64_t seed : seeds) runs.push_back(sim::run_fill(nodes, pods, p, o.target, seed));
    summaries.push_back(sim::summarize(p, o.target, std::move(runs)));
  }
  ctx.out << (o.json ? sim::to_json(summaries) : sim::to_table(summaries));
  return 0;
}

void add_fill_command(CLI::App& sim, Context& ctx) {
  auto o = std::make_shared<FillOptions>();
  auto* fill = sim.add_subcommand(
      "fill", "The FGD fill experiment: place a trace's pods (shuffled, extended to --target x GPU capacity) "
              "with no departures; report the GPU allocated, fragmentation and failed pods");
  fill->add_option("--nodes", o->nodes, "node list CSV (openb_node_list_*.csv)")->required();
  fill->add_option("--pods", o->pods, "pod list CSV (openb_pod_list_*.csv)")->required();
  fill->add_option("--target", o->target, "GPU asked for, as a multiple of the GPU capacity (default 1.3)");
  fill->add_option("--seeds", o->seeds, "seeds: N, A-B or A,B,C (default 42)");
  fill->add_option("--policy", o->policies, "placement policies, comma-separated: pack, spread, frag-aware (default frag-aware)");
  fill->add_flag("--json", o->json, "the summary as JSON on stdout");
  fill->add_flag("--skip-bad-rows", o->skip_bad_rows, "skip malformed rows (counted on stderr) instead of failing");
  fill->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_fill(c, *o); }; });
}

int run_scenario_file(Context& ctx, const std::string& path) {
  ctx.out << sim::to_pretty_json(sim::run_scenario(read_file_arg(ctx, path), path));
  return 0;
}

struct RunCliOptions {
  std::string trace, format, cluster, queues, assign = "trace", policies, node_events, out = "sim-out";
  std::size_t queue_count = 4, points = 300;
  Time grace = 30;
  bool skip_bad_rows = false, timing = false, json = false;
};

std::vector<std::string> split_commas(const std::string& text) {
  std::vector<std::string> out;
  std::stringstream s(text);
  for (std::string part; std::getline(s, part, ',');)
    if (!part.empty()) out.push_back(part);
  return out;
}

int run_replay_command(Context& ctx, const RunCliOptions& o) {
  sim::RunOptions r;
  r.trace = o.trace;
  if (!o.format.empty()) {
    r.format = sim::trace_format_named(o.format);
    if (!r.format)
      throw UsageError("--format \"" + o.format + "\" is not a trace format; use native, openb, philly or tiresias");
  }
  r.cluster = o.cluster;
  r.queue_files = split_commas(o.queues);
  const auto rule = sim::queue_rule_named(o.assign);
  if (!rule) throw UsageError("--assign \"" + o.assign + "\" is not a rule; use trace, round-robin or hash");
  r.assign = *rule;
  if (o.queue_count == 0 || o.queue_count > 10000)
    throw UsageError("--queue-count " + std::to_string(o.queue_count) + " is not allowed; use 1 to 10000");
  r.queue_count = o.queue_count;
  for (const std::string& p : split_commas(o.policies)) r.policies.push_back(policy_named(p));
  if (!o.policies.empty() && r.policies.empty())
    throw UsageError("--policy \"" + o.policies + "\": give at least one of pack, spread, frag-aware");
  if (!o.queues.empty() && r.queue_files.empty())
    throw UsageError("--queues \"" + o.queues + "\": give at least one queue file");
  r.node_events = o.node_events;
  if (o.grace < 0) throw UsageError("--grace " + std::to_string(o.grace) + " is not allowed; use 0 or more seconds");
  r.grace_period = o.grace;
  if (o.points < 2 || o.points > 100000)
    throw UsageError("--points " + std::to_string(o.points) + " is not allowed; use 2 to 100000");
  r.timeline_points = o.points;
  r.skip_bad_rows = o.skip_bad_rows;
  sim::PreparedRuns prepared = sim::prepare_runs(r);
  if (prepared.trace_report.skipped > 0)
    ctx.err << "gpuq: skipped " << prepared.trace_report.skipped << " malformed rows of " << o.trace
            << " (--skip-bad-rows)\n";
  std::vector<sim::ReplayResult> results;
  for (const sim::ReplayInput& in : prepared.variants) {
    results.push_back(sim::run_replay(in));
    const sim::ReplayResult& res = results.back();
    ctx.err << "gpuq: " << in.label << ": " << in.jobs->size() << " jobs, " << res.events << " events, "
            << res.cycles << " cycles in " << res.wall_seconds << " s ("
            << (res.wall_seconds > 0 ? static_cast<double>(res.events) / res.wall_seconds : 0.0)
            << " events/s)\n";
    if (o.timing) sim::add_timing(results.back());
  }
  const auto written = sim::write_outputs(o.out, prepared.variants, results);
  if (o.json) {
    boost::json::array all;
    for (const auto& res : results) all.push_back(res.summary);
    ctx.out << sim::to_pretty_json(all.size() == 1 ? all.front() : boost::json::value(all));
  } else {
    ctx.out << sim::comparison_table(results);
    for (const std::string& path : written) ctx.out << "wrote " << path << "\n";
  }
  return 0;
}

void add_run_command(CLI::App& sim, Context& ctx) {
  auto o = std::make_shared<RunCliOptions>();
  auto* run = sim.add_subcommand(
      "run", "Replay a trace through the engine in virtual time; write jobs.csv, summary.json and report.html");
  run->add_option("--trace", o->trace, "trace file (or a folder of Philly *.trace files)")->required();
  run->add_option("--format", o->format, "native, openb, philly or tiresias (default: detected from the file)");
  run->add_option("--cluster", o->cluster,
                  "nodes: YAML with nodes: (scenario keys), the openb node list CSV or a Tiresias cluster spec CSV")
      ->required();
  run->add_option("--queues", o->queues, "queue YAML files, comma-separated (each one a variant); default: a queue per tenant");
  run->add_option("--assign", o->assign, "queue of each job: trace (its tenant column), round-robin or hash (default trace)");
  run->add_option("--queue-count", o->queue_count, "queues q0..qN-1 for round-robin/hash without --queues (default 4)");
  run->add_option("--policy", o->policies, "placement policies, comma-separated: pack, spread, frag-aware (each one a variant)");
  run->add_option("--node-events", o->node_events, "CSV time,node,event (down|up): node failures to inject");
  run->add_option("--grace", o->grace, "how long a preempted job takes to stop: 30, 90s, 2m (default 30 s)")
      ->transform(duration_arg());
  run->add_option("--points", o->points, "samples in the timeline (default 300)");
  run->add_option("--out", o->out, "output folder (default sim-out)");
  run->add_flag("--skip-bad-rows", o->skip_bad_rows, "skip malformed trace rows (counted on stderr) instead of failing");
  run->add_flag("--timing", o->timing, "add wall_seconds and events_per_second to summary.json (not byte-stable)");
  run->add_flag("--json", o->json, "print the summary (an array for several variants) as JSON on stdout");
  run->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_replay_command(c, *o); }; });
}

struct SynthCliOptions {
  sim::SynthOptions synth;
  std::string out, cluster_out, queues_out;
};

int run_synth(Context& ctx, const SynthCliOptions& o) {
  const auto& s = o.synth;
  if (s.jobs == 0 || s.jobs > 100'000'000) throw UsageError("--jobs " + std::to_string(s.jobs) + " is not allowed; use 1 to 100000000");
  if (s.gpus == 0 || s.gpus > 1'000'000) throw UsageError("--gpus " + std::to_string(s.gpus) + " is not allowed; use 1 to 1000000");
  if (s.queues == 0 || s.queues > 10000) throw UsageError("--queues " + std::to_string(s.queues) + " is not allowed; use 1 to 10000");
  if (!(s.load > 0 && s.load <= 100)) throw UsageError("--load " + std::to_string(s.load) + " is not allowed; use more than 0 and at most 100");
  const std::string trace = sim::synth_trace(s);
  if (o.out.empty() || o.out == "-") ctx.out << trace;
  else sim::write_file(o.out, trace);
  if (!o.cluster_out.empty()) sim::write_file(o.cluster_out, sim::synth_cluster(s));
  if (!o.queues_out.empty()) sim::write_file(o.queues_out, sim::synth_queues(s));
  return 0;
}

void add_synth_command(CLI::App& sim, Context& ctx) {
  auto o = std::make_shared<SynthCliOptions>();
  auto* synth = sim.add_subcommand("synth", "Write a synthetic trace (native CSV), and optionally a cluster and queues to run it on");
  synth->add_option("--jobs", o->synth.jobs, "jobs (default 1000)");
  synth->add_option("--gpus", o->synth.gpus, "GPUs in the cluster (default 64)");
  synth->add_option("--queues", o->synth.queues, "queues q0..qN-1 (default 4)");
  synth->add_option("--load", o->synth.load, "offered GPU-time over capacity (default 0.9)");
  synth->add_option("--seed", o->synth.seed, "random seed (default 1)");
  synth->add_option("--out", o->out, "trace file (default: standard output)");
  synth->add_option("--cluster-out", o->cluster_out, "write the cluster YAML here");
  synth->add_option("--queues-out", o->queues_out, "write the queues YAML here");
  synth->callback([&ctx, o] { ctx.action = [o](Context& c) { return run_synth(c, *o); }; });
}

}  // namespace

void add_sim_commands(CLI::App& app, Context& ctx, Only only) {
  if (!only.wants({"sim"})) return;
  auto* sim = app.add_subcommand("sim", "Simulate the scheduler on a state or a trace (no server)");
  sim->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* scenario = sim->add_subcommand(
      "scenario", "Run one scheduling cycle on the state in FILE and print the decisions as JSON");
  scenario->add_option("FILE", *file, "scenario YAML (the format: docs/reference/scenarios.md)")->required();
  scenario->callback(
      [&ctx, file] { ctx.action = [file](Context& c) { return run_scenario_file(c, *file); }; });
  add_fill_command(*sim, ctx);
  add_run_command(*sim, ctx);
  add_synth_command(*sim, ctx);
}


}  // namespace gpuq::cli
