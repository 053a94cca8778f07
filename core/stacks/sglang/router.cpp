// SGLang's backend choice and refusals for MLA decode (docs/stacks/sglang.md §S1, §S2),
// read at sgl-project/sglang python/sglang/srt/server_args.py@888a8794 and the backends'
// constructors (layers/attention/*_backend.py@888a8794).
#include "core/stacks/sglang/router.hpp"

#include <string>

#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"

namespace mlactl::sglang {

namespace {

bool is_rocm(Arch a) { return a == Arch::gfx942 || a == Arch::gfx950; }

void refuse(RouteDecision& d, const std::string& type, const std::string& text) {
  d.route = Route::refused;
  d.error_type = type;
  d.error = text;
}

// aiter_backend.py's MLA head check: 4, 8 or a multiple of 16 in [16, 128] (§S2 R7)
bool aiter_heads_supported(int n) { return n == 4 || n == 8 || (n % 16 == 0 && n >= 16 && n <= 128); }

}  // namespace

AiterFlags aiter_flags(const Batch& b) {
  AiterFlags f;
  const int h = b.model.num_heads;
  f.padded_heads = h == 4 || h == 8 ? 16 : h;
  // module globals: _use_mla_ps_kernel (SGLANG_AITER_MLA_PERSIST, default on), fast_mode off,
  // intra_batch_mode = _use_mla_ps_kernel; __init__: 32 or 128 heads -> fast_mode on, intra
  // batch off; then 16 or 128 padded heads with a non-fp8 cache -> the non-persistent kernel
  if (h == 32 || h == 128) {
    f.fast_mode = true;
    f.intra_batch_mode = false;
  }
  if ((f.padded_heads == 16 || f.padded_heads == 128) && b.kv_cache.dtype != DType::fp8) {
    f.persistent = false;
    f.fast_mode = false;
    f.intra_batch_mode = false;
  }
  return f;
}

std::optional<Route> backend_route(Backend backend, const Batch& b) {
  const Section& s = section_of(b);
  switch (backend) {
    case Backend::fa3: return Route::flash_attn_mla;
    case Backend::flashmla:
      // FlashMLA's draft_extend falls back to its parent, FlashInfer MLA (§S5)
      return s.forward_mode == ForwardMode::draft_extend ? Route::flashinfer_mla : Route::flashmla;
    case Backend::flashinfer: return Route::flashinfer_mla;
    case Backend::triton: return s.forward_mode == ForwardMode::decode ? Route::triton_mla : Route::triton_extend;
    case Backend::aiter: return aiter_flags(b).persistent ? Route::asm_persistent : Route::asm_nonpersistent;
    case Backend::cutlass_mla:
    case Backend::trtllm_mla:
    case Backend::tokenspeed_mla: return std::nullopt;
  }
  return std::nullopt;
}

RouteDecision route_sglang(const Batch& b, std::optional<Route> forced) {
  const Section& s = section_of(b);
  RouteDecision d;
  d.padded_heads = b.model.num_heads;
  d.aiter_rules.clear();  // set below for the aiter backend only
  auto add = [&](std::string n, std::string v, std::string w) { d.chain.push_back({std::move(n), std::move(v), std::move(w)}); };
  const std::string arch = to_string(b.platform.arch);

  // 1. the backend (§S1): named, or the default taken blind (no validity list)
  Backend backend = Backend::fa3;
  if (s.attention_backend) {
    backend = *s.attention_backend;
    add("attention_backend", to_string(backend), "named by sglang.attention_backend / --attention-backend");
  } else if (b.platform.arch == Arch::sm90) {
    backend = default_backend(b, s);
    add("is_hopper_with_cuda_12_3", "true", "sm90: SGLang's MLA default is fa3");
  } else {
    backend = default_backend(b, s);
    add("get_num_kv_heads(tp)", std::to_string(s.kv_heads_per_rank), backend == Backend::aiter ? "16 or 128 on ROCm: aiter" : "not 16 or 128 on ROCm: triton");
  }
  d.backend = to_string(backend);
  add("forward_mode", to_string(s.forward_mode), s.num_draft_tokens ? "D = " + std::to_string(*s.num_draft_tokens) + " draft tokens" : "one token per request");
  for (const std::string& r : s.rewrites) add("server_args rewrite", "applied", r);

  // --kernel: the backend whose route it is (the route is then checked as that backend)
  if (forced) {
    std::optional<Backend> by_route;
    for (Backend c : {Backend::fa3, Backend::flashmla, Backend::flashinfer, Backend::triton, Backend::aiter}) {
      const auto r = (c == Backend::aiter && !is_rocm(b.platform.arch)) ? std::nullopt : backend_route(c, b);
      if (r == forced && !by_route) by_route = c;
    }
    if (!by_route) {
      refuse(d, "UsageError", std::string("--kernel ") + to_string(*forced) + ": no SGLang backend runs it for a " + to_string(s.forward_mode) +
                                  " step on " + arch);
      add("--kernel", to_string(*forced), "no backend runs it here");
      return d;
    }
    backend = *by_route;
    d.backend = to_string(backend);
    add("--kernel", to_string(*forced), std::string("forces backend ") + to_string(backend));
  }

  // 2. refusals, in the order upstream raises them (§S2)
  switch (backend) {
    case Backend::trtllm_mla:
      add("is_blackwell_supported", "false", arch + " is not SM100/SM12x");
      refuse(d, "ValueError", "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x). Please use a different backend.");
      return d;
    case Backend::tokenspeed_mla:
      add("is_blackwell_supported", "false", arch + " is not SM100/SM12x");
      refuse(d, "ValueError", "tokenspeed_mla backend is only supported on Blackwell GPUs (SM100/SM12x).");
      return d;
    case Backend::cutlass_mla:
      add("cutlass_mla kernel", "sm100 only", "server_args has no check; sgl-kernel's kernel is built for sm100 (failure text not confirmed, §S16.5)");
      refuse(d, "NotModelled", "cutlass_mla runs sgl-kernel's SM100 CUTLASS MLA kernel; on " + arch +
                                   " SGLang fails when it loads it (the exact error is not confirmed, docs/stacks/sglang.md §S16)");
      return d;
    default: break;
  }
  const bool rocm = is_rocm(b.platform.arch);
  if (rocm && (backend == Backend::fa3 || backend == Backend::flashmla || backend == Backend::flashinfer)) {
    add("platform", arch, std::string(to_string(backend)) + " is a CUDA backend");
    refuse(d, "NotModelled", std::string(to_string(backend)) + " is a CUDA-only SGLang backend; on " + arch +
                                 " SGLang offers aiter and triton for MLA (its error text there is not confirmed, docs/stacks/sglang.md §S16)");
    return d;
  }
  if (!rocm && backend == Backend::aiter) {
    add("platform", arch, "aiter is the ROCm backend");
    refuse(d, "NotModelled", "aiter is SGLang's ROCm backend; it does not run on " + arch);
    return d;
  }
  if (backend == Backend::aiter) {
    const bool ok = aiter_heads_supported(b.model.num_heads);
    add("aiter num_head", std::to_string(b.model.num_heads), ok ? "4, 8 or a multiple of 16 in [16, 128]" : "unsupported");
    if (!ok) {
      refuse(d, "AssertionError", "Aiter MLA supports num_head of 4, 8, or multiples of 16 in [16, 128].\nProvided " +
                                      std::to_string(b.model.num_heads) + " number of heads.\nTry adjusting tensor_parallel_size value.");
      return d;
    }
  }
  if (s.speculative_topk > 1) {
    const bool paged = s.page_size > 1;
    add("speculative_eagle_topk", std::to_string(s.speculative_topk), paged ? "page_size " + std::to_string(s.page_size) + " > 1" : "page_size 1");
    if (paged && backend != Backend::flashinfer && backend != Backend::fa3) {
      refuse(d, "ValueError", "speculative_eagle_topk > 1 with page_size > 1 is unstable and produces incorrect results for paged attention "
                              "backends. This combination is only supported for the 'flashinfer' backend.");
      return d;
    }
    if (backend == Backend::flashinfer) {
      // sglang-flashinfer-tree-mask-dropped (sglang #4425): before the refusal, the verify
      // custom mask was built and dropped, the plan causal: each draft saw a chain
      if (!b.has_defect("sglang-flashinfer-tree-mask-dropped")) {
        refuse(d, "ValueError", "Currently Flashinfer MLA only supports topk=1 for speculative decoding");
        return d;
      }
      d.findings.push_back("FlashInfer MLA runs topk > 1 with its causal flag only: the tree's custom mask is built and dropped (sglang #4425)");
    }
    if (backend == Backend::flashmla) {
      refuse(d, "ValueError", "Currently FlashMLA only supports topk=1 for speculative decoding");
      return d;
    }
    if (backend == Backend::aiter) {
      refuse(d, "NotModelled", "aiter with speculative_eagle_topk > 1: SGLang raises nothing, but mla_decode_fwd is given no tree mask "
                               "(what it then computes is not confirmed, docs/stacks/sglang.md §S16)");
      return d;
    }
  }
  // fp8 KV (§S2 "FP8 KV"): FlashMLA and AITER take it; fa3, flashinfer and triton cast the
  // cache to q's dtype in the forward, which the support matrix marks unsupported
  if (b.kv_cache.dtype == DType::fp8 && backend != Backend::flashmla && backend != Backend::aiter) {
    add("kv_cache_dtype", "fp8", std::string(to_string(backend)) + ": fp8 KV not supported for MLA");
    refuse(d, "NotModelled", std::string("SGLang's ") + to_string(backend) +
                                 " MLA backend does not support an fp8 KV cache (docs/advanced_features/attention_backend.md; the forward casts the cache to q's dtype)");
    return d;
  }

  // 3. the kernel
  const auto route = backend_route(backend, b);
  d.route = *route;
  if (backend == Backend::aiter) {
    d.aiter_rules = to_string(b.platform.aiter);
    const AiterFlags f = aiter_flags(b);
    d.padded_heads = f.padded_heads;
    d.persistent_schedule = f.persistent;
    add("_use_mla_ps_kernel", f.persistent ? "true" : "false",
        f.persistent ? "persistent kernel, get_mla_metadata_v1 plans it" : "16 or 128 padded heads with a 16-bit cache: non-persistent kernel");
    // the kernel mla_decode_fwd launches, for the upstream faults reported inside it
    // (docs/known_faults.md): the same AITER kernels as vLLM's, with SGLang's arguments (§S8)
    const int q_len = (int)std::max<int64_t>(1, b.max_query_len());
    const bool q_fp8 = b.decode.q_dtype == DType::fp8, kv_fp8 = b.kv_cache.dtype == DType::fp8;
    AiterKernelQuery kq;
    kq.arch = b.platform.arch;
    kq.q_dtype = b.decode.q_dtype;
    kq.kv_dtype = b.kv_cache.dtype;
    kq.heads = f.padded_heads;
    if (f.persistent) {
      const MlaPyFold fold = mla_py_head_fold(b.platform.arch, f.padded_heads, q_len, q_fp8, kv_fp8);
      if (fold.ok) kq.heads = fold.gqa;
    }
    kq.q_len = q_len;
    kq.persistent = f.persistent;
    if (const AiterKernelLookup k = lookup_aiter_kernel(kq); k.found) {
      d.aiter_kernel = k.kernel;
      KnownFaultQuery fq;
      fq.arch = b.platform.arch;
      fq.kernel = k.kernel;
      fq.persistent = f.persistent;
      fq.q_len = q_len;
      fq.heads = f.padded_heads;
      fq.page_size = 1;  // aiter_backend.py never passes page_size: the kernel sees token pages (§S8)
      fq.q_dtype = b.decode.q_dtype;
      fq.kv_dtype = b.kv_cache.dtype;
      fq.rules = b.platform.aiter;
      d.known_faults = known_fault_warnings(fq);
    }
  }
  if (backend == Backend::flashmla && s.forward_mode == ForwardMode::draft_extend) {
    add("FlashMLABackend.forward_extend", "FlashInferMLA", "draft_extend falls back to the parent backend (flashmla_backend.py)");
    // sglang-flashmla-draft-extend-graph-state (sglang #28028, open PR): under a CUDA graph the
    // fallback reads the parent's graph state, which FlashMLABackend.init_cuda_graph_state
    // never allocates: cuda_graph_kv_indices is FlashMLA's 2-D block table
    if (s.cuda_graph && b.has_defect("sglang-flashmla-draft-extend-graph-state")) {
      add("init_cuda_graph_state", "FlashMLA's only", "cuda_graph_kv_indices = block table [max_bs, (max_context_len + 64) // 64]; no flat 1-D buffer, no qo/kv indptr buffers");
      refuse(d, "RuntimeError", "CUDA graph capture of draft_extend fails: FlashInfer MLA's graph buffers (a flat cuda_graph_kv_indices, "
                                "qo_indptr, kv_indptr, kv_lens) were never allocated by FlashMLABackend.init_cuda_graph_state "
                                "(sglang #28028; upstream's exact error text not confirmed, docs/stacks/sglang.md §S16)");
      return d;
    }
  }
  add("kernel", to_string(d.route), std::string("SGLang ") + to_string(backend));
  return d;
}

}  // namespace mlactl::sglang
