#pragma once
// The whole command line as a function, so tests drive it without a process:
//   std::ostringstream out, err;
//   int rc = gpuq::cli::run_cli({"--server", "127.0.0.1:7433", "ls", "--all"}, out, err);
// args excludes the program name. Exit codes: 0 success; 1 the server refused a call or could not
// be reached; 2 a usage error or a file that cannot be understood.
#include <ostream>
#include <string>
#include <vector>

namespace gpuq::cli {

struct CliOptions {
  // Register every subcommand, not only the one args names. The answers are the same either way
  // (tests/integration/cli_fast_test.cpp compares them); gpuq builds only what it uses.
  bool whole_tree = false;
  // Leave the command tree and the gRPC channel to the process's end (gpuq's main, which then
  // _exits) rather than destroying them: freeing the tree and joining gRPC's threads was a
  // millisecond or more of a call.
  bool leak_tree = false;
};

int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err, CliOptions options = {});

}  // namespace gpuq::cli
