#include "binder/local/spawn.hpp"

#include <fcntl.h>
#include <sys/socket.h>
#include <signal.h>
#include <spawn.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <map>

#include <spdlog/spdlog.h>

#include "binder/local/proc.hpp"

extern char** environ;

namespace gpuq::binder {

namespace fs = std::filesystem;

namespace {

bool set_by_gpuq(const std::string& name) {
  return name == "CUDA_VISIBLE_DEVICES" || name.rfind("GPUQ_", 0) == 0;
}

std::string join(const std::vector<std::string>& xs, char sep) {
  std::string out;
  for (const auto& x : xs) {
    if (!out.empty()) out += sep;
    out += x;
  }
  return out;
}

// An executable regular file (access() as the daemon's user, who runs the job: precheck).
std::optional<std::string> not_runnable(const fs::path& p) {
  struct stat st {};
  if (::stat(p.c_str(), &st) != 0) return std::string(std::strerror(errno));
  if (!S_ISREG(st.st_mode)) return std::string("not a regular file");
  if (::access(p.c_str(), X_OK) != 0) return std::string(std::strerror(errno));
  return std::nullopt;
}

// What of gpuqd's environment a job of another account gets: where programs are and the locale,
// nothing that may carry gpuqd's own secrets or settings.
bool passed_to_others(const std::string& name) {
  return name == "PATH" || name == "LANG" || name == "LANGUAGE" || name == "TZ" || name.rfind("LC_", 0) == 0;
}

}  // namespace

Launcher::Launcher(const LocalConfig& config, const Inventory& inventory)
    : gpus_(inventory.gpus), self_(auth::own_account()), root_(::geteuid() == 0) {
  shim_ = config.shim;
  if (shim_.empty()) {
    // Next to gpuqd (a build tree, /usr/local/bin), else where the package puts it:
    // /usr/sbin/gpuqd with /usr/libexec/gpuq/gpuq-shim (CMakeLists.txt: install).
    std::error_code ec;
    const fs::path dir = fs::read_symlink("/proc/self/exe", ec).parent_path();
    shim_ = dir / "gpuq-shim";
    if (const fs::path packaged = dir.parent_path() / "libexec" / "gpuq" / "gpuq-shim";
        !fs::exists(shim_, ec) && fs::exists(packaged, ec))
      shim_ = packaged;
  }
  for (char** e = environ; e && *e; ++e) {
    const std::string kv = *e;
    const auto eq = kv.find('=');
    if (eq == std::string::npos || set_by_gpuq(kv.substr(0, eq))) continue;
    base_env_.emplace_back(kv.substr(0, eq), kv.substr(eq + 1));
  }
}

Result<auth::Account> Launcher::run_as(const std::string& owner) const {
  if (!root_) {
    if (owner == self_.name) return self_;
    return Error{"spec.owner: gpuqd runs as " + self_.name + " without root, so it runs every job as " + self_.name +
                     " and only " + self_.name + " may submit; user " + owner +
                     " may not (gpuqd started as root runs each job as its owner)",
                 ErrorCode::kPermissionDenied};
  }
  if (auto account = auth::find_account(owner)) return *account;
  return Error{"spec.owner: user \"" + owner + "\" has no account on this machine (no passwd entry); the local "
               "executor runs each job as its owner, so it can run none of theirs",
               ErrorCode::kPermissionDenied};
}

std::string Launcher::describe_identity() const {
  if (root_) return "each job as its owner";
  return "every job as " + self_.name + " (gpuqd has no root; only " + self_.name + " may submit)";
}

Result<void> Launcher::check(const RunSpec& run, const std::string& owner) const {
  if (auto as = run_as(owner); !as) return Error{as.error(), as.code()};
  if (run.command.empty() || run.command.front().empty())
    return Error{"spec.command: is empty; the local executor runs a command (argv), e.g. [\"python\", \"train.py\"]",
                 ErrorCode::kInvalidArgument};
  if (!run.working_dir.empty() && !fs::path(run.working_dir).is_absolute())
    return Error{"spec.working_dir: \"" + run.working_dir + "\" is not an absolute path; give one starting with /",
                 ErrorCode::kInvalidArgument};
  for (const auto& [k, v] : run.env)
    if (k.empty() || k.find('=') != std::string::npos)
      return Error{"spec.env: \"" + k + "\" is not a variable name (no '=', not empty)", ErrorCode::kInvalidArgument};
  return Ok();
}

std::optional<std::string> Launcher::precheck(const RunSpec& run, const auth::Account& as) const {
  if (run.command.empty()) return "no command to run";
  // Checked here as gpuqd's own account only: as root these checks would tell any user what
  // exists where they may not look. A job of another account is checked by the shim's child,
  // as its owner (its chdir and exec fail with the reason, into the owner's log).
  if (as.uid != self_.uid) return std::nullopt;
  if (!run.working_dir.empty()) {
    std::error_code ec;
    if (!fs::is_directory(run.working_dir, ec))
      return "working directory \"" + run.working_dir + "\" does not exist or is not a directory";
  }
  const std::string& cmd = run.command.front();
  if (cmd.find('/') != std::string::npos) {
    fs::path p = cmd;
    if (p.is_relative() && !run.working_dir.empty()) p = fs::path(run.working_dir) / p;
    if (auto why = not_runnable(p)) return "cannot run \"" + cmd + "\": " + *why;
    return std::nullopt;
  }
  std::string path;
  if (auto it = run.env.find("PATH"); it != run.env.end()) {
    path = it->second;
  } else {
    for (const auto& [k, v] : base_env_)
      if (k == "PATH") path = v;
  }
  if (path.empty()) path = "/usr/local/bin:/usr/bin:/bin";
  std::string last_error = "command not found";
  std::size_t from = 0;
  while (from <= path.size()) {
    const std::size_t colon = std::min(path.find(':', from), path.size());
    fs::path dir = path.substr(from, colon - from);
    if (dir.empty()) dir = ".";
    if (dir.is_relative() && !run.working_dir.empty()) dir = fs::path(run.working_dir) / dir;
    const fs::path candidate = dir / cmd;
    std::error_code ec;
    if (fs::exists(candidate, ec)) {
      auto why = not_runnable(candidate);
      if (!why) return std::nullopt;
      last_error = candidate.string() + ": " + *why;
    }
    from = colon + 1;
  }
  return "cannot run \"" + cmd + "\": " + last_error + " (PATH=" + path + ")";
}

std::vector<std::string> Launcher::environment(const PodLaunch& pod, const auth::Account& as) const {
  std::map<std::string, std::string> env;
  for (const auto& [k, v] : base_env_)
    if (as.uid == self_.uid || passed_to_others(k)) env[k] = v;
  // Who the job is, as login(1) would say; the job may set its own HOME and SHELL.
  env["HOME"] = as.home;
  env["SHELL"] = as.shell.empty() ? "/bin/sh" : as.shell;
  for (const auto& [k, v] : pod.record.run.env)
    if (!set_by_gpuq(k)) env[k] = v;
  env["USER"] = as.name;
  env["LOGNAME"] = as.name;
  std::vector<std::string> devices;
  for (int g : pod.placement.gpus) {
    const auto at = static_cast<std::size_t>(g);
    if (at < gpus_.size() && !gpus_[at].uuid.empty())
      devices.push_back(gpus_[at].uuid);
    else
      devices.push_back(std::to_string(at < gpus_.size() ? gpus_[at].index : g));
  }
  env["CUDA_VISIBLE_DEVICES"] = join(devices, ',');  // empty: no GPU for this pod
  env["GPUQ_JOB_ID"] = pod.job;
  env["GPUQ_QUEUE"] = pod.queue;
  env["GPUQ_POD_INDEX"] = std::to_string(pod.index);
  env["GPUQ_POD_COUNT"] = std::to_string(pod.count);
  env["GPUQ_NODE"] = pod.placement.node;
  if (const JobSpec& spec = pod.record.spec; !spec.array_id.empty()) {  // a member of a job array
    env["GPUQ_ARRAY_ID"] = spec.array_id;
    env["GPUQ_ARRAY_INDEX"] = std::to_string(spec.array_index);
  }
  if (!pod.placement.gpus.empty() && pod.placement.gpu_milli < kMilliPerGpu)
    env["GPUQ_GPU_MILLI"] = std::to_string(pod.placement.gpu_milli);
  std::vector<std::string> out;
  out.reserve(env.size());
  for (const auto& [k, v] : env) out.push_back(k + "=" + v);
  return out;
}

namespace {

// The pod's log, opened to append (made if need be, never through a link): its owner's (`as`;
// none: gpuqd's), readable by nobody else, an older one, kept across attempts, made so too.
// The open descriptor, or an error.
Result<int> open_log(const fs::path& log, const auth::Account* as) {
  const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return Error{"log \"" + log.string() + "\": " + std::strerror(errno), ErrorCode::kUnavailable};
  const bool ok = (as == nullptr || ::fchown(fd, as->uid, as->gid) == 0) && ::fchmod(fd, 0600) == 0;
  const int saved = errno;
  if (ok) return fd;
  ::close(fd);
  return Error{"log \"" + log.string() + "\": cannot give it to user " + (as ? as->name : std::string("?")) + ": " +
                   std::strerror(saved),
               ErrorCode::kUnavailable};
}

// An anonymous file holding `env` as NUL-terminated NAME=VALUE entries, at offset 0 and
// close-on-exec; -1 with errno set.
int job_env_file(const std::vector<std::string>& env) {
  const int fd = ::memfd_create("gpuq-job-env", MFD_CLOEXEC);
  if (fd < 0) return -1;
  std::string blob;
  for (const std::string& e : env) blob.append(e).push_back('\0');
  std::size_t done = 0;
  while (done < blob.size()) {
    const ssize_t n = ::write(fd, blob.data() + done, blob.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int saved = n == 0 ? EIO : errno;
      ::close(fd);
      errno = saved;
      return -1;
    }
    done += static_cast<std::size_t>(n);
  }
  if (::lseek(fd, 0, SEEK_SET) < 0) {
    const int saved = errno;
    ::close(fd);
    errno = saved;
    return -1;
  }
  return fd;
}

}  // namespace

void Launcher::note(const fs::path& log, const std::string& text, const auth::Account* as) {
  auto fd = open_log(log, as);
  if (!fd) {
    spdlog::warn("event=pod_log_failed log={} error=\"{}\"", log.string(), fd.error());
    return;
  }
  const std::string line = "[gpuq] " + text + "\n";
  [[maybe_unused]] const ssize_t n = ::write(fd.value(), line.data(), line.size());
  ::close(fd.value());
}

fs::path pod_input_path(const fs::path& job_run_dir, int pod) {
  return job_run_dir / ("pod-" + std::to_string(pod) + ".stdin");
}

Result<StartedPod> Launcher::start(const PodLaunch& pod, const auth::Account& as) const {
  const storage::JobRecord& rec = pod.record;
  if (auto fd = open_log(pod.log, &as); !fd) return Error{fd.error(), fd.code()};
  else ::close(fd.value());
  std::vector<std::string> args = {shim_.string(), "--status", pod.status.string(), "--log", pod.log.string(),
                                   "--grace", std::to_string(rec.spec.grace_period)};
  if (as.uid != self_.uid) {
    std::string groups;
    for (gid_t g : as.groups) groups += (groups.empty() ? "" : ",") + std::to_string(g);
    for (std::string a : {std::string("--user"), as.name, std::string("--uid"), std::to_string(as.uid),
                          std::string("--gid"), std::to_string(as.gid), std::string("--groups"), groups})
      args.push_back(std::move(a));
  }
  if (rec.spec.max_runtime && *rec.spec.max_runtime > 0) {
    args.push_back("--max-runtime");
    args.push_back(std::to_string(*rec.spec.max_runtime));
  }
  if (!rec.run.working_dir.empty()) {
    args.push_back("--workdir");
    args.push_back(rec.run.working_dir);
  }
  if (rec.run.tty) {  // gpuq run: the shim makes a terminal and reads its input from this FIFO
    const fs::path fifo = pod_input_path(pod.status.parent_path(), static_cast<int>(pod.index));
    if (::mkfifo(fifo.c_str(), 0600) != 0 && errno != EEXIST)  // kept across a requeue
      return Error{"the terminal's input " + fifo.string() + " could not be made: " + std::strerror(errno),
                   ErrorCode::kUnavailable};
    args.push_back("--stdin");
    args.push_back(fifo.string());
    if (!rec.run.tty_size.empty()) {
      args.push_back("--tty-size");
      args.push_back(rec.run.tty_size);
    }
  }
  // The job's environment reaches the shim through an anonymous memory file on its fd 3, never
  // as the shim's own: the shim runs as root, and a variable such as LD_PRELOAD or
  // GLIBC_TUNABLES in a job's env would act in it. The shim gets a fixed PATH and nothing else.
  const int env_fd = job_env_file(environment(pod, as));
  if (env_fd < 0)
    return Error{std::string("the job's environment could not be handed to gpuq-shim: ") + std::strerror(errno),
                 ErrorCode::kUnavailable};
  args.push_back("--env-fd");
  args.push_back("3");
  // A socket pair, not a pipe: a shim that ended before reading makes the byte's send fail
  // (MSG_NOSIGNAL), where a pipe's write would raise SIGPIPE in gpuqd.
  int go[2];
  if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, go) != 0) {
    ::close(env_fd);
    return Error{std::string("a socket pair for gpuq-shim could not be made: ") + std::strerror(errno),
                 ErrorCode::kUnavailable};
  }
  args.push_back("--go-fd");
  args.push_back("4");
  for (const std::string& dir : pod.cgroups) {
    args.push_back("--cgroup");
    args.push_back(dir);
  }
  args.push_back("--");
  args.insert(args.end(), rec.run.command.begin(), rec.run.command.end());
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  char shim_path[] = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";
  char* envp[] = {shim_path, nullptr};

  posix_spawnattr_t attr;
  posix_spawn_file_actions_t files;
  posix_spawnattr_init(&attr);
  posix_spawn_file_actions_init(&files);
  // Its own session; no signal blocked or ignored (gpuqd blocks SIGTERM in every thread).
  sigset_t none, all;
  sigemptyset(&none);
  sigfillset(&all);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID | POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
  posix_spawnattr_setsigmask(&attr, &none);
  posix_spawnattr_setsigdefault(&attr, &all);
  posix_spawn_file_actions_addopen(&files, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&files, 1, pod.log.c_str(), O_WRONLY | O_APPEND | O_NOFOLLOW, 0600);
  posix_spawn_file_actions_adddup2(&files, 1, 2);
  posix_spawn_file_actions_adddup2(&files, env_fd, 3);  // dup2 clears close-on-exec
  posix_spawn_file_actions_adddup2(&files, go[0], 4);
  posix_spawn_file_actions_addclosefrom_np(&files, 5);  // gpuqd's sockets and files stay gpuqd's
  pid_t pid = -1;
  const int rc = ::posix_spawn(&pid, shim_.c_str(), &files, &attr, argv.data(), envp);
  posix_spawn_file_actions_destroy(&files);
  posix_spawnattr_destroy(&attr);
  ::close(env_fd);
  ::close(go[0]);
  if (rc != 0) {
    ::close(go[1]);
    return Error{"gpuq-shim (" + shim_.string() + ") could not be started: " + std::strerror(rc),
                 ErrorCode::kUnavailable};
  }
  StartedPod out;
  out.go_fd = go[1];  // closed on an error below: the shim then ends without starting the job
  out.pid = pid;
  out.pidfd = local::pidfd_open(pid);  // our child: its pid cannot be reused before we reap it
  out.start_ticks = local::process_start_ticks(pid).value_or(0);
  if (out.pidfd < 0) {
    const std::string why = std::strerror(errno);
    ::close(out.go_fd);
    return Error{"pidfd_open: " + why + " (Linux 5.3 or later is needed)", ErrorCode::kUnavailable};
  }
  return out;
}

void Launcher::go(StartedPod& pod) {
  if (pod.go_fd < 0) return;
  const char byte = 'g';
  while (::send(pod.go_fd, &byte, 1, MSG_NOSIGNAL) < 0 && errno == EINTR) {
  }
  ::close(pod.go_fd);
  pod.go_fd = -1;
}

}  // namespace gpuq::binder
