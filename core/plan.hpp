// A routed batch's plan (docs/design.md §4): the work list a planner built, the index
// list its KV ranges point into, the view the route's kernel runs with, and what each
// kernel q row must cover according to the ORACLE. Every stack's plan has this shape;
// the executors, the position audit and the printers read nothing else.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/heads.hpp"
#include "core/invariants.hpp"
#include "core/planners/registry.hpp"
#include "core/route.hpp"
#include "core/stack_arrays.hpp"
#include "core/worklist.hpp"

namespace mlactl {

struct RoutePlan {
  Route route = Route::refused;
  PlannerId planner = PlannerId::aiter;  // planner that produced `work`
  WorkList work;
  KernelView kernel_view;            // what the route's kernel runs with
  std::vector<int32_t> kv_indices;   // token slots the works' kv ranges index
  std::vector<int32_t> row_indptr;   // flattened/sparse layouts: per view row [begin, end) into kv_indices
  HeadPadding heads;                 // raw -> kernel heads (identity on raw-head routes)
  int64_t uniform_qlen = 1;          // L for the fold layout
  int64_t user_rows = 0;             // oracle rows (incl. padding)
  // What each kernel q row must cover, derived from the ORACLE (not the metadata)
  // and expressed in index-list space; padding rows are not required.
  std::vector<RowExpectation> expectations;
  std::optional<MetadataInfo> capacity;  // buffer sizes the stack allocates for the work list, when it has them
  std::vector<std::string> notes;
  std::vector<StackFindingId> stack_findings;  // core/stack_findings.hpp: the modelled stack's own reads outside a window
  std::vector<StackArray> stack_arrays;       // the planner's own arrays under upstream names (FlashMLA: tile_scheduler_metadata, num_splits)
  std::vector<std::string> schedule_words;    // one line per scheduler row, in words (`schedule`'s table)
  double planner_ms = 0;             // the planner call alone (what the stack's host/GPU planner would cost)
  // What the stack's caller hands on after the kernel, per oracle row: the kernel output row
  // it returns (nullopt: a row no work wrote). Unset: the kernel's rows as they are. The
  // stack's code around the kernel, not the kernel: sglang #19902's o[q_mask] over packed rows.
  std::optional<std::vector<std::optional<int64_t>>> caller_rows;
  std::string caller_rows_why;       // set with caller_rows: what the caller does, with its source
};

// The rows the caller returns (RoutePlan::caller_rows) gathered from a kernel's output and
// LSE (row-major, `heads` x `v_dim` and `heads` per row); a row no work wrote is NaN (the
// stack's torch.empty).
void gather_caller_rows(const std::vector<std::optional<int64_t>>& caller_rows, int64_t heads, int64_t v_dim, std::vector<float>& out,
                        std::vector<float>& lse);

// check_invariants over the plan's works under its kernel view, with the stack's buffer
// capacities (partial rows: reduce_partial_map x q_len, as AITER's mla.py sizes them)
// when the plan has them.
InvariantReport check_plan_invariants(const RoutePlan& plan, int64_t max_qo_len);

// One line for an incorrect captured plan: its first violation's work, q row and rule, and
// the count (run's message; issue 39).
std::string captured_plan_message(const InvariantReport& rep);

}  // namespace mlactl
