// Node failures to inject into `gpuq sim run`: CSV `time,node,event`.
#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

#include "sim/replay.hpp"

namespace gpuq::sim {

std::vector<NodeEvent> parse_node_events(const std::string& text, const std::string& label) {
  std::vector<NodeEvent> out;
  std::istringstream in(text);
  std::string line;
  int at_time = -1, at_node = -1, at_event = -1;
  std::size_t fields = 0;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (number == 1 && line.starts_with("\xEF\xBB\xBF")) line.erase(0, 3);
    if (line.empty()) continue;
    std::vector<std::string> f;
    std::stringstream s(line);
    for (std::string part; std::getline(s, part, ',');) f.push_back(part);
    if (line.back() == ',') f.emplace_back();
    const std::string where = label + ":" + std::to_string(number);
    if (at_time < 0) {
      for (std::size_t i = 0; i < f.size(); ++i) {
        int* slot = f[i] == "time" ? &at_time : f[i] == "node" ? &at_node : f[i] == "event" ? &at_event : nullptr;
        if (!slot)
          throw TraceError(where + ":" + std::to_string(i + 1) + ": column \"" + f[i] +
                           "\" is not known (allowed: time, node, event)");
        *slot = static_cast<int>(i);
      }
      for (const auto& [name, slot] : {std::pair{"time", at_time}, {"node", at_node}, {"event", at_event}})
        if (slot < 0) throw TraceError(where + ": column \"" + std::string(name) + "\" is missing (the header is time,node,event)");
      fields = f.size();
      continue;
    }
    if (f.size() != fields)
      throw TraceError(where + ": has " + std::to_string(f.size()) + " fields, the header " + std::to_string(fields));
    auto col = [&](int i) { return where + ":" + std::to_string(i + 1) + ": column "; };
    NodeEvent e;
    const std::string& t = f[static_cast<std::size_t>(at_time)];
    const auto [end, ec] = std::from_chars(t.data(), t.data() + t.size(), e.at);
    if (ec != std::errc() || end != t.data() + t.size() || e.at < 0)
      throw TraceError(col(at_time) + "\"time\": \"" + t + "\" is not a whole number of seconds >= 0");
    e.node = f[static_cast<std::size_t>(at_node)];
    if (e.node.empty()) throw TraceError(col(at_node) + "\"node\": is empty (allowed: a node of the cluster)");
    const std::string& ev = f[static_cast<std::size_t>(at_event)];
    if (ev != "down" && ev != "up")
      throw TraceError(col(at_event) + "\"event\": \"" + ev + "\" is not allowed (allowed: down, up)");
    e.down = ev == "down";
    out.push_back(std::move(e));
  }
  if (at_time < 0) throw TraceError(label + ":1: the file is empty; the header is time,node,event");
  std::stable_sort(out.begin(), out.end(), [](const NodeEvent& a, const NodeEvent& b) { return a.at < b.at; });
  return out;
}

std::vector<NodeEvent> read_node_events(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw TraceError(path + ": cannot open the file");
  std::stringstream s;
  s << in.rdbuf();
  return parse_node_events(s.str(), path);
}

}  // namespace gpuq::sim
