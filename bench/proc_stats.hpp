#pragma once
// What the benchmarks read of a child process (gpuqd) from /proc: a /proc/PID/status field in
// KiB and the CPU seconds it has used.
#include <sys/types.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace gpuq::bench {

// A field of /proc/PID/status in KiB: "VmRSS:", "VmHWM:"; 0 when absent.
inline long status_kib(pid_t pid, const std::string& key) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string k;
  long v = 0;
  while (in >> k) {
    if (k == key) return in >> v, v;
    std::getline(in, k);
  }
  return 0;
}

// User + system CPU seconds the process has used so far (/proc/PID/stat fields 14 and 15).
inline double cpu_seconds(pid_t pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  std::getline(in, line);
  const auto close = line.rfind(')');  // the command name may hold spaces
  if (close == std::string::npos) return 0;
  std::istringstream rest(line.substr(close + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && rest >> field; ++i)
    if (i >= 14) ticks += std::stod(field);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

}  // namespace gpuq::bench
