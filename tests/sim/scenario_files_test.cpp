// Runs every scenario under tests/scenarios/. For NAME.yaml, NAME.json holds the expected output
// (compared as JSON values), or NAME.err a text the error message must contain.
#include <doctest/doctest.h>

#include <boost/json.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "sim/scenario.hpp"
#include "spec/error.hpp"
#include "tests/support/files.hpp"

namespace fs = std::filesystem;
using gpuq::test::slurp;

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

TEST_CASE("every scenario file gives its expected output") {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(GPUQ_SCENARIO_DIR))
    if (e.path().extension() == ".yaml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  REQUIRE(files.size() >= 2);
  CHECK(fs::exists(fs::path(GPUQ_SCENARIO_DIR) / "worked-example-1-within-queue.yaml"));
  CHECK(fs::exists(fs::path(GPUQ_SCENARIO_DIR) / "worked-example-2-reclaim.yaml"));

  for (const auto& yaml : files) {
    auto json_path = fs::path(yaml).replace_extension(".json");
    auto err_path = fs::path(yaml).replace_extension(".err");
    CAPTURE(yaml.filename().string());
    REQUIRE_MESSAGE((fs::exists(json_path) || fs::exists(err_path)),
                    "no .json or .err beside the scenario");
    if (fs::exists(json_path)) {
      boost::json::value got;
      std::string error;
      try {
        got = gpuq::sim::run_scenario(slurp(yaml), yaml.filename().string());
      } catch (const gpuq::spec::SpecError& e) {
        error = e.what();
      }
      CHECK_MESSAGE(error.empty(), error);
      boost::json::value want = boost::json::parse(slurp(json_path));
      CHECK_MESSAGE(got == want, "got:\n" << gpuq::sim::to_pretty_json(got) << "want:\n"
                                          << gpuq::sim::to_pretty_json(want));
    } else {
      std::string want = trim(slurp(err_path));
      std::string error;
      try {
        (void)gpuq::sim::run_scenario(slurp(yaml), yaml.filename().string());
      } catch (const gpuq::spec::SpecError& e) {
        error = e.what();
      }
      CHECK_MESSAGE(error.find(want) != std::string::npos,
                    "error was: \"" << error << "\"; expected it to contain \"" << want << "\"");
    }
  }
}

TEST_CASE("the same scenario twice gives byte-identical output") {
  for (const auto& e : fs::directory_iterator(GPUQ_SCENARIO_DIR)) {
    if (e.path().extension() != ".yaml" || !fs::exists(fs::path(e.path()).replace_extension(".json")))
      continue;
    CAPTURE(e.path().filename().string());
    std::string text = slurp(e.path());
    CHECK(gpuq::sim::to_pretty_json(gpuq::sim::run_scenario(text, "a")) ==
          gpuq::sim::to_pretty_json(gpuq::sim::run_scenario(text, "a")));
  }
}
