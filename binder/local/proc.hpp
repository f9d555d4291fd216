#pragma once
// Small Linux (/proc) helpers shared by gpuq-shim and gpuqd. gpuqd re-adopts a running shim after
// a restart by pid AND start time (a pid alone may have been reused), within one boot.
#include <sys/types.h>

#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

namespace gpuq::binder::local {

// `v`, all of it, as a decimal number: false when it is empty, not a number, out of T's range or
// followed by anything else (the shim's status file, /proc's fields).
template <typename T>
bool parse_number(std::string_view v, T& out) {
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), out);
  return ec == std::errc() && end == v.data() + v.size();
}

// The start time of a process in clock ticks since boot (field 22 of /proc/PID/stat). nullopt
// when there is no such process or it is a zombie (state Z or X): a process that has ended is
// not running, even while its parent has not reaped it yet.
std::optional<std::uint64_t> process_start_ticks(pid_t pid);

// This boot's id (/proc/sys/kernel/random/boot_id), trimmed; "" when it cannot be read. Start
// ticks only identify a process together with the boot they were counted in.
std::string boot_id();

// The pids whose parent is `parent` (from /proc/PARENT/task/TID/children for all its threads,
// or, on kernels without that file, by scanning /proc/*/stat). gpuq-shim uses it to kill what a
// job left behind.
std::vector<pid_t> child_pids(pid_t parent);
// The scan of /proc/*/stat alone: child_pids' fallback, exposed so that it can be tested.
std::vector<pid_t> child_pids_by_scan(pid_t parent);

// pidfd_open(2) and pidfd_send_signal(2) (Linux 5.3+), by syscall: glibc 2.36's <sys/pidfd.h>
// declares them without extern "C". A pidfd names one process, never a later one with its pid.
// -1 with errno on failure; the pidfd is close-on-exec.
int pidfd_open(pid_t pid);
int pidfd_signal(int pidfd, int sig);

}  // namespace gpuq::binder::local
