#pragma once
// nvidia-smi's `--format=csv,noheader` output, one line at a time, for the GPU discovery
// (inventory.cpp) and the utilization sampler (gpu_sampler.cpp): each non-blank line's fields,
// trimmed, and how an error names that line.
#include <functional>
#include <sstream>
#include <string>
#include <vector>

#include <boost/algorithm/string/trim.hpp>

namespace gpuq::binder {

// `row(fields, where)` for each non-blank line; `where` is `nvidia-smi output line N "TEXT": `
// (the text cut to 200 bytes), to start an error message with.
inline void for_each_smi_row(
    const std::string& csv, const std::function<void(const std::vector<std::string>&, const std::string&)>& row) {
  std::istringstream in(csv);
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (boost::algorithm::trim_copy(line).empty()) continue;
    std::vector<std::string> fields;
    std::istringstream parts(line);
    for (std::string x; std::getline(parts, x, ',');) fields.push_back(boost::algorithm::trim_copy(x));
    row(fields, "nvidia-smi output line " + std::to_string(n) + " \"" + line.substr(0, 200) + "\": ");
  }
}

}  // namespace gpuq::binder
