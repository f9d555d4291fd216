#include "binder/local/cgroup_ops.hpp"

#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <ctime>

#include "binder/local/proc.hpp"

namespace gpuq::binder::local {

namespace {

void sleep_ms(int ms) {
  const timespec t{ms / 1000, static_cast<long>(ms % 1000) * 1'000'000};
  ::nanosleep(&t, nullptr);
}

bool exists(const std::string& path) { return ::access(path.c_str(), F_OK) == 0; }

// The number after `key ` on a line of a flat-keyed cgroup file ("oom_kill 3").
std::int64_t keyed_value(const std::string& text, std::string_view key) {
  std::string_view rest(text);
  while (!rest.empty()) {
    const std::size_t nl = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(std::min(nl + 1, rest.size()));
    if (line.size() > key.size() && line.substr(0, key.size()) == key && line[key.size()] == ' ') {
      std::int64_t v = 0;
      if (parse_number(line.substr(key.size() + 1), v)) return v;
    }
  }
  return 0;
}

}  // namespace

bool read_small_file(const std::string& path, std::string& out) {
  out.clear();
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  char buf[4096];
  for (;;) {
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) {
      const int err = errno;
      ::close(fd);
      errno = err;
      return false;
    }
    if (n == 0) break;
    out.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  return true;
}

bool write_small_file(const std::string& path, std::string_view text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = 0;
  do n = ::write(fd, text.data(), text.size());
  while (n < 0 && errno == EINTR);
  const int err = errno;
  ::close(fd);
  errno = err;
  return n == static_cast<ssize_t>(text.size());
}

std::vector<pid_t> cgroup_pids(const std::string& dir) {
  std::vector<pid_t> out;
  std::string text;
  if (!read_small_file(dir + "/cgroup.procs", text)) return out;
  std::string_view rest(text);
  while (!rest.empty()) {
    const std::size_t nl = std::min(rest.find('\n'), rest.size());
    pid_t pid = 0;
    if (parse_number(rest.substr(0, nl), pid) && pid > 0) out.push_back(pid);
    rest.remove_prefix(std::min(nl + 1, rest.size()));
  }
  return out;
}

int signal_cgroup(const std::string& dir, int sig) {
  const auto pids = cgroup_pids(dir);
  for (const pid_t p : pids) ::kill(p, sig);
  return static_cast<int>(pids.size());
}

int kill_cgroup(const std::vector<std::string>& dirs) {
  if (dirs.empty()) return 0;
  const int found = static_cast<int>(cgroup_pids(dirs.front()).size());
  if (found == 0) return 0;
  for (const std::string& d : dirs)
    if (exists(d + "/cgroup.kill") && write_small_file(d + "/cgroup.kill", "1")) return found;
  for (const std::string& d : dirs) {
    if (!exists(d + "/freezer.state")) continue;
    if (!write_small_file(d + "/freezer.state", "FROZEN")) break;
    // FREEZING until every task has stopped: a fork in flight ends inside the frozen cgroup.
    std::string state;
    for (int i = 0; i < 200 && read_small_file(d + "/freezer.state", state) && state.rfind("FROZEN", 0) != 0; ++i)
      sleep_ms(5);
    for (const pid_t p : cgroup_pids(d)) ::kill(p, SIGKILL);
    write_small_file(d + "/freezer.state", "THAWED");
    return found;
  }
  // No way to stop forks first: kill what is listed until nothing new is (bounded).
  for (int round = 0; round < 100; ++round) {
    const auto pids = cgroup_pids(dirs.front());
    if (pids.empty()) break;
    for (const pid_t p : pids) ::kill(p, SIGKILL);
    sleep_ms(2);
  }
  return found;
}

bool wait_cgroup_empty(const std::vector<std::string>& dirs, int timeout_ms) {
  for (int waited = 0;; waited += 5) {
    bool empty = true;
    for (const std::string& d : dirs) empty = empty && cgroup_pids(d).empty();
    if (empty) return true;
    if (waited >= timeout_ms) return false;
    sleep_ms(5);
  }
}

std::int64_t cgroup_oom_kills(const std::vector<std::string>& dirs) {
  std::string text;
  for (const std::string& d : dirs) {
    if (read_small_file(d + "/memory.events", text)) return keyed_value(text, "oom_kill");
    if (read_small_file(d + "/memory.oom_control", text)) return keyed_value(text, "oom_kill");
  }
  return 0;
}

std::int64_t cgroup_cpu_usec(const std::vector<std::string>& dirs) {
  std::string text;
  for (const std::string& d : dirs) {
    if (read_small_file(d + "/cpu.stat", text) && text.find("usage_usec ") != std::string::npos)
      return keyed_value(text, "usage_usec");
    std::int64_t ns = 0;
    if (read_small_file(d + "/cpuacct.usage", text)) {
      while (!text.empty() && text.back() == '\n') text.pop_back();
      if (parse_number(text, ns)) return ns / 1000;
    }
  }
  return -1;
}

std::int64_t cgroup_memory_peak(const std::vector<std::string>& dirs) {
  std::string text;
  for (const std::string& d : dirs) {
    if (!read_small_file(d + "/memory.peak", text) && !read_small_file(d + "/memory.max_usage_in_bytes", text)) continue;
    while (!text.empty() && text.back() == '\n') text.pop_back();
    std::int64_t v = 0;
    if (parse_number(text, v)) return v;
  }
  return -1;
}

std::int64_t cgroup_memory_limit(const std::vector<std::string>& dirs) {
  std::string text;
  for (const std::string& d : dirs) {
    if (!read_small_file(d + "/memory.max", text) && !read_small_file(d + "/memory.limit_in_bytes", text)) continue;
    while (!text.empty() && (text.back() == '\n' || text.back() == ' ')) text.pop_back();
    std::int64_t v = 0;
    // "max" (v2) or a page-rounded huge number (v1): no limit.
    if (!parse_number(text, v) || v >= (std::int64_t{1} << 60)) return 0;
    return v;
  }
  return 0;
}

}  // namespace gpuq::binder::local
