// AITER non-persistent MLA decode (no metadata): get_meta_param's split count and
// per-request equal KV chunks (docs/stacks/vllm-rocm-aiter.md §A7.2; aiter/mla.py at e4048607).
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/planners/planner_util.hpp"
#include "core/stacks/vllm_rocm_aiter/planners/planners.hpp"

namespace mlactl {

namespace {
// get_block_n_fp8, keyed by nhead * max_seqlen_q; 0 where AITER's dict has no key.
int64_t fp8_block_n(int64_t packed) {
  switch (packed) {
    case 8: return 64;
    case 16: case 24: case 32: return 128;
    case 48: case 64: return 64;
    case 128: case 256: case 384: case 512: return 32;
    default: return 0;
  }
}
}  // namespace

int get_meta_param_splits(int64_t batch_size, double avg_kv, int heads, int q_len, bool kv_fp8, int num_cu) {
  if (batch_size <= 0 || num_cu <= 0) return 1;
  const double overhead = 84.1;
  // max(tmp, key=score): the first (smallest) i wins ties. Same operation order as Python.
  int best = 1;
  double best_score = -1.0;
  for (int i = 1; i <= 16; ++i) {
    const int64_t work = batch_size * i;
    const int64_t rounded = (work + num_cu - 1) / num_cu * num_cu;
    const double score = static_cast<double>(work) / static_cast<double>(rounded) * avg_kv / (avg_kv + overhead * i);
    if (score > best_score) {
      best_score = score;
      best = i;
    }
  }
  // fp8 (AITER tests q.dtype, fp8 exactly when vLLM's KV is fp8): cap by KV blocks.
  const int64_t block_n = fp8_block_n(int64_t(heads) * q_len);
  if (kv_fp8 && block_n > 0) {
    const int64_t total_kv = std::llround(avg_kv * static_cast<double>(batch_size));
    best = static_cast<int>(std::min<int64_t>(best, (total_kv + batch_size * block_n - 1) / (batch_size * block_n)));
    if (best > 1) {
      const double avg = static_cast<double>(total_kv) / static_cast<double>(batch_size);
      best = static_cast<int>(std::min<int64_t>(best, static_cast<int64_t>(std::floor(std::fabs(avg - q_len) / block_n)) + 1));
    }
  }
  return best;
}

WorkList plan_nonpersistent(const NonPersistentInput& in) {
  const int64_t B = static_cast<int64_t>(in.kv_indptr.size()) - 1;
  if (B < 0 || static_cast<int64_t>(in.qo_indptr.size()) != B + 1)
    throw invalid_input("", "non-persistent planner: qo_indptr and kv_indptr must both have batch_size + 1 entries");
  WorkList wl;
  wl.planner = "nonpersistent";
  KernelView& v = wl.planned_view;
  v.heads = in.heads;
  v.fold_ratio = 1;
  v.q_layout = QLayout::per_request;
  v.q_tokens_per_tile = in.q_len;
  v.causal = in.causal;
  v.page_size = 1;
  v.kv_dtype = in.kv_fp8 ? DType::fp8 : DType::bf16;
  v.q_dtype = v.kv_dtype;
  wl.num_q_rows = B > 0 ? int64_t(in.qo_indptr[B]) - in.qo_indptr[0] : 0;
  if (B == 0) {
    wl.reduce_indptr.push_back(0);
    return wl;
  }
  const int64_t total_kv = int64_t(in.kv_indptr[B]) - in.kv_indptr[0];
  const double avg_kv = static_cast<double>(total_kv) / static_cast<double>(B);
  const int splits = get_meta_param_splits(B, avg_kv, in.heads, in.q_len, in.kv_fp8, in.num_cu);
  if (in.kv_fp8 && fp8_block_n(int64_t(in.heads) * in.q_len) == 0)
    wl.notes.push_back("get_meta_param has no fp8 block_n for nhead*max_seqlen_q = " +
                       std::to_string(int64_t(in.heads) * in.q_len) + " (a KeyError in AITER); no fp8 cap applied");
  wl.notes.push_back("num_kv_splits = " + std::to_string(splits) +
                     "; the asm kernel's own chunking is not visible (docs/stacks/vllm-rocm-aiter.md §A9), modelled as equal "
                     "ceil(kv_len / splits) chunks");
  int64_t next_partial = 0;
  for (int64_t b = 0; b < B; ++b) {
    const int64_t qs = in.qo_indptr[b], qe = in.qo_indptr[b + 1];
    const int64_t ks = in.kv_indptr[b], len = int64_t(in.kv_indptr[b + 1]) - ks;
    const int64_t chunk = planner_util::ceil_div(len, splits);
    std::vector<std::pair<int64_t, int64_t>> chunks;
    for (int64_t i = 0; i < splits && chunk > 0; ++i) {
      const int64_t s = i * chunk, e = std::min(s + chunk, len);
      if (s < e) chunks.emplace_back(s, e);
    }
    // All q rows of the request in one work per chunk; kv_offset = KV tokens after the chunk
    // gives the causal diagonal (docs/stacks/vllm-rocm-aiter.md §A7.1 rule).
    auto make = [&](int64_t s, int64_t e, int32_t ploc) {
      WorkInfo w;
      w.batch_idx = static_cast<int32_t>(b);
      w.partial_qo_loc = ploc;
      w.qo_start = static_cast<int32_t>(qs);
      w.qo_end = static_cast<int32_t>(qe);
      w.kv_start = static_cast<int32_t>(ks + s);
      w.kv_end = static_cast<int32_t>(ks + e);
      w.kv_offset = static_cast<int32_t>(len - e);
      return w;
    };
    if (chunks.size() <= 1) {
      // One chunk (or no KV: the (batch, split 0) program still runs and writes the rows).
      wl.work_info.push_back(chunks.empty() ? make(0, 0, -1) : make(chunks[0].first, chunks[0].second, -1));
      planner_util::add_unsplit_tile(wl);
      continue;
    }
    std::vector<int32_t> plocs;
    for (const auto& c : chunks) {
      plocs.push_back(static_cast<int32_t>(next_partial));
      wl.work_info.push_back(make(c.first, c.second, static_cast<int32_t>(next_partial)));
      next_partial += qe - qs;
    }
    planner_util::add_reduce_tile(wl, static_cast<int32_t>(qs), static_cast<int32_t>(qe), plocs);
  }
  wl.num_partial_rows = next_partial;
  planner_util::deal_works_evenly(wl, in.num_cu);
  return wl;
}

}  // namespace mlactl
