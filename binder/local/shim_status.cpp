#include "binder/local/shim_status.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
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

std::string format_status(const ShimStatus& s) {
  std::ostringstream out;
  out << "outcome=" << outcome_name(s.outcome) << '\n';
  if (s.outcome != ShimStatus::Outcome::kSignaled) out << "code=" << s.code << '\n';
  if (s.outcome == ShimStatus::Outcome::kSignaled) out << "signal=" << s.signal << '\n';
  out << "stop_requested=" << int(s.stop_requested) << '\n'
      << "max_runtime_exceeded=" << int(s.max_runtime_exceeded) << '\n'
      << "killed_after_grace=" << int(s.killed_after_grace) << '\n';
  if (s.outcome == ShimStatus::Outcome::kError) out << "error=" << escape(s.error) << '\n';
  out << "started_at=" << s.started_at << '\n' << "ended_at=" << s.ended_at << '\n';
  if (s.max_runtime > 0) out << "max_runtime=" << s.max_runtime << '\n';
  return out.str();
}

std::optional<ShimStatus> parse_status(const std::string& text) {
  ShimStatus s;
  bool has_outcome = false;
  std::istringstream in(text);
  std::string line;
  while (std::getline(in, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const auto eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string_view view(line);
    if (!apply(s, view.substr(0, eq), view.substr(eq + 1), has_outcome)) return std::nullopt;
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
  std::ifstream in(path);
  if (!in) return std::nullopt;
  std::stringstream text;
  text << in.rdbuf();
  return parse_status(text.str());
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
  if (!s.max_runtime_exceeded) return base;
  const std::string limit =
      s.max_runtime > 0 ? "max runtime of " + std::to_string(s.max_runtime) + " s" : "max runtime";
  return limit + " exceeded; " + base;
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
