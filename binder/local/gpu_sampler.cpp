#include "binder/local/gpu_sampler.hpp"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <charconv>
#include <cstring>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "binder/local/smi_csv.hpp"

extern char** environ;

namespace gpuq::binder {

namespace {

// "87", "87 %", "87%": the leading integer, when the rest is a unit.
bool leading_int(std::string_view s, std::int64_t& v) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || end == s.data()) return false;
  std::string_view rest(end, static_cast<std::size_t>(s.data() + s.size() - end));
  while (!rest.empty() && rest.front() == ' ') rest.remove_prefix(1);
  return rest.empty() || rest == "%" || rest == "MiB";
}

}  // namespace

std::vector<GpuReading> parse_gpu_readings(const std::string& csv) {
  std::vector<GpuReading> out;
  for_each_smi_row(csv, [&out](const std::vector<std::string>& f, const std::string& where) {
    if (f.size() != 3) throw std::runtime_error(where + "expected index, utilization.gpu, memory.used");
    std::int64_t index = -1, util = -1, memory = 0;
    const auto [end, ec] = std::from_chars(f[0].data(), f[0].data() + f[0].size(), index);
    if (ec != std::errc() || end != f[0].data() + f[0].size() || index < 0 || index > 1'000'000)
      throw std::runtime_error(where + "index \"" + f[0] + "\" is not a GPU index");
    if (!f[1].empty() && f[1].front() == '[') return;  // "[N/A]", "[Not Supported]": no reading
    if (!leading_int(f[1], util) || util < 0 || util > 100)
      throw std::runtime_error(where + "utilization \"" + f[1] + "\" is not a percentage 0 to 100");
    if (!leading_int(f[2], memory) || memory < 0) memory = 0;  // informative only
    out.push_back(GpuReading{static_cast<int>(index), static_cast<int>(util), memory});
  });
  return out;
}

BoundedRun run_bounded(const std::vector<std::string>& argv, std::chrono::milliseconds timeout, std::size_t max_bytes) {
  BoundedRun r;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) {
    r.error = std::string("pipe: ") + std::strerror(errno);
    return r;
  }
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
  posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setpgroup(&attr, 0);
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setsigmask(&attr, &none);  // gpuqd blocks its signals; the child must not inherit that
  posix_spawnattr_setsigdefault(&attr, &all);
  std::vector<char*> args;
  for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = -1;
  const int rc = ::posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  ::close(fds[1]);
  if (rc != 0) {
    ::close(fds[0]);
    r.error = "cannot run " + argv[0] + ": " + std::strerror(rc);
    return r;
  }
  const auto deadline = std::chrono::steady_clock::now() + timeout;
  char buf[4096];
  while (r.error.empty()) {
    const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0) {
      r.error = "no answer within " + std::to_string(timeout.count()) + " ms";
      break;
    }
    pollfd p{fds[0], POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR) continue;
    if (ready <= 0) continue;  // the deadline is checked above
    const ssize_t got = ::read(fds[0], buf, sizeof buf);
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) break;  // end of output
    r.out.append(buf, static_cast<std::size_t>(got));
    if (r.out.size() > max_bytes) r.error = "more than " + std::to_string(max_bytes) + " bytes of output";
  }
  ::close(fds[0]);
  if (!r.error.empty()) ::kill(-pid, SIGKILL);  // its whole group: a script's children too
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (r.error.empty() && !(WIFEXITED(status) && WEXITSTATUS(status) == 0))
    r.error = WIFEXITED(status) ? "exit code " + std::to_string(WEXITSTATUS(status))
                                : "killed by signal " + std::to_string(WTERMSIG(status));
  if (!r.error.empty()) r.out.clear();
  return r;
}

GpuSampler::GpuSampler(Options options, GpuReport report, std::shared_ptr<ErrorCounter> errors)
    : options_(std::move(options)), report_(std::move(report)), errors_(std::move(errors)) {}

GpuSampler::~GpuSampler() { stop(); }

bool GpuSampler::sample_once() {
  const BoundedRun run = run_bounded({options_.nvidia_smi, "--query-gpu=index,utilization.gpu,memory.used",
                                      "--format=csv,noheader,nounits"},
                                     options_.timeout, options_.max_bytes);
  std::string error = run.error;
  GpuSample sample;
  sample.node = options_.node;
  if (error.empty()) {
    try {
      sample.gpus = parse_gpu_readings(run.out);
    } catch (const std::exception& e) {
      error = e.what();
    }
  }
  if (!error.empty()) {
    spdlog::warn("event=gpu_sample_failed nvidia_smi={} error=\"{}\"", options_.nvidia_smi, error);
    if (errors_) (*errors_)("gpu_sample_failed");
    return false;
  }
  if (report_) report_(std::move(sample));
  return true;
}

void GpuSampler::start() {
  thread_ = std::thread([this] {
    std::unique_lock lock(mu_);
    while (!cv_.wait_for(lock, options_.interval, [this] { return stopping_; })) {
      lock.unlock();
      sample_once();
      lock.lock();
    }
  });
}

void GpuSampler::stop() {
  {
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

}  // namespace gpuq::binder
