// The CLI's entry point without CLI11's headers (so main.cpp compiles in a blink).
#pragma once
#include <iosfwd>
#include <string>
#include <vector>

namespace mlactl::cli {
// Runs the CLI on argv with the given streams; returns the process exit code.
int run_cli(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);
}  // namespace mlactl::cli
