#pragma once
// Readers for the Alibaba GPU 2023 "openb" trace CSVs (the FGD paper's cluster and workload:
// openb_node_list_*.csv and openb_pod_list_*.csv). Columns are found by their header name, in any
// order; extra columns are ignored. Every value is checked, so a replay never starts from a
// trace it misread: a bad row is a TraceError, or skipped and counted when asked.
//
// Messages start "FILE:LINE:COLUMN: " (LINE counts the header as line 1, COLUMN is the 1-based
// field position), then name the column, show the value in double quotes and say what is
// allowed, e.g. `pods.csv:7:5: column "gpu_milli": "abc" is not a whole number (allowed:
// 0..1000 milli-GPU per GPU)`. A problem with the header (a required column missing or given
// twice) is "FILE:1: ..." or "FILE:1:COLUMN: ..." and is never skipped.
//
// The CSV dialect: a UTF-8 BOM and CRLF line ends are accepted, blank lines are not rows, and a
// field may be double-quoted with "" standing for a quote inside it (a quoted field may not span
// lines: one row per line keeps line numbers exact and a bad row from swallowing the rest).
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "spec/resources.hpp"
#include "spec/types.hpp"
#include "spec/constraints.hpp"

namespace gpuq::sim {

struct TraceReadOptions {
  bool skip_bad_rows = false;  // skip malformed rows (and count them) instead of throwing
};

struct TraceReadReport {
  std::size_t rows = 0;                   // data rows read, skipped ones included
  std::size_t skipped = 0;                // rows - skipped rows were returned
  std::vector<std::string> first_errors;  // the first 5 messages of skipped rows
};

struct OpenbNode {
  std::string name;  // column sn
  Quantity cpu_milli = 0;
  Quantity memory_bytes = 0;  // memory_mib * 2^20
  int gpus = 0;               // column gpu, 0..255
  std::string model;          // "" when the column is missing, "nan" or empty
};

struct OpenbPod {
  std::string name;
  Quantity cpu_milli = 0;
  Quantity memory_bytes = 0;  // memory_mib * 2^20
  int num_gpu = 0;
  // Per GPU: 1..1000 when num_gpu >= 1 (below 1000 only when num_gpu == 1: a share of one GPU);
  // 0 when num_gpu == 0.
  int gpu_milli = 0;
  std::vector<std::string> gpu_models;  // gpu_spec split on '|'; empty: any model
  std::string qos;                      // "" when the column is missing, "nan" or empty
  // Seconds; absent when the column is missing or the value is "nan" or empty.
  std::optional<std::int64_t> creation_time, deletion_time, scheduled_time;

  Quantity total_gpu_milli() const { return Quantity{num_gpu} * gpu_milli; }
  // Where it may go: nodes of one of gpu_models (a required affinity on kGpuModelLabel; none
  // when it accepts any model). A node without a model never matches one, as in FGD.
  NodeConstraints where() const {
    NodeConstraints c;
    spec::require_gpu_models(c, gpu_models);
    return c;
  }
  // What the pod asks for: a share of one GPU or whole GPUs (milli-GPU), CPU and memory.
  ResourceVec resources() const {
    ResourceVec r;
    r[kGpu] = total_gpu_milli();
    r[kCpu] = cpu_milli;
    r[kMemory] = memory_bytes;
    return r;
  }
};

// Required columns: sn, cpu_milli, memory_mib, gpu; optional: model.
std::vector<OpenbNode> read_openb_nodes(const std::string& path,
                                        const TraceReadOptions& options = {},
                                        TraceReadReport* report = nullptr);
// Required columns: name, cpu_milli, memory_mib, num_gpu, gpu_milli; optional: gpu_spec, qos,
// creation_time, deletion_time, scheduled_time.
std::vector<OpenbPod> read_openb_pods(const std::string& path, const TraceReadOptions& options = {},
                                      TraceReadReport* report = nullptr);

// The node list as engine nodes of flavor `flavor`, labelled kGpuModelLabel with the model when
// the list has one.
std::vector<NodeSpec> openb_nodes_as_specs(const std::vector<OpenbNode>& nodes,
                                           const std::string& flavor);

// The same from text already in memory; `label` stands in for the file name in messages.
std::vector<OpenbNode> parse_openb_nodes(const std::string& text, const std::string& label,
                                         const TraceReadOptions& options = {},
                                         TraceReadReport* report = nullptr);
std::vector<OpenbPod> parse_openb_pods(const std::string& text, const std::string& label,
                                       const TraceReadOptions& options = {},
                                       TraceReadReport* report = nullptr);

}  // namespace gpuq::sim
