// gpuq-shim as gpuqd runs it (a child in a session of its own, real processes), its status file
// format and the /proc helpers. No upper bound on time is asserted; a hung shim fails after 60 s.
#include <doctest/doctest.h>
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "binder/local/proc.hpp"
#include "binder/local/shim_status.hpp"
#include "tests/support/files.hpp"

extern char** environ;

namespace {

namespace fs = std::filesystem;
using namespace gpuq::binder::local;
using Clock = std::chrono::steady_clock;
using Outcome = ShimStatus::Outcome;
using gpuq::test::slurp;

struct TempDir {
  fs::path path;
  TempDir() {
    static int counter = 0;
    path = fs::temp_directory_path() /
           ("gpuq-shim-test-" + std::to_string(::getpid()) + "-" + std::to_string(++counter));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// As gpuqd spawns it: posix_spawn with POSIX_SPAWN_SETSID, the environment plus `extra_env`;
// the shim's own stderr into `stderr_path` when one is given.
pid_t spawn_shim(const std::vector<std::string>& args, const std::vector<std::string>& extra_env,
                 const std::string& stderr_path = "") {
  std::vector<std::string> words{GPUQ_SHIM_PATH};
  words.insert(words.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (auto& w : words) argv.push_back(w.data());
  argv.push_back(nullptr);
  std::vector<std::string> env(extra_env);
  for (char** e = environ; *e != nullptr; ++e) env.emplace_back(*e);
  std::vector<char*> envp;
  for (auto& e : env) envp.push_back(e.data());
  envp.push_back(nullptr);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETSID);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (!stderr_path.empty()) {
    posix_spawn_file_actions_addopen(&actions, 2, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                     0644);
  }
  pid_t pid = -1;
  const int rc = posix_spawn(&pid, GPUQ_SHIM_PATH, &actions, &attr, argv.data(), envp.data());
  posix_spawn_file_actions_destroy(&actions);
  posix_spawnattr_destroy(&attr);
  REQUIRE(rc == 0);
  return pid;
}

// The shim's wait status; a shim still running after 60 s is killed and fails the test.
int wait_shim(pid_t pid) {
  const auto deadline = Clock::now() + std::chrono::seconds(60);
  int ws = 0;
  while (::waitpid(pid, &ws, WNOHANG) == 0) {
    if (Clock::now() > deadline) {
      ::kill(pid, SIGKILL);  // its job dies with it (PR_SET_PDEATHSIG)
      ::waitpid(pid, &ws, 0);
      FAIL("gpuq-shim did not exit within 60 s");
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return ws;
}

bool wait_for_file(const std::string& path) {
  const auto deadline = Clock::now() + std::chrono::seconds(30);
  while (!fs::exists(path)) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  return true;
}

struct Run {
  int wait_status = -1;
  std::optional<ShimStatus> status;
  std::string log;
  double seconds = 0;  // from `during` (or the spawn) to the shim's exit
};

// Runs the shim to its end with its files and the job's working directory in `dir`. `options`
// come after the defaults (--grace 5, --workdir DIR), so they override them; `during` runs
// while the shim does, given its pid.
Run run_shim(const TempDir& dir, const std::vector<std::string>& command,
             const std::vector<std::string>& options = {},
             const std::function<void(pid_t)>& during = {},
             const std::vector<std::string>& extra_env = {}) {
  std::vector<std::string> args{"--status", dir / "status", "--log", dir / "job.log", "--grace",
                                "5", "--workdir", dir.path.string()};
  args.insert(args.end(), options.begin(), options.end());
  args.push_back("--");
  args.insert(args.end(), command.begin(), command.end());
  const pid_t pid = spawn_shim(args, extra_env);
  if (during) during(pid);
  const auto t0 = Clock::now();
  Run r;
  r.wait_status = wait_shim(pid);
  r.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  r.status = read_status_file(dir / "status");
  r.log = slurp(dir / "job.log");
  CHECK(WIFEXITED(r.wait_status));
  CHECK(WEXITSTATUS(r.wait_status) == 0);
  REQUIRE(r.status.has_value());
  CHECK_FALSE(fs::exists(dir / "status.tmp"));
  return r;
}

// Sends `sig` once the job has written `ready` (after installing its traps).
std::function<void(pid_t)> signal_when_ready(const TempDir& dir, int sig) {
  return [&dir, sig](pid_t shim) {
    REQUIRE(wait_for_file(dir / "ready"));
    ::kill(shim, sig);
  };
}

pid_t read_pid(const std::string& path) { return static_cast<pid_t>(std::stol(slurp(path))); }

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

}  // namespace

TEST_CASE("a job that exits 0, and one that exits 3") {
  TempDir d;
  const Run ok = run_shim(d, {"true"});
  CHECK(ok.status->outcome == Outcome::kExited);
  CHECK(ok.status->code == 0);
  CHECK(describe(*ok.status).empty());
  CHECK(exit_code_of(*ok.status) == 0);
  CHECK(ok.status->started_at > 0);
  CHECK(ok.status->ended_at >= ok.status->started_at);
  CHECK_FALSE(ok.status->stop_requested);

  const Run three = run_shim(d, {"sh", "-c", "exit 3"});
  CHECK(three.status->outcome == Outcome::kExited);
  CHECK(three.status->code == 3);
  CHECK(describe(*three.status) == "exit code 3");
  CHECK(exit_code_of(*three.status) == 3);
}

TEST_CASE("a job killed by a signal") {
  TempDir d;
  const Run r = run_shim(d, {"sh", "-c", "kill -9 $$"});
  CHECK(r.status->outcome == Outcome::kSignaled);
  CHECK(r.status->signal == 9);
  CHECK(describe(*r.status) == "killed by signal 9 (SIGKILL)");
  CHECK(exit_code_of(*r.status) == 137);
}

TEST_CASE("stdout and stderr go to the log; the environment and working directory reach the job") {
  TempDir d;
  const Run r = run_shim(d, {"sh", "-c", "echo out; echo err >&2; echo \"$FOO\"; pwd -P"}, {}, {},
                         {"FOO=foo value"});
  CHECK(r.status->code == 0);
  CHECK(contains(r.log, "out\n"));
  CHECK(contains(r.log, "err\n"));
  CHECK(contains(r.log, "foo value\n"));
  CHECK(contains(r.log, fs::canonical(d.path).string() + "\n"));
}

TEST_CASE("a job that cannot start is an error outcome, and the shim still exits 0") {
  TempDir d;
  SUBCASE("command not found") {
    const Run r = run_shim(d, {"gpuq-no-such-command"});
    CHECK(r.status->outcome == Outcome::kError);
    CHECK(r.status->code == 127);
    CHECK(exit_code_of(*r.status) == 127);
    CHECK(describe(*r.status) == "cannot run \"gpuq-no-such-command\": No such file or directory");
    CHECK(contains(r.log, "[gpuq] cannot run \"gpuq-no-such-command\""));
  }
  SUBCASE("not executable") {
    std::ofstream(d / "x.sh") << "#!/bin/sh\necho hello\n";
    fs::permissions(d / "x.sh", fs::perms::owner_read | fs::perms::owner_write);
    const Run r = run_shim(d, {"./x.sh"});
    CHECK(r.status->outcome == Outcome::kError);
    CHECK(r.status->error == "cannot run \"./x.sh\": Permission denied");
  }
  SUBCASE("missing working directory") {
    const Run r = run_shim(d, {"true"}, {"--workdir", d / "nope"});
    CHECK(r.status->outcome == Outcome::kError);
    CHECK(r.status->error == "working directory \"" + d / "nope" + "\": No such file or directory");
  }
  SUBCASE("log cannot be opened") {
    const Run r = run_shim(d, {"true"}, {"--log", d / "no-dir/job.log"});
    CHECK(r.status->outcome == Outcome::kError);
    CHECK(contains(r.status->error, "cannot open log"));
  }
}

TEST_CASE("as root, --uid/--gid/--groups: the job runs as that account, with no new privileges") {
  if (::geteuid() != 0) {
    MESSAGE("not root: the shim cannot change accounts; CI runs as root");
    return;
  }
  TempDir d;
  ::chmod(d.path.c_str(), 0755);
  const Run r = run_shim(d, {"sh", "-c", "id -u; id -g; id -G; grep NoNewPrivs /proc/self/status"},
                         {"--user", "nobody", "--uid", "65534", "--gid", "65534", "--groups", "65534,4"});
  CHECK(r.status->code == 0);
  CHECK_MESSAGE(contains(r.log, "65534\n65534\n65534 4\nNoNewPrivs:\t1\n"), r.log);
  // A directory the account may not enter: refused as that account, though the shim could.
  fs::create_directory(d / "private");
  ::chmod((d / "private").c_str(), 0700);
  const Run denied = run_shim(d, {"true"}, {"--workdir", d / "private", "--user", "nobody", "--uid", "65534", "--gid",
                                            "65534", "--groups", "65534"});
  CHECK(denied.status->outcome == Outcome::kError);
  CHECK(denied.status->error == "working directory \"" + d / "private" + "\" (as user nobody): Permission denied");
}

TEST_CASE("--go-fd: the job starts on gpuqd's byte, and never when gpuqd's end closes without one") {
  for (const bool go : {true, false}) {
    CAPTURE(go);
    TempDir d;
    int p[2];
    REQUIRE(::pipe(p) == 0);
    REQUIRE(::fcntl(p[1], F_SETFD, FD_CLOEXEC) == 0);  // the write end stays gpuqd's (the test's)
    const pid_t pid = spawn_shim({"--status", d / "status", "--log", d / "job.log", "--grace", "5", "--workdir",
                                  d.path.string(), "--go-fd", std::to_string(p[0]), "--", "sh", "-c", "touch ran"},
                                 {});
    ::close(p[0]);
    // As gpuqd: its byte once the shim's pid is on disk; or killed before that (its end closes).
    if (go) REQUIRE(::write(p[1], "g", 1) == 1);
    ::close(p[1]);
    const int ws = wait_shim(pid);
    REQUIRE(WIFEXITED(ws));
    if (go) {
      CHECK(WEXITSTATUS(ws) == 0);
      CHECK(fs::exists(d / "ran"));
      CHECK(read_status_file(d / "status").has_value());
    } else {
      CHECK(WEXITSTATUS(ws) == 3);
      CHECK_FALSE(fs::exists(d / "ran"));
      CHECK_FALSE(fs::exists(d / "status"));  // nothing that a restart could take for the pod's end
      CHECK(contains(slurp(d / "job.log"), "not started here"));
    }
  }
}

TEST_CASE("bad usage exits 2") {
  TempDir d;
  const std::string status = d / "status";
  for (const auto& args : std::vector<std::vector<std::string>>{
           {"--status", status, "--log", d / "log", "--grace", "1", "true"},
           {"--status", status, "--log", d / "log", "--", "true"},
           {"--status", status, "--log", d / "log", "--grace", "soon", "--", "true"},
           {"--status", status, "--log", d / "log", "--grace", "1", "--bogus", "x", "--", "true"},
           {"--status", status, "--log", d / "log", "--grace", "1", "--"},
           // the identity flags go together, with numeric ids
           {"--status", status, "--log", d / "log", "--grace", "1", "--uid", "65534", "--", "true"},
           {"--status", status, "--log", d / "log", "--grace", "1", "--user", "nobody", "--uid", "nobody", "--gid",
            "65534", "--groups", "", "--", "true"},
           {"--status", status, "--log", d / "log", "--grace", "1", "--user", "nobody", "--uid", "65534", "--gid",
            "65534", "--groups", "1,x", "--", "true"}}) {
    const int ws = wait_shim(spawn_shim(args, {}, d / "stderr"));
    CHECK(WIFEXITED(ws));
    CHECK(WEXITSTATUS(ws) == 2);
    CHECK(contains(slurp(d / "stderr"), "usage: gpuq-shim --status FILE"));
    CHECK_FALSE(fs::exists(status));
  }
}

TEST_CASE("SIGTERM to the shim stops the job, which may exit cleanly within the grace period") {
  TempDir d;
  const Run r =
      run_shim(d, {"sh", "-c", "trap 'exit 0' TERM; touch ready; while :; do sleep 0.1; done"}, {},
               signal_when_ready(d, SIGTERM));
  CHECK(r.status->outcome == Outcome::kExited);
  CHECK(r.status->code == 0);
  CHECK(r.status->stop_requested);
  CHECK_FALSE(r.status->killed_after_grace);
  CHECK(contains(r.log, "[gpuq] stop requested: SIGTERM sent to the job, SIGKILL in 5 s\n"));
}

TEST_CASE("a job that ignores SIGTERM is killed when the grace period is over") {
  TempDir d;
  const Run r = run_shim(d, {"sh", "-c", "trap '' TERM; touch ready; sleep 30"}, {"--grace", "1"},
                         signal_when_ready(d, SIGTERM));
  CHECK(r.status->outcome == Outcome::kSignaled);
  CHECK(r.status->signal == 9);
  CHECK(r.status->stop_requested);
  CHECK(r.status->killed_after_grace);
  CHECK(r.seconds >= 0.9);
  CHECK(contains(r.log, "[gpuq] grace period over: SIGKILL sent to the job\n"));
}

TEST_CASE("the max runtime stops the job") {
  TempDir d;
  const Run r = run_shim(d, {"sleep", "30"}, {"--max-runtime", "1"});
  CHECK(r.status->outcome == Outcome::kSignaled);
  CHECK(r.status->signal == 15);
  CHECK(r.status->max_runtime_exceeded);
  CHECK_FALSE(r.status->stop_requested);
  CHECK(r.seconds >= 0.9);
  CHECK(describe(*r.status) == "max runtime of 1 s exceeded; killed by signal 15 (SIGTERM)");
  CHECK(contains(r.log, "[gpuq] max runtime of 1 s exceeded: SIGTERM sent to the job"));
}

TEST_CASE("SIGUSR1 kills the job at once, without a grace period") {
  TempDir d;
  const Run r = run_shim(d, {"sh", "-c", "trap '' TERM; touch ready; sleep 30"}, {"--grace", "30"},
                         signal_when_ready(d, SIGUSR1));
  CHECK(r.status->outcome == Outcome::kSignaled);
  CHECK(r.status->signal == 9);
  CHECK(r.status->stop_requested);
  CHECK_FALSE(r.status->killed_after_grace);
}

TEST_CASE("no process of the job is left once the shim has exited") {
  TempDir d;
  SUBCASE("a background process in the job's process group") {
    const Run r = run_shim(d, {"sh", "-c", "sleep 300 & echo $! > bg.pid; exit 0"});
    CHECK(r.status->code == 0);
    const pid_t bg = read_pid(d / "bg.pid");
    CHECK(bg > 0);
    CHECK_FALSE(process_start_ticks(bg).has_value());
    CHECK(contains(r.log, "left behind"));
  }
  SUBCASE("a grandchild that escaped into a session of its own") {
    const Run r = run_shim(d, {"sh", "-c", R"sh(
      ( setsid sh -c 'echo $$ > esc.tmp; mv esc.tmp esc.pid; exec sleep 300' & )
      while [ ! -s esc.pid ]; do sleep 0.05; done
      exit 0)sh"});
    CHECK(r.status->code == 0);
    const pid_t escaped = read_pid(d / "esc.pid");
    CHECK(escaped > 0);
    CHECK_FALSE(process_start_ticks(escaped).has_value());
  }
}

TEST_CASE("status text: round trip, unknown keys, garbage") {
  ShimStatus s;
  s.outcome = Outcome::kError;
  s.code = 127;
  s.stop_requested = true;
  s.max_runtime_exceeded = true;
  s.killed_after_grace = true;
  s.error = "cannot run \"a\\b\nc\": No such file or directory";
  s.started_at = 1700000000;
  s.ended_at = 1700000042;
  s.max_runtime = 10;
  const auto back = parse_status(format_status(s));
  REQUIRE(back.has_value());
  CHECK(back->outcome == s.outcome);
  CHECK(back->code == 127);
  CHECK(back->error == s.error);
  CHECK(format_status(*back) == format_status(s));  // every other field, as written

  const auto future = parse_status("outcome=signaled\nsignal=15\nfuture_key=x\nno equals\n");
  REQUIRE(future.has_value());
  CHECK(future->signal == 15);
  CHECK(exit_code_of(*future) == 143);
  for (const char* bad : {"", "hello\nworld\n", "outcome=maybe\n", "code=3\n",
                          "outcome=exited\ncode=three\n", "outcome=exited\nstop_requested=2\n"}) {
    CHECK_FALSE(parse_status(bad).has_value());
  }
}

TEST_CASE("status text: the OOM killer at the cgroup's limit is the reason a job failed; not of one that succeeded") {
  ShimStatus s;
  s.outcome = Outcome::kSignaled;
  s.signal = 9;
  s.oom_kills = 1;
  s.memory_limit = std::int64_t{2} << 30;
  const auto back = parse_status(format_status(s));
  REQUIRE(back.has_value());
  CHECK(back->oom_kills == 1);
  CHECK(back->memory_limit == s.memory_limit);
  CHECK(describe(*back) == "out of memory: 2 GiB limit; killed by signal 9 (SIGKILL)");
  s.outcome = Outcome::kExited;
  s.code = 1;  // a child was killed; the main process gave up
  s.memory_limit = 0;
  CHECK(describe(s) == "out of memory; exit code 1");
  s.code = 0;  // it coped
  CHECK(describe(s).empty());
  CHECK(bytes_text(64 << 20) == "64 MiB");
  CHECK(bytes_text(1536LL << 20) == "1.5 GiB");
  CHECK(bytes_text(100) == "100 B");
}

TEST_CASE("status file: written atomically, read back") {
  TempDir d;
  ShimStatus s;
  s.outcome = Outcome::kSignaled;
  s.signal = 9;
  s.killed_after_grace = true;
  s.max_runtime_exceeded = true;
  s.max_runtime = 10;
  REQUIRE(write_status_file(d / "status", s));
  CHECK_FALSE(fs::exists(d / "status.tmp"));
  const auto back = read_status_file(d / "status");
  REQUIRE(back.has_value());
  CHECK(describe(*back) ==
        "max runtime of 10 s exceeded; killed by signal 9 (SIGKILL) after the grace period");
  CHECK_FALSE(read_status_file(d / "missing").has_value());
  CHECK_FALSE(write_status_file(d / "no-dir/status", s));
}

TEST_CASE("process_start_ticks, child_pids, boot_id") {
  const auto mine = process_start_ticks(::getpid());
  REQUIRE(mine.has_value());
  CHECK(process_start_ticks(::getpid()) == mine);
  CHECK_FALSE(process_start_ticks(0).has_value());
  CHECK_FALSE(boot_id().empty());
  CHECK(boot_id().find_first_of(" \n") == std::string::npos);

  // A child whose comm holds spaces and parentheses: the fields start after the LAST ')'.
  int ready[2];
  REQUIRE(::pipe(ready) == 0);
  const pid_t child = ::fork();
  REQUIRE(child >= 0);
  if (child == 0) {
    ::prctl(PR_SET_NAME, "a) b (c) d");
    [[maybe_unused]] const ssize_t n = ::write(ready[1], "x", 1);
    ::pause();
    ::_exit(0);
  }
  char byte = 0;
  REQUIRE(::read(ready[0], &byte, 1) == 1);
  const auto ticks = process_start_ticks(child);
  REQUIRE(ticks.has_value());
  CHECK(*ticks >= *mine);
  CHECK(*ticks - *mine < 3600u * static_cast<std::uint64_t>(::sysconf(_SC_CLK_TCK)));  // not vsize
  for (const auto& pids : {child_pids(::getpid()), child_pids_by_scan(::getpid())}) {
    CHECK(std::find(pids.begin(), pids.end(), child) != pids.end());
  }

  // A zombie is not running; a reaped child does not exist.
  ::kill(child, SIGKILL);
  siginfo_t info{};
  REQUIRE(::waitid(P_PID, static_cast<id_t>(child), &info, WEXITED | WNOWAIT) == 0);
  CHECK_FALSE(process_start_ticks(child).has_value());
  ::waitpid(child, nullptr, 0);
  CHECK_FALSE(process_start_ticks(child).has_value());
  ::close(ready[0]);
  ::close(ready[1]);
}

TEST_CASE("--stdin: the job runs on a terminal of the given size; its input from the FIFO, its output to the log") {
  TempDir d;
  REQUIRE(::mkfifo((d / "stdin").c_str(), 0600) == 0);
  // The job says what it reads, its terminal and its size; ^C (typed, not a signal gpuqd sends)
  // then interrupts the sleep through the terminal's line discipline.
  const Run r = run_shim(
      d, {"sh", "-c", "[ -t 0 ] && [ -t 1 ] && echo tty-ok; stty size; read x; echo got:$x; sleep 30"},
      {"--stdin", d / "stdin", "--tty-size", "33x101"}, [&](pid_t) {
        const int fd = ::open((d / "stdin").c_str(), O_WRONLY);  // blocks until the shim opened it
        REQUIRE(fd >= 0);
        CHECK(::write(fd, "hello\n", 6) == 6);
        ::close(fd);
        const auto deadline = Clock::now() + std::chrono::seconds(30);
        while (!contains(slurp(d / "job.log"), "got:hello") && Clock::now() < deadline)
          std::this_thread::sleep_for(std::chrono::milliseconds(10));
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // into its sleep
        const int again = ::open((d / "stdin").c_str(), O_WRONLY);
        CHECK(::write(again, "\x03", 1) == 1);
        ::close(again);
      });
  CHECK(contains(r.log, "tty-ok"));
  CHECK(contains(r.log, "33 101"));
  CHECK(contains(r.log, "hello\r\n"));  // the terminal's echo
  CHECK(contains(r.log, "got:hello\r\n"));
  CHECK(r.status->outcome == Outcome::kSignaled);
  CHECK(r.status->signal == SIGINT);
  CHECK_FALSE(contains(r.log, "[gpuq] job ended"));  // the transcript is the user's
}
