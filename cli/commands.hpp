#pragma once
// The client commands, registered on the CLI11 app. Each subcommand's callback stores the work in
// Context::action; run_cli runs it once every option (the global ones included) has its value.
#include <CLI/CLI.hpp>

#include <cstdlib>
#include <initializer_list>
#include <string_view>

#include "cli/client.hpp"
#include "spec/duration.hpp"

namespace gpuq::cli {

// Which subcommands to register: `only` names the one the command line asks for ("": all of
// them, for --help, completion and anything not recognised). A call builds only the part of the
// tree it uses (issue [7/7]: CLI11 building every subcommand was a quarter of gpuq --version).
struct Only {
  std::string_view name;
  bool wants(std::initializer_list<std::string_view> names) const {
    if (name.empty()) return true;
    for (auto n : names)
      if (n == name) return true;
    return false;
  }
};

// A flag's duration in Slurm's or Kubernetes' words (spec/duration.hpp: 90, 90s, 15m, 2h, 1d,
// 1h30m, 1:30:00, 1-12:00:00), handed on to the option as whole seconds. `fractional`: a
// decimal number of seconds (0.3) and milliseconds (300ms) too, handed on as seconds (0.3).
inline CLI::Validator duration_arg(bool fractional = false) {
  return CLI::Validator(
      [fractional](std::string& v) -> std::string {
        if (fractional) {
          if (const auto ms = spec::duration_ms(v, true)) {
            v = std::to_string(static_cast<double>(*ms) / 1000.0);
            return {};
          }
          char* end = nullptr;
          const double d = std::strtod(v.c_str(), &end);
          if (!v.empty() && end == v.c_str() + v.size() && d >= 0 && d < 1e12) return {};
        } else if (const auto s = spec::duration_seconds(v)) {
          v = std::to_string(*s);
          return {};
        }
        return "\"" + v + "\" is not a duration; use " + spec::kDurationForms + (fractional ? ", 0.5 or 500ms" : "");
      },
      "DURATION");
}

// The whole tree (commands_all.cpp, in gpuq-full and the tests' run_cli), or the quick gpuq's
// part of it, which runs gpuq-full for everything else (quick.cpp). Called before the parse.
void add_commands(CLI::App& app, Context& ctx, Only only);
// Called after the parse, before the command runs (and reads a file or its standard input): the
// quick gpuq runs gpuq-full in its place when its calls cannot go through gpuqd's socket
// (quick.cpp); gpuq-full runs every command itself (commands_all.cpp).
void before_command(Context& ctx);

// gpuq-full's own commands: streams, the simulator, the completion (gRPC and more); the quick
// gpuq has none of them.
struct FullCommands {
  void (*run)(CLI::App&, Context&) = nullptr;
  void (*watch)(CLI::App&, Context&) = nullptr;
  void (*logs)(CLI::App&, Context&) = nullptr;
  void (*sim)(CLI::App&, Context&, Only) = nullptr;
  void (*completion)(CLI::App&, Context&, Only) = nullptr;
};
// Registers what `only` asks for of the whole tree, in the order --help lists it, `full`'s
// commands in their places (cli.cpp). False when `only` names none of the tree's commands, or asks
// for one `full` lacks: the quick gpuq then runs gpuq-full.
bool add_tree(CLI::App& app, Context& ctx, Only only, const FullCommands& full);

// Unary calls only: in both programs.
void add_submit(CLI::App& app, Context& ctx);            // submit (commands_submit.cpp)
void add_ls(CLI::App& app, Context& ctx);                // ls, list (commands_jobs.cpp)
void add_show(CLI::App& app, Context& ctx);              // show
void add_explain(CLI::App& app, Context& ctx);           // explain
void add_cancel(CLI::App& app, Context& ctx);            // cancel
void add_hold_release(CLI::App& app, Context& ctx, bool hold);  // hold, release
void add_update(CLI::App& app, Context& ctx);            // update
void add_cluster_commands(CLI::App& app, Context& ctx, Only only);  // queues, nodes, apply
void add_admin_commands(CLI::App& app, Context& ctx, Only only);    // admin backup, token, audit; usage
void add_usage_command(CLI::App& app, Context& ctx);     // usage (commands_usage.cpp)
// admin backup's copy, a server stream: gpuq-full's (commands_stream.cpp); the quick gpuq runs
// gpuq-full in its place (quick.cpp).
int run_backup(Context& ctx, const std::string& path);
// Streams, the simulator and the completion: gpuq-full's alone (its FullCommands).
void add_run(CLI::App& app, Context& ctx);               // run: submit, wait, attach (commands_run.cpp)
void add_watch(CLI::App& app, Context& ctx);             // watch (commands_stream.cpp)
void add_logs(CLI::App& app, Context& ctx);              // logs
void add_sim_commands(CLI::App& app, Context& ctx, Only only);      // sim scenario, fill, run, synth
void add_completion_commands(CLI::App& app, Context& ctx, Only only);  // completion bash|zsh, __complete

// The candidates for the last of `words` (the words after "gpuq", the last one being typed):
// subcommands, flags and flag values from `root`'s tree; queue names, node names and job ids from
// gpuqd (none when it cannot be reached). cli/completion.cpp.
std::vector<std::string> complete_words(CLI::App& root, Context& ctx, const std::vector<std::string>& words);

// Reads FILE ("-": standard input, kept in ctx.stdin_read); throws UsageError when it cannot be
// opened.
std::string read_file_arg(Context& ctx, const std::string& path);

}  // namespace gpuq::cli
