// gpuq: the command line. Everything is in run_cli (cli/cli.hpp) so tests can drive it.
#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  const int rc = gpuq::cli::run_cli(args, std::cout, std::cerr, {.whole_tree = false, .leak_tree = true});
  // Nothing left to tear down that the kernel does not: skip the static destructors (gRPC's and
  // protobuf's registries), the command tree and the gRPC channel (joining its threads).
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  std::_Exit(rc);
}
