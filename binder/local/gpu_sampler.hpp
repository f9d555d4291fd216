#pragma once
// GPU use sampling for the local executor (README.md in this folder: GPU use): every interval, on a thread of
// its own, `nvidia-smi --query-gpu=index,utilization.gpu,memory.used --format=csv,noheader,nounits`
// is run (no shell; with a deadline and a cap on its output), its CSV parsed, and the readings
// reported as one GpuSample. A failed run or bad output is logged and counted
// (gpuq_binder_errors_total{kind="gpu_sample_failed"}), never fatal: the next interval tries again.
#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "binder/binder.hpp"

namespace gpuq::binder {

// `index, utilization.gpu, memory.used` lines (units and "%"/"MiB" tolerated). A GPU whose
// utilization is "[N/A]" or "[Not Supported]" is left out; memory that is not a number reads 0.
// Throws std::runtime_error naming the line on anything else (a wrong field count, a bad index,
// a utilization outside 0..100).
std::vector<GpuReading> parse_gpu_readings(const std::string& csv);

// What a bounded run of a command gave: its stdout when it exited 0 in time with at most
// `max_bytes` of output; otherwise `error` says why (its output is then not to be trusted).
struct BoundedRun {
  std::string out;
  std::string error;  // empty: it ran fine
};
// Runs argv[0] (searched on PATH when it has no slash) with stdin and stderr on /dev/null, in a
// process group of its own that is killed (SIGKILL) at the deadline or past `max_bytes`.
BoundedRun run_bounded(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::size_t max_bytes);

class GpuSampler {
 public:
  struct Options {
    std::string nvidia_smi = "nvidia-smi";
    std::chrono::milliseconds interval{30000};
    std::chrono::milliseconds timeout{10000};  // one run of nvidia-smi
    std::size_t max_bytes = 64 * 1024;         // of its output (a few hundred GPUs' lines)
    std::string node;                          // named in each sample
  };
  GpuSampler(Options options, GpuReport report, std::shared_ptr<ErrorCounter> errors);
  ~GpuSampler();  // stop()
  void start();
  void stop();  // waits for the thread (a run in progress ends at its deadline at the latest)

  // One sample now (the thread's work; tests call it directly): false when it failed.
  bool sample_once();

 private:
  Options options_;
  GpuReport report_;
  std::shared_ptr<ErrorCounter> errors_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  std::thread thread_;
};

}  // namespace gpuq::binder
