// libFuzzer target (docs/design.md §9): bytes -> batch JSON -> parse_batch -> build_decode ->
// route_decode -> plan_route -> check_invariants (+ the position audit).
//
// mlactl::Error is the expected way to reject an input (exit 2/3/5 in the CLI).
// Anything else -- another exception, a crash, a sanitizer report, a leak, a
// timeout or an out-of-memory -- is a finding.
//
// Inputs are kept small so the fuzzer explores logic instead of spending its time
// on huge batches: documents whose requests or total KV exceed the bounds below
// are skipped (values outside the parser's own ranges still reach the parser, so
// its rejection paths are exercised).
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>

#include <nlohmann/json.hpp>

#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/invariants.hpp"
#include "core/position_audit.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"
#include "core/stacks/registry.hpp"
#include "core/types.hpp"

namespace {

constexpr int64_t kMaxFuzzRequests = 256;
constexpr double kMaxFuzzKv = double(1 << 16);  // KV entries (and query tokens) per document
constexpr double kParserMax = 2147483647.0;     // the parser rejects larger values itself

using nlohmann::json;

// A number the parser would accept as a length adds to the budget; one it would
// reject (negative, > int32, fractional) costs nothing: the parser throws first.
double accepted(const json* v) {
  if (!v || !v->is_number()) return 0;
  const double d = v->get<double>();
  if (!std::isfinite(d) || d < 0 || d > kParserMax) return 0;
  return d;
}

const json* field(const json& o, const char* k) {
  if (!o.is_object()) return nullptr;
  auto it = o.find(k);
  return it == o.end() ? nullptr : &*it;
}

// Raw-document screen, before parse_batch (which materialises the block table).
bool small_enough_raw(const json& doc) {
  const json* reqs = field(doc, "requests");
  if (!reqs || !reqs->is_array()) return true;
  if ((int64_t)reqs->size() > kMaxFuzzRequests) return false;
  double kv = 0, tokens = 0;
  int64_t padding = 0;
  for (const json& r : *reqs) {
    const double q = accepted(field(r, "query_len"));
    kv += accepted(field(r, "context_len")) + q + accepted(field(r, "seq_len"));
    tokens += q;
    if (const json* p = field(r, "padding"); p && p->is_boolean() && p->get<bool>()) ++padding;
  }
  double ndt = 0;
  if (const json* d = field(doc, "decode")) ndt = accepted(field(*d, "num_decode_tokens"));
  // padding slots get num_decode_tokens / R rows (and KV entries) each
  kv += ndt * double(padding);
  return kv <= kMaxFuzzKv && tokens <= kMaxFuzzKv && ndt <= kMaxFuzzKv;
}

bool small_enough(const mlactl::Batch& b) {
  if ((int64_t)b.requests.size() > kMaxFuzzRequests) return false;
  int64_t kv = 0;
  for (const auto& r : b.requests) kv += r.padding ? b.decode.num_decode_tokens : r.seq_len();
  if (kv > (int64_t)kMaxFuzzKv) return false;
  if (b.kv_cache.num_blocks > (int64_t)kMaxFuzzKv * 4) return false;
  if (b.decode.max_num_seqs > kMaxFuzzRequests * 4) return false;
  return true;
}

[[noreturn]] void finding(const char* what) {
  std::fprintf(stderr, "fuzz_batch: unexpected exception: %s\n", what);
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    // The same entry point as a batch file (nesting-depth check, then json::parse).
    mlactl::Batch b;
    {
      json doc;
      try {
        doc = json::parse(text);
      } catch (const json::exception&) {
        // malformed (or a number beyond double's range, json::out_of_range):
        // parse_batch_text must reject it with an mlactl::Error
        (void)mlactl::parse_batch_text(text, "fuzz");
        finding("parse_batch_text accepted text that json::parse rejects");
      }
      if (!small_enough_raw(doc)) return 0;
      b = mlactl::parse_batch_text(text, "fuzz");
    }
    if (!small_enough(b)) return 0;

    // the full metadata (with the flatten every route could read), then the verbs' one orchestration
    (void)mlactl::stack_for(b).build_metadata(b, true);
    const mlactl::RoutedBatch rb = mlactl::route_batch(b);
    (void)mlactl::to_string(rb.decision.route);
    if (rb.refused()) return 0;

    const auto rows = mlactl::oracle_windows(b);
    mlactl::RoutePlan plan = mlactl::plan_batch(b, rb, rows);
    mlactl::InvariantReport rep = mlactl::check_plan_invariants(plan, rb.metadata.max_qo_len);
    (void)rep;
    mlactl::PositionAudit audit = mlactl::audit_positions(b, rows, plan);
    (void)audit;
  } catch (const mlactl::Error&) {
    // expected: an input error (3), a refusal (5) or a usage error (2)
  } catch (const std::exception& e) {
    finding(e.what());
  } catch (...) {
    finding("non-standard exception");
  }
  return 0;
}
