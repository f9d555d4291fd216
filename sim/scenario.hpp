#pragma once
// `gpuq sim scenario FILE`: load a state, run one scheduling cycle at `now`, report the
// decisions as JSON (docs/reference/scenarios.md is the format).
#include <string>

#include <boost/json/value.hpp>


namespace gpuq::sim {

// Loads and runs the scenario in `yaml_text`. Throws spec::SpecError, naming `file_label`, the
// line and column and the field, when the input cannot be understood. Pending jobs that can never fit are not errors:
// they are reported under "rejected".
boost::json::value run_scenario(const std::string& yaml_text, const std::string& file_label);

// Pretty JSON: two-space indentation, keys in insertion order. Ends with a newline.
std::string to_pretty_json(const boost::json::value& v);
// The same on one line, as Boost.JSON serializes it but for doubles, which both write in their
// shortest exact decimal form ("0.953947", not Boost's "9.53947E-1"). No newline.
std::string to_compact_json(const boost::json::value& v);

}  // namespace gpuq::sim
