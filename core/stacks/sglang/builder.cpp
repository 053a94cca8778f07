// SGLang's init_forward_metadata per backend and forward mode, read at
// sgl-project/sglang python/sglang/srt/layers/attention/{flashinfer_mla,flashmla,
// flashattention,triton,aiter}_backend.py@888a8794 (docs/stacks/sglang.md §S3-§S8).
#include "core/stacks/sglang/builder.hpp"

#include <algorithm>
#include <string>

#include "core/stacks/sglang/router.hpp"
#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"
#include "core/stacks/vllm_cuda/planners/flashmla.hpp"
#include "core/stacks/vllm_cuda/schedule_arrays.hpp"

namespace mlactl::sglang {

namespace {

StackArray flat(const std::string& name, const std::vector<int64_t>& v) { return {name, 0, false, v}; }
StackArray scalar(const std::string& name, int64_t v) { return {name, 0, true, {v}}; }
template <typename T>
std::vector<int64_t> widen(const std::vector<T>& v) {
  return std::vector<int64_t>(v.begin(), v.end());
}

// SGLang's `seq_lens` for the mode (§S3): verify passes the committed prefix (the backends
// add the D drafts), decode and draft_extend the full length.
std::vector<int64_t> sglang_seq_lens(const Batch& b, const Section& s, const DecodeMetadata& md) {
  std::vector<int64_t> out = md.seq_k;
  if (s.forward_mode == ForwardMode::target_verify)
    for (auto& x : out) x -= *s.num_draft_tokens;
  (void)b;
  return out;
}

}  // namespace

std::vector<int64_t> flashmla_block_kv_indices(const Batch& b, const DecodeMetadata& md, int64_t* width) {
  constexpr int64_t kPage = vllm_cuda::kFlashMlaBlockN;
  const Section& s = section_of(b);
  int64_t w = 1;
  for (int64_t len : md.seq_k) w = std::max(w, (len + kPage - 1) / kPage);
  // eager: torch.full(..., -1); CUDA graph: cuda_graph_kv_indices = torch.full(..., 1)
  const int64_t unused = s.cuda_graph ? 1 : -1;
  std::vector<int64_t> out((size_t)(md.num_requests * w), unused);
  for (int64_t r = 0; r < md.num_requests; ++r)
    for (int64_t j = 0; j * kPage < md.seq_k[(size_t)r]; ++j)
      out[(size_t)(r * w + j)] = token_slot(b, (int)r, j * kPage) / kPage;  // req_to_token[., 64 j] // 64
  *width = w;
  return out;
}

DecodeMetadata build_sglang(const Batch& b, std::optional<Backend> backend) {
  const Section& s = section_of(b);
  DecodeMetadata md;
  const int64_t R = (int64_t)b.requests.size();
  md.num_requests = R;
  md.heads = identity_heads(b.model.num_heads);
  md.qo_len.resize(R);
  md.seq_k.resize(R);
  md.qo_indptr.assign(R + 1, 0);
  md.paged_kv_indptr.assign(R + 1, 0);
  const Batch::PaddingShape pad = b.padding_shape.value_or(Batch::PaddingShape{});
  int64_t min_active = -1;
  for (int64_t r = 0; r < R; ++r) {
    const Request& q = b.requests[(size_t)r];
    md.qo_len[r] = q.padding ? pad.query_len : q.query_len;
    md.seq_k[r] = q.padding ? pad.kv_len : q.seq_len();  // the KV the kernel attends (verify: seq_lens + D)
    md.max_qo_len = std::max(md.max_qo_len, md.qo_len[r]);
    md.qo_indptr[r + 1] = (int32_t)(md.qo_indptr[r] + md.qo_len[r]);
    md.paged_kv_indptr[r + 1] = (int32_t)(md.paged_kv_indptr[r] + md.seq_k[r]);
    if (!q.padding) min_active = min_active < 0 ? md.seq_k[r] : std::min(min_active, md.seq_k[r]);
  }
  // create_flashinfer_kv_indices_triton (§S3): req_to_token[req_pool_indices[r], t], the
  // token slots; a padding slot reads the pool row mlactl gives it
  md.paged_kv_indices.resize((size_t)md.paged_kv_indptr.back());
  for (int64_t r = 0; r < R; ++r)
    for (int64_t j = 0; j < md.seq_k[r]; ++j) md.paged_kv_indices[(size_t)(md.paged_kv_indptr[r] + j)] = (int32_t)token_slot(b, (int)r, j);
  md.paged_kv_last_page_len.assign(R, 1);
  md.min_kv_seq_len_r1 = min_active < 0 ? 1 : min_active;
  md.min_kv_seq_len_r0 = md.min_kv_seq_len_r1;
  md.uni_seqlen = std::all_of(md.qo_len.begin(), md.qo_len.end(), [&](int64_t x) { return x == md.max_qo_len; });
  if (b.num_padding() > 0)
    md.notes.push_back("CUDA-graph padding slots: seq_lens filled with " + std::to_string(pad.kv_len - (s.forward_mode == ForwardMode::target_verify ? *s.num_draft_tokens : 0)) +
                       " (get_cuda_graph_seq_len_fill_value), " + std::to_string(pad.query_len) + " query rows each (cuda_graph_runner.py)");

  const std::string mode = to_string(s.forward_mode);
  md.builder = std::string("sglang ") + (backend ? to_string(*backend) : "(refused)") + " init_forward_metadata (" + mode + ")";
  if (!backend) return md;
  const std::vector<int64_t> seq_lens = sglang_seq_lens(b, s, md);
  // FlashMLA's draft_extend is FlashInfer MLA's: forward_extend and its metadata defer to
  // the parent backend (§S5)
  const bool flashmla_fallback = *backend == Backend::flashmla && s.forward_mode == ForwardMode::draft_extend;
  if (flashmla_fallback) md.builder = "sglang flashmla -> flashinfer init_forward_metadata (draft_extend)";
  switch (flashmla_fallback ? Backend::flashinfer : *backend) {
    case Backend::flashinfer: {
      // BatchMLAPagedAttentionWrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, ..., page_size 1) (§S4)
      md.stack_arrays.push_back(flat("qo_indptr", widen(md.qo_indptr)));
      md.stack_arrays.push_back(flat("kv_indptr", widen(md.paged_kv_indptr)));
      md.stack_arrays.push_back(flat("kv_len_arr", md.seq_k));
      md.stack_arrays.push_back(scalar("causal", s.forward_mode == ForwardMode::decode ? 0 : 1));
      break;
    }
    case Backend::flashmla: {
      int64_t width = 0;
      std::vector<int64_t> bkv = flashmla_block_kv_indices(b, md, &width);
      md.stack_arrays.push_back({"block_kv_indices", (int)width, false, std::move(bkv)});
      md.stack_arrays.push_back(flat("cache_seqlens", md.seq_k));
      // get_mla_metadata(seq_lens (+ D), num_q_heads (x D), 1) (§S5, §S14)
      const int64_t tokens = std::max<int64_t>(1, md.max_qo_len) * b.model.num_heads;
      // sglang-flashmla-kv-heads-from-config: the config's 16 KV heads (sglang #5154)
      const int parts = b.has_defect("sglang-flashmla-kv-heads-from-config")
                            ? vllm_cuda::flashmla_num_sm_parts(b.platform.num_cu, 16, tokens / 16)
                            : vllm_cuda::flashmla_num_sm_parts(b.platform.num_cu, 1, tokens);
      const auto sched = vllm_cuda::flashmla_get_mla_metadata(md.seq_k, parts);
      for (auto& a : vllm_cuda::flashmla_arrays(sched)) md.stack_arrays.push_back(std::move(a));
      break;
    }
    case Backend::fa3: {
      // page_table = req_to_token[req_pool_indices, :max_seq_len_k] (page 1) or its pages (§S6)
      const int64_t P = s.page_size;
      int64_t max_k = 0;
      for (int64_t len : md.seq_k) max_k = std::max(max_k, len);
      const int64_t cols = P == 1 ? max_k : (max_k + P - 1) / P;
      std::vector<int64_t> table((size_t)(R * std::max<int64_t>(cols, 1)), 0);
      for (int64_t r = 0; r < R; ++r)
        for (int64_t c = 0; c < cols && c * P < md.seq_k[r]; ++c)
          table[(size_t)(r * cols + c)] = P == 1 ? token_slot(b, (int)r, c) : token_slot(b, (int)r, c * P) / P;
      md.stack_arrays.push_back({"page_table", (int)std::max<int64_t>(cols, 1), false, std::move(table)});
      md.stack_arrays.push_back(flat("cache_seqlens", md.seq_k));
      md.stack_arrays.push_back(flat("cu_seqlens_q", widen(md.qo_indptr)));
      md.stack_arrays.push_back(flat("cu_seqlens_k", widen(md.paged_kv_indptr)));
      md.stack_arrays.push_back(scalar("max_seqlen_q", md.max_qo_len));
      break;
    }
    case Backend::triton: {
      if (s.forward_mode == ForwardMode::decode) {
        md.stack_arrays.push_back(flat("kv_indptr", widen(md.paged_kv_indptr)));
        break;
      }
      // the extend kernel reads kv_indptr's entries from the cache and the query tokens' own
      // K/V from this forward (§S7): target_verify's kv_indptr is cumsum(seq_lens), the
      // prefix; draft_extend's is cumsum(seq_lens) too, but its seq_lens are post-accept, so
      // as built the accepted tokens would be read twice (§S16.1, unconfirmed): mlactl runs
      // the prefix + extend the kernel is meant to see and says so
      std::vector<int64_t> kv_indptr{0};
      for (int64_t r = 0; r < R; ++r) kv_indptr.push_back(kv_indptr.back() + seq_lens[(size_t)r]);
      md.stack_arrays.push_back(flat("qo_indptr", widen(md.qo_indptr)));
      md.stack_arrays.push_back(flat("kv_indptr", kv_indptr));
      if (s.forward_mode == ForwardMode::draft_extend)
        md.notes.push_back("triton draft_extend: kv_indptr = cumsum(seq_lens) counts the accepted tokens, which the extend part "
                           "supplies again (docs/stacks/sglang.md §S16.1, unconfirmed); mlactl executes prefix = seq_lens - accepted");
      md.stack_arrays.push_back(scalar("max_extend_len", md.max_qo_len));
      break;
    }
    case Backend::aiter: {
      // token-granular lists, kv_last_page_len ones, max_seqlen_q (§S8)
      md.builder = "sglang aiter init_forward_metadata (" + mode + ")";
      md.stack_arrays.push_back(flat("qo_indptr", widen(md.qo_indptr)));
      md.stack_arrays.push_back(flat("kv_indptr", widen(md.paged_kv_indptr)));
      md.stack_arrays.push_back(flat("kv_last_page_len", std::vector<int64_t>((size_t)R, 1)));
      md.stack_arrays.push_back(scalar("max_seqlen_q", md.max_qo_len));
      const AiterFlags f = aiter_flags(b);
      // 4 or 8 heads: q.repeat_interleave(16 // H), output o[:, ::16 // H] (aiter_backend.py)
      if (f.padded_heads != b.model.num_heads) md.heads = head_padding(b.model.num_heads);
      break;
    }
    default: break;
  }
  md.stack_arrays.push_back(flat("forward_batch_seq_lens", seq_lens));  // SGLang's seq_lens (verify: the prefix); mlactl's seq_lens is the KV each request attends
  return md;
}

}  // namespace mlactl::sglang
