// Robustness: every scenario file, mutated at random (bytes changed, lines dropped or repeated,
// text cut short), must load into either a result or a SpecError that names the file. Never
// another exception, never a crash (the test also runs under ASan and UBSan).
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "sim/scenario.hpp"
#include "spec/error.hpp"
#include "tests/support/files.hpp"

namespace fs = std::filesystem;
using gpuq::test::slurp;

namespace {

std::string mutate(std::string text, std::mt19937& rng) {
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  static const std::string kAlphabet = " :-[]{},\"'\n#0123456789.mMGiKE-eab&*!|>%@`\t";
  switch (pick(5)) {
    case 0:  // change a few characters
      for (int k = 0; k < 3 && !text.empty(); ++k) text[pick(text.size())] = kAlphabet[pick(kAlphabet.size())];
      break;
    case 1:  // cut it short
      text.resize(pick(text.size() + 1));
      break;
    case 2: {  // drop a line
      std::size_t at = text.find('\n', pick(text.size() + 1));
      if (at != std::string::npos) {
        std::size_t end = text.find('\n', at + 1);
        text.erase(at, end == std::string::npos ? std::string::npos : end - at);
      }
      break;
    }
    case 3: {  // repeat a line
      std::size_t at = text.rfind('\n', pick(text.size() + 1));
      std::size_t end = text.find('\n', at == std::string::npos ? 0 : at + 1);
      if (at != std::string::npos && end != std::string::npos) text.insert(end, text.substr(at, end - at));
      break;
    }
    default:  // replace a number with an extreme one
      for (std::size_t i = pick(text.size() + 1); i < text.size(); ++i)
        if (std::isdigit(static_cast<unsigned char>(text[i]))) {
          static const char* kExtreme[] = {"-1", "0", "99999999999999999999", "1e300", "0.0001",
                                           "255", "256", "9e18", "8Ei", "4503599627370496"};
          text.replace(i, 1, kExtreme[pick(10)]);
          break;
        }
  }
  return text;
}

}  // namespace

TEST_CASE("mutated scenario files give a result or a SpecError naming the file, line and column, nothing else") {
  const std::regex located(R"(^m\.yaml:[0-9]+:[0-9]+: )");
  std::mt19937 rng(12345);
  std::size_t files = 0, results = 0, errors = 0;
  for (const auto& e : fs::directory_iterator(GPUQ_SCENARIO_DIR)) {
    if (e.path().extension() != ".yaml") continue;
    ++files;
    const std::string original = slurp(e.path());
    for (int round = 0; round < 40; ++round) {
      std::string text = original;
      for (int k = 0, n = 1 + static_cast<int>(rng() % 3); k < n; ++k) text = mutate(text, rng);
      CAPTURE(e.path().filename().string());
      CAPTURE(text);
      try {
        (void)gpuq::sim::run_scenario(text, "m.yaml");
        ++results;
      } catch (const gpuq::spec::SpecError& err) {
        ++errors;
        REQUIRE(std::regex_search(err.what(), located));
      }
    }
  }
  REQUIRE(files > 0);
  CHECK(results > 0);  // the mutations leave some files valid...
  CHECK(errors > 0);   // ...and break others
  MESSAGE(files << " files, " << results << " mutated files loaded, " << errors << " refused");
}
