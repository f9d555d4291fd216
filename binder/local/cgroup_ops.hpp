#pragma once
// What gpuq-shim and gpuqd do to a pod's cgroups once they exist (binder/local/CGROUPS.md): list
// their processes, signal and kill them all, read what the kernel counted. A pod has one cgroup
// per hierarchy it is held in (cgroup v2: one; v1: memory, cpu, pids, devices, freezer...); the
// first of them is the one its processes are listed from. Plain POSIX: the shim links it.
#include <sys/types.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::binder::local {

// The whole file, by read(2) alone: cgroup and /proc files report size 0, and the shim keeps to
// POSIX calls. False with errno set. (proc.cpp reads /proc with it too.)
bool read_small_file(const std::string& path, std::string& out);
// Writes `text` in one write(2), as cgroup files want it. False with errno set.
bool write_small_file(const std::string& path, std::string_view text);

// The processes in one cgroup (its cgroup.procs); empty when it has none or is gone.
std::vector<pid_t> cgroup_pids(const std::string& dir);
// Sends `sig` to every process in the cgroup, once. How many there were.
int signal_cgroup(const std::string& dir, int sig);
// Kills every process in the pod's cgroups, forks racing the kill included: cgroup v2's
// cgroup.kill where a cgroup has one; else v1's freezer (freeze, SIGKILL to each, thaw); else
// SIGKILL to each listed process, round after round. How many processes there were.
int kill_cgroup(const std::vector<std::string>& dirs);
// Waits until the pod's cgroups hold no process, at most `timeout_ms`; true when they are empty.
bool wait_cgroup_empty(const std::vector<std::string>& dirs, int timeout_ms);
// How many of its processes the kernel's OOM killer took at the memory limit of a cgroup among
// `dirs` (v2 memory.events, v1 memory.oom_control); 0 without a memory controller.
std::int64_t cgroup_oom_kills(const std::vector<std::string>& dirs);
// The memory limit of the pod (v2 memory.max, v1 memory.limit_in_bytes); 0: none or unknown.
std::int64_t cgroup_memory_limit(const std::vector<std::string>& dirs);
// The CPU time its processes used, microseconds (v2 cpu.stat usage_usec, v1 cpuacct.usage); -1
// without a controller that counts it.
std::int64_t cgroup_cpu_usec(const std::vector<std::string>& dirs);
// The most memory it held at once, bytes (v2 memory.peak, v1 memory.max_usage_in_bytes); -1
// without one.
std::int64_t cgroup_memory_peak(const std::vector<std::string>& dirs);

}  // namespace gpuq::binder::local
