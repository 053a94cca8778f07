// Decode kernel routing: vLLM R1 (rocm_aiter_mla.py @ baae27c5) as described in
// docs/stacks/vllm-rocm-aiter.md §V1 (b)–(d), §V2 steps 6/10/11 and §V3, plus the
// sparse backend's _use_rocm_sparse_triton (§V1 (c)) and the AITER kernel lookup
// (docs/stacks/vllm-rocm-aiter.md §A5). Every decision is recorded in the chain so that
// `mlactl route` can show why a batch lands where it does.
#include "core/stacks/vllm_rocm_aiter/router.hpp"

#include <algorithm>
#include <cctype>
#include <cstdio>

#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"
#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"
#include "core/vllm_common.hpp"

namespace mlactl {

namespace {

constexpr int kMinAsmHeads = 16;                        // AITER MLA ASM decode head granule (§V1 (d))
constexpr int64_t kGluonKvCacheBoundBytes = 1LL << 31;  // 2 GiB: Gluon drops its KV bounds mask past it
constexpr int kAsmPaddedPersistentMaxQ = 4;             // ASM_PADDED_MAX_PS_QLEN (§V1 (d), §V2 step 10)

// Exact texts of the modelled stack.
// §V1 (b): the fail-closed capability probe (test_rocm_aiter_mla_fp8_support.py expects "causal-only").
constexpr const char* kCausalOnlyProbeError =
    "The installed AITER mla_decode_fwd has no causal= argument; AITER MLA decode is causal-only and "
    "cannot run a non-causal draft block. Upgrade AITER (>= v0.1.20) or pin the draft to TRITON_MLA.";
// §V1 (b) and seed 001: the fp8 2-token refusal in _build_decode.
constexpr const char* kFp8NonCausal2TokenError =
    "AITER has no non-causal fp8 MLA kernel for this 2-token query block. "
    "Pin the draft to TRITON_MLA for this speculative config.";
// Seed 003: Gluon selected on gfx942 trips this assertion in AITER's mla_gluon.
constexpr const char* kGluonRequiresGfx950 = "mla_gluon requires gfx950";
// §V1 (a): R1 forward_mqa asserts the verify block is causal.
constexpr const char* kGluonVerifyCausalOnly = "AITER MLA small-head verify MTP is causal-only";
// §V1 (b), ROCm platform: the invalid reasons that skip ROCM_AITER_MLA.
constexpr const char* kReasonNonCausal = "non-causal not supported";
constexpr const char* kReasonNonCausalFp16 = "non-causal fp16 MLA decode not supported";

std::string bool_str(bool b) { return b ? "true" : "false"; }

std::string lower(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

std::string num(int64_t v) { return std::to_string(v); }

struct Verdict {
  bool value = false;
  std::string why;
};

class Chain {
 public:
  explicit Chain(RouteDecision& d) : d_(d) {}
  void add(const std::string& name, const std::string& value, const std::string& why) {
    d_.chain.push_back(Predicate{name, value, why});
  }
  void add(const std::string& name, const Verdict& v) { add(name, bool_str(v.value), v.why); }
  RouteDecision& refuse(const std::string& error_type, const std::string& error) {
    d_.route = Route::refused;
    d_.error_type = error_type;
    d_.error = error;
    d_.persistent_schedule = false;
    return d_;
  }

 private:
  RouteDecision& d_;
};

std::string small_head_mode(const RouteInput& in) { return lower(in.small_head_mode); }

bool valid_small_head_mode(const std::string& mode) { return mode == "auto" || mode == "gluon" || mode == "asm"; }

bool is_float16_cache(const std::string& kv_cache_dtype) {
  return kv_cache_dtype == "auto" || kv_cache_dtype == "float16" || kv_cache_dtype == "fp16" || kv_cache_dtype.empty();
}


// _gluon_mla_decode_supported() = on_gfx950(); gluon-arch-ungated (seed 003) drops the gate.
bool gluon_build_present(const RouteInput& in) {
  return in.arch == Arch::gfx950 || in.defect_gluon_arch_ungated;
}

// pad-repeat-noop models the pre-#50578 era (seed 003): repeat_interleave(16 // n)
// left non-divisors unpadded and every small head count went to Gluon, without the
// divisor rule and without the gfx950 gate. Divisors of 16 are unaffected.
bool pre_50578_small_head_routing(const RouteInput& in) {
  return in.defect_pad_repeat_noop && in.num_heads > 0 && in.num_heads < kMinAsmHeads &&
         kMinAsmHeads % in.num_heads != 0;
}

// gluon_kv_cache_in_bounds (R1, §V1 (d)).
Verdict gluon_kv_cache_in_bounds(const RouteInput& in) {
  if (!in.kv_cache_bytes) return {true, "KV cache size unknown (before profiling): in bounds"};
  if (*in.kv_cache_bytes <= kGluonKvCacheBoundBytes)
    return {true, "KV cache " + num(*in.kv_cache_bytes) + " bytes per layer <= 2 GiB"};
  char buf[256];
  std::snprintf(buf, sizeof buf,
                "KV cache is %.1f GiB per layer, past the 2 GiB where the Gluon MLA kernel drops its KV bounds "
                "mask; using the padded ASM decode instead.",
                static_cast<double>(*in.kv_cache_bytes) / static_cast<double>(1LL << 30));
  return {false, buf};
}

std::string no_gluon_build_why(const RouteInput& in) {
  std::string why = std::string("no Gluon MLA build on ") + to_string(in.arch) +
                    " (Gluon needs ~160 KiB LDS; gfx942 has 64 KiB)";
  if (small_head_mode(in) == "gluon")
    why += "; warning: VLLM_ROCM_AITER_MLA_ASM_PADDING=gluon requested, but this device has no Gluon MLA decode "
           "build (Gluon requires gfx950); using the padded persistent-scheduling ASM decode instead.";
  return why;
}

// use_gluon_decode, R1 order of checks (§V1 (d)).
Verdict gluon_decode_verdict(const RouteInput& in) {
  const int n = in.num_heads;
  if (n >= kMinAsmHeads) return {false, "heads " + num(n) + " >= 16 take the ASM decode"};
  if (in.max_qo_len != 1) return {false, "max_qo_len " + num(in.max_qo_len) + " != 1: not a one-token decode"};
  if (is_quantized_kv(in.kv_cache_dtype))
    return {false, "fp8 KV cache never takes Gluon (checked before the mode, so \"gluon\" cannot force it)"};
  const std::string mode = small_head_mode(in);
  if (mode == "asm") return {false, "VLLM_ROCM_AITER_MLA_ASM_PADDING=asm"};
  if (pre_50578_small_head_routing(in))
    return {true, "defect pad-repeat-noop: pre-#50578 routing sends every small head count to Gluon "
                  "(no divisor rule, no gfx950 gate)"};
  if (!gluon_build_present(in)) return {false, no_gluon_build_why(in)};
  if (mode != "gluon" && kMinAsmHeads % n != 0)
    return {false, "mode auto keeps Gluon only for divisors of 16; " + num(n) + " heads take the padded ASM decode"};
  Verdict bounds = gluon_kv_cache_in_bounds(in);
  if (!bounds.value) return bounds;
  return {true, std::string(mode == "gluon" ? "mode gluon" : "mode auto, divisor of 16") + ", Gluon build present, " +
                    bounds.why};
}

// use_gluon_verify, R1 (§V1 (a)).
Verdict gluon_verify_verdict(const RouteInput& in) {
  const int n = in.num_heads;
  if (!in.causal) return {false, "non-causal block: Gluon verify is causal-only (#55966)"};
  if (in.max_qo_len <= 1) return {false, "max_qo_len " + num(in.max_qo_len) + " <= 1: not a verify block"};
  if (is_quantized_kv(in.kv_cache_dtype)) return {false, "fp8 KV cache never takes Gluon"};
  if (n >= kMinAsmHeads) return {false, "heads " + num(n) + " >= 16 take the ASM decode"};
  const std::string mode = small_head_mode(in);
  if (pre_50578_small_head_routing(in)) {
    if (mode == "asm") return {false, "VLLM_ROCM_AITER_MLA_ASM_PADDING=asm"};
    return {true, "defect pad-repeat-noop: the pre-#50578 verify branch called mla_gluon without the arch gate"};
  }
  if (!gluon_build_present(in)) return {false, no_gluon_build_why(in)};
  if (mode == "asm") return {false, "VLLM_ROCM_AITER_MLA_ASM_PADDING=asm"};
  Verdict bounds = gluon_kv_cache_in_bounds(in);
  if (!bounds.value) return bounds;
  return {true, "small-head causal verify on Gluon's native MTP entry, " + bounds.why};
}

// §V2 step 10.
Verdict persistent_gate_verdict(const RouteInput& in, bool gluon_decode, bool gluon_verify) {
  const int64_t q = in.max_qo_len;
  const int64_t k = in.mtp_qlen;
  if (gluon_decode) return {false, "Gluon decode builds no persistent schedule"};
  if (gluon_verify) return {false, "Gluon verify builds no persistent schedule"};
  // vllm-project/vllm#57642 (R1+57642): the heads >= 16 arm only where the (gqa 32, qSeqLen 4) fold
  // target ships, gfx950 (vllm#55609: gfx942 has no persistent bf16 kernel for q_len > 4)
  const bool heads_arm = in.num_heads >= kMinAsmHeads && (in.vllm == VllmRules::r1 || in.arch == Arch::gfx950);
  const bool shape_ok = !in.causal || heads_arm || q <= kAsmPaddedPersistentMaxQ || is_quantized_kv(in.kv_cache_dtype);
  if (!shape_ok && in.num_heads >= kMinAsmHeads)
    return {false, "gfx942 bf16 causal block with Q " + num(q) + " > 4: #57642's guard keeps the persistent decode at Q <= 4 "
                       "(no gfx942 persistent bf16 kernel beyond), non-persistent ASM"};
  if (!shape_ok)
    return {false, "padded small-head bf16 causal block with Q " + num(q) +
                       " > 4: non-persistent ASM, output zero-filled first"};
  if (q < 1 || q > k)
    return {false, "Q " + num(q) + " outside [1, K=" + num(k) + "]: the work buffers are sized for K, no schedule"};
  std::string why = "1 <= Q " + num(q) + " <= K " + num(k);
  if (!in.causal) why += "; non-causal keeps the schedule (it carries the mask)";
  else if (in.num_heads >= kMinAsmHeads) why += "; heads >= 16";
  else if (is_quantized_kv(in.kv_cache_dtype)) why += "; fp8 KV";
  else why += "; Q <= 4";
  return {true, why};
}

bool fp8_noncausal_2token_heads_ok(int padded_heads) {
  return padded_heads == 32 || padded_heads == 64 || padded_heads == 96 || padded_heads == 128;
}

std::string dtype_pair(DType q, DType kv) { return std::string(to_string(q)) + "/" + to_string(kv); }

bool is_forced_asm(const std::optional<Route>& r) {
  return r && (*r == Route::asm_persistent || *r == Route::asm_nonpersistent);
}
bool is_gluon(Route r) { return r == Route::gluon_decode || r == Route::gluon_verify; }

// Head regimes of AITER's Gluon kernel (docs/stacks/vllm-rocm-aiter.md §A7.3): bh16 takes
// H <= 96, bh64 takes 64 or 128 bf16 heads. Only a forced route can get past them.
bool gluon_has_regime(int heads, bool kv_fp8) { return heads <= 96 || (heads == 128 && !kv_fp8); }

// The ASM half shared by the dense decode and aiter_sparse: padding, mla.py's
// fold (persistent only), the manifest lookup. Returns false when refused.
bool route_asm_kernel(const RouteInput& in, Route route, int64_t q_len, bool causal, RouteDecision& d, Chain& chain) {
  const HeadPadding pad =
      head_padding(in.num_heads, in.native_h24, PaddingDefects{in.defect_pad_repeat_noop, in.defect_pad_append_only});
  d.padded_heads = pad.padded_heads;
  chain.add("head_padding", num(pad.padded_heads),
            num(in.num_heads) + " heads -> " + num(pad.padded_heads) + " by " + pad.method);
  const bool native_h24 = in.native_h24 && pad.padded_heads == 24;
  if (pad.padded_heads % kMinAsmHeads != 0 && !native_h24) {
    // Only the padding defects get here (seed 003): the ASM decode runs 16·k heads.
    chain.refuse("AssertionError", "AITER mla_decode_fwd: the ASM MLA decode takes a head count that is a multiple "
                                   "of 16, got " + num(pad.padded_heads) + " heads (padded from " +
                                   num(in.num_heads) + " by " + pad.method + ")");
    return false;
  }
  const bool persistent = route == Route::asm_persistent || route == Route::aiter_sparse;
  const bool q_fp8 = in.q_dtype == DType::fp8;
  const bool kv_fp8 = in.kv_dtype == DType::fp8;
  int gqa = pad.padded_heads;
  if (persistent && !native_h24) {
    // §A5.1: mla.py folds heads into batches before the persistent launch; the
    // non-persistent path launches on the padded heads (its manifest rows are
    // keyed by unfolded 32/64/128, §A5.2).
    const MlaPyFold fold = mla_py_head_fold(in.arch, pad.padded_heads, static_cast<int>(q_len), q_fp8, kv_fp8);
    chain.add("mla_py_fold", num(fold.gqa), fold.why);
    if (!fold.ok) {
      chain.refuse("AssertionError", "AITER mla_decode_fwd: " + fold.why);
      return false;
    }
    gqa = fold.gqa;
    if (in.defect_metadata_dtype_omitted) {
      // Seed 004 / docs/stacks/vllm-rocm-aiter.md §A6: get_mla_metadata_v1 without dtypes plans as
      // bf16/bf16, while mla.py and the kernel fold and tile on the real dtypes.
      const int L = static_cast<int>(q_len);
      const AiterFold planned = aiter_fold(in.arch, pad.padded_heads, L, false, false, false);
      const AiterFold with_dtypes = aiter_fold(in.arch, pad.padded_heads, L, q_fp8, kv_fp8, false);
      if (planned.ratio != fold.ratio)
        d.findings.push_back("fold mismatch: the planner (bf16/bf16) plans " + num(planned.heads) +
                             " heads per row (ratio " + num(planned.ratio) + "), the kernel (" +
                             dtype_pair(in.q_dtype, in.kv_dtype) + ") runs " + num(fold.gqa) + " (ratio " +
                             num(fold.ratio) + ")");
      else if (planned.wg != with_dtypes.wg)
        d.findings.push_back("q-tile mismatch: the planner (bf16/bf16) packs " + num(planned.wg) +
                             " q rows per tile, AITER with the real dtypes packs " + num(with_dtypes.wg));
    }
  }
  AiterKernelQuery query;
  query.arch = in.arch;
  query.q_dtype = in.q_dtype;
  query.kv_dtype = in.kv_dtype;
  query.heads = gqa;
  query.q_len = static_cast<int>(q_len);
  query.persistent = persistent;
  query.causal = causal;
  query.lse = false;  // vLLM R1 dense decode calls mla_decode_fwd without return_lse (DCP not modelled)
  const AiterKernelLookup found = lookup_aiter_kernel(query);
  chain.add("aiter_kernel", found.found ? found.kernel : found.error, found.key);
  if (!found.found) {
    // The modelled stack raises at kernel launch (asm_mla.cu get_heuristic_kernel_mla).
    chain.refuse("RuntimeError", found.error);
    return false;
  }
  d.aiter_kernel = found.kernel;
  d.route = route;
  d.persistent_schedule = persistent;
  KnownFaultQuery fq;
  fq.arch = in.arch;
  fq.kernel = found.kernel;
  fq.persistent = persistent;
  fq.q_len = static_cast<int>(q_len);
  fq.heads = pad.padded_heads;  // what vLLM hands mla_decode_fwd
  fq.q_dtype = in.q_dtype;
  fq.kv_dtype = in.kv_dtype;
  fq.rules = in.aiter;
  d.known_faults = known_fault_warnings(fq);
  return true;
}

// Route a forced Gluon decode/verify: the kernel's own limits still hold.
bool gluon_kernel_feasible(const RouteInput& in, Route route, Chain& chain) {
  if (in.arch != Arch::gfx950) {
    chain.refuse("AssertionError", kGluonRequiresGfx950);
    return false;
  }
  if (route == Route::gluon_decode && in.max_qo_len != 1) {
    chain.refuse("ValueError", "gluon_decode is Gluon's one-token (3-D q) entry but max_qo_len is " +
                                   num(in.max_qo_len) + "; a multi-token block needs gluon_verify");
    return false;
  }
  if (route == Route::gluon_verify && !in.causal) {
    chain.refuse("AssertionError", kGluonVerifyCausalOnly);
    return false;
  }
  if (!gluon_has_regime(in.num_heads, in.kv_dtype == DType::fp8)) {
    chain.refuse("RuntimeError", "the Gluon MLA kernel has no regime for " + num(in.num_heads) +
                                     " heads (bh16 takes up to 96 heads, bh64 takes 64 or 128 bf16 heads)");
    return false;
  }
  return true;
}

RouteDecision route_sparse(const RouteInput& in, const std::optional<Route>& forced, RouteDecision& d, Chain& chain) {
  chain.add("backend", "ROCM_AITER_MLA_SPARSE", "sparse MLA: the ROCm priority list is [ROCM_AITER_MLA_SPARSE]");
  const bool triton = use_rocm_sparse_triton(in.kv_cache_dtype, in.head_size, in.kv_lora_rank, in.num_prefills,
                                             in.num_decodes, in.num_decode_tokens, in.max_query_len,
                                             in.defect_sparse_route_legacy);
  std::string why;
  if (in.defect_sparse_route_legacy)
    why = "defect sparse-route-legacy: pre-#55239 predicate (not fp8, head_size == kv_lora_rank, "
          "num_decode_tokens == num_decodes, and prefills or max_query_len == 1)";
  else
    why = "post-#55239: not fp8, head_size == kv_lora_rank (rope-free), and any prefill or decode rows";
  why += "; kv " + in.kv_cache_dtype + ", head_size " + num(in.head_size) + ", kv_lora_rank " +
         num(in.kv_lora_rank) + ", prefills " + num(in.num_prefills) + ", decodes " + num(in.num_decodes) +
         ", decode tokens " + num(in.num_decode_tokens) + ", max_query_len " + num(in.max_query_len);
  chain.add("_use_rocm_sparse_triton", bool_str(triton), why);
  Route route = triton ? Route::sparse_triton : Route::aiter_sparse;
  if (forced) {
    if (*forced != Route::sparse_triton && *forced != Route::aiter_sparse)
      return chain.refuse("ValueError", std::string("--kernel ") + to_string(*forced) +
                                            " is a dense decode route; a sparse batch runs on sparse_triton or "
                                            "aiter_sparse");
    route = *forced;
  }
  if (route == Route::sparse_triton) {
    d.route = Route::sparse_triton;
    d.padded_heads = in.num_heads;  // the ragged Triton kernel takes the heads as they are
    d.persistent_schedule = false;
    return d;
  }
  // aiter_sparse: q padded to 16+ heads, persistent metadata with topk, one token per batch (§V1 (c)).
  if (in.head_size == in.kv_lora_rank)
    d.findings.push_back("rope-free geometry (head_size " + num(in.head_size) +
                         ") on aiter_sparse: AITER reads 576-wide KV rows, the wrong stride (seed 002)");
  if (!route_asm_kernel(in, Route::aiter_sparse, 1, true, d, chain)) return d;

  // The sparse builder calls get_mla_metadata_v1 without dtype_q/dtype_kv (vllm_rocm_mla.md
  // §V1 (c): "the sparse get_mla_metadata_v1 call does not pass dtype_q/dtype_kv"), with
  // max_seqlen_qo 1, so AITER plans bf16/bf16 while mla.py folds with the real dtypes.
  // Where the plan folds more heads into batches than the kernel runs, docs/stacks/vllm-rocm-aiter.md
  // §A6 decides: "gfx942 H=128 (any L), and gfx942 H=64 L=1: the metadata folds (ratio 8 or 4),
  // but mla.py and the kernel run native. Work items then hold folded batch indices and
  // 16-head q rows, which gives garbage output or out-of-bounds access." The works address
  // q and output rows up to (ratio) times past the q tensor: the real stack has no defined
  // result here, so the modelled stack refuses it. (The opposite mismatch, a kernel folding
  // more than the plan, stays inside the tensors and shows up as a wrong run.)
  const bool q_fp8 = in.q_dtype == DType::fp8, kv_fp8 = in.kv_dtype == DType::fp8;
  const AiterFold planned = aiter_fold(in.arch, d.padded_heads, 1, false, false, false);
  const MlaPyFold kernel = mla_py_head_fold(in.arch, d.padded_heads, 1, q_fp8, kv_fp8);
  const bool out_of_bounds = planned.ratio > kernel.ratio;
  chain.add("sparse_metadata_fold", num(planned.heads) + " x " + num(planned.ratio),
            "get_mla_metadata_v1 without dtypes plans bf16/bf16: " + num(planned.heads) + " heads x " +
                num(planned.ratio) + " per token; the " + dtype_pair(in.q_dtype, in.kv_dtype) + " kernel runs " +
                num(kernel.gqa) + " heads x " + num(kernel.ratio) +
                (out_of_bounds ? " (the plan's q rows overrun the kernel's q tensor)"
                               : planned.ratio == kernel.ratio ? " (they agree)" : " (the plan covers too few rows)"));
  if (out_of_bounds) {
    chain.refuse("out-of-bounds",
                 "AITER sparse MLA: vLLM's sparse builder calls get_mla_metadata_v1 without dtype_q/dtype_kv, so "
                 "AITER plans bf16/bf16 and folds " + num(d.padded_heads) + " heads into " + num(planned.heads) +
                 " heads x " + num(planned.ratio) + " batches per token, while mla_decode_fwd runs the " +
                 dtype_pair(in.q_dtype, in.kv_dtype) + " kernel " + d.aiter_kernel + " on " + num(kernel.gqa) +
                 " heads x " + num(kernel.ratio) + ": the work items address " + num(planned.ratio) +
                 " q and output rows per token where the kernel's tensors hold " + num(kernel.ratio) +
                 ", so they read and write out of bounds (the real stack raises nothing: garbage output or a GPU "
                 "memory fault, docs/stacks/vllm-rocm-aiter.md §A6). A bf16 q (decode.q_dtype model) or a bf16 "
                 "KV cache folds alike in both.");
    d.aiter_kernel.clear();
  }
  return d;
}

}  // namespace

bool is_quantized_kv(const std::string& kv_cache_dtype) { return kv_cache_dtype.rfind("fp8", 0) == 0; }

int actual_mla_num_heads(int n, bool native_h24) {
  if (n == 24 && native_h24) return 24;
  return ((n + kMinAsmHeads - 1) / kMinAsmHeads) * kMinAsmHeads;
}

bool use_gluon_decode(const RouteInput& in) { return gluon_decode_verdict(in).value; }
bool use_gluon_verify(const RouteInput& in) { return gluon_verify_verdict(in).value; }

bool persistent_schedule_gate(const RouteInput& in, bool gluon_decode, bool gluon_verify) {
  return persistent_gate_verdict(in, gluon_decode, gluon_verify).value;
}

bool use_rocm_sparse_triton(const std::string& kv_cache_dtype, int head_size, int kv_lora_rank, int64_t num_prefills,
                            int64_t num_decodes, int64_t num_decode_tokens, int64_t max_query_len, bool legacy) {
  const bool fp8 = kv_cache_dtype.rfind("fp8", 0) == 0;
  const bool rope_free = head_size == kv_lora_rank;
  if (legacy) {
    // Before #55239 (seed 002): MTP-shaped batches fell through to AITER.
    const bool plain_decode = num_decode_tokens == num_decodes;
    return !fp8 && rope_free && plain_decode && (num_prefills > 0 || (num_decodes > 0 && max_query_len == 1));
  }
  return !fp8 && rope_free && (num_prefills > 0 || num_decodes > 0);
}

RouteDecision route_decode(const RouteInput& in) {
  RouteDecision d;
  d.aiter_rules = to_string(in.aiter);
  Chain chain(d);

  // --kernel: an id the tool does not know is a usage error the CLI catches;
  // here it is refused so a RouteInput built by hand gets an answer too.
  std::optional<Route> forced;
  if (in.forced_route) {
    forced = route_from_string(*in.forced_route);
    if (!forced || *forced == Route::refused)
      return chain.refuse("ValueError", "--kernel '" + *in.forced_route +
                                            "' is not a route; expected gluon_decode, gluon_verify, asm_persistent, "
                                            "asm_nonpersistent, triton_mla, sparse_triton or aiter_sparse");
    RouteInput unforced = in;
    unforced.forced_route.reset();
    const RouteDecision natural = route_decode(unforced);
    std::string natural_answer = to_string(natural.route);
    if (natural.route == Route::refused) natural_answer += " (" + natural.error_type + ": " + natural.error + ")";
    chain.add("forced_route", to_string(*forced),
              "--kernel overrides the decision table; vLLM would answer " + natural_answer);
  }

  // VLLM_ROCM_AITER_MLA_ASM_PADDING is env_with_choices(..., case_sensitive=False) (§V1 (d)).
  if (!valid_small_head_mode(small_head_mode(in)))
    return chain.refuse("ValueError", "Invalid value '" + in.small_head_mode +
                                          "' for VLLM_ROCM_AITER_MLA_ASM_PADDING. Valid options: ['auto', 'gluon', "
                                          "'asm'].");

  // check_num_heads_validity (§V1 (d)).
  if (!vllm::num_heads_valid(in.num_heads)) {
    chain.add("is_valid_num_heads", "false", "n > 0 and (n <= 128 or n % 16 == 0) fails for " + num(in.num_heads));
    return chain.refuse("AssertionError", vllm::num_heads_error(in.num_heads));
  }

  if (in.sparse) return route_sparse(in, forced, d, chain);
  if (forced && (*forced == Route::sparse_triton || *forced == Route::aiter_sparse))
    return chain.refuse("ValueError", std::string("--kernel ") + to_string(*forced) +
                                          " needs a sparse batch (a `sparse` block with topk)");

  if (forced && *forced == Route::triton_mla) {
    chain.add("backend", "TRITON_MLA", "forced by --kernel");
    d.route = Route::triton_mla;
    d.padded_heads = in.num_heads;
    return d;
  }

  // ---- Backend selection: ROCm tries [ROCM_AITER_MLA, TRITON_MLA] (§V1 (b)) ----
  std::vector<std::string> invalid_reasons;
  if (!in.causal) {
    // supports_non_causal() = probe() and _aiter_mla_non_causal_asm_kernels(); the probe runs first
    // and fails closed (test_rocm_aiter_mla_fp8_support.py, seed 001).
    if (!in.aiter_has_causal_arg) {
      if (in.defect_noncausal_probe_silent && !forced) {
        chain.add("mla_decode_supports_non_causal", "false",
                  "defect noncausal-probe-silent: the probe returns False for an AITER without causal= "
                  "instead of raising");
        invalid_reasons.push_back(kReasonNonCausal);
      } else {
        chain.add("mla_decode_supports_non_causal", "raises",
                  "the installed AITER's mla_decode_fwd has no causal= parameter (added in AITER v0.1.20)");
        return chain.refuse("RuntimeError", kCausalOnlyProbeError);
      }
    } else {
      chain.add("mla_decode_supports_non_causal", "true", "mla_decode_fwd takes causal=");
      const bool arch_kernels = in.arch == Arch::gfx950;
      chain.add("_aiter_mla_non_causal_asm_kernels", bool_str(arch_kernels),
                arch_kernels ? "gfx950 ships causal=0 (msk0) ASM kernels"
                             : std::string(to_string(in.arch)) +
                                   " has no decode msk0 kernels (a multi-token key would hit \"cannot get heuristic "
                                   "kernel!\")");
      if (!arch_kernels) invalid_reasons.push_back(kReasonNonCausal);
    }
    // validate_configuration (R1): non-causal fp16 with an auto/float16 cache aborts in AITER
    // with "unsupport Q dtype:fp16" (seed 001), so the backend says no.
    if (in.model_dtype == DType::fp16 && is_float16_cache(in.kv_cache_dtype)) {
      chain.add("validate_configuration", "invalid", std::string(kReasonNonCausalFp16) + " (model fp16, kv " +
                                                         in.kv_cache_dtype + ")");
      invalid_reasons.push_back(kReasonNonCausalFp16);
    }
  }
  if (!invalid_reasons.empty() && !forced) {
    std::string reasons;
    for (const auto& r : invalid_reasons) reasons += (reasons.empty() ? "" : ", ") + r;
    chain.add("backend", "TRITON_MLA", "ROCM_AITER_MLA skipped (" + reasons +
                                           "); the priority list falls through to TRITON_MLA, which supports "
                                           "non-causal blocks");
    if (in.defect_noncausal_probe_silent && !in.aiter_has_causal_arg) d.findings.push_back("silent fallback");
    d.route = Route::triton_mla;
    d.padded_heads = in.num_heads;
    return d;
  }
  if (!invalid_reasons.empty())
    chain.add("backend", "ROCM_AITER_MLA", "forced by --kernel although vLLM would skip it");
  else
    chain.add("backend", "ROCM_AITER_MLA", in.causal ? "causal decode" : "non-causal draft block supported here");

  // ---- _build_decode (§V2 steps 6, 10, 11) ----
  const Verdict gluon_decode = gluon_decode_verdict(in);
  chain.add("use_gluon_decode", gluon_decode);
  const Verdict gluon_verify = gluon_verify_verdict(in);
  chain.add("use_gluon_verify", gluon_verify);
  const Verdict persistent = persistent_gate_verdict(in, gluon_decode.value, gluon_verify.value);
  chain.add("use_persistent_schedule", persistent);

  if (!in.causal && in.max_qo_len == 2 && is_quantized_kv(in.kv_cache_dtype)) {
    const int padded = actual_mla_num_heads(in.num_heads, in.native_h24);
    const bool ok = fp8_noncausal_2token_heads_ok(padded);
    chain.add("has_fp8_non_causal_qlen2_kernel", bool_str(ok),
              "padded heads " + num(padded) + (ok ? " in" : " not in") + " {32, 64, 96, 128}");
    if (!ok) return chain.refuse("ValueError", kFp8NonCausal2TokenError);
  }

  if (in.defect_metadata_dtype_omitted && persistent.value)
    chain.add("get_mla_metadata_v1 dtypes", "omitted",
              "defect metadata-dtype-omitted (seed 004): dtype_q/dtype_kv not passed, so the planner plans with "
              "bf16/bf16 while the kernel runs " + dtype_pair(in.q_dtype, in.kv_dtype));

  // ---- forward_mqa: Gluon decode, Gluon verify, then ASM (§V3) ----
  Route route;
  if (forced) route = *forced;
  else if (gluon_decode.value) route = Route::gluon_decode;
  else if (gluon_verify.value) route = Route::gluon_verify;
  else route = persistent.value ? Route::asm_persistent : Route::asm_nonpersistent;

  if (is_gluon(route)) {
    if (!gluon_kernel_feasible(in, route, chain)) return d;
    if (forced) {
      if (is_quantized_kv(in.kv_cache_dtype))
        d.findings.push_back("vLLM never routes an fp8 KV cache to Gluon; AITER's Gluon fp8 regime (bh16bn128) runs it");
      if (!gluon_kv_cache_in_bounds(in).value)
        d.findings.push_back("Gluon past a 2 GiB per-layer KV cache drops its KV bounds mask");
    }
    d.route = route;
    d.padded_heads = in.num_heads;  // Gluon takes the raw heads
    d.persistent_schedule = false;
    return d;
  }

  // ASM decode.
  if (is_forced_asm(forced)) {
    if (!in.causal && !in.aiter_has_causal_arg) return chain.refuse("RuntimeError", kCausalOnlyProbeError);
    if (route == Route::asm_persistent && (in.max_qo_len < 1 || in.max_qo_len > in.mtp_qlen))
      return chain.refuse("ValueError", "a persistent schedule needs 1 <= max_qo_len <= mtp_qlen: "
                                        "get_mla_metadata_info_v1 sized the work buffers for K = " +
                                            num(in.mtp_qlen) + ", and max_qo_len is " + num(in.max_qo_len));
    chain.add("forced_schedule", bool_str(route == Route::asm_persistent),
              std::string("--kernel ") + to_string(route) + " decides the schedule (the gate above says what vLLM "
                                                            "would build)");
  }
  route_asm_kernel(in, route, in.max_qo_len, in.causal, d, chain);
  return d;
}

}  // namespace mlactl
