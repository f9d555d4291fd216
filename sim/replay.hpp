#pragma once
// `gpuq sim run`: a trace replayed through the production Engine in virtual time. Arrivals,
// finishes, preempted jobs stopping and injected node failures are events on one clock; all the
// events of an instant are applied, then the engine runs one scheduling cycle, exactly as gpuqd
// would at that moment. A preempted (or lost) run restarts from scratch, or from its last
// checkpoint when the job declares an interval; the work since is counted as lost.
//
// Deterministic: the same inputs give byte-identical jobs.csv and summary.json (wall time is
// reported apart, in ReplayResult, and in summary.json only when asked).
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/json/value.hpp>

#include "scheduler/engine.hpp"
#include "sim/trace.hpp"

namespace gpuq::sim {

// A node going down (its jobs are lost: requeued, or Failed by their onNodeLoss) or coming back.
struct NodeEvent {
  Time at = 0;
  std::string node;
  bool down = true;
};
// CSV with header `time,node,event` (event: down or up); errors name file, line and column.
std::vector<NodeEvent> read_node_events(const std::string& path);
std::vector<NodeEvent> parse_node_events(const std::string& text, const std::string& label);

struct ReplayInput {
  std::string label;        // the variant's name in reports ("pack + a.yaml")
  std::string queues_file;  // shown in reports
  EngineConfig config;      // placement included
  ResourceNames names;
  std::vector<QueueSpec> queues;
  std::vector<NodeSpec> nodes;
  // Queue assigned, sorted by submit; shared by the variants that replay the same assignment.
  std::shared_ptr<const std::vector<TraceJob>> jobs;
  std::vector<NodeEvent> node_events;
  Time grace_period = 30;           // given to every job (JobSpec::grace_period)
  std::size_t timeline_points = 300;  // samples in summary.json's timeline
};

// What happened to one trace job.
struct JobOutcome {
  JobState state = JobState::kPending;  // Pending: never finished (the trace ended first)
  Time first_admit = -1;                // -1: never admitted
  Time finish = -1;                     // -1: not finished
  std::int32_t preemptions = 0;
  std::int32_t lost_runs = 0;  // runs lost with their node
  Time lost_work = 0;          // seconds of run time thrown away (x the job's GPUs for GPU-hours)
  std::string placement;       // the last run's nodes, "node[gpus]" per pod, ';'-separated
  std::string reason;          // why it ended (Failed/Cancelled) or was rejected
};

struct ReplayResult {
  std::vector<JobOutcome> jobs;  // parallel to ReplayInput::jobs
  boost::json::value summary;    // sim/report.hpp documents the keys
  std::uint64_t events = 0;      // trace events applied (arrivals, finishes, stops, node events)
  std::uint64_t cycles = 0;      // schedule() calls
  double wall_seconds = 0;
};

// Throws std::invalid_argument when the setup cannot run (a queue or node the engine refuses, a
// node event for a node that does not exist), naming what.
ReplayResult run_replay(const ReplayInput& input);

// One row per job: id,queue,priority,gpus,submit,admit,finish,wait,completion,state,
// preemptions,lost_runs,lost_work_s,placement,reason.
std::string jobs_csv(const ReplayInput& input, const ReplayResult& result);

// Adds "wall_seconds" and "events_per_second" to the summary (not byte-stable).
void add_timing(ReplayResult& result);

}  // namespace gpuq::sim
