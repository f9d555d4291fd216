#include "binder/local/shim_status.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <string_view>

#include "binder/local/proc.hpp"

namespace gpuq::binder::local {
namespace {

const char* outcome_name(ShimStatus::Outcome o) {
  switch (o) {
    case ShimStatus::Outcome::kExited: return "exited";
    case ShimStatus::Outcome::kSignaled: return "signaled";
    case ShimStatus::Outcome::kError: return "error";
  }
  return "error";
}

// One line per value: a command name or an error text may hold a newline.
std::string escape(std::string_view s) {
  std::string out;
  for (char c : s) {
    if (c == '\\') out += "\\\\";
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else out += c;
  }
  return out;
}

std::string unescape(std::string_view s) {
  std::string out;
  for (std::size_t i = 0; i < s.size(); ++i) {
    if (s[i] != '\\' || i + 1 == s.size()) {
      out += s[i];
      continue;
    }
    const char n = s[++i];
    out += n == 'n' ? '\n' : n == 'r' ? '\r' : n;
  }
  return out;
}

bool parse_flag(std::string_view v, bool& out) {
  if (v != "0" && v != "1") return false;
  out = v == "1";
  return true;
}

// Applies one key=value; false when a known key has a malformed value. Unknown keys are skipped.
bool apply(ShimStatus& s, std::string_view key, std::string_view v, bool& has_outcome) {
  if (key == "outcome") {
    for (auto o : {ShimStatus::Outcome::kExited, ShimStatus::Outcome::kSignaled,
                   ShimStatus::Outcome::kError}) {
      if (v == outcome_name(o)) {
        s.outcome = o;
        has_outcome = true;
        return true;
      }
    }
    return false;
  }
  if (key == "code") return parse_number(v, s.code);
  if (key == "signal") return parse_number(v, s.signal);
  if (key == "stop_requested") return parse_flag(v, s.stop_requested);
  if (key == "max_runtime_exceeded") return parse_flag(v, s.max_runtime_exceeded);
  if (key == "killed_after_grace") return parse_flag(v, s.killed_after_grace);
  if (key == "error") {
    s.error = unescape(v);
    return true;
  }
  if (key == "started_at") return parse_number(v, s.started_at);
  if (key == "ended_at") return parse_number(v, s.ended_at);
  if (key == "max_runtime") return parse_number(v, s.max_runtime);
  if (key == "oom_kills") return parse_number(v, s.oom_kills);
  if (key == "memory_limit") return parse_number(v, s.memory_limit);
  if (key == "cpu_usec") return parse_number(v, s.cpu_usec);
  if (key == "memory_peak") return parse_number(v, s.memory_peak);
  return true;
}

bool write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    done += static_cast<std::size_t>(n);
  }
  return true;
}

// The rename is only durable once the directory entry is on disk too.
bool fsync_directory_of(const std::string& path) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) return false;
  const bool ok = ::fsync(fd) == 0;
  ::close(fd);
  return ok;
}

}  // namespace

// Plain strings, no iostreams: the shim writes one per pod, and a stream would set up the C++
// locale machinery in it first.
std::string format_status(const ShimStatus& s) {
  std::string out = std::string("outcome=") + outcome_name(s.outcome) + '\n';
  if (s.outcome != ShimStatus::Outcome::kSignaled) out += "code=" + std::to_string(s.code) + '\n';
  if (s.outcome == ShimStatus::Outcome::kSignaled) out += "signal=" + std::to_string(s.signal) + '\n';
  out += "stop_requested=" + std::to_string(int(s.stop_requested)) + '\n';
  out += "max_runtime_exceeded=" + std::to_string(int(s.max_runtime_exceeded)) + '\n';
  out += "killed_after_grace=" + std::to_string(int(s.killed_after_grace)) + '\n';
  if (s.outcome == ShimStatus::Outcome::kError) out += "error=" + escape(s.error) + '\n';
  out += "started_at=" + std::to_string(s.started_at) + '\n';
  out += "ended_at=" + std::to_string(s.ended_at) + '\n';
  if (s.max_runtime > 0) out += "max_runtime=" + std::to_string(s.max_runtime) + '\n';
  if (s.oom_kills > 0) out += "oom_kills=" + std::to_string(s.oom_kills) + '\n';
  if (s.memory_limit > 0) out += "memory_limit=" + std::to_string(s.memory_limit) + '\n';
  if (s.cpu_usec >= 0) out += "cpu_usec=" + std::to_string(s.cpu_usec) + '\n';
  if (s.memory_peak >= 0) out += "memory_peak=" + std::to_string(s.memory_peak) + '\n';
  return out;
}

std::optional<ShimStatus> parse_status(const std::string& text) {
  ShimStatus s;
  bool has_outcome = false;
  std::string_view rest(text);
  while (!rest.empty()) {
    const std::size_t nl = std::min(rest.find('\n'), rest.size());
    std::string_view line = rest.substr(0, nl);
    rest.remove_prefix(std::min(nl + 1, rest.size()));
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    const auto eq = line.find('=');
    if (eq == std::string_view::npos) continue;
    if (!apply(s, line.substr(0, eq), line.substr(eq + 1), has_outcome)) return std::nullopt;
  }
  if (!has_outcome) return std::nullopt;
  return s;
}

bool write_status_file(const std::string& path, const ShimStatus& status) {
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return false;
  bool ok = write_all(fd, format_status(status)) && ::fsync(fd) == 0;
  int err = errno;
  if (::close(fd) != 0 && ok) {
    ok = false;
    err = errno;
  }
  if (ok && ::rename(tmp.c_str(), path.c_str()) != 0) {
    ok = false;
    err = errno;
  }
  if (!ok) {
    ::unlink(tmp.c_str());
    errno = err;  // the first failure, not unlink's
    return false;
  }
  return fsync_directory_of(path);
}

std::optional<ShimStatus> read_status_file(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return std::nullopt;
  std::string text;
  char buf[4096];
  ssize_t n = 0;
  while ((n = ::read(fd, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    // A status file is a few hundred bytes; one far larger is not one.
    if (n < 0 || text.size() > (1 << 16)) break;
    text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(fd);
  if (n != 0) return std::nullopt;
  return parse_status(text);
}

std::string describe(const ShimStatus& s) {
  std::string base;
  switch (s.outcome) {
    case ShimStatus::Outcome::kError:
      return s.error.empty() ? "the job could not start" : s.error;
    case ShimStatus::Outcome::kExited:
      if (s.code != 0 || s.max_runtime_exceeded) base = "exit code " + std::to_string(s.code);
      break;
    case ShimStatus::Outcome::kSignaled: {
      base = "killed by signal " + std::to_string(s.signal);
      if (const char* abbrev = sigabbrev_np(s.signal)) base += std::string(" (SIG") + abbrev + ")";
      if (s.killed_after_grace) base += " after the grace period";
      break;
    }
  }
  const bool failed = s.max_runtime_exceeded || s.outcome != ShimStatus::Outcome::kExited || s.code != 0;
  if (s.oom_kills > 0 && failed) {
    const std::string oom = s.memory_limit > 0 ? "out of memory: " + bytes_text(s.memory_limit) + " limit"
                                               : std::string("out of memory");
    base = base.empty() ? oom : oom + "; " + base;
  }
  if (!s.max_runtime_exceeded) return base;
  const std::string limit =
      s.max_runtime > 0 ? "max runtime of " + std::to_string(s.max_runtime) + " s" : "max runtime";
  return limit + " exceeded; " + base;
}

std::string bytes_text(std::int64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int unit = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && unit < 5) {
    v /= 1024;
    ++unit;
  }
  char buf[32];
  if (unit == 0 || v == static_cast<double>(static_cast<std::int64_t>(v)))
    std::snprintf(buf, sizeof buf, "%lld %s", static_cast<long long>(v), kUnits[unit]);
  else
    std::snprintf(buf, sizeof buf, "%.1f %s", v, kUnits[unit]);
  return buf;
}

int exit_code_of(const ShimStatus& s) {
  switch (s.outcome) {
    case ShimStatus::Outcome::kExited: return s.code;
    case ShimStatus::Outcome::kSignaled: return 128 + s.signal;
    case ShimStatus::Outcome::kError: return 127;
  }
  return 127;
}

}  // namespace gpuq::binder::local
