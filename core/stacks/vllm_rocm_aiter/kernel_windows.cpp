#include <algorithm>

#include "core/stacks/vllm_rocm_aiter/stack.hpp"
#include "core/vllm_common.hpp"

namespace mlactl {

MetadataWindows aiter_metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows) {
  MetadataWindows w;
  w.begin.assign(rows.size(), 0);
  w.end.assign(rows.size(), 0);
  const int64_t Q = md.max_qo_len;
  // causal-flag-dropped (seed 001): the non-causal block is planned and run as causal.
  const bool kernel_causal = b.decode.causal || b.has_defect("causal-flag-dropped");
  switch (route) {
    case Route::refused:
      w.path = "none (the stack refuses this configuration)";
      return w;
    case Route::gluon_verify:
      // R0: one flattened row per (request, token) with its own prefix (docs/stacks/vllm-rocm-aiter.md §V1 (a))
      w.path = "R0 verify flatten: flat_indptr row r*Q+t, a prefix of the request's paged_kv_indices";
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t fr = (int64_t)rows[i].request * Q + rows[i].token;
        if (md.flat_indptr.empty() || fr + 1 >= (int64_t)md.flat_indptr.size()) continue;
        w.end[i] = md.flat_indptr[fr + 1] - md.flat_indptr[fr];
      }
      break;
    case Route::triton_mla:
      // TRITON_MLA flattens itself: max(0, s-(q-1)+t) causal, s non-causal (docs/stacks/vllm-rocm-aiter.md §V4)
      w.path = "TRITON_MLA flatten: per-row b_seq_len over a repeated block-table row";
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t s = md.seq_k[rows[i].request];
        w.end[i] = kernel_causal ? vllm::causal_prefix_length(s, md.qo_len[rows[i].request], rows[i].token) : s;
      }
      break;
    case Route::sparse_triton:
    case Route::aiter_sparse:
      w.path = "sparse per-token index lists: min(context + t + 1, topk) entries";
      for (size_t i = 0; i < rows.size(); ++i) {
        if (rows[i].kind == MaskKind::padding) continue;
        const Request& r = b.requests[rows[i].request];
        w.end[i] = std::min<int64_t>(r.context_len + rows[i].token + 1, b.sparse ? b.sparse->topk : 0);
      }
      break;
    default:
      // Gluon decode/native MTP and ASM: per-request paged_kv_indptr with the in-kernel
      // diagonal: token t sees min(end, seq_len - Q + t + 1) when causal.
      w.path = std::string("per-request paged_kv_indptr") + (kernel_causal ? " with the kernel's causal diagonal" : ", non-causal (whole request)");
      for (size_t i = 0; i < rows.size(); ++i) {
        const int64_t s = md.seq_k[rows[i].request];
        const int64_t qn = md.qo_len[rows[i].request];  // the request's own q rows
        w.end[i] = kernel_causal ? vllm::causal_prefix_length(s, qn, rows[i].token) : s;
      }
      break;
  }
  w.available = true;
  return w;
}

}  // namespace mlactl
