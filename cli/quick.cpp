// The quick gpuq: what a script calls in a loop, with no gRPC in it (no channel stack, no
// threads, no OpenSSL, none of their start-up work). It has `--version` and the commands that are
// unary calls (submit, ls, show, explain, cancel, hold, release, update, queues, nodes, apply,
// admin but its backup, usage), and calls gpuqd through its socket (cli/unix_call.hpp). Anything
// else runs gpuq-full, the whole command line, in its place with the same words and standard
// input: watch, logs, run, admin backup, sim, completion, --help and usage errors with no command,
// a TCP or TLS server, GPUQ_TRANSPORT=grpc, and a socket that cannot be connected, so that every
// answer is gpuq-full's (tests/integration/cli_fast_test.cpp compares them). cli/README.md: Two
// programs.
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cli/commands.hpp"

namespace gpuq::cli {

namespace {

// gpuq-full in the directory of this program's file (links resolved: /proc/self/exe).
std::string full_path() {
  char buf[PATH_MAX];
  const ssize_t n = ::readlink("/proc/self/exe", buf, sizeof buf - 1);
  const std::string self = n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
  const auto slash = self.rfind('/');
  return (slash == std::string::npos ? std::string() : self.substr(0, slash + 1)) + "gpuq-full";
}

// Standard input made `text` again, from its start (a memfd), for gpuq-full to read: what this
// gpuq read of it is gone from a pipe. Left as it is when that cannot be done.
void replay_stdin(const std::string& text) {
  const int fd = ::memfd_create("gpuq-stdin", MFD_CLOEXEC);
  if (fd < 0) return;
  std::size_t done = 0;
  while (done < text.size()) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n <= 0) break;
    done += static_cast<std::size_t>(n);
  }
  if (done == text.size() && ::lseek(fd, 0, SEEK_SET) == 0) ::dup2(fd, 0);  // the copy on 0 is not close-on-exec
  ::close(fd);
}

// Runs gpuq-full with the words gpuq was given and the standard input it was given. Only called
// before anything was sent to gpuqd or printed, so the command runs once, all of it in gpuq-full.
[[noreturn]] void run_full(Context& ctx) {
  ctx.out.flush();
  ctx.err.flush();
  std::fflush(nullptr);
  if (ctx.stdin_read) replay_stdin(*ctx.stdin_read);
  const std::string path = full_path();
  std::string zero = "gpuq";
  std::vector<char*> argv{zero.data()};
  for (auto& a : ctx.args) argv.push_back(a.data());
  argv.push_back(nullptr);
  ::execv(path.c_str(), argv.data());
  const int e = errno;
  ctx.err << "gpuq: cannot run " << path << " (" << std::strerror(e)
          << "): it does what this gpuq does not (streams, TCP and TLS, the other commands); install it beside gpuq\n";
  ctx.err.flush();
  std::_Exit(1);
}

}  // namespace

void add_commands(CLI::App& app, Context& ctx, Only only) {
  if (only.name == "--version") return;  // CLI11's own flag: no subcommand
  if (!add_tree(app, ctx, only, {})) run_full(ctx);  // --help, a word it does not know, a stream
}

// A TCP or TLS server, or GPUQ_TRANSPORT=grpc: the command's calls go through the gRPC channel,
// gpuq-full's, which runs it from the start (before it read a file or its standard input).
void before_command(Context& ctx) {
  if (!ctx.socket_path()) run_full(ctx);
}

int run_backup(Context& ctx, const std::string&) { run_full(ctx); }

// Reached when gpuqd's socket cannot be connected (before_command handed every other transport
// over). Before any answer gpuq-full runs the command, as a whole, and reports it; once
// gpuqd has answered one of this command's calls (cancel j1 j2 j3, ls's pages) the command must
// not start again, so the socket gone away is reported as gpuq-full would report it (unreachable).
grpc::Status Context::channel_unary(const char* method, const google::protobuf::MessageLite&,
                                    google::protobuf::MessageLite&) {
  if (answered_ == 0) run_full(*this);
  return {grpc::StatusCode::UNAVAILABLE,
          std::string("failed to connect to ") + server() + " for " + method + " (it answered this command's earlier calls)"};
}

}  // namespace gpuq::cli
