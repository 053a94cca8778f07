// Gluon decode planners (docs/stacks/vllm-rocm-aiter.md §A7.3; docs/design.md §4 route table).
#include <algorithm>
#include <cstdint>
#include <vector>

#include "core/planners/planner_util.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"

namespace mlactl {

namespace {

// Gluon programs own one q position each and the row's window already encodes the causal
// limit (score_end), so the kernel applies no kv_offset diagonal of its own.
KernelView gluon_view(const RowPlanInput& in) {
  KernelView v;
  v.heads = in.heads;
  v.fold_ratio = 1;
  v.q_layout = QLayout::flattened_rows;
  v.q_tokens_per_tile = 1;
  v.causal = false;
  v.page_size = in.page_size;
  return v;
}

void check_rows(const RowPlanInput& in, const char* who) {
  if (in.row_indptr.empty()) throw invalid_input("", std::string(who) + ": row_indptr needs rows + 1 entries");
  for (size_t i = 1; i < in.row_indptr.size(); ++i)
    if (in.row_indptr[i] < in.row_indptr[i - 1])
      throw invalid_input("", std::string(who) + ": row_indptr must be non-decreasing");
}

}  // namespace

WorkList plan_gluon(const RowPlanInput& in) {
  check_rows(in, "gluon planner");
  WorkList wl;
  wl.planner = "gluon";
  wl.planned_view = gluon_view(in);
  const int64_t rows = static_cast<int64_t>(in.row_indptr.size()) - 1;
  wl.num_q_rows = rows;
  wl.work_info.reserve(static_cast<size_t>(rows));
  // Seed 003's head-only parallelism: every row is one program over its whole window,
  // written straight to the output; empty windows still get their program.
  for (int64_t r = 0; r < rows; ++r) {
    WorkInfo w;
    w.batch_idx = static_cast<int32_t>(r);
    w.partial_qo_loc = -1;
    w.qo_start = static_cast<int32_t>(r);
    w.qo_end = static_cast<int32_t>(r + 1);
    w.kv_start = in.row_indptr[r];
    w.kv_end = in.row_indptr[r + 1];
    w.kv_offset = 0;
    wl.work_info.push_back(w);
    planner_util::add_unsplit_tile(wl);
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  planner_util::deal_works_evenly(wl, in.num_cu);
  return wl;
}

WorkList plan_gluon_split(const RowPlanInput& in, int batch_size, int q_len) {
  check_rows(in, "gluon-split planner");
  const int64_t rows = static_cast<int64_t>(in.row_indptr.size()) - 1;
  if (batch_size < 0 || q_len < 1 || int64_t(batch_size) * q_len != rows)
    throw invalid_input("", "gluon-split planner: rows must be batch_size * q_len (request-major)");
  WorkList wl;
  wl.planner = "gluon_split";
  wl.planned_view = gluon_view(in);
  wl.num_q_rows = rows;
  const int64_t block_n = std::max(1, in.gluon_block_n);
  const int64_t head_blocks = planner_util::ceil_div(in.heads, 16);
  // bh16: a fixed ~256-program launch budget, independent of sequence length (§A7.3).
  const int64_t denom = std::max<int64_t>(1, int64_t(batch_size) * q_len * head_blocks);
  const int64_t num_kv_splits = std::max<int64_t>(1, 256 / denom);
  int64_t next_partial = 0;
  for (int64_t b = 0; b < batch_size; ++b) {
    // The split length comes from the request's seq_len (its longest row), not the row's.
    int64_t seq_len = 0;
    for (int t = 0; t < q_len; ++t) {
      const int64_t r = b * q_len + t;
      seq_len = std::max<int64_t>(seq_len, int64_t(in.row_indptr[r + 1]) - in.row_indptr[r]);
    }
    const int64_t len_per_split = std::max(block_n, seq_len / num_kv_splits);
    for (int t = 0; t < q_len; ++t) {
      const int64_t r = b * q_len + t;
      const int64_t base = in.row_indptr[r];
      const int64_t row_len = int64_t(in.row_indptr[r + 1]) - base;
      // Split i covers [i*len, min((i+1)*len, seq_len)), the last one runs to seq_len; the row's
      // own window (score_end) clips it, and empty splits exit early.
      std::vector<std::pair<int64_t, int64_t>> chunks;
      for (int64_t i = 0; i < num_kv_splits; ++i) {
        const int64_t s = i * len_per_split;
        int64_t e = (i == num_kv_splits - 1) ? seq_len : std::min(s + len_per_split, seq_len);
        e = std::min(e, row_len);
        if (s < e) chunks.emplace_back(s, e);
      }
      // one active split: stage 1 writes o directly (an empty window still gets its program)
      planner_util::emit_row_chunks(wl, r, base, row_len, chunks, next_partial);
    }
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.num_partial_rows = next_partial;
  planner_util::deal_works_evenly(wl, in.num_cu);
  return wl;
}

}  // namespace mlactl
