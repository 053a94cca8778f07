// Captured metadata (docs/design.md §2 `captured`): arrays a real vLLM/AITER run produced,
// compared with what mlactl builds and, with `run --use-captured`, executed.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/batch.hpp"
#include "core/decode_metadata.hpp"
#include "core/plan.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"

namespace mlactl {

struct CapturedMetadata {
  std::optional<std::vector<int64_t>> qo_indptr, paged_kv_indptr, paged_kv_indices, paged_kv_last_page_len;
  std::optional<int64_t> min_kv_seq_len;
  std::optional<std::vector<int64_t>> work_indptr, reduce_indptr, reduce_partial_map;
  std::optional<std::vector<std::array<int64_t, 8>>> work_info_set;
  std::optional<std::vector<std::array<int64_t, 2>>> reduce_final_map;
  // paged_kv_indptr with one entry per query row + 1 (rather than per request): the
  // per-row table the R0 verify flatten hands Gluon as seq_info.
  bool flattened_rows = false;
  // A stack's own arrays under their upstream names (vllm-cuda: tile_scheduler_metadata,
  // rows flattened; num_splits; seq_lens), compared with the plan's StackArrays of the
  // same name and with the builder's seq_lens; run --use-captured hands them to the stack
  // (DecodeMetadata::captured_arrays), which executes them.
  std::vector<std::pair<std::string, std::vector<int64_t>>> stack_arrays;
  bool empty() const;
};

// Validates types and lengths (exit 3, JSON pointer under /captured).
CapturedMetadata parse_captured(const Batch& b, const nlohmann::json& captured, int64_t oracle_rows);

struct CapturedDiff {
  bool same = true;
  std::string field;            // first differing field, e.g. "paged_kv_indptr"
  int64_t index = -1;           // first differing index in it
  std::string expected, got;    // values (as text) at that index: mlactl's, captured
  std::vector<int64_t> rows;    // oracle rows the difference affects (first few)
  std::string message;          // one line a user can act on
  std::vector<std::string> compared;  // fields compared, in order
};

// The route whose kernel reads a captured stack array (FlashMLA's tile_scheduler_metadata and
// num_splits); nullopt: every route's builder has it (seq_lens).
std::optional<Route> captured_array_reader(const std::string& name);

// Compares the used prefix of every captured array with what mlactl builds (and,
// when a work list is captured, with the route's plan when given).
CapturedDiff diff_captured(const Batch& b, const DecodeMetadata& md, const std::vector<RowWindow>& rows, const CapturedMetadata& cap,
                           const RoutePlan* plan);

// The per-row KV windows the captured index pointers give (for `windows`): lengths
// per oracle row, or empty when nothing captured determines them.
std::vector<int64_t> captured_row_lengths(const Batch& b, const std::vector<RowWindow>& rows, const CapturedMetadata& cap);

// run --use-captured: the decode metadata with the captured index arrays in place of
// mlactl's (the route's planner then plans over them), and the captured work list
// in place of the planner's when one was captured — so the kernel runs exactly what
// the real stack produced.
DecodeMetadata metadata_with_captured(const DecodeMetadata& md, const CapturedMetadata& cap);
// partial_buffer_rows: the fp32 partial rows the stack allocates (validate_captured_work's
// result): the reduce may read rows no captured work writes, and those must read the
// buffer's NaN poison (an `incorrect` run), not fault outside the kernel's buffer.
void apply_captured_work(RoutePlan& plan, const CapturedMetadata& cap, int64_t partial_buffer_rows);

// The captured work list validated as a plan of this batch, under `replay` (the route's
// plan over the captured index arrays, before apply_captured_work): every used work's
// batch, q rows, KV range, partial rows and kv_offset inside what the batch and its view
// have; the arrays no longer than the stack's buffers (get_mla_metadata_info_v1) and
// workgroups past the kernel's grid empty; every reduce tile's output rows and partial
// entries in range. Throws invalid_input (exit 3) naming /captured/<field>/<index> and
// the work or tile it hurts: such arrays cannot be a plan of this batch, so nothing runs.
// Returns the fp32 partial rows of the buffer the checks held the arrays to.
int64_t validate_captured_work(const CapturedMetadata& cap, const RoutePlan& replay, int64_t max_qo_len);

// What `run` executes for a batch with captured arrays (docs/design.md §2 captured): the
// route's planner over the captured index arrays, the captured work list in its place
// when one was captured, validated first (validate_captured_work).
RoutePlan plan_captured(const Batch& b, const RoutedBatch& rb, const std::vector<RowWindow>& rows, const CapturedMetadata& cap,
                        std::optional<PlannerId> planner = std::nullopt);

}  // namespace mlactl
