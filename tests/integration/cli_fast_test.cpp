// gpuq's fast path and its shell completion, against a real gpuqd (none binder):
// - the command line gpuq builds for one call (only the subcommand it names; issue [7/7]) gives
//   the same exit codes, output and errors as the whole tree, and so does the real binary (static,
//   exiting without tearing down), for tables, -o json|yaml, help and every kind of error;
// - to a unix: server, unary calls go as plain HTTP/2 on the socket (cli/unix_call.hpp): the
//   answers and errors are those of the gRPC channel (GPUQ_TRANSPORT=grpc), and a socket that
//   does not answer or hangs up is reported as before;
// - the quick gpuq answers its own commands without gpuq-full beside it, hands the rest over, and
//   never runs a command again in gpuq-full once gpuqd answered one of its calls;
// - `gpuq __complete` gives commands, flags, flag values, queue and node names and job ids from
//   gpuqd, and nothing (not an error) when gpuqd cannot be reached;
// - the bash and zsh scripts of `gpuq completion`, run by real bash and zsh, complete through it.
#include <doctest/doctest.h>

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <thread>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/integration/cli_as.hpp"
#include "tests/support/files.hpp"

// The file's own names (tests build as unity batches: no clash with another file's).
namespace integration_cli_fast_test {

using namespace gpuq::test;

namespace {

struct Answer {
  int rc = 0;
  std::string out, err;
};

// `grpc`: through the gRPC channel (GPUQ_TRANSPORT=grpc), as every call went before.
Answer in_process(const std::vector<std::string>& args, bool whole_tree, bool grpc = false) {
  if (grpc) ::setenv("GPUQ_TRANSPORT", "grpc", 1);
  std::ostringstream out, err;
  Answer a;
  a.rc = gpuq::cli::run_cli(args, out, err, {.whole_tree = whole_tree, .leak_tree = false});
  ::unsetenv("GPUQ_TRANSPORT");
  a.out = out.str();
  a.err = err.str();
  return a;
}

std::string slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

std::string quoted(const std::string& word) {
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

// The real binary (the quick gpuq, or `path`), its stdout and stderr apart; `env`: "NAME=VALUE "
// words before it.
Answer binary(const TempDir& dir, const std::vector<std::string>& args, const std::string& env = "",
              const std::string& path = GPUQ_CLI_PATH, const std::string& stdin_file = "/dev/null") {
  std::string command = env + path;
  for (const auto& a : args) command += " " + quoted(a);
  const std::string out = (dir.path / "bin.out").string(), err = (dir.path / "bin.err").string();
  const CliRun r = shell("(" + command + " < " + quoted(stdin_file) + " > " + out + " 2> " + err + ")");
  return {r.rc, slurp(out), slurp(err)};
}

// The answer with the ages a table or show gives ("4s", "(12m ago)") and the times of now
// (explain's "Computed:  2026-11-28T23:35:08Z") blanked and its columns' padding collapsed: calls
// a second apart list the same job 4s and 5s old.
std::string ageless(const std::string& text) {
  static const std::regex age(R"((^|\s|\()\d+[smhd](?=\s|$))"), spaces(" +"),
      computed(R"(Computed: +\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ)");
  return std::regex_replace(std::regex_replace(std::regex_replace(text, computed, "Computed: TIME"), age, "$1AGE"),
                            spaces, " ");
}

std::vector<std::string> lines(const std::string& text) {
  std::vector<std::string> v;
  std::istringstream in(text);
  for (std::string l; std::getline(in, l);) v.push_back(l);
  return v;
}

std::vector<std::string> candidates(const Daemon& d, std::vector<std::string> words) {
  std::vector<std::string> args = {"--server", "unix:" + d.socket(), "__complete", "--"};
  args.insert(args.end(), words.begin(), words.end());
  const Answer a = in_process(args, false);
  REQUIRE_MESSAGE(a.rc == 0, a.err);
  CHECK(a.err.empty());
  return lines(a.out);
}

bool has(const std::vector<std::string>& v, const std::string& x) { return std::find(v.begin(), v.end(), x) != v.end(); }

}  // namespace

TEST_CASE("ageless blanks what differs between two calls a few seconds apart") {
  // As show and explain print them (explain pads its label with two spaces).
  CHECK(ageless("Submitted:   2026-11-29T01:07:06Z (0s ago)\nComputed:  2026-11-29T01:07:06Z\n") ==
        ageless("Submitted:   2026-11-29T01:07:06Z (3s ago)\nComputed:  2026-11-29T01:07:09Z\n"));
  CHECK(ageless("j1  research  Held  4s\n") == ageless("j1  research  Held   5s\n"));
  CHECK(ageless("Submitted:   2026-11-29T01:07:06Z\n") != ageless("Submitted:   2026-11-29T01:07:07Z\n"));
}

TEST_CASE("gpuq's one-subcommand tree, its Unix-socket calls and its static binary answer exactly as the whole tree "
          "through gRPC does") {
  TempDir dir;
  Daemon d(dir.path);
  const CliRun sub = gpuq_me(d, {"submit", "-q", "research", "--gpus", "2", "--hold", "--name", "fast", "--", "true"});
  REQUIRE_MESSAGE(sub.rc == 0, sub.out);
  const std::string id = submitted_job(sub);
  const std::string server = "unix:" + d.socket();
  const std::vector<std::vector<std::string>> calls = {
      {"--version"},
      {},
      {"--help"},
      {"-h"},
      {"ls", "--help"},
      {"submit", "--help"},
      {"admin", "token", "--help"},
      {"lss"},
      {"ls", "--bogus"},
      {"ls", "-o", "xml"},
      {"ls", "--finished", "--all"},
      {"--timeout"},
      {"--server", server, "ls", "-o", "json"},
      {"--server=" + server, "--timeout", "5", "list", "-o", "yaml", "--all"},
      {"--server", server, "show", id, "-o", "json"},
      {"--server", server, "show", "j999"},
      {"--server", server, "cancel"},
      {"--server", server, "queues"},
      {"--server", server, "queues", "-o", "yaml"},
      {"--server", server, "nodes", "-o", "json"},
      {"--server", server, "submit", "-q", "nope", "--gpus", "1", "--", "true"},
      {"--server", server, "submit", "-q", "research", "--gpus", "-3", "--", "true"},
      {"--server", server, "update", id},
      {"--server", server, "update", id, "--priority", "nonsense"},
      {"--server", server, "hold", "j998"},
      {"--server", server, "release", "j998"},
      {"--server", server, "explain", "j999", "-o", "json"},
      {"--server", server, "queues", "research", "-o", "json"},
      {"--server", server, "queues", "nope"},
      {"--server", server, "queues", "export"},
      {"--server", server, "ls", "--all", "--limit", "1"},
      {"--server", server, "cancel", "j997", "j996"},
      {"--server", "unix:" + (dir.path / "none.sock").string(), "ls"},
      {"completion", "bash"},
      {"completion", "fish"},
      {"sim", "--help"},
      {"usage", "--by", "nothing"},
  };
  for (const auto& args : calls) {
    std::string shown;
    for (const auto& a : args) shown += " " + a;
    CAPTURE(shown);
    // The real gpuq runs gpuq-full for what it does not do itself; with GPUQ_TRANSPORT=grpc,
    // for every call that reaches gpuqd.
    const Answer whole = in_process(args, true, /*grpc=*/true), fast = in_process(args, false),
                 real = binary(dir, args), real_grpc = binary(dir, args, "GPUQ_TRANSPORT=grpc ");
    CHECK(fast.rc == whole.rc);
    CHECK(ageless(fast.out) == ageless(whole.out));
    CHECK(fast.err == whole.err);
    CHECK(real.rc == whole.rc);
    CHECK(ageless(real.out) == ageless(whole.out));
    CHECK(real.err == whole.err);
    CHECK(real_grpc.rc == whole.rc);
    CHECK(ageless(real_grpc.out) == ageless(whole.out));
    CHECK(real_grpc.err == whole.err);
    CHECK_MESSAGE(!(whole.out + whole.err).empty(), "every call says something");
  }
  // The exit codes are today's: 0, 1 for a refused or unreachable call, 2 for a usage error.
  CHECK(in_process({"--version"}, false).out.rfind("gpuq ", 0) == 0);
  CHECK(in_process({"--server", server, "show", "j999"}, false).rc == 1);
  CHECK(in_process({"ls", "-o", "xml"}, false).rc == 2);
  // Submits (each a new job) and a cancel, each way.
  for (bool grpc : {true, false}) {
    CAPTURE(grpc);
    const Answer a = in_process({"--server", server, "submit", "-q", "research", "--gpus", "1", "--hold", "--", "true"},
                                false, grpc);
    REQUIRE(a.rc == 0);
    CHECK(a.out.find(" submitted (Held)\n") != std::string::npos);
    const std::string job = a.out.substr(4, a.out.find(' ') - 4);
    const Answer c = in_process({"--server", server, "cancel", job}, false, grpc);
    CHECK(c.out == "job/" + job + " cancelled (Cancelled)\n");
    CHECK(c.rc == 0);
  }
  // A request and a reply of many HTTP/2 frames (past the 64 KiB flow-control window): a batch
  // script of 100 KB.
  const std::string script = (dir.path / "big.sh").string();
  {
    std::ofstream f(script);
    f << "#!/bin/sh\n";
    for (int i = 0; f.tellp() < 100'000; ++i) f << "echo line " << i << " of a long script\n";
  }
  const Answer big = in_process({"--server", server, "submit", "-q", "research", "--gpus", "1", "--hold", script}, false);
  REQUIRE_MESSAGE(big.rc == 0, big.err);
  const std::string big_id = big.out.substr(4, big.out.find(' ') - 4);
  const Answer fast = in_process({"--server", server, "show", big_id, "-o", "json"}, false),
               channel = in_process({"--server", server, "show", big_id, "-o", "json"}, false, true);
  CHECK(fast.rc == 0);
  CHECK(fast.out.size() > 100'000);
  CHECK(fast.out == channel.out);
}

// The quick gpuq alone in a directory, without gpuq-full beside it: what it does itself works, and
// the rest says which program is missing (so the calls above that worked through it were its own).
TEST_CASE("the quick gpuq answers its commands itself and runs gpuq-full for the rest") {
  TempDir dir;
  Daemon d(dir.path);
  const std::string server = "unix:" + d.socket();
  const fs::path alone = dir.path / "alone";
  fs::create_directories(alone);
  fs::copy_file(GPUQ_CLI_PATH, alone / "gpuq");
  const std::string quick = (alone / "gpuq").string();
  const Answer version = binary(dir, {"--version"}, "", quick);
  CHECK(version.rc == 0);
  CHECK(version.out.rfind("gpuq ", 0) == 0);
  const Answer sub = binary(dir, {"--server", server, "submit", "-q", "research", "--gpus", "1", "--hold", "--", "true"},
                            "", quick);
  REQUIRE_MESSAGE(sub.rc == 0, sub.err);
  const std::string job = sub.out.substr(4, sub.out.find(' ') - 4);
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--server", server, "ls", "-o", "json"}, {"--server", server, "show", job},
        {"--server", server, "explain", job}, {"--server", server, "update", job}, {"submit", "--help"},
        {"ls", "--bogus"}, {"--server", server, "queues"}, {"--server", server, "nodes", "-o", "json"},
        {"--server", server, "admin", "audit", "--limit", "3"}}) {
    CAPTURE(args.back());
    const Answer a = binary(dir, args, "", quick), whole = in_process(args, true);
    CHECK(a.rc == whole.rc);
    CHECK(ageless(a.out) == ageless(whole.out));
    CHECK(a.err == whole.err);
  }
  {  // its period ends now: not compared with a call made a moment later
    const Answer a = binary(dir, {"--server", server, "usage", "--by", "user"}, "", quick);
    CHECK_MESSAGE(a.rc == 0, a.err);
    CHECK(a.out.rfind("From ", 0) == 0);
  }
  for (const char* verb : {"release", "cancel"}) {  // once each: the whole tree would find it done
    const Answer a = binary(dir, {"--server", server, verb, job}, "", quick);
    CHECK_MESSAGE(a.rc == 0, a.err);
    CHECK(a.out.rfind("job/" + job + " ", 0) == 0);
  }
  for (const std::vector<std::string>& args :
       {std::vector<std::string>{"--help"}, {"--server", server, "watch"}, {"--server", server, "logs", job},
        {"--server", server, "admin", "backup", (dir.path / "copy.db").string()}, {"sim", "--help"},
        {"completion", "bash"}}) {
    const Answer a = binary(dir, args, "", quick);
    CAPTURE(a.err);
    CHECK(a.rc == 1);
    CHECK(a.out.empty());
    CHECK(a.err.find("gpuq: cannot run " + (alone / "gpuq-full").string() + " (No such file or directory)") == 0);
  }
  // Through the channel, or to a socket nobody listens on, it is gpuq-full's to call and report.
  for (const char* env : {"GPUQ_TRANSPORT=grpc ", ""}) {
    const std::string to = *env != 0 ? server : "unix:" + (dir.path / "none.sock").string();
    const Answer a = binary(dir, {"--server", to, "show", job}, env, quick);
    CHECK(a.rc == 1);
    CHECK(a.err.find("gpuq-full") != std::string::npos);
  }
  {  // through the channel, gpuq-full's from the start: the quick gpuq reads no file of the command
    const Answer a = binary(dir, {"--server", server, "submit", "-f", (dir.path / "absent.yaml").string()},
                            "GPUQ_TRANSPORT=grpc ", quick);
    CHECK(a.rc == 1);
    CHECK(a.err.find("gpuq: cannot run " + (alone / "gpuq-full").string()) == 0);
  }
}

// `cat job.yaml | gpuq submit -f -` when the quick gpuq hands the command to gpuq-full: gpuq-full
// must get the same job from the same standard input, not an empty one the quick gpuq read. With
// GPUQ_TRANSPORT=grpc (as a TCP server) it hands over before reading; to a socket nobody listens
// on, after (it read and parsed the job first): gpuq-full reads it again, and says gpuqd cannot be
// reached rather than that the job file was empty.
TEST_CASE("the quick gpuq hands a command over with its standard input unread") {
  TempDir dir;
  Daemon d(dir.path);
  const std::string server = "unix:" + d.socket();
  const fs::path job = dir.path / "job.yaml";
  std::ofstream(job) << "queue: research\nid: piped\npods: [{resources: {gpu: 1}}]\ncommand: [sleep, '1']\n";
  const Answer grpc =
      binary(dir, {"--server", server, "submit", "-f", "-", "--hold"}, "GPUQ_TRANSPORT=grpc ", GPUQ_CLI_PATH, job);
  CHECK_MESSAGE(grpc.rc == 0, grpc.err);
  CHECK(grpc.out == "job/piped submitted (Held)\n");
  const std::string none = "unix:" + (dir.path / "none.sock").string();
  const Answer gone = binary(dir, {"--server", none, "submit", "-f", "-"}, "", GPUQ_CLI_PATH, job);
  CHECK(gone.rc == 1);
  CHECK_MESSAGE(gone.err.rfind("gpuq: cannot reach the gpuq daemon at " + none + " (", 0) == 0, gone.err);
}

namespace {

// A Unix socket in the test: it listens and either never accepts (a gpuqd that hangs) or
// accepts and hangs up at once.
class Socket {
 public:
  Socket(const fs::path& path, bool hang_up) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    sockaddr_un a{};
    a.sun_family = AF_UNIX;
    std::snprintf(a.sun_path, sizeof a.sun_path, "%s", path.c_str());
    REQUIRE(::bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    if (hang_up)
      thread_ = std::thread([this] {
        for (;;) {
          const int c = ::accept(fd_, nullptr, nullptr);
          if (c < 0 || stop_) break;
          ::close(c);
        }
      });
  }
  ~Socket() {
    stop_ = true;
    ::shutdown(fd_, SHUT_RDWR);
    if (thread_.joinable()) thread_.join();
    ::close(fd_);
  }

 private:
  int fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// A socket that passes its first connection on to gpuqd's and then is gone: it stops listening
// as soon as it accepted, so a second connection finds nobody (a gpuqd that went away between two
// calls of one command).
class Once {
 public:
  Once(const fs::path& path, const std::string& target) : fd_(::socket(AF_UNIX, SOCK_STREAM, 0)) {
    REQUIRE(::bind(fd_, address(path.string()), sizeof(sockaddr_un)) == 0);
    REQUIRE(::listen(fd_, 16) == 0);
    thread_ = std::thread([this, path, target] {
      const int in = ::accept(fd_.load(), nullptr, nullptr);
      if (const int l = fd_.exchange(-1); l >= 0) ::close(l);  // nobody listens on `path` now
      ::unlink(path.c_str());
      if (in < 0) return;
      const int up = ::socket(AF_UNIX, SOCK_STREAM, 0);
      if (::connect(up, address(target), sizeof(sockaddr_un)) == 0) relay(in, up);
      ::close(up);
      ::close(in);
    });
  }
  ~Once() {
    const int l = fd_.exchange(-1);
    if (l >= 0) ::shutdown(l, SHUT_RDWR);  // nothing accepted: accept returns
    thread_.join();
    if (l >= 0) ::close(l);
  }

 private:
  const sockaddr* address(const std::string& path) {
    addr_ = {};
    addr_.sun_family = AF_UNIX;
    std::snprintf(addr_.sun_path, sizeof addr_.sun_path, "%s", path.c_str());
    return reinterpret_cast<const sockaddr*>(&addr_);
  }
  // Bytes both ways until either side closes.
  static void relay(int a, int b) {
    pollfd fds[2] = {{a, POLLIN, 0}, {b, POLLIN, 0}};
    char buf[16384];
    while (::poll(fds, 2, 10'000) > 0) {
      for (int i = 0; i < 2; ++i) {
        if (fds[i].revents == 0) continue;
        const ssize_t n = ::read(fds[i].fd, buf, sizeof buf);
        if (n <= 0 || ::write(fds[1 - i].fd, buf, static_cast<std::size_t>(n)) != n) return;
      }
    }
  }
  std::atomic<int> fd_;
  sockaddr_un addr_{};
  std::thread thread_;
};

}  // namespace

// gpuqd answered the first of a command's calls and then cannot be connected: the quick gpuq
// must not run the command again in gpuq-full (the first job would be cancelled twice); it says
// gpuqd cannot be reached, as gpuq-full says it, and the jobs it did not reach are untouched.
TEST_CASE("the quick gpuq, its socket gone after a command's first call, reports it unreachable and runs nothing again") {
  TempDir dir;
  Daemon d(dir.path);
  const std::string server = "unix:" + d.socket();
  const fs::path alone = dir.path / "alone";  // no gpuq-full beside it: a hand-over would fail loudly
  fs::create_directories(alone);
  fs::copy_file(GPUQ_CLI_PATH, alone / "gpuq");
  const std::string quick = (alone / "gpuq").string();
  std::vector<std::string> jobs;
  for (int i = 0; i < 2; ++i) {
    const Answer sub = binary(
        dir, {"--server", server, "submit", "-q", "research", "--gpus", "1", "--hold", "--", "true"}, "", quick);
    REQUIRE_MESSAGE(sub.rc == 0, sub.err);
    jobs.push_back(sub.out.substr(4, sub.out.find(' ') - 4));
  }
  const fs::path once = dir.path / "once.sock";
  Answer a;
  {
    Once relay(once, d.socket());
    a = binary(dir, {"--server", "unix:" + once.string(), "cancel", jobs[0], jobs[1]}, "", quick);
  }
  CHECK(a.rc == 1);
  CHECK(a.out == "job/" + jobs[0] + " cancelled (Cancelled)\n");
  CHECK(a.err == "gpuq: cannot reach the gpuq daemon at unix:" + once.string() + " (failed to connect to unix:" +
                     once.string() +
                     " for /gpuq.v1.Jobs/Cancel (it answered this command's earlier calls)); start it with "
                     "scripts/run.sh, or point --server or GPUQ_SERVER at a running gpuqd\n");
  const Answer second = binary(dir, {"--server", server, "show", jobs[1]}, "", quick);
  CHECK_MESSAGE(second.out.find("State:       Held\n") != std::string::npos, second.out);
  const Answer first = binary(dir, {"--server", server, "show", jobs[0]}, "", quick);
  CHECK_MESSAGE(first.out.find("State:       Cancelled\n") != std::string::npos, first.out);
}

TEST_CASE("gpuq's Unix-socket calls: a socket that never answers runs out the deadline, one that hangs up is unreachable") {
  TempDir dir;
  {
    Socket silent(dir.path / "silent.sock", false);
    const std::vector<std::string> args = {"--server", "unix:" + (dir.path / "silent.sock").string(), "--timeout",
                                           "0.3", "ls"};
    const Answer fast = in_process(args, false), grpc = in_process(args, false, true);
    CHECK(fast.rc == 1);
    CHECK(fast.err.find("within 0.3 s (DEADLINE_EXCEEDED)") != std::string::npos);
    CHECK(fast.err == grpc.err);
  }
  Socket rude(dir.path / "rude.sock", true);
  const Answer a = in_process({"--server", "unix:" + (dir.path / "rude.sock").string(), "--timeout", "5", "show", "j1"},
                              false);
  CHECK(a.rc == 1);
  CHECK(a.err.rfind("gpuq: cannot reach the gpuq daemon at unix:", 0) == 0);
  CHECK(a.out.empty());
}

TEST_CASE("gpuq __complete: commands, flags, their values, and names and ids from gpuqd") {
  TempDir dir;
  Daemon d(dir.path);
  const CliRun sub = gpuq_me(d, {"submit", "-q", "research", "--gpus", "2", "--hold", "--", "true"});
  REQUIRE_MESSAGE(sub.rc == 0, sub.out);
  const std::string id = submitted_job(sub);

  const auto top = candidates(d, {""});
  for (const char* c : {"submit", "run", "ls", "list", "cancel", "queues", "completion"}) CHECK_MESSAGE(has(top, c), c);
  CHECK_FALSE(has(top, "__complete"));
  CHECK(candidates(d, {"ca"}) == std::vector<std::string>{"cancel"});
  CHECK(candidates(d, {"ls", "--q"}) == std::vector<std::string>{"--queue"});
  const auto flags = candidates(d, {"submit", "--"});
  CHECK(has(flags, "--gpus"));
  CHECK(has(flags, "--server"));  // the global ones too
  CHECK_FALSE(has(flags, "-q"));  // short ones only for "-"
  CHECK(has(candidates(d, {"ls", "-"}), "-q"));
  // Values: gpuqd's queues for --queue (in every spelling), an option's choices, states.
  CHECK(candidates(d, {"ls", "-q", ""}) == std::vector<std::string>{"prod", "research"});
  CHECK(candidates(d, {"submit", "--queue", "r"}) == std::vector<std::string>{"research"});
  CHECK(candidates(d, {"ls", "--queue=r"}) == std::vector<std::string>{"--queue=research"});
  CHECK(candidates(d, {"ls", "-o", "j"}) == std::vector<std::string>{"json"});
  CHECK(candidates(d, {"ls", "--state", "p"}) == std::vector<std::string>{"pending", "preempting"});
  // Positionals: job ids, queue names, node names.
  CHECK(candidates(d, {"cancel", ""}) == std::vector<std::string>{id});
  CHECK(candidates(d, {"show", id.substr(0, 1)}) == std::vector<std::string>{id});
  CHECK(candidates(d, {"queues", "delete", ""}) == std::vector<std::string>{"prod", "research"});
  CHECK(candidates(d, {"nodes", "drain", "n"}) == std::vector<std::string>{"n0", "n1"});
  CHECK(candidates(d, {"ls", "-q", "research", "--o"}) == std::vector<std::string>{"--output", "--owner"});
  // A command's own words after "--" are the shell's (files).
  CHECK(candidates(d, {"submit", "--gpus", "1", "--", ""}).empty());
  // gpuqd unreachable: no candidates, no error, exit 0.
  const Answer none = in_process(
      {"--server", "unix:" + (dir.path / "none.sock").string(), "__complete", "--", "ls", "-q", ""}, false);
  CHECK(none.rc == 0);
  CHECK(none.out.empty());
  CHECK(none.err.empty());
}

TEST_CASE("gpuq completion bash|zsh: real bash and zsh complete through gpuq") {
  TempDir dir;
  Daemon d(dir.path);
  const std::string bash_file = (dir.path / "gpuq.bash").string(), zsh_file = (dir.path / "_gpuq").string();
  for (const auto& [shell_name, file] : {std::pair{"bash", bash_file}, {"zsh", zsh_file}}) {
    const Answer a = in_process({"completion", shell_name}, false);
    REQUIRE(a.rc == 0);
    std::ofstream(file) << a.out;
  }
  const std::string env = "GPUQ_SERVER=unix:" + d.socket() + " ";
  const std::string bin = GPUQ_CLI_PATH;

  auto bash = [&](const std::string& words, int cword) {
    const std::string script = "source " + bash_file + "; COMP_WORDS=(" + bin + " " + words + "); COMP_CWORD=" +
                               std::to_string(cword) + "; _gpuq; printf '%s\\n' \"${COMPREPLY[@]}\"; complete -p gpuq";
    const CliRun r = shell(env + "bash --norc -c " + quoted(script));
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    return r.out;
  };
  CHECK(bash("can", 1) == "cancel\ncomplete -o bashdefault -o default -F _gpuq gpuq\n");
  CHECK(bash("ls -q ''", 3).rfind("prod\nresearch\n", 0) == 0);
  // bash splits "--queue=re" at "=": the candidate is what replaces the last piece.
  CHECK(bash("ls --queue = re", 4).rfind("research\n", 0) == 0);
  CHECK(bash("ls --queue =", 3).rfind("=prod\n=research\n", 0) == 0);

  auto zsh = [&](const std::string& words, int current) {
    // compadd and _files stand in for zsh's completion system: they print what they are given.
    const std::string script =
        "compadd() { shift $(( ${@[(i)--]} )); print -l -- \"$@\"; }; _files() { print FILES; }; "
        "compdef() { print compdef \"$@\"; }; source " + zsh_file + "; words=(" + bin + " " + words + "); CURRENT=" +
        std::to_string(current) + "; _gpuq";
    const CliRun r = shell(env + "zsh -f -c " + quoted(script));
    REQUIRE_MESSAGE(r.rc == 0, r.out);
    return r.out;
  };
  CHECK(zsh("can", 2) == "compdef _gpuq gpuq\ncancel\n");
  CHECK(zsh("ls -q ''", 4) == "compdef _gpuq gpuq\nprod\nresearch\n");
  CHECK(zsh("ls --queue=re", 3) == "compdef _gpuq gpuq\n--queue=research\n");
  CHECK(zsh("submit --gpus 1 -- ''", 6) == "compdef _gpuq gpuq\nFILES\n");
}

}  // namespace integration_cli_fast_test
