#include "core/stacks/vllm_rocm_aiter/route_input.hpp"

namespace mlactl {

RouteInput route_input_from_batch(const Batch& b, const DecodeMetadata& md) {
  RouteInput in;
  in.arch = b.platform.arch;
  in.num_heads = b.model.num_heads;
  in.max_qo_len = md.max_qo_len;
  in.mtp_qlen = b.decode.mtp_qlen;
  in.kv_cache_dtype = vllm_kv_cache_dtype(b);
  in.model_dtype = b.model.dtype;
  in.q_dtype = b.decode.q_dtype;
  in.kv_dtype = b.kv_cache.dtype;
  in.small_head_mode = to_string(b.decode.small_head_mode);
  in.causal = b.decode.causal;
  in.kv_cache_bytes = b.kv_cache_bytes();
  in.aiter_has_causal_arg = b.platform.aiter_has_causal_arg;
  in.aiter = b.platform.aiter;
  in.vllm = b.platform.vllm;
  in.num_cu = b.platform.num_cu;
  in.sparse = b.sparse.has_value();
  in.head_size = b.head_dim();
  in.kv_lora_rank = b.model.kv_lora_rank;
  // vLLM's decode/prefill split: query_len > K is a prefill (sparse batches only)
  for (const auto& r : b.requests) {
    if (!r.padding && r.query_len > b.decode.mtp_qlen) in.num_prefills++;
    else in.num_decodes++;
  }
  in.num_decode_tokens = b.decode.num_decode_tokens;
  in.max_query_len = b.max_query_len();
  in.topk = b.sparse ? b.sparse->topk : 0;
  in.defect_noncausal_probe_silent = b.has_defect("noncausal-probe-silent");
  in.defect_sparse_route_legacy = b.has_defect("sparse-route-legacy");
  in.defect_pad_repeat_noop = b.has_defect("pad-repeat-noop");
  in.defect_pad_append_only = b.has_defect("pad-append-only");
  in.defect_gluon_arch_ungated = b.has_defect("gluon-arch-ungated");
  in.defect_metadata_dtype_omitted = b.has_defect("metadata-dtype-omitted");
  return in;
}

}  // namespace mlactl
