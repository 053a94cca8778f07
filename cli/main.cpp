// Entry point: only maps the CLI's result to the process exit code.
#include <iostream>

#include "cli/run_cli.hpp"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv, argv + argc);
  return mlactl::cli::run_cli(args, std::cout, std::cerr);
}
