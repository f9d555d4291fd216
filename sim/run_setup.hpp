#pragma once
// `gpuq sim run` from files: the trace, the cluster, the queue configurations and the policies
// become one ReplayInput per variant (each queue file x each policy), and the results become
// jobs.csv, summary.json and report.html.
#include <optional>
#include <string>
#include <vector>

#include "sim/replay.hpp"

namespace gpuq::sim {

struct RunOptions {
  std::string trace;
  std::optional<TraceFormat> format;  // detected from the file when not given
  // YAML with `nodes:` (the scenario keys), the openb node list CSV, or a Tiresias cluster spec
  // CSV (told apart by the header).
  std::string cluster;
  std::vector<std::string> queue_files;  // YAML with `queues:` (+ engine settings); may be empty
  QueueRule assign = QueueRule::kTrace;
  std::size_t queue_count = 4;  // queues q0..qN-1 for round-robin/hash without a queue file
  std::vector<PlacementPolicy> policies;  // empty: the queue file's `placement`, else pack
  std::string node_events;                // optional CSV
  Time grace_period = 30;
  std::size_t timeline_points = 300;
  std::string flavor = "default";  // for nodes from a CSV cluster
  bool skip_bad_rows = false;
};

struct PreparedRuns {
  std::vector<ReplayInput> variants;
  TraceReadReport trace_report;
};

// Throws TraceError (trace, cluster CSV, node events), SpecError (YAML) or
// std::invalid_argument (anything else that cannot run), each naming the file and what.
PreparedRuns prepare_runs(const RunOptions& options);

// Writes the outputs into `dir` (created): one variant -> jobs.csv, summary.json, report.html;
// several -> <variant>/jobs.csv and <variant>/summary.json each, and one report.html comparing
// them. Returns the paths written. Throws std::runtime_error when a file cannot be written.
std::vector<std::string> write_outputs(const std::string& dir,
                                       const std::vector<ReplayInput>& variants,
                                       const std::vector<ReplayResult>& results);

// Writes `text` to `path`, creating its folder. Throws std::runtime_error naming what failed.
void write_file(const std::string& path, const std::string& text);

// One line per variant for the terminal: jobs, wait p50/p95, completion p50, allocation,
// preemptions, Jain's index.
std::string comparison_table(const std::vector<ReplayResult>& results);

// A directory name for a variant label ("pack + a.yaml" -> "pack-a").
std::string variant_slug(const std::string& label);

}  // namespace gpuq::sim
