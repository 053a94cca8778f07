// vLLM ROCm AITER decode routing (docs/design.md §4 "Router"; docs/stacks/vllm-rocm-aiter.md §V1, §V3).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/route.hpp"
#include "core/types.hpp"

namespace mlactl {


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
  AiterRules aiter = AiterRules::r2026_08;  // platform.aiter
  VllmRules vllm = VllmRules::r1;           // platform.vllm
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


RouteDecision route_decode(const RouteInput& in);

// Pieces of the table exposed for tests and for the builder.
bool is_quantized_kv(const std::string& kv_cache_dtype);
int actual_mla_num_heads(int n, bool native_h24);
bool use_gluon_decode(const RouteInput& in);
bool use_gluon_verify(const RouteInput& in);
bool persistent_schedule_gate(const RouteInput& in, bool gluon_decode, bool gluon_verify);
bool use_rocm_sparse_triton(const std::string& kv_cache_dtype, int head_size, int kv_lora_rank, int64_t num_prefills,
                            int64_t num_decodes, int64_t num_decode_tokens, int64_t max_query_len, bool legacy);


}  // namespace mlactl
