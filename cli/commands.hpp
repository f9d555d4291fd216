#pragma once
// The client commands, registered on the CLI11 app. Each subcommand's callback stores the work in
// Context::action; run_cli runs it once every option (the global ones included) has its value.
#include <CLI/CLI.hpp>

#include "cli/client.hpp"

namespace gpuq::cli {

void add_job_commands(CLI::App& app, Context& ctx);      // submit, ls, show, cancel, watch, logs
void add_submit(CLI::App& app, Context& ctx);            // submit (commands_submit.cpp)
void add_run(CLI::App& app, Context& ctx);               // run: submit, wait, attach (commands_submit.cpp)
void add_cluster_commands(CLI::App& app, Context& ctx);  // queues, nodes, apply
void add_admin_commands(CLI::App& app, Context& ctx);    // admin backup, token, audit; usage
void add_usage_command(CLI::App& app, Context& ctx);     // usage (commands_usage.cpp)
void add_sim_commands(CLI::App& app, Context& ctx);      // sim scenario, fill, run, synth

// Reads FILE ("-": standard input); throws UsageError when it cannot be opened.
std::string read_file_arg(const std::string& path);

}  // namespace gpuq::cli
