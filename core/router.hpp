// Decode kernel routing (docs/design.md §4 "Router"; docs/stacks/vllm-rocm-aiter.md §V1, §V3, §V5).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/types.hpp"

namespace mlactl {

enum class Route {
  gluon_decode,
  gluon_verify,
  asm_persistent,
  asm_nonpersistent,
  triton_mla,
  sparse_triton,
  aiter_sparse,
  refused,
};
const char* to_string(Route r);
std::optional<Route> route_from_string(const std::string& s);

// Everything the routing decision reads. Filled from a Batch by the pipeline
// (route_input_from_batch in core/route_input.hpp) or by tests directly.
struct RouteInput {
  Arch arch = Arch::gfx950;
  int num_heads = 16;             // H = num_heads * dcp (dcp is 1 here)
  int64_t max_qo_len = 1;         // Q after uniform-MTP padding
  int64_t mtp_qlen = 1;           // K, the reorder threshold
  std::string kv_cache_dtype = "auto";  // vLLM cache_dtype string: auto|bfloat16|float16|fp8|fp8_e4m3|fp8_e5m2
  DType model_dtype = DType::bf16;
  DType q_dtype = DType::bf16;    // what the decode q is (fp8 when quantized)
  DType kv_dtype = DType::bf16;   // resolved KV dtype
  std::string small_head_mode = "auto";  // auto|gluon|asm
  bool causal = true;
  std::optional<int64_t> kv_cache_bytes;  // per layer; nullopt = before profiling
  bool aiter_has_causal_arg = true;
  bool native_h24 = false;
  int num_cu = 256;
  // sparse
  bool sparse = false;
  int head_size = 576;
  int kv_lora_rank = 512;
  int64_t num_prefills = 0;
  int64_t num_decodes = 0;
  int64_t num_decode_tokens = 0;
  int64_t max_query_len = 1;
  int64_t topk = 0;
  // defect switches (docs/design.md §7) that act on routing or padding
  bool defect_noncausal_probe_silent = false;
  bool defect_sparse_route_legacy = false;
  bool defect_pad_repeat_noop = false;
  bool defect_pad_append_only = false;
  bool defect_gluon_arch_ungated = false;
  bool defect_metadata_dtype_omitted = false;
  std::optional<std::string> forced_route;  // --kernel
};

struct Predicate {
  std::string name;   // e.g. "use_gluon_decode"
  std::string value;  // "true", "false", a number, a string
  std::string why;    // short reason
};

struct RouteDecision {
  Route route = Route::refused;
  bool persistent_schedule = false;
  int padded_heads = 0;           // heads the kernel sees (after padding), 0 when refused early
  std::string aiter_rules = "2026.08";
  std::string aiter_kernel;       // AITER .co kernel name the shape would run on, or ""
  std::string error;              // exact error text when refused (and for kernel lookup failures)
  std::string error_type;         // "ValueError", "RuntimeError", "AssertionError", ...
  std::vector<Predicate> chain;   // predicates with values, in evaluation order
  std::vector<std::string> findings;  // e.g. "silent fallback"
};

RouteDecision route_decode(const RouteInput& in);

// Pieces of the table exposed for tests and for the builder.
bool is_quantized_kv(const std::string& kv_cache_dtype);
int actual_mla_num_heads(int n, bool native_h24);
bool use_gluon_decode(const RouteInput& in);
bool use_gluon_verify(const RouteInput& in);
bool persistent_schedule_gate(const RouteInput& in, bool gluon_decode, bool gluon_verify);
bool use_rocm_sparse_triton(const std::string& kv_cache_dtype, int head_size, int kv_lora_rank, int64_t num_prefills,
                            int64_t num_decodes, int64_t num_decode_tokens, int64_t max_query_len, bool legacy);

// AITER kernel lookup (docs/stacks/vllm-rocm-aiter.md §A5.2) as data.
struct AiterKernelQuery {
  Arch arch = Arch::gfx950;
  DType q_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  int heads = 16;       // gqa after the §A5.1 fold
  int q_len = 1;
  bool persistent = true;
  bool causal = true;
  bool lse = false;
};
struct AiterKernelLookup {
  bool found = false;
  std::string kernel;   // .co name
  std::string error;    // "cannot get heuristic kernel!" when not found
  std::string key;      // the manifest key searched (or why none was built), for the chain
};
AiterKernelLookup lookup_aiter_kernel(const AiterKernelQuery& q);

}  // namespace mlactl
