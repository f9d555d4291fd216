#pragma once
// The harness of the bad-input suites (bad_input_test.cpp, bad_input_jobs_test.cpp): every field
// of the scenario format (docs/reference/scenarios.md), fed a wrong value, a wrong type, a duplicate or
// nothing at all, must give a SpecError that starts with the file's name, line and column, names
// the field by its path, shows the offending value and says what is allowed.
#include <doctest/doctest.h>

#include <cctype>
#include <string>
#include <utility>
#include <vector>

#include "sim/scenario.hpp"
#include "spec/error.hpp"

namespace gpuq::test {
struct Bad {
  const char* what;
  std::string yaml;
  std::string path;   // after "file.yaml:LINE:COLUMN: ", the message has path + ": " (unless empty)
  std::string value;  // the message must contain "\"" + value + "\"" (unless empty)
  std::string hint;   // the message must contain this: what is allowed, or what is wrong
};

// The message of the SpecError, or a line saying what happened instead.
inline std::string error_of(const std::string& yaml) {
  try {
    (void)gpuq::sim::run_scenario(yaml, "file.yaml");
  } catch (const gpuq::spec::SpecError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("(not a SpecError) ") + e.what();
  }
  return "(accepted)";
}

// "file.yaml:LINE:COLUMN: " at the start of msg: every error says where it is. Returns the
// position after it and the "LINE:COLUMN" seen (npos when absent).
inline std::pair<std::size_t, std::string> location(const std::string& msg) {
  const std::string file = "file.yaml:";
  if (msg.rfind(file, 0) != 0) return {std::string::npos, ""};
  std::size_t i = file.size();
  const std::size_t start = i;
  for (int part = 0; part < 2; ++part) {
    const std::size_t digits = i;
    while (i < msg.size() && std::isdigit(static_cast<unsigned char>(msg[i]))) ++i;
    if (i == digits || i >= msg.size() || msg[i] != ':') return {std::string::npos, ""};
    ++i;
  }
  if (i >= msg.size() || msg[i] != ' ') return {std::string::npos, ""};
  return {i + 1, msg.substr(start, i - 1 - start)};
}

inline void check_bad(const Bad& c) {
  const std::string what = c.what;
  CAPTURE(what);
  CAPTURE(c.yaml);
  const std::string msg = error_of(c.yaml);
  CAPTURE(msg);
  const auto [after, where] = location(msg);
  REQUIRE(after != std::string::npos);
  // `path` is a field's path, or, for a syntax error, "line L, column C".
  if (c.path.rfind("line ", 0) == 0) {
    const std::size_t comma = c.path.find(", column ");
    CHECK(where == c.path.substr(5, comma - 5) + ":" + c.path.substr(comma + 9));
  } else if (!c.path.empty()) {
    CHECK(msg.compare(after, c.path.size() + 2, c.path + ": ") == 0);
  }
  if (!c.value.empty()) CHECK(msg.find("\"" + c.value + "\"") != std::string::npos);
  CHECK(msg.find(c.hint) != std::string::npos);
}

inline void check_all(const std::vector<Bad>& cases) {
  for (const Bad& c : cases) check_bad(c);
}

inline void check_ok(const std::string& what, const std::string& yaml) {
  CAPTURE(what);
  CAPTURE(yaml);
  CHECK(error_of(yaml) == "(accepted)");
}

// A job that is fine, with `extra` keys added.
inline std::string job(const std::string& extra) {
  return "{id: a, queue: q, pods: [{resources: {gpu: 1}}]" + (extra.empty() ? "" : ", " + extra) +
         "}";
}
// A job with these pods.
inline std::string pods(const std::string& p) { return "{id: a, queue: q, pods: " + p + "}"; }

inline const std::string kQueue = "queues: [{name: q}]\n";

}  // namespace gpuq::test
