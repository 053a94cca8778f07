// RowExpectations for the common q layouts (what each q row of a kernel view must
// cover), for tests and for checking planner output against the batch's windows.
#pragma once
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/invariants.hpp"
#include "core/worklist.hpp"

namespace mlactl {

// The kernel q row of oracle row i (request b, token t) for head group g of AITER's head ->
// batch fold k over L (docs/stacks/vllm-rocm-aiter.md §A5.1): per request (b*k+g)*L+t; in a
// layout where each token is its own batch, i*k+g; unfolded, i. One formula for the planners'
// expectations (vllm_rocm_aiter, sglang) and the position audit.
inline int64_t view_q_row(QLayout layout, int fold, int64_t L, int64_t i, int64_t request, int64_t token, int g) {
  if (fold <= 1) return i;
  if (layout != QLayout::per_request) return i * fold + g;
  return (request * fold + g) * L + token;
}

// per_request layout with a uniform q length L and head fold ratio k (docs/stacks/vllm-rocm-aiter.md §A5.1):
// q row (b*k+g)*L+t belongs to request b and covers
// [kv_indptr[b], kv_indptr[b+1] - (causal ? L-1-t : 0)), clamped at kv_indptr[b].
inline std::vector<RowExpectation> expect_per_request_uniform(const std::vector<int32_t>& kv_indptr, int L, int fold_ratio,
                                                              bool causal) {
  std::vector<RowExpectation> rows;
  const int64_t B = static_cast<int64_t>(kv_indptr.size()) - 1;
  rows.reserve(static_cast<size_t>(std::max<int64_t>(0, B) * L * fold_ratio));
  for (int64_t b = 0; b < B; ++b)
    for (int g = 0; g < fold_ratio; ++g)
      for (int t = 0; t < L; ++t) {
        RowExpectation e;
        e.q_row = (b * fold_ratio + g) * L + t;
        e.kv_begin = kv_indptr[b];
        e.kv_end = std::max<int64_t>(kv_indptr[b], int64_t(kv_indptr[b + 1]) - (causal ? (L - 1 - t) : 0));
        rows.push_back(e);
      }
  return rows;
}

// Rows with their own KV lists (flattened rows, per-token sparse): row r covers
// [row_indptr[r], row_indptr[r+1]).
inline std::vector<RowExpectation> expect_rows(const std::vector<int32_t>& row_indptr) {
  std::vector<RowExpectation> rows;
  for (size_t r = 0; r + 1 < row_indptr.size(); ++r) {
    RowExpectation e;
    e.q_row = static_cast<int64_t>(r);
    e.kv_begin = row_indptr[r];
    e.kv_end = row_indptr[r + 1];
    rows.push_back(e);
  }
  return rows;
}

}  // namespace mlactl
