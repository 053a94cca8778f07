// TRITON_MLA decode split (docs/stacks/vllm-rocm-aiter.md §V4): one row per token, each
// row's KV cut into equal ceil(len / num_kv_splits) chunks.
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/planners/planner_util.hpp"
#include "core/planners/row_plan.hpp"

namespace mlactl {

int triton_num_kv_splits(int64_t max_seq_len, int num_cu) {
  // min(next_pow2(max(1, max_seq_len // 512)), 2 * CU count)
  const int64_t want = planner_util::next_pow2(std::max<int64_t>(1, max_seq_len / 512));
  return static_cast<int>(std::max<int64_t>(1, std::min<int64_t>(want, 2 * int64_t(num_cu))));
}

WorkList plan_triton(const RowPlanInput& in, int64_t max_seq_len) {
  return plan_triton_splits(in, triton_num_kv_splits(max_seq_len, in.num_cu));
}

WorkList plan_triton_splits(const RowPlanInput& in, int64_t num_kv_splits) {
  if (in.row_indptr.empty()) throw invalid_input("", "triton planner: row_indptr needs rows + 1 entries");
  WorkList wl;
  wl.planner = "triton";
  const int64_t rows = static_cast<int64_t>(in.row_indptr.size()) - 1;
  wl.num_q_rows = rows;
  KernelView& v = wl.planned_view;
  v.heads = in.heads;  // raw heads: the kernel tiles them by BLOCK_H = 16 itself
  v.fold_ratio = 1;
  v.q_layout = QLayout::flattened_rows;
  v.q_tokens_per_tile = 1;
  v.causal = false;  // the flatten already shortened each row to its causal window
  v.page_size = in.page_size;
  const int64_t splits = std::max<int64_t>(1, num_kv_splits);
  int64_t next_partial = 0;
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t base = in.row_indptr[r];
    const int64_t len = int64_t(in.row_indptr[r + 1]) - base;
    if (len < 0) throw invalid_input("", "triton planner: row_indptr must be non-decreasing");
    const int64_t chunk = planner_util::ceil_div(len, splits);
    std::vector<std::pair<int64_t, int64_t>> chunks;
    for (int64_t i = 0; i < splits && chunk > 0; ++i) {
      const int64_t s = i * chunk, e = std::min(s + chunk, len);
      if (s < e) chunks.emplace_back(s, e);  // empty chunks are dropped (the kernel skips them)
    }
    // A row of length 0 has no work: vLLM zero-fills its output and sets LSE to -inf.
    if (chunks.empty()) continue;
    planner_util::emit_row_chunks(wl, r, base, len, chunks, next_partial);
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.num_partial_rows = next_partial;
  planner_util::deal_works_evenly(wl, in.num_cu);
  return wl;
}

}  // namespace mlactl
