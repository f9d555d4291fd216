// gpuq-shim: the per-pod supervisor of gpuq's local executor (binder/local/README.md).
//
// gpuqd spawns one shim per pod, in a session of its own. The shim runs the pod's command, does
// all the timing itself (grace period, max runtime) because it outlives gpuqd when gpuqd is
// killed, kills whatever the job leaves behind, and only then writes its status file and exits:
// once the shim has exited, no process of the job is left.
//
// Single-threaded on purpose: vfork() is safe, and every signal is taken synchronously with
// sigtimedwait() (all of them stay blocked), so there are no signal handlers and no races.
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <linux/magic.h>
#include <linux/sched.h>
#include <sys/prctl.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "binder/local/cgroup_ops.hpp"
#include "binder/local/proc.hpp"
#include "binder/local/shim_status.hpp"
#include "binder/local/shim_terminal.hpp"

extern char** environ;

namespace {

using gpuq::binder::local::ShimStatus;
using gpuq::binder::local::Terminal;
using Clock = std::chrono::steady_clock;

constexpr const char* kUsage =
    "usage: gpuq-shim --status FILE --log FILE --grace SECONDS [--max-runtime SECONDS]"
    " [--workdir DIR] [--user NAME --uid UID --gid GID --groups GID,...] [--env-fd FD]"
    " [--go-fd FD] [--stdin FIFO [--tty-size ROWSxCOLS]] [--cgroup DIR]... -- COMMAND [ARGS...]\n";
// Seconds beyond this are as good as forever, and would overflow the clock's arithmetic.
constexpr std::int64_t kMaxSeconds = std::int64_t{1} << 32;

struct Options {
  std::string status, log, workdir;
  // Whom the job runs as (gpuqd as root runs each job as its owner): the shim stays root to
  // supervise it; the forked child drops to these before it execs. Unset: as the shim.
  std::string user, uid_text, gid_text, groups_text;
  std::optional<uid_t> uid;
  gid_t gid = 0;
  std::vector<gid_t> groups;
  std::int64_t grace = -1;
  std::int64_t max_runtime = 0;  // 0: none
  std::vector<char*> command;    // execvp's argv, null-terminated
  // The job's environment, read from --env-fd (NUL-separated NAME=VALUE entries) so that it
  // never is the shim's own: the shim runs as root, and a job's LD_PRELOAD must not run in it.
  // Without --env-fd the job gets the shim's environment.
  std::string env_fd_text;
  std::string env_text;  // NUL-terminated entries
  // The job starts once a byte comes on --go-fd (a socket or a pipe): gpuqd sends it once it has
  // recorded the shim's pid. End of file instead (gpuqd died in between) and the shim ends
  // without starting it, so that gpuqd, which does not know of this shim and starts the pod
  // again, never runs it twice.
  std::string go_fd_text;
  // A terminal (gpuq run): the command runs on a pseudo-terminal whose output goes to the log
  // and whose input is what gpuqd writes into this FIFO; its size ROWSxCOLS.
  std::string stdin_fifo, tty_size;
  unsigned short rows = 24, cols = 80;
  // The pod's cgroups (binder/local/CGROUPS.md), one per hierarchy, made and limited by gpuqd:
  // the job joins them before it execs, so it and all it forks are in them; the first lists
  // their processes. The shim itself stays out: a stop kills the cgroup, not its supervisor.
  std::vector<std::string> cgroups;
};

std::optional<std::int64_t> parse_seconds(std::string_view text) {
  std::int64_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return std::min(v, kMaxSeconds);
}

std::optional<std::uint32_t> parse_id(std::string_view text) {
  std::uint32_t v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
  return v;
}

// The identity flags: all four or none.
bool parse_identity(Options& o) {
  const bool any = !o.user.empty() || !o.uid_text.empty() || !o.gid_text.empty() || !o.groups_text.empty();
  if (!any) return true;
  const auto uid = parse_id(o.uid_text);
  const auto gid = parse_id(o.gid_text);
  if (o.user.empty() || !uid || !gid) return false;
  o.uid = *uid;
  o.gid = *gid;
  std::string_view rest = o.groups_text;
  while (!rest.empty()) {
    const std::size_t comma = std::min(rest.find(','), rest.size());
    const auto g = parse_id(rest.substr(0, comma));
    if (!g) return false;
    o.groups.push_back(*g);
    rest.remove_prefix(std::min(comma + 1, rest.size()));
  }
  return true;
}

// The job's environment from --env-fd, read to its end and closed. False with errno set.
bool read_env(Options& o) {
  const auto fd = parse_id(o.env_fd_text);
  if (!fd || *fd < 3) {
    errno = EBADF;
    return false;
  }
  const int in = static_cast<int>(*fd);
  char buf[65536];
  ssize_t n = 0;
  while ((n = ::read(in, buf, sizeof buf)) != 0) {
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return false;
    o.env_text.append(buf, static_cast<std::size_t>(n));
  }
  ::close(in);
  if (!o.env_text.empty() && o.env_text.back() != '\0') o.env_text.push_back('\0');
  return true;
}

// Hand-parsed, to keep the shim free of dependencies. nullopt, with `problem` set, on bad usage.
std::optional<Options> parse_args(int argc, char** argv, std::string& problem) {
  Options o;
  int i = 1;
  for (; i < argc && std::string_view(argv[i]) != "--"; i += 2) {
    const std::string flag = argv[i];
    if (flag == "--cgroup") {
      if (i + 1 >= argc || std::string_view(argv[i + 1]) == "--" || argv[i + 1][0] != '/') {
        problem = "--cgroup needs an absolute directory";
        return std::nullopt;
      }
      o.cgroups.push_back(argv[i + 1]);
      continue;
    }
    const bool seconds = flag == "--grace" || flag == "--max-runtime";
    std::string* text = flag == "--status"    ? &o.status
                        : flag == "--log"     ? &o.log
                        : flag == "--workdir" ? &o.workdir
                        : flag == "--user"    ? &o.user
                        : flag == "--uid"     ? &o.uid_text
                        : flag == "--gid"     ? &o.gid_text
                        : flag == "--groups"  ? &o.groups_text
                        : flag == "--env-fd"  ? &o.env_fd_text
                        : flag == "--go-fd"   ? &o.go_fd_text
                        : flag == "--stdin"   ? &o.stdin_fifo
                        : flag == "--tty-size" ? &o.tty_size
                                              : nullptr;
    const char* value = i + 1 < argc ? argv[i + 1] : "--";
    if (!seconds && text == nullptr) problem = "unknown argument \"" + flag + "\"";
    else if (std::string_view(value) == "--") problem = flag + " needs a value";
    else if (text != nullptr) *text = value;
    else if (const auto s = parse_seconds(value)) (flag == "--grace" ? o.grace : o.max_runtime) = *s;
    else problem = flag + " needs whole seconds >= 0, not \"" + value + "\"";
    if (!problem.empty()) return std::nullopt;
  }
  if (o.status.empty()) problem = "--status is required";
  else if (o.log.empty()) problem = "--log is required";
  else if (o.grace < 0) problem = "--grace is required";
  else if (i + 1 >= argc) problem = "no command given after --";
  else if (!parse_identity(o)) problem = "--user, --uid, --gid and --groups go together, with numeric ids";
  else if (!o.env_fd_text.empty() && !read_env(o)) problem = "--env-fd " + o.env_fd_text + ": " + std::strerror(errno);
  else if (!o.tty_size.empty()) {
    const auto x = o.tty_size.find('x');
    const auto rows = parse_id(std::string_view(o.tty_size).substr(0, x));
    const auto cols = x == std::string::npos ? std::nullopt : parse_id(std::string_view(o.tty_size).substr(x + 1));
    if (!rows || !cols || *rows == 0 || *cols == 0 || *rows > 10000 || *cols > 10000)
      problem = "--tty-size needs ROWSxCOLS (1 to 10000 each), not \"" + o.tty_size + "\"";
    else {
      o.rows = static_cast<unsigned short>(*rows);
      o.cols = static_cast<unsigned short>(*cols);
    }
  }
  if (!problem.empty()) return std::nullopt;
  for (++i; i < argc; ++i) o.command.push_back(argv[i]);
  o.command.push_back(nullptr);
  return o;
}

int g_log = -1;  // the job's log, which also takes the shim's own diagnostics

// One write per line: with O_APPEND the line stays whole among the job's own output.
void log_line(const std::string& text) {
  if (g_log < 0) return;
  const std::string line = "[gpuq] " + text + "\n";
  [[maybe_unused]] const ssize_t n = ::write(g_log, line.data(), line.size());
}

// What the forked child reports through its O_CLOEXEC pipe when it cannot exec the command.
enum Stage : int { kSetup, kIdentity, kWorkdir, kExec, kCgroup };
struct ChildFailure {
  int stage = kSetup;
  int error = 0;
};

[[noreturn]] void child_fails(int pipe_fd, Stage stage) {
  const ChildFailure f{stage, errno};
  [[maybe_unused]] const ssize_t n = ::write(pipe_fd, &f, sizeof f);
  ::_exit(127);
}

// In the vfork()ed child: becomes the job's main process, leader of its own session and process
// group (whose id is its pid), and execs the command.
// `tty`: the slave side of the job's terminal (-1: none), its controlling terminal and its 0, 1, 2.
// It runs in a vfork() child: it shares the shim's memory until it execs, so it allocates
// nothing and changes nothing the shim reads afterwards but `environ` (put back by start_job)
// and errno.
// `cgroup_fds`: the pod's cgroups' cgroup.procs, open for writing; the child joins each first.
[[noreturn]] void exec_job(const Options& o, char** env, int log_fd, int null_fd, int tty, int pipe_fd, pid_t shim,
                           const int* cgroup_fds, std::size_t cgroups) {
  // Default dispositions and an empty mask whatever the shim inherited: SIG_IGN and a blocked
  // SIGTERM would both survive exec and keep the job from being stopped.
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  for (int sig = 1; sig < NSIG; ++sig) {
    if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
  }
  sigset_t none;
  sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // Into the pod's cgroups while still root: from here on, all the job forks is held there.
  for (std::size_t i = 0; i < cgroups; ++i)
    if (::write(cgroup_fds[i], "0", 1) != 1) child_fails(pipe_fd, kCgroup);
  if (::setsid() < 0) child_fails(pipe_fd, kSetup);
  if (tty >= 0 && ::ioctl(tty, TIOCSCTTY, 0) != 0) child_fails(pipe_fd, kSetup);
  // A SIGKILLed shim must not leave its job running unsupervised.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fails(pipe_fd, kSetup);
  if (::getppid() != shim) ::_exit(127);  // the shim died before the prctl took effect
  // The owner's groups, then its gid, then its uid (after which nothing else can be changed).
  if (o.uid && (::setgroups(o.groups.size(), o.groups.data()) != 0 || ::setgid(o.gid) != 0 || ::setuid(*o.uid) != 0))
    child_fails(pipe_fd, kIdentity);
  // A change of uid or gid clears the parent-death signal: set it again as the owner.
  if (o.uid && ::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) child_fails(pipe_fd, kSetup);
  if (::getppid() != shim) ::_exit(127);
  // Nothing the job execs gains privileges (setuid binaries, file capabilities).
  if (::prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) child_fails(pipe_fd, kSetup);
  // As the owner: a directory the owner may not enter is refused here.
  if (!o.workdir.empty() && ::chdir(o.workdir.c_str()) != 0) child_fails(pipe_fd, kWorkdir);
  if (tty >= 0 ? (::dup2(tty, 0) < 0 || ::dup2(tty, 1) < 0 || ::dup2(tty, 2) < 0)
              : (::dup2(null_fd, 0) < 0 || ::dup2(log_fd, 1) < 0 || ::dup2(log_fd, 2) < 0)) {
    child_fails(pipe_fd, kSetup);
  }
  // Descriptors gpuqd leaked into the shim (opened without O_CLOEXEC) must not reach the job.
  ::close_range(3, ~0U, CLOSE_RANGE_CLOEXEC);
  // The job's own environment (its PATH finds the command), never the shim's.
  if (env != nullptr) environ = env;
  ::execvp(o.command[0], o.command.data());
  child_fails(pipe_fd, kExec);
}

std::string failure_text(const Options& o, const ChildFailure& f) {
  const std::string why = std::strerror(f.error);
  const std::string command = o.command[0];
  const std::string as = o.uid ? " (as user " + o.user + ")" : "";
  if (f.stage == kIdentity) return "cannot become user " + o.user + ": " + why;
  if (f.stage == kWorkdir) return "working directory \"" + o.workdir + "\"" + as + ": " + why;
  if (f.stage == kExec) return "cannot run \"" + command + "\"" + as + ": " + why;
  if (f.stage == kCgroup) return "cannot join the pod's cgroup: " + why;
  return "cannot start \"" + command + "\": " + why;
}

// vfork(): the shim is suspended until its child has exec'd the job (or failed to), and neither
// copies the other's page tables or takes a page fault for a page the other wrote, which fork()
// cost once per pod. Out of line, so that nothing of start_job's frame is live across the call.
//
// With one cgroup v2 (`into_cgroup`, its directory), clone3(CLONE_INTO_CGROUP) instead: the child
// starts in the cgroup. Joining by a write to cgroup.procs is a migration, which takes the
// kernel's cgroup_threadgroup_rwsem for writing and, unless another migration came just before,
// waits out an RCU grace period: 14 ms of a pod's start on these machines (BENCHMARKS.md).
// Without CLONE_VM (clone3 takes no function to run on another stack) the child has a copy of
// the shim's memory, as after fork(); CLONE_VFORK still holds the shim until it has exec'd.
[[gnu::noinline]] pid_t spawn_job(const Options& o, char** env, int log_fd, int null_fd, int tty, const int (&fds)[2],
                                  const std::vector<int>& cgroup_fds, int into_cgroup) {
  const pid_t shim = ::getpid();
  if (into_cgroup >= 0) {
    clone_args args{};
    args.flags = CLONE_VFORK | CLONE_INTO_CGROUP;
    args.exit_signal = SIGCHLD;
    args.cgroup = static_cast<std::uint64_t>(into_cgroup);
    const long pid = ::syscall(SYS_clone3, &args, sizeof args);
    if (pid == 0) {
      ::close(fds[0]);
      exec_job(o, env, log_fd, null_fd, tty, fds[1], shim, nullptr, 0);
    }
    if (pid > 0 || (errno != ENOSYS && errno != EINVAL && errno != E2BIG)) return static_cast<pid_t>(pid);
    // A kernel before 5.7: joined by the write below.
  }
  const pid_t pid = ::vfork();
  if (pid == 0) {
    ::close(fds[0]);
    exec_job(o, env, log_fd, null_fd, tty, fds[1], shim, cgroup_fds.data(), cgroup_fds.size());
  }
  return pid;
}

// The directory of the pod's one cgroup when it is cgroup v2 (for CLONE_INTO_CGROUP); -1 else.
int cgroup2_dir(const Options& o) {
  if (o.cgroups.size() != 1) return -1;
  const int fd = ::open(o.cgroups.front().c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  struct statfs fs {};
  if (fd >= 0 && ::fstatfs(fd, &fs) == 0 && fs.f_type == CGROUP2_SUPER_MAGIC) return fd;
  if (fd >= 0) ::close(fd);
  return -1;
}

// Starts the job. Its pid once exec has succeeded; -1 with `error` set (and the child
// reaped) when it could not start.
pid_t start_job(const Options& o, int log_fd, int tty, std::string& error) {
  const int null_fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  int fds[2] = {-1, -1};
  if (null_fd < 0 || ::pipe2(fds, O_CLOEXEC) != 0) {
    error = failure_text(o, {kSetup, errno});
    if (null_fd >= 0) ::close(null_fd);
    return -1;
  }
  // The job's environment, made before the child exists (it must not allocate).
  std::vector<char*> env;
  if (!o.env_fd_text.empty()) {
    for (std::size_t at = 0; at < o.env_text.size(); at = o.env_text.find('\0', at) + 1)
      env.push_back(const_cast<char*>(&o.env_text[at]));
    env.push_back(nullptr);
  }
  // The cgroups' process lists, opened here: the vfork()ed child only writes to them.
  std::vector<int> cgroup_fds;
  for (const std::string& dir : o.cgroups) {
    const int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0) {
      error = "cannot join the pod's cgroup " + dir + ": " + std::strerror(errno);
      for (const int f : cgroup_fds) ::close(f);
      ::close(fds[0]);
      ::close(fds[1]);
      ::close(null_fd);
      return -1;
    }
    cgroup_fds.push_back(fd);
  }
  const int into = cgroup2_dir(o);
  char** const shim_env = environ;
  const pid_t pid = spawn_job(o, env.empty() ? nullptr : env.data(), log_fd, null_fd, tty, fds, cgroup_fds, into);
  const int fork_errno = errno;
  environ = shim_env;  // the child set the job's
  for (const int f : cgroup_fds) ::close(f);
  if (into >= 0) ::close(into);
  ::close(fds[1]);
  ::close(null_fd);
  if (pid < 0) {
    ::close(fds[0]);
    error = failure_text(o, {kSetup, fork_errno});
    return -1;
  }
  // EOF means exec succeeded. Waiting for it also means the child has called setsid(), so the
  // job's process group exists before any stop request is forwarded to it.
  ChildFailure f;
  ssize_t n = 0;
  do n = ::read(fds[0], &f, sizeof f);
  while (n < 0 && errno == EINTR);
  ::close(fds[0]);
  if (n == 0) return pid;
  ::waitpid(pid, nullptr, 0);
  error = failure_text(o, n == static_cast<ssize_t>(sizeof f) ? f : ChildFailure{kSetup, EIO});
  return -1;
}

// Forwards gpuqd's requests to the job and keeps its deadlines until the job's main process has
// ended; then kills the rest of its process group and records how the main process ended.
class Supervisor {
 public:
  Supervisor(const Options& o, pid_t pid, ShimStatus& status, const sigset_t& signals, Terminal* tty)
      : o_(o), pid_(pid), status_(status), signals_(signals), tty_(tty) {
    if (o.max_runtime > 0) max_deadline_ = Clock::now() + std::chrono::seconds(o.max_runtime);
  }

  void run() {
    while (!ended_) {
      const int sig = next_signal();
      if (sig == SIGCHLD) reap();
      else if (sig == SIGUSR1) kill_now();
      else if (sig > 0) stop(false);  // SIGTERM, SIGINT, SIGHUP
      if (!ended_) check_deadlines();
    }
  }

 private:
  // The next signal, or -1 when the nearest deadline has come.
  int next_signal() {
    std::optional<Clock::time_point> next = grace_deadline_ ? grace_deadline_ : max_deadline_;
    if (grace_deadline_ && max_deadline_) next = std::min(*grace_deadline_, *max_deadline_);
    timespec ts{};
    if (next) {
      const auto left = std::max(*next - Clock::now(), Clock::duration::zero());
      const auto secs = std::chrono::duration_cast<std::chrono::seconds>(left);
      ts.tv_sec = static_cast<time_t>(secs.count());
      ts.tv_nsec = static_cast<long>(std::chrono::nanoseconds(left - secs).count());
    }
    if (tty_ != nullptr) {  // the terminal is served between signals, 50 ms at a time
      const auto ms = next ? std::min<std::int64_t>(50, ts.tv_sec * 1000 + ts.tv_nsec / 1'000'000) : 50;
      tty_->pump(static_cast<int>(ms));
      const timespec now{};
      return ::sigtimedwait(&signals_, nullptr, &now);
    }
    return ::sigtimedwait(&signals_, nullptr, next ? &ts : nullptr);
  }

  // The whole process group; the main process directly only if it has left that group (its own
  // setsid or setpgid), so that it does not get the signal twice.
  // With cgroups, every process in them too, whatever session or group it made: SIGKILL as the
  // cgroup's kill, which also takes processes forked meanwhile.
  void signal_job(int sig) {
    if (::kill(-pid_, sig) != 0 || ::getpgid(pid_) != pid_) ::kill(pid_, sig);
    if (o_.cgroups.empty()) return;
    if (sig == SIGKILL) gpuq::binder::local::kill_cgroup(o_.cgroups);
    else gpuq::binder::local::signal_cgroup(o_.cgroups.front(), sig);
  }

  // A second request neither sends SIGTERM again nor moves the deadline.
  void stop(bool max_runtime) {
    (max_runtime ? status_.max_runtime_exceeded : status_.stop_requested) = true;
    if (stopping_) return;
    stopping_ = true;
    max_deadline_.reset();
    signal_job(SIGTERM);
    signal_job(SIGCONT);  // a stopped (SIGSTOP) job could not act on the SIGTERM
    grace_deadline_ = Clock::now() + std::chrono::seconds(o_.grace);
    const std::string what =
        max_runtime ? "max runtime of " + std::to_string(o_.max_runtime) + " s exceeded"
                    : std::string("stop requested");
    log_line(what + ": SIGTERM sent to the job, SIGKILL in " + std::to_string(o_.grace) + " s");
  }

  void kill_now() {
    status_.stop_requested = true;
    stopping_ = true;
    grace_deadline_.reset();
    max_deadline_.reset();
    if (killed_) return;
    killed_ = true;
    signal_job(SIGKILL);
    log_line("stop now requested: SIGKILL sent to the job");
  }

  void check_deadlines() {
    const auto now = Clock::now();
    if (max_deadline_ && now >= *max_deadline_) stop(true);
    if (grace_deadline_ && now >= *grace_deadline_) {
      grace_deadline_.reset();
      status_.killed_after_grace = true;
      killed_ = true;
      signal_job(SIGKILL);
      log_line("grace period over: SIGKILL sent to the job");
    }
  }

  // Reaps children that have ended. The main process is only observed at first (WNOWAIT): until
  // it is reaped its pid, which is also the job's process group id, cannot be reused, so the
  // group can still be killed safely.
  void reap() {
    for (;;) {
      siginfo_t info{};
      if (::waitid(P_ALL, 0, &info, WEXITED | WNOHANG | WNOWAIT | __WALL) != 0) return;
      if (info.si_pid == 0) return;
      if (info.si_pid != pid_) {
        ::waitpid(info.si_pid, nullptr, __WALL);  // an orphan of the job, reparented to us
        continue;
      }
      ::kill(-pid_, SIGKILL);  // the main process has ended: whatever is left of the job goes
      if (!o_.cgroups.empty()) gpuq::binder::local::kill_cgroup(o_.cgroups);
      int ws = 0;
      ::waitpid(pid_, &ws, __WALL);
      status_.outcome =
          WIFSIGNALED(ws) ? ShimStatus::Outcome::kSignaled : ShimStatus::Outcome::kExited;
      status_.code = WIFEXITED(ws) ? WEXITSTATUS(ws) : 0;
      status_.signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
      status_.ended_at = std::time(nullptr);
      ended_ = true;
      return;
    }
  }

  const Options& o_;
  const pid_t pid_;
  ShimStatus& status_;
  const sigset_t signals_;
  Terminal* tty_;
  std::optional<Clock::time_point> max_deadline_, grace_deadline_;
  bool stopping_ = false, killed_ = false, ended_ = false;
};

// Kills and reaps every process the job left behind; how many there were. Each of them is a
// descendant of the shim, and the shim being a subreaper, it becomes the shim's child when its
// own parent dies: killing the shim's children again and again until none is left reaches them
// all, even those that left the job's session and process group.
// With cgroups, each round kills the cgroups as well.
int kill_leftovers(const sigset_t& sigchld, const std::vector<std::string>& cgroups) {
  int reaped = 0;
  for (;;) {
    for (const pid_t child : gpuq::binder::local::child_pids(::getpid())) ::kill(child, SIGKILL);
    if (!cgroups.empty()) gpuq::binder::local::kill_cgroup(cgroups);
    for (;;) {
      const pid_t r = ::waitpid(-1, nullptr, WNOHANG | __WALL);
      if (r > 0) ++reaped;
      else if (r < 0 && errno == EINTR) continue;
      else if (r < 0) return reaped;  // ECHILD: nothing is left
      else break;                     // some are still dying
    }
    // Bounded, not a blocking waitpid: a process reparented to the shim after the listing above
    // is not killed yet, and only the next round kills it.
    const timespec tick{0, 50'000'000};
    ::sigtimedwait(&sigchld, nullptr, &tick);
  }
}

// If gpuqd started the shim with fd 0, 1 or 2 closed, the log could get one of those numbers,
// and dup2(log, 1) would then keep its O_CLOEXEC: the job would run without stdout.
void keep_std_fds_open() {
  for (;;) {
    const int fd = ::open("/dev/null", O_RDWR);
    if (fd < 0) return;
    if (fd > 2) {
      ::close(fd);
      return;
    }
  }
}

// The signals the shim waits for, blocked before anything else happens. Their dispositions are
// reset too: a SIGCHLD ignored by whoever spawned the shim would make the kernel reap the job
// unseen.
sigset_t take_signals() {
  sigset_t set;
  sigemptyset(&set);
  for (int sig : {SIGTERM, SIGINT, SIGHUP, SIGUSR1, SIGCHLD}) {
    sigaddset(&set, sig);
    ::signal(sig, SIG_DFL);
  }
  ::sigprocmask(SIG_BLOCK, &set, nullptr);
  return set;
}

ShimStatus& fail(ShimStatus& s, const std::string& error) {
  s.outcome = ShimStatus::Outcome::kError;
  s.code = 127;
  s.error = error;
  s.ended_at = std::time(nullptr);
  return s;
}

int finish(const Options& o, const ShimStatus& status) {
  if (gpuq::binder::local::write_status_file(o.status, status)) return 0;
  const std::string why =
      "cannot write status file \"" + o.status + "\": " + std::strerror(errno);
  log_line(why);
  std::fprintf(stderr, "gpuq-shim: %s\n", why.c_str());
  return 1;
}

}  // namespace

int main(int argc, char** argv) {
  const sigset_t signals = take_signals();
  keep_std_fds_open();
  std::string problem;
  const auto opts = parse_args(argc, argv, problem);
  if (!opts) {
    std::fprintf(stderr, "gpuq-shim: %s\n%s", problem.c_str(), kUsage);
    return 2;
  }
  ShimStatus status;
  status.started_at = std::time(nullptr);
  status.max_runtime = opts->max_runtime;
  const int subreaper = ::prctl(PR_SET_CHILD_SUBREAPER, 1);
  const int subreaper_errno = errno;
  g_log = ::open(opts->log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (g_log < 0) {
    const std::string why = std::strerror(errno);
    return finish(*opts, fail(status, "cannot open log \"" + opts->log + "\": " + why));
  }
  if (subreaper != 0) {
    log_line(std::string("cannot become a subreaper: ") + std::strerror(subreaper_errno));
  }
  if (!opts->go_fd_text.empty()) {
    const auto fd = parse_id(opts->go_fd_text);
    char go = 0;
    ssize_t n = -1;
    if (fd && *fd >= 3)
      while ((n = ::read(static_cast<int>(*fd), &go, 1)) < 0 && errno == EINTR) {
      }
    if (fd && *fd >= 3) ::close(static_cast<int>(*fd));
    if (n != 1) {  // gpuqd never recorded this shim: it starts the pod again itself
      log_line("gpuqd stopped before it recorded this pod's supervisor; not started here");
      return 3;
    }
  }
  std::string error;
  std::optional<Terminal> tty;
  if (!opts->stdin_fifo.empty() && !tty.emplace(g_log).open(opts->rows, opts->cols, opts->stdin_fifo, error)) {
    log_line(error);
    return finish(*opts, fail(status, error));
  }
  const pid_t pid = start_job(*opts, g_log, tty ? tty->slave() : -1, error);
  if (pid < 0) {
    log_line(error);
    return finish(*opts, fail(status, error));
  }
  if (tty) tty->close_slave();
  Supervisor(*opts, pid, status, signals, tty ? &*tty : nullptr).run();
  if (tty) tty->drain();
  sigset_t sigchld;
  sigemptyset(&sigchld);
  sigaddset(&sigchld, SIGCHLD);
  if (const int left = kill_leftovers(sigchld, opts->cgroups); left > 0) {
    log_line("killed " + std::to_string(left) + " process(es) the job left behind");
  }
  if (!opts->cgroups.empty()) {
    // Not a child of the shim (one moved in from outside): killed, and waited for a while.
    if (!gpuq::binder::local::wait_cgroup_empty(opts->cgroups, 5000))
      log_line("processes are still in the pod's cgroup " + opts->cgroups.front() + " after SIGKILL");
    status.oom_kills = gpuq::binder::local::cgroup_oom_kills(opts->cgroups);
    status.memory_limit = gpuq::binder::local::cgroup_memory_limit(opts->cgroups);
    status.cpu_usec = gpuq::binder::local::cgroup_cpu_usec(opts->cgroups);
    status.memory_peak = gpuq::binder::local::cgroup_memory_peak(opts->cgroups);
  }
  // On a terminal the log is the transcript the user sees (gpuq run says how it ended itself).
  if (const std::string how = gpuq::binder::local::describe(status); !how.empty() && !tty) {
    log_line("job ended: " + how);
  }
  return finish(*opts, status);
}
