// Small helpers shared by the planners in core/planners/ (not part of the public API).
#pragma once
#include <utility>
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl::planner_util {

inline int64_t ceil_div(int64_t a, int64_t b) { return b == 0 ? 0 : (a + b - 1) / b; }

// triton.next_power_of_2: the smallest power of two >= x (1 for x <= 1).
inline int64_t next_pow2(int64_t x) {
  int64_t p = 1;
  while (p < x) p <<= 1;
  return p;
}

// Grid-launched kernels (Gluon, Triton, AITER non-persistent) have no persistent
// schedule; the GPU hands programs to CUs in launch order. We model that as
// min(num_cu, works) workgroups each running a contiguous run of works, the first
// (works mod groups) getting one extra — the same dealing as AITER v1.0 (see
// docs/stacks/vllm-rocm-aiter.md §A4). It only shapes work_indptr and the balance statistics.
inline void deal_works_evenly(WorkList& wl, int num_cu) {
  const int64_t works = static_cast<int64_t>(wl.work_info.size());
  const int64_t groups = works == 0 ? 0 : std::min<int64_t>(std::max(1, num_cu), works);
  wl.num_workgroups = static_cast<int>(groups);
  wl.work_indptr.assign(static_cast<size_t>(groups) + 1, 0);
  if (groups == 0) return;
  const int64_t base = works / groups, extra = works % groups;
  for (int64_t g = 0; g < groups; ++g)
    wl.work_indptr[g + 1] = static_cast<int32_t>(wl.work_indptr[g] + base + (g < extra ? 1 : 0));
}

// Appends a split q tile's reduce entries: its final q range and the partial rows of
// its fragments (docs/stacks/vllm-rocm-aiter.md §A1.2 output semantics).
inline void add_reduce_tile(WorkList& wl, int32_t q_begin, int32_t q_end, const std::vector<int32_t>& plocs) {
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  for (int32_t p : plocs) wl.reduce_partial_map.push_back(p);
  wl.reduce_indptr.push_back(static_cast<int32_t>(wl.reduce_partial_map.size()));
  wl.reduce_final_map.push_back({q_begin, q_end});
}
// An unsplit q tile: empty reduce range, final map left {-1,-1} (as v1.2 leaves it unwritten).
inline void add_unsplit_tile(WorkList& wl) {
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.reduce_indptr.push_back(static_cast<int32_t>(wl.reduce_partial_map.size()));
  wl.reduce_final_map.push_back({-1, -1});
}


// One flattened row's works over its KV chunks [first, second) (relative to `base`):
// a single chunk writes the final output; several write fp32 partial rows that one
// reduce tile merges. Shared by the Gluon split and TRITON_MLA planners.
inline void emit_row_chunks(WorkList& wl, int64_t row, int64_t base, int64_t row_len,
                            const std::vector<std::pair<int64_t, int64_t>>& chunks, int64_t& next_partial) {
  if (chunks.size() <= 1) {
    WorkInfo w;
    w.batch_idx = static_cast<int32_t>(row);
    w.qo_start = static_cast<int32_t>(row);
    w.qo_end = static_cast<int32_t>(row + 1);
    w.kv_start = static_cast<int32_t>(base + (chunks.empty() ? 0 : chunks[0].first));
    w.kv_end = static_cast<int32_t>(base + (chunks.empty() ? 0 : chunks[0].second));
    wl.work_info.push_back(w);
    add_unsplit_tile(wl);
    return;
  }
  std::vector<int32_t> plocs;
  for (const auto& c : chunks) {
    WorkInfo w;
    w.batch_idx = static_cast<int32_t>(row);
    w.partial_qo_loc = static_cast<int32_t>(next_partial++);
    plocs.push_back(w.partial_qo_loc);
    w.qo_start = static_cast<int32_t>(row);
    w.qo_end = static_cast<int32_t>(row + 1);
    w.kv_start = static_cast<int32_t>(base + c.first);
    w.kv_end = static_cast<int32_t>(base + c.second);
    w.kv_offset = static_cast<int32_t>(row_len - c.second);
    wl.work_info.push_back(w);
  }
  add_reduce_tile(wl, static_cast<int32_t>(row), static_cast<int32_t>(row + 1), plocs);
}

}  // namespace mlactl::planner_util
