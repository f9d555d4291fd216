// The quick gpuq: what a script calls in a loop, with no gRPC in it (no channel stack, no
// threads, no OpenSSL, none of their start-up work). It has `--version` and the commands that are
// unary calls (submit, ls, show, explain, cancel, hold, release, update, queues, nodes, apply,
// admin but its backup, usage), and calls gpuqd through its socket (cli/unix_call.hpp). Anything
// else runs gpuq-full, the whole command line, in its place with the same words: watch, logs, run,
// admin backup, sim, completion, --help and usage errors with no command, a TCP or TLS server,
// GPUQ_TRANSPORT=grpc, and a socket that cannot be connected, so that every answer is gpuq-full's
// (tests/integration/cli_fast_test.cpp compares them). README: The command line.
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

// Runs gpuq-full with the words gpuq was given. Only called before anything was sent to gpuqd or
// printed, so the command runs once, all of it in gpuq-full.
[[noreturn]] void run_full(Context& ctx) {
  ctx.out.flush();
  ctx.err.flush();
  std::fflush(nullptr);
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
  const std::string_view n = only.name;
  if (n == "--version") return;  // CLI11's own flag: no subcommand
  if (n == "submit")
    add_submit(app, ctx);
  else if (n == "ls" || n == "list")
    add_ls(app, ctx);
  else if (n == "show")
    add_show(app, ctx);
  else if (n == "explain")
    add_explain(app, ctx);
  else if (n == "cancel")
    add_cancel(app, ctx);
  else if (n == "hold" || n == "release")
    add_hold_release(app, ctx, n == "hold");
  else if (n == "update")
    add_update(app, ctx);
  else if (n == "queues" || n == "nodes" || n == "apply" || n == "admin" || n == "usage") {
    add_cluster_commands(app, ctx, only);
    add_admin_commands(app, ctx, only);
  } else {
    run_full(ctx);
  }
}

int run_backup(Context& ctx, const std::string&) { run_full(ctx); }

// Reached when the call cannot go through the socket: a TCP server, GPUQ_TRANSPORT=grpc, or a
// socket that cannot be connected. Before any answer gpuq-full runs the command, as a whole; once
// gpuqd has answered one of this command's calls (cancel j1 j2 j3, ls's pages) the command must
// not start again, so the socket gone away is reported as gpuq-full would report it (unreachable).
grpc::Status Context::channel_unary(const char* method, const google::protobuf::MessageLite&,
                                    google::protobuf::MessageLite&) {
  if (answered_ == 0) run_full(*this);
  return {grpc::StatusCode::UNAVAILABLE,
          std::string("failed to connect to ") + server() + " for " + method + " (it answered this command's earlier calls)"};
}

}  // namespace gpuq::cli
