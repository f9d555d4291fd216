#pragma once
// `gpuq submit`'s options, registered on a CLI11 command and bound to SubmitOptions, and a batch
// script's #GPUQ directives applied to them (cli/README.md: Batch scripts). Here so that the
// rules (flags on the command line win, per flag) are tested without a server.
#include <CLI/CLI.hpp>

#include <cstdint>
#include <string>
#include <vector>

#include "cli/batch_script.hpp"
#include "cli/requests.hpp"

namespace gpuq::cli {

struct SubmitOptions {
  SubmitFlags flags;
  std::string file;
  std::string output = "table";
  bool preemptible = true;
  std::int64_t grace = 30;
  bool wait = false;
  bool hold = false;  // submitted held: pending, not scheduled until gpuq release
};

struct SubmitCommand {
  CLI::Option* file = nullptr;         // -f
  CLI::Option* preemptible = nullptr;  // --preemptible
  CLI::Option* grace = nullptr;        // --grace-period
  CLI::Option* command = nullptr;      // the positional words: a script and its arguments, or a command after --
  std::vector<CLI::Option*> job_flags;  // the flags that -f cannot be combined with (command included)
};

// Registers every option of `gpuq submit` on `cmd`, bound to `o` (which must outlive `cmd`).
SubmitCommand add_submit_options(CLI::App& cmd, SubmitOptions& o);

// Gives the options of `cmd` (parsed from the command line already) the values of the script's
// directives, for each option the command line did not give: the command line wins, flag by flag
// (a repeatable one, such as --env, as a whole). Within the script a later directive wins over an
// earlier one; repeatable flags add up. Throws UsageError naming the script, the line and the
// flag for a flag `gpuq submit` does not have, words that are not flags, -f, and values CLI11
// refuses.
void apply_directives(CLI::App& cmd, const BatchScript& script);

struct Context;  // cli/client.hpp
// The request `cmd`'s options say (parsed already): a job file (-f), or flags with a batch script
// or a command after --. Shared by gpuq submit and gpuq run (commands_run.cpp).
v1::SubmitJobRequest submit_request(Context& ctx, CLI::App& cmd, SubmitOptions& o, const SubmitCommand& c);
// --wait's exit code for a job that ended: its own when it ran to an end, 125 when cancelled.
int wait_exit_code(const v1::Job& j);
bool job_finished(v1::JobState s);

}  // namespace gpuq::cli
