#pragma once
// The local executor's cgroups (binder/local/CGROUPS.md): each pod of each job in a cgroup of its
// own under a subtree gpuqd owns, on cgroup v2 or v1, held there to the GPUs, CPU and memory it
// was given, and stopped as a whole. gpuqd makes the cgroups and sets their limits before it
// starts the pod's gpuq-shim; the shim's child joins them before it execs the job.
#include <sys/types.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "spec/result.hpp"
#include "spec/resources.hpp"

namespace gpuq::binder {

struct CgroupSettings {
  enum class Mode { kAuto, kOff, kRequired };
  enum class Version { kAuto, kV1, kV2 };
  // auto: cgroups where gpuqd can make and write its subtree, else a warning and none; off: none;
  // required: gpuqd refuses to start without them.
  Mode mode = Mode::kAuto;
  // auto: v2 where /sys/fs/cgroup is cgroup2 alone, else v1 (Slurm's CgroupPlugin=autodetect).
  Version version = Version::kAuto;
  // gpuqd's subtree, as a cgroup path: absolute ("/gpuq") from the hierarchy's root; relative
  // ("gpuq") under gpuqd's own cgroup; empty: gpuqd's own cgroup (under systemd, its unit's,
  // delegated to it with Delegate=yes).
  std::string root;
  // Each pod with a cpu request also gets as many whole CPUs of its own (cpuset.cpus), as
  // Slurm's ConstrainCores; off by default (the CPU bandwidth limit applies either way).
  bool cpuset = false;
};

// One mounted hierarchy and gpuqd's place in it.
struct CgroupHierarchy {
  bool v2 = false;
  std::string mount;                     // where it is mounted
  std::vector<std::string> controllers;  // v1: its controllers ("memory"; "cpu", "cpuacct")
  std::string own;                       // gpuqd's cgroup in it ("/system.slice/gpuqd.service")
};
// From /proc/self/mountinfo and /proc/self/cgroup; the hierarchies gpuqd is in.
std::vector<CgroupHierarchy> parse_cgroup_hierarchies(const std::string& mountinfo, const std::string& self_cgroup);

// What one pod is held to.
struct PodCgroupLimits {
  Quantity cpu = 0;     // millicores; 0: no CPU bandwidth limit
  Quantity memory = 0;  // bytes; 0: no memory limit
  std::int64_t max_processes = 0;  // 0: no limit
  // NVIDIA device minors (major 195): the pod's own GPUs, and the machine's others.
  std::vector<int> gpu_minors, other_gpu_minors;
  // The CPUs it may run on ("2-3,6"); empty: those of the subtree.
  std::string cpus;
};
// CPU numbers as the kernel lists them ("0-2,5\n" -> {0, 1, 2, 5}; empty when unreadable). The
// kernel's list is Slurm's array form: spec::array_text writes it.
std::vector<int> parse_cpu_list(const std::string& text);

// The NVIDIA character devices' major: /dev/nvidia0..N, /dev/nvidiactl (255), /dev/nvidia-modeset (254).
inline constexpr int kNvidiaMajor = 195;

class Cgroups {
 public:
  Cgroups() = default;
  // Finds the hierarchies and makes gpuqd's subtree; an error says why there are no cgroups.
  static Result<Cgroups> open(const CgroupSettings& settings);
  static Result<Cgroups> open(const CgroupSettings& settings, const std::vector<CgroupHierarchy>& found);

  int version() const { return v2_ ? 2 : 1; }
  // "cgroup v2 at /sys/fs/cgroup/system.slice/gpuqd.service (cpu, memory, pids, devices)".
  std::string describe() const;
  // What it cannot hold jobs to ("memory: the controller is not enabled ..."); empty: everything.
  const std::vector<std::string>& missing() const { return missing_; }

  // Makes the pod's cgroups and sets its limits: the directories its shim's child joins (the
  // first lists its processes). An error names the file and why.
  Result<std::vector<std::string>> prepare(const std::string& job, std::size_t pod, const PodCgroupLimits& limits) const;
  std::vector<std::string> pod_dirs(const std::string& job, std::size_t pod) const;
  // Kills what is in a pod's cgroups and waits (up to 5 s) until they are empty: how many
  // processes there were.
  int kill_pod(const std::string& job, std::size_t pod) const;
  // The jobs that have cgroups here.
  std::vector<std::string> jobs() const;
  // Kills what is left in each of the job's pods and removes its cgroups: how many processes
  // there were.
  int remove_job(const std::string& job) const;
  // Whether pods can be given CPUs of their own (settings.cpuset and a cpuset controller).
  bool has_cpuset() const { return cpuset_; }
  // The CPUs a pod's cgroup holds it to (after a restart: which are taken); empty: none.
  std::vector<int> pod_cpus(const std::string& job, std::size_t pod) const;

 private:
  struct Root {
    std::string dir;  // <mount>/<subtree>
    std::vector<std::string> controllers;
  };
  std::string job_dir(const Root& r, const std::string& job) const;
  Result<void> limit_v1(const Root& r, const std::string& dir, const PodCgroupLimits& l) const;
  Result<void> limit_v2(const std::string& dir, const PodCgroupLimits& l) const;

  bool v2_ = false;
  std::vector<Root> roots_;  // v2: one; v1: one per hierarchy, the freezer's first
  std::vector<std::string> enabled_;  // v2: the controllers enabled for the jobs
  bool bpf_devices_ = false;          // v2: the device program can be loaded
  bool cpuset_ = false;
  std::vector<std::string> missing_;
  // An flock on the subtree's first root, held while gpuqd runs: two gpuqds never share one (each
  // would kill the other's jobs as strays).
  std::shared_ptr<int> lock_;
};

}  // namespace gpuq::binder
