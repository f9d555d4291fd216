#pragma once
// Job traces for `gpuq sim run`: every supported format is read into one list of TraceJob, so
// the replay never knows where a job came from. Formats (sim/README.md has the details and how
// each maps onto a job):
//   native   gpuq's own CSV (docs/reference/traces.md): id, submit, queue, priority, pods,
//            gpu, cpu, memory, duration, max_runtime, checkpoint
//   openb    the Alibaba GPU 2023 pod lists (submit = creation_time, duration = deletion_time -
//            scheduled_time); tenant = qos
//   philly   Gavel's per-VC Philly traces (tab-separated, no header; a file or a folder of
//            *.trace); tenant = the file's name (the VC); durations are synthetic (derived)
//   tiresias the Tiresias sample CSV (job_id, num_gpu, submit_time, ..., duration); no tenant
// Errors are TraceError, "FILE:LINE:COLUMN: column \"x\": \"v\" ... (allowed: ...)", as in
// openb.hpp; TraceReadOptions::skip_bad_rows skips and counts malformed rows instead.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "scheduler/model.hpp"
#include "sim/openb.hpp"

namespace gpuq::sim {

struct TraceJob {
  std::string id;      // unique within the trace
  std::string tenant;  // the trace's own tenant (native queue, Philly VC, openb qos); "" if none
  std::string queue;   // the queue it is submitted to: set by assign_queues()
  Time submit = 0;     // seconds from the trace's start
  Time duration = 1;   // seconds of work; it finishes after running this long in total
  std::int32_t priority = 0;
  std::vector<PodSet> pod_sets;  // a gang: all pods or none
  std::optional<Time> max_runtime;
  // Seconds between checkpoints; 0: none, a preempted or lost run restarts from scratch. With
  // checkpoints it resumes from the last one it passed, and the work since is lost.
  Time checkpoint_interval = 0;

  Quantity total_gpu_milli() const {
    Quantity gpu = 0;
    for (const PodSet& s : pod_sets) gpu += s.per_pod[kGpu] * s.count;
    return gpu;
  }
};

enum class TraceFormat { kNative, kOpenb, kPhilly, kTiresias };
const char* to_string(TraceFormat f);
// "native", "openb", "philly", "tiresias"; nullopt otherwise.
std::optional<TraceFormat> trace_format_named(const std::string& name);
// From the first line of the file (or the first *.trace file of a folder): the header's column
// names, or a tab-separated line of 7 fields for philly. Throws TraceError saying what was seen
// and which formats exist when none matches.
TraceFormat detect_trace_format(const std::string& path);

// Reads a trace; `path` is a file, or for philly a file or a folder of *.trace files (read in
// name order). Jobs come back sorted by (submit, then the order read). Throws TraceError.
std::vector<TraceJob> read_trace(const std::string& path, TraceFormat format,
                                 const TraceReadOptions& options = {},
                                 TraceReadReport* report = nullptr);

// The same from text in memory (philly: one file's text; `label` is its file name, whose stem
// is the VC).
std::vector<TraceJob> parse_trace(const std::string& text, const std::string& label,
                                  TraceFormat format, const TraceReadOptions& options = {},
                                  TraceReadReport* report = nullptr);

// The Tiresias cluster spec (num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,
// mem_p_node; one row): nodes "s<switch>-n<node>" with label "switch", flavor `flavor`.
std::vector<NodeSpec> read_tiresias_cluster(const std::string& path, const std::string& flavor);

// Which queue each job goes to.
enum class QueueRule {
  kTrace,       // the job's tenant (an error when the trace has none)
  kRoundRobin,  // queues[i % n] in trace order
  kHash,        // queues[fnv1a(id) % n]: stable whatever the order
};
// "trace", "round-robin", "hash"; nullopt otherwise.
std::optional<QueueRule> queue_rule_named(const std::string& name);
// Sets TraceJob::queue. `queues` are the targets of round-robin and hash (not empty then).
// Throws std::invalid_argument when kTrace finds a job without a tenant (naming the job and
// the other rules).
void assign_queues(std::vector<TraceJob>& jobs, QueueRule rule,
                   const std::vector<std::string>& queues);

}  // namespace gpuq::sim
