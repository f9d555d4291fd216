#pragma once
// `gpuq sim synth`: a synthetic trace in the native CSV and a cluster YAML to replay it on, for
// benchmarks and examples. Deterministic: the same options give the same bytes.
#include <cstdint>
#include <string>

namespace gpuq::sim {

struct SynthOptions {
  std::size_t jobs = 1000;
  std::size_t gpus = 64;        // cluster size; nodes of 8 GPUs (the last may have fewer)
  std::size_t queues = 4;       // q0..qN-1, with skewed popularity (q0 the busiest)
  double load = 0.9;            // offered GPU-time over capacity, on average
  std::uint64_t seed = 1;
  double checkpoint_share = 0.25;  // jobs that declare a checkpoint interval
};

// The trace: id,submit,queue,priority,pods,gpu,cpu,memory,duration,max_runtime,checkpoint.
// GPUs per job 1 (55%), 2 (15%), 4 (15%), 8 (10%), 16 (5%, two pods of 8); a share of one GPU
// (500m) for a tenth of the 1-GPU jobs; durations log-uniform in [2 min, 8 h]; arrivals Poisson
// at the rate that makes the offered load `load`; priority 0, or 100 for 5% of jobs.
std::string synth_trace(const SynthOptions& o);
// nodes: gpus/8 nodes "n<i>" of 8 GPUs, 64 CPUs, 512Gi, flavor "default".
std::string synth_cluster(const SynthOptions& o);
// queues q0..qN-1 in cohort "all", each nominal gpus/N, unlimited borrowing, reclaim of what was
// lent and priority preemption within the queue.
std::string synth_queues(const SynthOptions& o);

}  // namespace gpuq::sim
