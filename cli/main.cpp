// gpuq: the command line. Everything is in run_cli (cli/cli.hpp) so tests can drive it.
#include <iostream>
#include <string>
#include <vector>

#include "cli/cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return gpuq::cli::run_cli(args, std::cout, std::cerr);
}
