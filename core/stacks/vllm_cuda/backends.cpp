#include "core/stacks/vllm_cuda/backends.hpp"

#include <algorithm>

namespace mlactl::vllm_cuda {

// vllm-project/vllm vllm/platforms/cuda.py@01b1d34 _get_backend_priorities: the non-Blackwell
// MLA list (docs/stacks/vllm-cuda.md §C1.1).
const std::vector<AttentionBackend>& sm90_priorities() {
  static const std::vector<AttentionBackend> p = {AttentionBackend::flash_attn_mla, AttentionBackend::flashmla,
                                                  AttentionBackend::flashinfer_mla, AttentionBackend::triton_mla,
                                                  AttentionBackend::flashmla_sparse};
  return p;
}

std::optional<Route> route_of(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::flash_attn_mla: return Route::flash_attn_mla;
    case AttentionBackend::flashmla: return Route::flashmla;
    case AttentionBackend::triton_mla: return Route::triton_mla;
    case AttentionBackend::flashmla_sparse: return Route::flashmla_sparse;
    case AttentionBackend::flashinfer_mla:
    case AttentionBackend::cutlass_mla: return std::nullopt;
  }
  return std::nullopt;
}

std::optional<AttentionBackend> backend_of(Route r) {
  switch (r) {
    case Route::flash_attn_mla: return AttentionBackend::flash_attn_mla;
    case Route::flashmla: return AttentionBackend::flashmla;
    case Route::triton_mla: return AttentionBackend::triton_mla;
    case Route::flashmla_sparse: return AttentionBackend::flashmla_sparse;
    default: return std::nullopt;
  }
}

namespace {

// supported_kv_cache_dtypes of each backend class (docs/stacks/vllm-cuda.md §C1.2):
// flashattn_mla.py@00b9b7a, flashmla.py@01b1d34, triton_mla.py@0155494.
bool supports_kv_cache_dtype(AttentionBackend a, const std::string& kv) {
  auto in = [&](std::initializer_list<const char*> l) {
    return std::any_of(l.begin(), l.end(), [&](const char* x) { return kv == x; });
  };
  switch (a) {
    case AttentionBackend::flash_attn_mla: return in({"auto", "float16", "bfloat16"});
    case AttentionBackend::flashmla: return in({"auto", "fp8", "fp8_e4m3"});
    case AttentionBackend::triton_mla: return in({"auto", "bfloat16", "fp8", "fp8_e4m3"});
    // not modelled beyond capability and sparsity (docs/stacks/vllm-cuda.md §C1.2)
    case AttentionBackend::flashmla_sparse:
    case AttentionBackend::flashinfer_mla:
    case AttentionBackend::cutlass_mla: return true;
  }
  return true;
}

bool is_sparse(AttentionBackend a) { return a == AttentionBackend::flashmla_sparse; }

// supports_compute_capability on capability 9.0: FA3 MLA major == 9, FlashMLA major in
// [9, 10], Triton any, FlashInfer/CUTLASS MLA major == 10 (Blackwell).
bool supports_sm90(AttentionBackend a) {
  return a != AttentionBackend::flashinfer_mla && a != AttentionBackend::cutlass_mla;
}

}  // namespace

std::vector<std::string> validate_configuration(AttentionBackend a, const Batch& b) {
  // AttentionBackend.validate_configuration's order: head_size, dtype, kv_cache_dtype,
  // block_size (None during selection: skipped), MLA, sink, sparse, capability,
  // supports_combination. head_size 576, MLA, no sink hold for every batch mlactl
  // accepts; model dtype is bf16/fp16, which every MLA backend supports.
  std::vector<std::string> reasons;
  if (!supports_kv_cache_dtype(a, vllm_kv_cache_dtype(b))) reasons.push_back("kv_cache_dtype not supported");
  const bool use_sparse = b.sparse.has_value();
  if (use_sparse != is_sparse(a)) reasons.push_back(use_sparse ? "sparse not supported" : "non-sparse not supported");
  if (!supports_sm90(a)) reasons.push_back("compute capability not supported");
  // supports_combination: flash_attn_supports_mla() and is_flashmla_dense_supported() hold on
  // sm90 with vLLM's wheels (FA3 and the FlashMLA extension are built for sm90a).
  return reasons;
}

std::string py_list(const std::vector<std::string>& items) {
  std::string s = "[";
  for (size_t i = 0; i < items.size(); ++i) s += (i ? ", '" : "'") + items[i] + "'";
  return s + "]";
}

const char* to_string(QueryLenSupport q) {
  switch (q) {
    case QueryLenSupport::single_only: return "SINGLE_ONLY";
    case QueryLenSupport::uniform: return "UNIFORM";
    case QueryLenSupport::varlen: return "VARLEN";
  }
  return "?";
}

QueryLenSupport query_len_support(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::flashmla: return QueryLenSupport::uniform;
    case AttentionBackend::flash_attn_mla: return QueryLenSupport::varlen;
    default: return QueryLenSupport::single_only;
  }
}

int reorder_batch_threshold(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::flashmla: return 128;
    case AttentionBackend::flash_attn_mla: return 512;
    default: return 1;
  }
}

}  // namespace mlactl::vllm_cuda
