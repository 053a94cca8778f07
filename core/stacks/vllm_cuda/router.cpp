// vLLM's CUDA attention-backend selection for MLA on sm90 (docs/stacks/vllm-cuda.md §C1)
// and the decode-path facts mlactl checks after it (§C2, §C3), as a predicate chain.
#include <algorithm>
#include <string>

#include "core/stacks/vllm_cuda/backends.hpp"
#include "core/stacks/vllm_cuda/stack.hpp"

namespace mlactl::vllm_cuda {

namespace {

std::string selector_config_repr(const Batch& b) {
  // AttentionSelectorConfig as vLLM's error prints it (block_size dropped by the selector)
  return std::string("AttentionSelectorConfig(head_size=") + std::to_string(b.head_dim()) + ", dtype=torch." +
         (b.model.dtype == DType::bf16 ? "bfloat16" : "float16") + ", kv_cache_dtype=" + vllm_kv_cache_dtype(b) +
         ", block_size=None, use_mla=True, has_sink=False, use_sparse=" + (b.sparse ? "True" : "False") + ", use_mm_prefix=False)";
}

struct Selection {
  std::optional<AttentionBackend> backend;
  std::string error;  // ValueError text when none
};

// select_attention_backend (vllm/platforms/cuda.py@01b1d34): a named backend is validated
// alone and raises when invalid; otherwise every backend of the priority list is validated
// and the first valid one wins.
Selection select(const Batch& b, std::optional<AttentionBackend> forced, std::vector<Predicate>* chain) {
  Selection s;
  auto add = [&](std::string n, std::string v, std::string w) {
    if (chain) chain->push_back({std::move(n), std::move(v), std::move(w)});
  };
  if (forced) {
    const auto reasons = validate_configuration(*forced, b);
    add("selected_backend", to_string(*forced), "named by --attention-backend / decode.attention_backend (or --kernel): validated alone, no fallback");
    add(std::string(to_string(*forced)) + ".validate_configuration", reasons.empty() ? "[] (valid)" : py_list(reasons),
        reasons.empty() ? "capability 9.0, kv_cache_dtype " + vllm_kv_cache_dtype(b) : "vLLM raises instead of falling back");
    if (reasons.empty()) s.backend = forced;
    else
      s.error = std::string("Selected backend AttentionBackendEnum.") + to_string(*forced) +
                " is not valid for this configuration. Reason: " + py_list(reasons);
    return s;
  }
  std::string reasons_str;
  int k = 0;
  for (AttentionBackend a : sm90_priorities()) {
    ++k;
    const auto reasons = validate_configuration(a, b);
    const bool first_valid = reasons.empty() && !s.backend;
    add("priority " + std::to_string(k) + ": " + to_string(a) + ".validate_configuration", reasons.empty() ? "[] (valid)" : py_list(reasons),
        first_valid ? "first valid backend: selected" : reasons.empty() ? "valid, lower priority" : "not valid");
    if (first_valid) s.backend = a;
    if (!reasons.empty()) {
      std::string joined;
      for (size_t i = 0; i < reasons.size(); ++i) joined += (i ? ", " : "") + reasons[i];
      reasons_str += std::string(reasons_str.empty() ? "" : ", ") + to_string(a) + ": [" + joined + "]";
    }
  }
  if (!s.backend)
    s.error = "No valid attention backend found for cuda with " + selector_config_repr(b) + ". Reasons: {" + reasons_str + "}.";
  return s;
}

void refuse(RouteDecision& d, const std::string& type, const std::string& text) {
  d.route = Route::refused;
  d.error_type = type;
  d.error = text;
}

// every non-padding request has the same query_len (require_uniform's condition)
bool uniform_decode_qlen(const Batch& b) {
  int64_t q = 0;
  for (const auto& r : b.requests) {
    if (r.padding) continue;
    if (q == 0) q = r.query_len;
    else if (r.query_len != q) return false;
  }
  return true;
}

}  // namespace

std::optional<Route> batch_route(const Batch& b) {
  const Selection s = select(b, b.decode.attention_backend, nullptr);
  if (!s.backend) return std::nullopt;
  return route_of(*s.backend);
}

RouteDecision route_cuda(const Batch& b, std::optional<Route> forced_route) {
  RouteDecision d;
  d.aiter_rules = "";
  d.padded_heads = b.model.num_heads;
  std::optional<AttentionBackend> forced = b.decode.attention_backend;
  if (forced_route) {
    forced = backend_of(*forced_route);
    if (!forced) {
      refuse(d, "ValueError", std::string("--kernel ") + to_string(*forced_route) + " is not a route of vLLM's CUDA stack (flash_attn_mla, flashmla, triton_mla, flashmla_sparse)");
      return d;
    }
  }
  const Selection s = select(b, forced, &d.chain);
  if (!s.backend) {
    refuse(d, "ValueError", s.error);
    return d;
  }
  const AttentionBackend be = *s.backend;
  d.backend = to_string(be);
  const auto route = route_of(be);
  if (!route) {  // unreachable: Blackwell-only backends never validate on sm90
    refuse(d, "ValueError", std::string(to_string(be)) + " needs compute capability 10.x");
    return d;
  }
  d.route = *route;
  d.chain.push_back({"route", to_string(*route), std::string("vLLM runs ") + to_string(be) + "'s decode"});
  if (be == AttentionBackend::flashmla_sparse) {
    d.findings.push_back("FLASHMLA_SPARSE is modelled up to routing: schedule and run refuse (not modelled yet)");
    return d;
  }
  d.persistent_schedule = be != AttentionBackend::triton_mla;

  // decode rows: queries up to reorder_batch_threshold tokens take the decode path
  // (split_decodes_and_prefills), docs/stacks/vllm-cuda.md §C3
  int thr = reorder_batch_threshold(be);
  const int64_t maxq = std::max<int64_t>(1, b.max_query_len());
  // triton-causal-per-request (vLLM issue #51848): a group whose reorder threshold the
  // non-causal (DSpark draft) route raised past 1 sends a causal multi-token batch to
  // TRITON_MLA's decode, and forward_mqa expands block_table/seq_lens per token only when
  // non-causal
  if (be == AttentionBackend::triton_mla && maxq > 1 && b.decode.causal && b.has_defect("triton-causal-per-request")) {
    d.chain.push_back({"reorder_batch_threshold raised", std::to_string(thr) + " -> " + std::to_string(maxq),
                       "the non-causal route's flags raise it after the base __init__ asserted SINGLE_ONLY => 1 (vLLM PR #51065)"});
    thr = (int)maxq;
    d.findings.push_back("TRITON_MLA's reorder threshold is raised past 1, so this causal q_len-" + std::to_string(maxq) +
                         " batch reaches forward_mqa unflattened: " + std::to_string(b.total_query_tokens()) + " q rows against " +
                         std::to_string(b.requests.size()) + " rows of block_table/seq_lens, expanded per token only on the non-causal path (vLLM issue #51848)");
  }
  const bool uniform = uniform_decode_qlen(b);
  const QueryLenSupport qls = query_len_support(be);
  d.chain.push_back({"decode rows: max query_len <= reorder_batch_threshold", std::to_string(maxq) + " <= " + std::to_string(thr),
                     std::string("QueryLenSupport.") + to_string(qls) + ", reorder_batch_threshold " + std::to_string(thr)});
  if (maxq > thr) {
    refuse(d, "NotModelled", std::string(to_string(be)) + " decodes queries of up to " + std::to_string(thr) +
                                 " tokens (QueryLenSupport." + to_string(qls) + "): vLLM sends the query_len-" + std::to_string(maxq) +
                                 " requests through the prefill path, which mlactl does not model");
    return d;
  }
  if (qls == QueryLenSupport::uniform) {
    d.chain.push_back({"decode q_len uniform", uniform ? "true" : "false", "require_uniform: a different q_len ends the decode rows"});
    if (!uniform) {
      refuse(d, "NotModelled", std::string(to_string(be)) + " needs one q_len for every decode row (QueryLenSupport.UNIFORM): "
                                   "split_decodes_and_prefills sends the requests from the first different q_len on through the prefill path, "
                                   "which mlactl does not model");
      return d;
    }
  }

  // kernel block size: FlashMLA 64 only; FA3 MLA a multiple of 16; Triton any (§C2)
  const int Kb = b.kv_cache.block_size;
  if (be == AttentionBackend::flashmla || be == AttentionBackend::flash_attn_mla) {
    const bool ok = be == AttentionBackend::flashmla ? Kb == 64 : Kb % 16 == 0;
    const std::string need = be == AttentionBackend::flashmla ? "64" : "a multiple of 16";
    d.chain.push_back({"kernel block size " + need, std::to_string(Kb), "get_supported_kernel_block_sizes"});
    if (!ok) {
      refuse(d, "ConfigMismatch", std::string(to_string(be)) + " runs with kernel block size " + need +
                                      " (get_supported_kernel_block_sizes; vLLM sets the cache block size for it at startup), "
                                      "but kv_cache.block_size is " + std::to_string(Kb));
      return d;
    }
  }

  // fp8: FlashMLA's dense fp8 kernel takes q and KV in e4m3; Triton dequantises an fp8
  // cache in the kernel with bf16 q (§C7)
  const bool kv_fp8 = b.kv_cache.dtype == DType::fp8, q_fp8 = b.decode.q_dtype == DType::fp8;
  if (kv_fp8) {
    d.chain.push_back({"q dtype", to_string(b.decode.q_dtype), be == AttentionBackend::flashmla ? "fwd_kvcache_mla_fp8: q and kcache float8_e4m3fn, descale_q/descale_k" : "TRITON_MLA: model-dtype q, fp8 cache dequantised with k_scale"});
    if (be == AttentionBackend::flashmla && !q_fp8) {
      refuse(d, "NotModelled", "FLASHMLA's fp8 decode takes q in e4m3 too (flash_mla_with_kvcache_fp8 with descale_q): set decode.q_dtype to fp8");
      return d;
    }
    if (be == AttentionBackend::triton_mla && q_fp8) {
      refuse(d, "NotModelled", "TRITON_MLA reads model-dtype q over an fp8 cache (k_scale only): set decode.q_dtype to model");
      return d;
    }
  }
  if (be == AttentionBackend::flashmla && maxq > 1 && b.has_defect("flashmla-qlen-planned-as-one"))
    d.findings.push_back("get_mla_metadata is given num_heads tokens per KV head (q_len 1) while the kernel runs q_len " + std::to_string(maxq) +
                         ": num_sm_parts comes from the wrong token count (vLLM PR #27368)");
  if (be == AttentionBackend::flashmla && b.has_defect("flashmla-stale-schedule"))
    d.findings.push_back("the kernel is handed a stale schedule (tile_scheduler_metadata/num_splits of other seq_lens, vLLM PR #35175)");
  if (be == AttentionBackend::flashmla && kv_fp8 && b.num_padding() > 0 && b.has_defect("flashmla-fp8-zero-pad"))
    d.findings.push_back("FlashMLA fp8 padding slots get seq_len 0 and block id -1 (before vLLM PR #35969): the fp8 kernel starts at "
                         "n_block = ceil(0 / 64) - 1 = -1, reads block_table[r][-1] and copies 64 K rows of that block");
  if (be == AttentionBackend::flashmla && b.num_padding() > 0 && b.has_defect("flashmla-no-work-marker"))
    d.findings.push_back("get_mla_metadata is computed for the requests before the cudagraph padding slots and upstream FlashMLA marks parts "
                         "with no work begin_req = that batch size, not -1 (vllm-project/FlashMLA PR #3): the kernel, run over every slot, does not skip them");
  const PadValues pad = pad_values(*route, b);
  if (b.num_padding() > 0)
    d.chain.push_back({"cudagraph padding", "seq_len " + std::to_string(pad.seq_len) + ", block id " + std::to_string(pad.block_id),
                       "padded before the metadata is built (vLLM PR #28579), so the planner sees the padded rows"});
  if (!b.decode.causal)
    d.findings.push_back("vLLM's CUDA MLA decode is always called with causal=True: this non-causal block is computed causal");
  return d;
}

}  // namespace mlactl::vllm_cuda
