// The whole command tree: gpuq-full's, and the tests' run_cli (the quick gpuq registers the same
// tree without gpuq-full's commands, quick.cpp).
#include "cli/commands.hpp"

namespace gpuq::cli {

void add_commands(CLI::App& app, Context& ctx, Only only) {
  add_tree(app, ctx, only, {add_run, add_watch, add_logs, add_sim_commands, add_completion_commands});
}

void before_command(Context&) {}

}  // namespace gpuq::cli
