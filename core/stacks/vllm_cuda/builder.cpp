// The common MLA metadata builder's decode rows on vLLM's CUDA platform
// (docs/stacks/vllm-cuda.md §C3) and the cudagraph padding contract (§C9).
#include <algorithm>
#include <string>

#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_cuda/schedule_arrays.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"

namespace mlactl::vllm_cuda {

PadValues pad_values(Route r, const Batch& b) {
  PadValues p;
  // FlashMLA's fp8 kernel indexes block_table[n_block - 1] for seq_len 0: its builder pads
  // with seq_len 1 and block 0 (vLLM PR #35969; flashmla-fp8-zero-pad is the time before)
  if (r == Route::flashmla && b.kv_cache.dtype == DType::fp8 && !b.has_defect("flashmla-fp8-zero-pad")) {
    p.seq_len = 1;
    p.block_id = 0;
  }
  return p;
}

DecodeMetadata build_cuda_decode(const Batch& b, PadValues pad, std::optional<Route> route) {
  DecodeMetadata md;
  md.builder = "vllm MLACommonMetadataBuilder._build_decode (CUDA)";
  const int64_t R = (int64_t)b.requests.size();
  md.num_requests = R;
  md.heads = identity_heads(b.model.num_heads);
  const int64_t pad_rows = b.rows_per_padding_request();
  const int64_t Kb = b.kv_cache.block_size;
  md.qo_len.resize(R);
  md.seq_k.resize(R);
  md.qo_indptr.assign(R + 1, 0);
  md.paged_kv_indptr.assign(R + 1, 0);
  int64_t min_active = -1;
  for (int64_t r = 0; r < R; ++r) {
    const Request& q = b.requests[r];
    md.qo_len[r] = q.padding ? pad_rows : q.query_len;
    md.seq_k[r] = q.padding ? pad.seq_len : q.seq_len();  // seq_lens include the query tokens
    md.max_qo_len = std::max(md.max_qo_len, md.qo_len[r]);
    md.qo_indptr[r + 1] = (int32_t)(md.qo_indptr[r] + md.qo_len[r]);
    md.paged_kv_indptr[r + 1] = (int32_t)(md.paged_kv_indptr[r] + md.seq_k[r]);
    if (!q.padding) min_active = min_active < 0 ? md.seq_k[r] : std::min(min_active, md.seq_k[r]);
  }
  // The kernels read block_table[r][j / Kb] * Kb + j % Kb; mlactl's executors read the
  // token slots that gives. A padding row's block id is the pad value (-1: no entries
  // exist, since its seq_len is 0; 0: block 0, slot 0).
  md.paged_kv_indices.resize((size_t)md.paged_kv_indptr.back());
  for (int64_t r = 0; r < R; ++r) {
    int32_t* out = md.paged_kv_indices.data() + md.paged_kv_indptr[r];
    const bool padding = b.requests[r].padding;
    for (int64_t j = 0; j < md.seq_k[r]; ++j) {
      const int64_t block = padding ? pad.block_id : b.kv_cache.block_table[r][j / Kb];
      out[j] = (int32_t)(block * Kb + j % Kb);
    }
  }
  md.paged_kv_last_page_len.assign(R, 1);
  md.min_kv_seq_len_r1 = min_active < 0 ? 1 : min_active;
  md.min_kv_seq_len_r0 = md.min_kv_seq_len_r1;
  md.uni_seqlen = std::all_of(md.qo_len.begin(), md.qo_len.end(), [&](int64_t x) { return x == md.max_qo_len; });
  if (b.num_padding() > 0)
    md.notes.push_back("cudagraph padding slots: seq_len " + std::to_string(pad.seq_len) + ", block id " + std::to_string(pad.block_id) +
                       " (padded before the metadata is built, vLLM PR #28579)");
  if (route == Route::flashmla) {
    // FlashMLA's _build_decode calls get_mla_metadata with s_q·h_q tokens per KV head
    const int64_t s_q = std::max<int64_t>(1, md.max_qo_len);
    const int planned_sq = b.has_defect("flashmla-qlen-planned-as-one") ? 1 : (int)s_q;
    const int parts = flashmla_num_sm_parts(b.platform.num_cu, 1, (int64_t)planned_sq * b.model.num_heads);
    const FlashMlaSchedule s = flashmla_vllm_schedule(b, md.seq_k, parts);
    md.stack_arrays = flashmla_arrays(s);
  }
  if (route == Route::flash_attn_mla) md.stack_arrays = fa3_arrays(fa3_get_scheduler_metadata(fa3_scheduler_input(b, md)));
  return md;
}

}  // namespace mlactl::vllm_cuda
