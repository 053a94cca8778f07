// libFuzzer target (docs/design.md §9): CLI argument vectors. The input is split at NUL
// and newline bytes into arguments after "mlactl"; "@N" names the N-th fixture (so paths
// stay inside fixtures/). Arguments that would write files (--junit, --dump-dir), fork
// (--timeout), or walk the file system (a "/" outside a fixture name) are dropped, and the
// memory budget is 256 MiB. A finding is an internal error (an exception that is not
// mlactl::Error), an exit code outside §6's table, or a crash.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

#include "cli/run_cli.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> fixtures = [] {
    std::vector<std::string> v;
    for (const auto& e : std::filesystem::directory_iterator(std::string(MLACTL_SOURCE_DIR) + "/fixtures"))
      if (e.path().extension() == ".json") v.push_back(e.path().string());
    std::sort(v.begin(), v.end());
    return v;
  }();
  std::vector<std::string> args = {"mlactl", "--max-memory", "256M"};
  std::string cur;
  auto flush = [&]() {
    if (!cur.empty() && cur[0] == '@') {
      const long n = std::strtol(cur.c_str() + 1, nullptr, 10);
      if (!fixtures.empty()) cur = fixtures[(size_t)std::labs(n) % fixtures.size()];
    } else if (cur.find('/') != std::string::npos || cur.rfind("--junit", 0) == 0 || cur.rfind("--dump-dir", 0) == 0 ||
               cur.rfind("--timeout", 0) == 0 || cur.rfind("--max-memory", 0) == 0 || cur.rfind("--threads", 0) == 0) {
      cur.clear();
      return;
    }
    args.push_back(cur);
    cur.clear();
  };
  for (size_t i = 0; i < size && args.size() < 64; ++i) {
    const char c = (char)data[i];
    if (c == '\0' || c == '\n') flush();
    else cur += c;
  }
  flush();
  std::ostringstream out, err;
  const int rc = mlactl::cli::run_cli(args, out, err);
  const bool known = rc == 0 || rc == 1 || rc == 2 || rc == 3 || rc == 4 || rc == 5 || rc == 77;
  // the CLI's own internal-error line starts a line; the words inside a message may be
  // the fuzzer's (an unknown command "internal error6" is echoed back)
  const std::string e = err.str();
  const bool internal = e.rfind("mlactl: internal error: ", 0) == 0 || e.find("\nmlactl: internal error: ") != std::string::npos;
  if (!known || internal) {
    std::fprintf(stderr, "fuzz_argv: exit %d for", rc);
    for (const auto& a : args) std::fprintf(stderr, " [%s]", a.c_str());
    std::fprintf(stderr, "\n%s", err.str().c_str());
    std::abort();
  }
  return 0;
}
