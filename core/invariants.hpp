// Invariant checker over any work list (docs/design.md §4 "Invariants"), also a captured one.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl {

// What each q row of the view must cover: q row r (all heads) attends to the KV
// index-list range [kv_begin, kv_end) (positions relative to the request's list).
struct RowExpectation {
  int64_t q_row = 0;      // row in the view's q tensor
  int64_t kv_begin = 0;   // index-list entries [kv_begin, kv_end)
  int64_t kv_end = 0;
  bool required = true;   // false for padding rows (may be written or not)
};

// The rule a violation breaks (a captured plan's verdict names it; issue 39). `kind` keeps
// the finer check that found it.
enum class InvariantRule {
  kv_read_once,         // every KV entry of a row's window read by exactly one work
  kv_inside_window,     // no KV entry outside the row's window
  partial_one_writer,   // every fp32 partial row written by exactly one work
  partial_merged_once,  // every written partial row merged by exactly one reduce tile, once
  output_one_writer,    // every output row written once: by a final work or a reduce tile
  reduce_maps,          // reduce maps consistent with the works (rows, partial entries)
  buffers,              // inside the stack's buffers
  structure,            // a well-formed work list
};
const char* to_string(InvariantRule r);

struct Violation {
  std::string kind;       // "uncovered", "covered_twice", "extra", "partial_overlap", "reduce_map", "buffer", "structure"
  int64_t q_row = -1;
  int64_t kv_begin = -1, kv_end = -1;
  int64_t work = -1;
  std::string message;    // precise, human-readable
  InvariantRule rule = InvariantRule::structure;
};

struct BalanceStats {
  int workgroups = 0;
  int64_t works = 0;
  int64_t split_tiles = 0;
  double max_load = 0, mean_load = 0;  // in the planner's cost units (KV units + per-work overhead)
  double efficiency = 0;               // mean / max
};

struct InvariantReport {
  bool ok = true;
  std::vector<Violation> violations;  // capped; total count below
  int64_t total_violations = 0;
  BalanceStats balance;
};

struct InvariantOptions {
  int64_t per_work_overhead = 16;      // cost model: blocks (16 KV units each) charged per work, AITER's overhead
  int64_t max_violations_listed = 50;
  const MetadataInfo* capacity = nullptr;  // check buffer sizes when given
  // fp32 partial rows allocated (mla.py: reduce_partial_map entries x max_seqlen_qo); -1: unchecked.
  int64_t partial_row_capacity = -1;
};

// Checks, under `view` (the kernel's): every required (row, KV entry) covered exactly
// once, nothing outside the expectation, partial rows disjoint, reduce maps
// consistent with the works, and buffer sizes.
InvariantReport check_invariants(const WorkList& wl, const KernelView& view, const std::vector<RowExpectation>& rows,
                                 const InvariantOptions& opt = {});

}  // namespace mlactl
