#pragma once
// The status file gpuq-shim leaves behind when it has exited (binder/local/README.md). It is how
// gpuqd learns how a job ended even when gpuqd was not running at that moment: the shim outlives
// gpuqd, so the outcome cannot travel by waitpid() alone. The shim writes it once, atomically
// (FILE.tmp, fsync, rename, fsync of the directory), only after no process of the job is left.
//
// Format: key=value lines. Readers ignore keys they do not know, so a newer shim can add keys
// without breaking an older gpuqd. Values are escaped (\\, \n, \r) so any text fits on one line.
#include <cstdint>
#include <optional>
#include <string>

namespace gpuq::binder::local {

struct ShimStatus {
  enum class Outcome { kExited, kSignaled, kError };
  Outcome outcome = Outcome::kExited;
  int code = 0;                       // the exit code when kExited; 127 when kError
  int signal = 0;                     // the terminating signal when kSignaled
  bool stop_requested = false;        // gpuqd asked the shim to stop the job
  bool max_runtime_exceeded = false;  // the shim stopped it at its max runtime
  bool killed_after_grace = false;    // it outlived the grace period and got SIGKILL
  std::string error;                  // why it could not start, when kError
  std::int64_t started_at = 0;        // unix seconds
  std::int64_t ended_at = 0;          // unix seconds: when the job's main process ended
  std::int64_t max_runtime = 0;       // seconds, as given to the shim (0: none); for describe()
  // From the pod's cgroup (binder/local/CGROUPS.md), when it has a memory controller: how many
  // of the job's processes the kernel's OOM killer took at the cgroup's limit, and that limit
  // (bytes; 0: none or not known).
  std::int64_t oom_kills = 0;
  std::int64_t memory_limit = 0;
  // What the pod used, from its cgroup (-1: not known): CPU time of all its processes,
  // microseconds, and the most memory it held at once, bytes.
  std::int64_t cpu_usec = -1;
  std::int64_t memory_peak = -1;
};

std::string format_status(const ShimStatus& status);
// nullopt when the text has no valid `outcome`, or a known key has a malformed value.
std::optional<ShimStatus> parse_status(const std::string& text);

// Writes PATH.tmp, fsyncs it, renames it to PATH and fsyncs the directory. False on any failure
// (errno tells which).
bool write_status_file(const std::string& path, const ShimStatus& status);
// nullopt when the file cannot be read or does not parse.
std::optional<ShimStatus> read_status_file(const std::string& path);

// The reason gpuqd shows for the job's end: "exit code 3", "killed by signal 9 (SIGKILL)",
// "max runtime of 10 s exceeded; killed by signal 15 (SIGTERM)", the error text for kError;
// "out of memory: 2 GiB limit; killed by signal 9 (SIGKILL)" when the OOM killer took a process
// of a job that then failed.
// Empty for a plain exit code 0.
std::string describe(const ShimStatus& status);
// The exit code a shell would report: the code; 128 + signal; 127 for an error.
int exit_code_of(const ShimStatus& status);
// Bytes as people write them: "2 GiB", "512 MiB", "1.5 GiB", "100 B".
std::string bytes_text(std::int64_t bytes);

}  // namespace gpuq::binder::local
