#pragma once
// The local executor (DESIGN.md: Binders): gpuqd runs each admitted pod as real processes on
// this machine, with CUDA_VISIBLE_DEVICES set to the GPUs the engine gave it. Each pod is one
// gpuq-shim (shim_main.cpp) in a session of its own, which runs the command in another, does
// the grace period and the max runtime itself, and leaves the outcome in a status file; so the
// pods outlive gpuqd and are adopted again when it restarts (pid + start time + boot id).
//
// Files, per job and pod i: <runDir>/<job>/pod-<i>.pid (pid, start time, boot id: written by
// gpuqd once the shim runs), <runDir>/<job>/pod-<i>.status (the shim's outcome) and
// <logDir>/<job>/pod-<i>.log (stdout and stderr of the command, appended across attempts).
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "binder/binder.hpp"
#include "binder/local/cgroups.hpp"

namespace gpuq::binder {

struct LocalGpu {
  int index = 0;
  std::string uuid;  // empty for virtual GPUs
  std::string name;
  std::int64_t memory_mib = 0;
  // Its device file's minor (/dev/nvidiaN, major 195): the driver's "Device Minor"; for a
  // virtual GPU, its index. What a pod's cgroup lets it open.
  int minor = -1;
};

struct LocalConfig {
  std::string node;                 // the node's name; empty: this machine's host name
  std::string flavor = "default";   // the node's flavor (queues' quotas name it)
  std::map<std::string, std::string> labels;
  std::string nvidia_smi = "nvidia-smi";  // empty: do not look for GPUs, use `gpus`
  int gpus = 8;                     // when nvidia-smi is missing or finds none: virtual GPUs
  std::string model = "virtual";    // their model name
  Quantity reserve_cpu = 0;         // millicores kept for the machine itself
  Quantity reserve_memory = 0;      // bytes kept for the machine itself
  std::filesystem::path log_dir = "var/logs";
  std::filesystem::path run_dir = "var/run";
  std::filesystem::path shim;       // empty: gpuq-shim beside gpuqd's file, else ../libexec/gpuq/
  // GPU use (README.md in this folder: GPU use): nvidia-smi is sampled this often (milliseconds), only when the
  // GPUs came from it; 0: never.
  std::int64_t gpu_sample_interval_ms = 30000;
  // A GPU is idle in a sample when its utilization is at most this (percent); gpuqd's Core
  // applies it (CoreConfig::gpu_idle_threshold), the binder only reads it from the config.
  int gpu_idle_threshold = 1;
  // Each pod in a cgroup of its own (binder/local/CGROUPS.md): local.cgroups, cgroupVersion,
  // cgroupRoot.
  CgroupSettings cgroups;
  // pids.max of each pod's cgroup: a fork bomb stops there. 0: no limit.
  std::int64_t max_processes_per_pod = 4096;
};

struct Inventory {
  std::vector<LocalGpu> gpus;
  std::string source;  // "nvidia-smi" or "config"
  Quantity cpu = 0;     // millicores, less the reserve
  Quantity memory = 0;  // bytes, less the reserve
  // The pods' cgroups (open_cgroups); none when local.cgroups is off or they are not available
  // (the start-up log says why).
  std::optional<Cgroups> cgroups;
};

// `nvidia-smi --query-gpu=index,uuid,name,memory.total --format=csv,noheader` output. Throws
// std::runtime_error naming the line on anything else.
std::vector<LocalGpu> parse_nvidia_smi(const std::string& csv);
// The machine: GPUs from nvidia-smi when it runs and finds some, else `gpus` virtual ones; CPUs
// and memory from the kernel, less the reserve. Errors say what is wrong.
Result<Inventory> discover(const LocalConfig& config);
// The GPUs' device minors from the driver (/proc/driver/nvidia/gpus/*/information: "GPU UUID"
// and "Device Minor"), by UUID; empty without the driver.
std::map<std::string, int> nvidia_minors(const std::filesystem::path& driver_dir = "/proc/driver/nvidia/gpus");
// Opens the pods' cgroups into `inventory` as the config says: an error only when they are
// required and not available; otherwise, without them, the reason in the log.
Result<void> open_cgroups(const LocalConfig& config, Inventory& inventory);
// The one node the local executor runs on.
NodeSpec local_node(const LocalConfig& config, const Inventory& inventory);
std::filesystem::path pod_log_path(const std::filesystem::path& log_dir, const std::string& job, int pod);

class LocalBinder final : public Binder {
 public:
  // `report` is called from the binder's own thread only (after start()).
  LocalBinder(LocalConfig config, Inventory inventory, Report report);
  // Stops watching; the pods run on (the next gpuqd adopts them).
  ~LocalBinder() override;

  void bind(const Admission& admission, const storage::JobRecord& job) override;
  void stop(const JobId& job, Time grace) override;
  void stop_now(const JobId& job) override;  // SIGUSR1 to its shims: they kill it at once
  void turn_closed() override;
  void turn_written(bool ok) override;
  std::optional<BinderFact> adopt(const storage::JobRecord& job) override;
  void stop_strays() override;
  void forget(const JobId& job) override;
  void start() override;
  void halt() override;
  void set_gpu_report(GpuReport report) override;
  bool confirms_stops() const override { return true; }
  Result<void> check_run(const RunSpec& run, const std::string& owner) const override;
  std::optional<std::filesystem::path> log_path(const JobId& job, int pod) const override;
  bool has_terminals() const override { return true; }
  Result<void> write_input(const JobId& job, int pod, std::string_view data) const override;

  const Inventory& inventory() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

}  // namespace gpuq::binder
