#include "sim/openb.hpp"

#include <algorithm>
#include <array>
#include <string_view>

#include "sim/csv.hpp"

namespace gpuq::sim {
namespace {

constexpr std::int64_t kMaxGpusPerNode = 255;
// memory_mib is scaled by 2^20; this bound keeps the bytes within kMaxQuantity.
constexpr std::int64_t kMaxMib = kMaxQuantity >> 20;

using csv::ColumnSpec;
using csv::CsvReader;
using csv::kNone;
using csv::shown;

template <class T>
const std::string& by_name(const T& item) {
  return item.name;
}

// The openb convention: a CPU-only pod asks 0 milli; a one-GPU pod asks a share (1..1000) of
// one GPU; a multi-GPU pod asks whole GPUs, 1000 each. (count() has already kept milli <= 1000.)
void check_gpu_milli(const CsvReader& in, std::size_t col, std::int64_t num_gpu,
                     std::int64_t milli) {
  const char* why = nullptr;
  if (num_gpu == 0 && milli != 0) why = ": a CPU-only pod takes no GPU (allowed: 0)";
  if (num_gpu >= 1 && milli < 1) why = " is outside 1..1000 (allowed: 1..1000 milli-GPU per GPU)";
  if (num_gpu > 1 && milli != kMilliPerGpu)
    why = ": a share of a GPU is only for one-GPU pods (allowed: 1000)";
  // The message is built only on failure: this runs for every row.
  if (why) in.fail(col, shown(in.field(col)) + " with num_gpu " + std::to_string(num_gpu) + why);
}

std::vector<std::string> gpu_models(const CsvReader& in, std::size_t col) {
  std::vector<std::string> models;
  if (col == kNone || csv::is_absent(in.field(col))) return models;
  const std::string_view spec = in.field(col);
  for (std::size_t from = 0; from <= spec.size();) {
    const std::size_t bar = std::min(spec.find('|', from), spec.size());
    if (bar == from)
      in.fail(col, shown(spec) +
                       " has an empty model name (allowed: models separated by '|', "
                       "or \"nan\" or empty for any model)");
    models.emplace_back(spec.substr(from, bar - from));
    from = bar + 1;
  }
  return models;
}

}  // namespace

std::vector<OpenbNode> parse_openb_nodes(const std::string& text, const std::string& label,
                                         const TraceReadOptions& options, TraceReadReport* report) {
  static constexpr std::array<ColumnSpec, 5> kColumns{
      {{"sn", true}, {"cpu_milli", true}, {"memory_mib", true}, {"gpu", true}, {"model", false}}};
  CsvReader in(text, label);
  const auto c = in.header(kColumns);
  return csv::read_rows<OpenbNode>(
      in, c[0], options, report,
      [&c](const CsvReader& row) {
        OpenbNode n;
        n.name = std::string(row.field(c[0]));
        n.cpu_milli = row.count(c[1], kMaxQuantity, "millicores");
        n.memory_bytes = row.count(c[2], kMaxMib, "MiB") << 20;
        n.gpus = static_cast<int>(row.count(c[3], kMaxGpusPerNode, "GPUs per node"));
        n.model = row.optional_text(c[4]);
        return n;
      },
      by_name<OpenbNode>);
}

std::vector<OpenbPod> parse_openb_pods(const std::string& text, const std::string& label,
                                       const TraceReadOptions& options, TraceReadReport* report) {
  static constexpr std::array<ColumnSpec, 10> kColumns{{{"name", true},
                                                        {"cpu_milli", true},
                                                        {"memory_mib", true},
                                                        {"num_gpu", true},
                                                        {"gpu_milli", true},
                                                        {"gpu_spec", false},
                                                        {"qos", false},
                                                        {"creation_time", false},
                                                        {"deletion_time", false},
                                                        {"scheduled_time", false}}};
  CsvReader in(text, label);
  const auto c = in.header(kColumns);
  return csv::read_rows<OpenbPod>(
      in, c[0], options, report,
      [&c](const CsvReader& row) {
        OpenbPod p;
        p.name = std::string(row.field(c[0]));
        p.cpu_milli = row.count(c[1], kMaxQuantity, "millicores");
        p.memory_bytes = row.count(c[2], kMaxMib, "MiB") << 20;
        // No node holds more than 255 GPUs, so no pod can use more.
        const std::int64_t num_gpu = row.count(c[3], kMaxGpusPerNode, "GPUs");
        const std::int64_t milli = row.count(c[4], kMilliPerGpu, "milli-GPU per GPU");
        check_gpu_milli(row, c[4], num_gpu, milli);
        p.num_gpu = static_cast<int>(num_gpu);
        p.gpu_milli = static_cast<int>(milli);
        p.gpu_models = gpu_models(row, c[5]);
        p.qos = row.optional_text(c[6]);
        p.creation_time = row.optional_count(c[7], kMaxQuantity, "seconds");
        p.deletion_time = row.optional_count(c[8], kMaxQuantity, "seconds");
        p.scheduled_time = row.optional_count(c[9], kMaxQuantity, "seconds");
        return p;
      },
      by_name<OpenbPod>);
}

std::vector<OpenbNode> read_openb_nodes(const std::string& path, const TraceReadOptions& options,
                                        TraceReadReport* report) {
  return parse_openb_nodes(csv::read_file(path), path, options, report);
}

std::vector<OpenbPod> read_openb_pods(const std::string& path, const TraceReadOptions& options,
                                      TraceReadReport* report) {
  return parse_openb_pods(csv::read_file(path), path, options, report);
}

std::vector<NodeSpec> openb_nodes_as_specs(const std::vector<OpenbNode>& nodes,
                                           const std::string& flavor) {
  std::vector<NodeSpec> specs;
  specs.reserve(nodes.size());
  for (const OpenbNode& n : nodes) {
    NodeSpec s;
    s.name = n.name;
    s.flavor = flavor;
    s.capacity[kGpu] = Quantity{n.gpus} * kMilliPerGpu;
    s.capacity[kCpu] = n.cpu_milli;
    s.capacity[kMemory] = n.memory_bytes;
    if (!n.model.empty()) s.labels[kGpuModelLabel] = n.model;
    specs.push_back(std::move(s));
  }
  return specs;
}

}  // namespace gpuq::sim
