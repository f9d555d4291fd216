// The whole command tree, in the order --help lists it: gpuq-full's, and the tests' run_cli
// (the quick gpuq registers its part in quick.cpp).
#include "cli/commands.hpp"

namespace gpuq::cli {

void add_commands(CLI::App& app, Context& ctx, Only only) {
  if (only.wants({"submit"})) add_submit(app, ctx);
  if (only.wants({"run"})) add_run(app, ctx);
  if (only.wants({"ls", "list"})) add_ls(app, ctx);
  if (only.wants({"show"})) add_show(app, ctx);
  if (only.wants({"explain"})) add_explain(app, ctx);
  if (only.wants({"cancel"})) add_cancel(app, ctx);
  if (only.wants({"hold"})) add_hold_release(app, ctx, true);
  if (only.wants({"release"})) add_hold_release(app, ctx, false);
  if (only.wants({"update"})) add_update(app, ctx);
  if (only.wants({"watch"})) add_watch(app, ctx);
  if (only.wants({"logs"})) add_logs(app, ctx);
  add_cluster_commands(app, ctx, only);
  add_admin_commands(app, ctx, only);
  add_sim_commands(app, ctx, only);
  add_completion_commands(app, ctx, only);
}

}  // namespace gpuq::cli
