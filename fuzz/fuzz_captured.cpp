// libFuzzer target (docs/design.md §9): captured arrays through validation and execution.
// The input is the JSON of a `captured` block; it is spliced into one of two small fixed
// batches (the first byte picks: worklist-captured-clean, a 3-request ASM persistent
// batch, or seed000-captured-causal, the R0 verify flatten) and run as `run` runs it:
// parse -> route -> validate the captured plan -> execute (CPU executor, one thread) ->
// compare. mlactl::Error (exit 2/3/5) is the expected rejection. A finding is any other
// exception, a crash, a sanitizer report, and also an executor fault after validation
// passed: validation exists so that no captured plan reaches the kernel out of range.
#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli/pipeline.hpp"
#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/plan.hpp"
#include "core/types.hpp"

namespace {

nlohmann::json load(const char* name) {
  std::ifstream in(std::string(MLACTL_SOURCE_DIR) + "/fixtures/" + name);
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json d = nlohmann::json::parse(ss.str());
  d.erase("captured");
  d.erase("expect");
  return d;
}

[[noreturn]] void finding(const std::string& what) {
  std::fprintf(stderr, "fuzz_captured: %s\n", what.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const nlohmann::json bases[2] = {load("worklist-captured-clean.json"), load("seed000-captured-causal.json")};
  if (size < 1) return 0;
  const nlohmann::json& base = bases[data[0] & 1];
  const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
  try {
    nlohmann::json captured = mlactl::parse_json_document(text, "fuzz");
    nlohmann::json doc = base;
    doc["captured"] = std::move(captured);
    const mlactl::Batch b = mlactl::parse_batch(doc);
    mlactl::cli::RunOptions ro;
    ro.backend = mlactl::cli::Backend::cpu;
    ro.threads = 1;
    const mlactl::cli::RunOutcome o = mlactl::cli::run_pipeline(b, ro);
    if (o.status == mlactl::cli::RunStatus::failed) finding("executor fault after the captured plan was validated: " + o.message);
    // issue 39: a captured work list that breaks the plan invariants (merge counts, writers,
    // reduce maps) is never PASSED; checked again here, independently of the verdict's path
    if (o.status == mlactl::cli::RunStatus::passed && o.plan && o.plan->planner == mlactl::PlannerId::captured) {
      int64_t max_q = 1;  // the buffer bound's q_len: the longest query (never tighter than the run's)
      for (const auto& r : b.requests) max_q = std::max<int64_t>(max_q, r.query_len);
      const mlactl::InvariantReport inv = mlactl::check_plan_invariants(*o.plan, max_q);
      if (!inv.ok) finding("a captured plan that breaks the plan invariants passed: " + inv.violations.front().message);
    }
  } catch (const mlactl::Error&) {
    // expected: invalid captured arrays (3), a refusal (5), a usage error (2)
  } catch (const std::exception& e) {
    finding(std::string("unexpected exception: ") + e.what());
  }
  return 0;
}
