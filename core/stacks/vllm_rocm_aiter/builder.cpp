#include "core/stacks/vllm_rocm_aiter/builder.hpp"

#include <algorithm>
#include <limits>

#include "core/budget.hpp"
#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"
#include "core/vllm_common.hpp"

namespace mlactl {

DecodeMetadata build_decode(const Batch& b, bool with_flatten) {
  DecodeMetadata m;
  const int64_t R = (int64_t)b.requests.size();
  m.num_requests = R;
  // step 1: qo_len from query_start_loc; Q = max
  std::vector<int64_t> qo(R);
  int64_t Q = 0;
  for (int64_t i = 0; i < R; ++i) {
    qo[i] = b.requests[i].query_len;
    Q = std::max(Q, qo[i]);
  }
  // step 2: uniform-MTP padding
  m.uniform_pad = vllm::uniform_padded_mtp_qo_len(qo, Q, b.decode.num_decode_tokens);
  const bool pad = m.uniform_pad > 0;
  if (pad) Q = m.uniform_pad;
  m.max_qo_len = Q;
  m.qo_len = qo;
  if (pad)
    for (auto& q : m.qo_len)
      if (q == 0) q = Q;
  // step 3: seq_k (padding slots get Q KV entries under R1)
  m.seq_k.resize(R);
  for (int64_t i = 0; i < R; ++i) m.seq_k[i] = (pad && qo[i] == 0) ? Q : b.requests[i].seq_len();
  // step 4–5
  m.paged_kv_last_page_len.assign(R, 1);
  m.paged_kv_indptr.resize(R + 1);
  m.paged_kv_indptr[0] = 0;
  for (int64_t i = 0; i < R; ++i) m.paged_kv_indptr[i + 1] = (int32_t)(m.paged_kv_indptr[i] + m.seq_k[i]);
  // step 7: token slots from the block table (Kb = kernel block size)
  m.paged_kv_indices.resize((size_t)m.paged_kv_indptr[R]);
  const int64_t Kb = b.kv_cache.block_size;
  for (int64_t r = 0; r < R; ++r) {
    int32_t* out = m.paged_kv_indices.data() + m.paged_kv_indptr[r];
    const auto& bt = b.kv_cache.block_table[r];
    const int64_t n = m.seq_k[r];
    if (Kb == 1) {
      std::copy(bt.begin(), bt.begin() + n, out);
    } else {
      for (int64_t j = 0; j < n; ++j) out[j] = (int32_t)(bt[j / Kb] * Kb + j % Kb);
    }
  }
  // step 8: qo_indptr (eager form)
  m.qo_indptr.resize(R + 1);
  m.qo_indptr[0] = 0;
  bool all_equal = true;
  for (int64_t i = 0; i < R; ++i) {
    m.qo_indptr[i + 1] = (int32_t)(m.qo_indptr[i] + m.qo_len[i]);
    all_equal &= m.qo_len[i] == Q;
  }
  m.uni_seqlen = pad || all_equal;

  // min_kv_seq_len. R1: minimum per-request length; when padded, over active requests
  // only (stays 1 if none). R0: minimum causal flatten row length (0 with padding).
  {
    int64_t mn = std::numeric_limits<int64_t>::max();
    bool any = false;
    for (int64_t i = 0; i < R; ++i) {
      if (pad && qo[i] == 0) continue;
      mn = std::min(mn, m.seq_k[i]);
      any = true;
    }
    m.min_kv_seq_len_r1 = any ? mn : 1;
  }
  {
    int64_t mn = std::numeric_limits<int64_t>::max();
    for (int64_t i = 0; i < R; ++i) {
      const int64_t s = b.requests[i].seq_len();  // R0 reads diff(indptr) before padding: padding = 0
      for (int64_t t = 0; t < Q; ++t) mn = std::min(mn, vllm::causal_prefix_length(s, Q, t));
    }
    m.min_kv_seq_len_r0 = R * Q > 0 ? mn : 0;
  }

  // R0 small-head verify flatten (docs/stacks/vllm-rocm-aiter.md §V1 (a)): row r·Q+t gets max(0, s − (Q−1) + t)
  // entries, a prefix of the request's slots. verify-window-broadcast (seed 000) gives
  // every row the whole request length instead.
  if (with_flatten) {
    const bool broadcast = b.has_defect("verify-window-broadcast");
    int64_t flat_entries = 0;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t s = b.requests[r].seq_len();
      for (int64_t t = 0; t < Q; ++t) flat_entries += broadcast ? s : vllm::causal_prefix_length(s, Q, t);
    }
    require_within_budget(flat_entries * 4, "/requests", "the R0 verify flatten (" + std::to_string(flat_entries) + " index entries)");
    if (flat_entries > std::numeric_limits<int32_t>::max())
      throw invalid_input("/requests", "the R0 verify flatten needs " + std::to_string(flat_entries) + " index entries, more than int32 indptr holds");
    m.flat_indptr.resize(R * Q + 1);
    m.flat_indptr[0] = 0;
    for (int64_t r = 0; r < R; ++r) {
      const int64_t s = b.requests[r].seq_len();
      for (int64_t t = 0; t < Q; ++t) {
        const int64_t len = broadcast ? s : vllm::causal_prefix_length(s, Q, t);
        m.flat_indptr[r * Q + t + 1] = (int32_t)(m.flat_indptr[r * Q + t] + len);
      }
    }
    m.flat_indices.resize((size_t)m.flat_indptr[R * Q]);
    for (int64_t r = 0; r < R; ++r)
      for (int64_t t = 0; t < Q; ++t) {
        const int64_t row = r * Q + t;
        const int64_t len = m.flat_indptr[row + 1] - m.flat_indptr[row];
        const int32_t* src = m.paged_kv_indices.data() + m.paged_kv_indptr[r];
        std::copy(src, src + len, m.flat_indices.begin() + m.flat_indptr[row]);
      }
  }

  PaddingDefects pd;
  pd.repeat_noop = b.has_defect("pad-repeat-noop");
  pd.append_only = b.has_defect("pad-append-only");
  m.heads = head_padding(b.model.num_heads, false, pd);
  if (pad) m.notes.push_back("uniform-MTP padding applied: padding slots carry " + std::to_string(Q) + " rows");
  return m;
}

}  // namespace mlactl
