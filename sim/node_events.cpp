// Node failures to inject into `gpuq sim run`: CSV `time,node,event`, on the trace readers' CSV
// reader (so its messages are theirs: FILE:LINE:COLUMN, the column, the value, what is allowed).
#include <algorithm>
#include <array>

#include "sim/csv.hpp"
#include "sim/replay.hpp"

namespace gpuq::sim {

std::vector<NodeEvent> parse_node_events(const std::string& text, const std::string& label) {
  static constexpr std::array<csv::ColumnSpec, 3> kColumns{
      {{"time", true}, {"node", true}, {"event", true}}};
  if (text.find_first_not_of(" \t\r\n") == std::string::npos)
    throw TraceError(label + ":1: the file is empty; the header is time,node,event");
  csv::CsvReader in(text, label);
  const auto c = in.header(kColumns);
  std::vector<NodeEvent> out;
  while (in.next_line()) {
    in.split_row();
    NodeEvent e;
    e.at = in.count(c[0], kMaxQuantity, "seconds");
    e.node = std::string(in.field(c[1]));
    if (e.node.empty()) in.fail(c[1], "is empty (allowed: a node of the cluster)");
    const std::string_view event = in.field(c[2]);
    if (event != "down" && event != "up")
      in.fail(c[2], csv::shown(event) + " is not allowed (allowed: down, up)");
    e.down = event == "down";
    out.push_back(std::move(e));
  }
  std::stable_sort(out.begin(), out.end(), [](const NodeEvent& a, const NodeEvent& b) { return a.at < b.at; });
  return out;
}

std::vector<NodeEvent> read_node_events(const std::string& path) {
  return parse_node_events(csv::read_file(path), path);
}

}  // namespace gpuq::sim
