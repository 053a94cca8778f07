// libFuzzer target (docs/design.md §9): `expect` blocks through `check`. The input is the
// JSON of an `expect` block, spliced into a small fixed batch (worklist-captured-clean:
// captured arrays, a persistent schedule, a CPU run of a few ms) and checked as
// `mlactl check FILE --backend cpu` checks it. Every verdict is fine (0, 1, 3, 77); a
// finding is an internal error (an exception that is not mlactl::Error, exit 4), a usage
// error from a file, or a crash.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/run_cli.hpp"
#include "core/batch.hpp"
#include "core/types.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::json base = [] {
    std::ifstream in(std::string(MLACTL_SOURCE_DIR) + "/fixtures/worklist-captured-clean.json");
    std::stringstream ss;
    ss << in.rdbuf();
    nlohmann::json d = nlohmann::json::parse(ss.str());
    d.erase("expect");
    return d;
  }();
  static const std::string path = "/tmp/fuzz_expect_" + std::to_string(::getpid()) + ".json";
  nlohmann::json expect;
  try {
    expect = mlactl::parse_json_document(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
  } catch (const mlactl::Error&) {
    return 0;
  }
  nlohmann::json doc = base;
  doc["expect"] = std::move(expect);
  {
    std::ofstream f(path, std::ios::trunc);
    f << doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  }
  std::ostringstream out, err;
  const int rc = mlactl::cli::run_cli({"mlactl", "check", path, "--backend", "cpu"}, out, err);
  const std::string e = err.str();
  if (rc == mlactl::kExitDevice || rc == mlactl::kExitUsage || e.find("internal error") != std::string::npos) {
    std::fprintf(stderr, "fuzz_expect: exit %d\n%s%s", rc, out.str().c_str(), e.c_str());
    std::abort();
  }
  return 0;
}
