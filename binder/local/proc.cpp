#include "binder/local/proc.hpp"

#include "binder/local/cgroup_ops.hpp"

#include <sys/syscall.h>
#include <unistd.h>

#include <dirent.h>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <string>
#include <string_view>
#include <vector>

namespace gpuq::binder::local {
namespace {

// The fields of /proc/PID/stat after the comm, split on spaces: [0] is field 3 (state), [1]
// field 4 (ppid), [19] field 22 (starttime). The comm (field 2) may hold spaces and parentheses,
// so the fields start after the LAST ')'.
std::vector<std::string_view> stat_fields(std::string_view stat) {
  std::vector<std::string_view> fields;
  const auto close = stat.rfind(')');
  if (close == std::string_view::npos) return fields;
  std::size_t at = close + 1;
  while (at < stat.size()) {
    while (at < stat.size() && (stat[at] == ' ' || stat[at] == '\n')) ++at;
    const std::size_t end = stat.find_first_of(" \n", at);
    const std::size_t stop = end == std::string_view::npos ? stat.size() : end;
    if (stop > at) fields.push_back(stat.substr(at, stop - at));
    at = stop;
  }
  return fields;
}

void append_pids(std::string_view text, std::vector<pid_t>& out) {
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find(' ', at), text.size());
    pid_t pid = 0;
    if (parse_number(text.substr(at, end - at), pid)) out.push_back(pid);
    at = end + 1;
  }
}

bool numeric(const char* name, pid_t& out) { return parse_number(std::string_view(name), out); }

}  // namespace

std::optional<std::uint64_t> process_start_ticks(pid_t pid) {
  if (pid <= 0) return std::nullopt;
  std::string stat;
  if (!read_small_file("/proc/" + std::to_string(pid) + "/stat", stat)) return std::nullopt;
  const auto fields = stat_fields(stat);
  if (fields.size() < 20 || fields[0] == "Z" || fields[0] == "X") return std::nullopt;
  std::uint64_t ticks = 0;
  if (!parse_number(fields[19], ticks)) return std::nullopt;
  return ticks;
}

std::string boot_id() {
  std::string id;
  if (!read_small_file("/proc/sys/kernel/random/boot_id", id)) return "";
  const auto first = id.find_first_not_of(" \t\r\n");
  if (first == std::string::npos) return "";
  const auto last = id.find_last_not_of(" \t\r\n");
  return id.substr(first, last - first + 1);
}

std::vector<pid_t> child_pids(pid_t parent) {
  const std::string task_dir = "/proc/" + std::to_string(parent) + "/task";
  DIR* dir = ::opendir(task_dir.c_str());
  if (dir == nullptr) return child_pids_by_scan(parent);
  std::vector<pid_t> out;
  bool missing = false;
  while (const dirent* entry = ::readdir(dir)) {
    pid_t tid = 0;
    if (!numeric(entry->d_name, tid)) continue;
    std::string text;
    if (read_small_file(task_dir + "/" + entry->d_name + "/children", text)) {
      append_pids(text, out);
    } else if (errno == ENOENT && ::access((task_dir + "/" + entry->d_name).c_str(), F_OK) == 0) {
      missing = true;  // the thread exists but the kernel has no children file
    }
  }
  ::closedir(dir);
  return missing ? child_pids_by_scan(parent) : out;
}

std::vector<pid_t> child_pids_by_scan(pid_t parent) {
  std::vector<pid_t> out;
  DIR* dir = ::opendir("/proc");
  if (dir == nullptr) return out;
  while (const dirent* entry = ::readdir(dir)) {
    pid_t pid = 0;
    std::string stat;
    if (!numeric(entry->d_name, pid)) continue;
    if (!read_small_file(std::string("/proc/") + entry->d_name + "/stat", stat)) continue;
    const auto fields = stat_fields(stat);
    pid_t ppid = 0;
    if (fields.size() > 1 && parse_number(fields[1], ppid) && ppid == parent) out.push_back(pid);
  }
  ::closedir(dir);
  return out;
}

int pidfd_open(pid_t pid) { return static_cast<int>(::syscall(SYS_pidfd_open, pid, 0)); }

int pidfd_signal(int pidfd, int sig) { return static_cast<int>(::syscall(SYS_pidfd_send_signal, pidfd, sig, nullptr, 0)); }

}  // namespace gpuq::binder::local
