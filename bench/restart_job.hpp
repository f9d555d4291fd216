#pragma once
// The pending job daemon_bench's restart run writes and job_memory holds by part: job i of a
// state file of one-pod jobs (1-4 GPUs, a 4-word command, queue "team"), so the two benchmarks
// measure the same jobs (bench/HISTORY.md: Under 1,000 bytes a pending job).
#include <cstdint>
#include <string>

#include "storage/store.hpp"

namespace gpuq::bench {

inline storage::JobRecord restart_job(long i) {
  storage::JobRecord r;
  r.spec.id = JobId("p" + std::to_string(i));
  r.spec.queue = QueueName("team");
  r.spec.submitted_at = 1'700'000'000 + i / 1000;
  PodSet s;
  s.name = "main";
  s.per_pod[kGpu] = 1000 * (1 + i % 4);
  r.spec.pod_sets.push_back(s);
  r.run.command = {"python", "train.py", "--step", std::to_string(i)};
  r.number = static_cast<std::uint64_t>(i + 1);
  return r;
}

}  // namespace gpuq::bench
