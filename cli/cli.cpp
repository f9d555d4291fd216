#include "cli/cli.hpp"

#include <fstream>
#include <iostream>
#include <sstream>

#include "cli/commands.hpp"
#include "cli/requests.hpp"
#include "sim/fill.hpp"
#include "sim/openb.hpp"
#include "sim/scenario.hpp"
#include "sim/spec_yaml.hpp"

namespace gpuq::cli {

std::string read_file_arg(const std::string& path) {
  std::stringstream text;
  if (path == "-") {
    text << std::cin.rdbuf();
    return text.str();
  }
  std::ifstream in(path);
  if (!in) throw UsageError(path + ": cannot open the file");
  text << in.rdbuf();
  return text.str();
}

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
  ctx.out << sim::to_pretty_json(sim::run_scenario(read_file_arg(path), path));
  return 0;
}

void add_sim_commands(CLI::App& app, Context& ctx) {
  auto* sim = app.add_subcommand("sim", "Simulate the scheduler on a state or a trace (no server)");
  sim->require_subcommand(1);
  auto file = std::make_shared<std::string>();
  auto* scenario = sim->add_subcommand(
      "scenario", "Run one scheduling cycle on the state in FILE and print the decisions as JSON");
  scenario->add_option("FILE", *file, "scenario YAML (see shared/SCENARIOS.md)")->required();
  scenario->callback(
      [&ctx, file] { ctx.action = [file](Context& c) { return run_scenario_file(c, *file); }; });
  add_fill_command(*sim, ctx);
}

}  // namespace

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err) {
  Context ctx(out, err);
  CLI::App app{"gpuq: a fair-share GPU batch scheduler"};
  app.name("gpuq");
  app.require_subcommand(1);
  app.fallthrough();  // --server and --timeout may follow the subcommand
  app.add_option("--server", ctx.server_flag,
                 "HOST:PORT of gpuqd; default $GPUQ_SERVER, then 127.0.0.1:7433");
  app.add_option("--timeout", ctx.timeout_s, "seconds per call (default 30; 0: none; watch and logs -f: none)")
      ->check(CLI::NonNegativeNumber);
  add_job_commands(app, ctx);
  add_cluster_commands(app, ctx);
  add_admin_commands(app, ctx);
  add_sim_commands(app, ctx);
  std::vector<std::string> reversed(args.rbegin(), args.rend());  // CLI11 takes them reversed
  try {
    app.parse(reversed);
  } catch (const CLI::ParseError& e) {
    return app.exit(e, out, err) == 0 ? 0 : 2;
  }
  if (!ctx.action) return 2;
  try {
    return ctx.action(ctx);
  } catch (const UsageError& e) {
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const sim::SpecError& e) {
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const sim::TraceError& e) {
    err << "gpuq: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {  // a trace the simulator cannot model
    err << "gpuq: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace gpuq::cli
