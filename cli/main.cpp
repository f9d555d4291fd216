// gpuq: the command line. For now: `gpuq sim scenario FILE`.
#include <CLI/CLI.hpp>
#include <fstream>
#include <iostream>
#include <sstream>

#include "sim/scenario.hpp"
#include "sim/spec_yaml.hpp"

namespace {

int run_scenario_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) {
    std::cerr << "gpuq: " << path << ": cannot open the file\n";
    return 2;
  }
  std::stringstream text;
  text << in.rdbuf();
  try {
    std::cout << gpuq::sim::to_pretty_json(gpuq::sim::run_scenario(text.str(), path));
    return 0;
  } catch (const gpuq::sim::SpecError& e) {
    std::cerr << "gpuq: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"gpuq: a fair-share GPU batch scheduler"};
  app.require_subcommand(1);
  auto* sim = app.add_subcommand("sim", "Simulate the scheduler on a state or a trace");
  sim->require_subcommand(1);
  std::string scenario_file;
  auto* scenario = sim->add_subcommand(
      "scenario", "Run one scheduling cycle on the state in FILE and print the decisions as JSON");
  scenario->add_option("FILE", scenario_file, "scenario YAML (see shared/SCENARIOS.md)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (scenario->parsed()) return run_scenario_file(scenario_file);
  return 2;
}
