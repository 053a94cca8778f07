#include "core/stack_findings.hpp"

namespace mlactl {

const std::vector<StackFindingInfo>& stack_finding_table() {
  static const std::vector<StackFindingInfo> t = {
      {StackFindingId::aiter_tile_trim, "aiter-tile-trim",
       "AITER's causal trim counts q tiles, not tokens (batch_tail = num_qo_tiles - 1 - tile): under the kernel's diagonal "
       "rule the rows of a non-last tile of several tokens read up to T-1 KV entries past their causal window",
       "ROCm/aiter/csrc/kernels/mla/metadata/v1_2_device.cuh@e4048607 L469-470, L481-484 (split works: L621-623, L634-637)",
       "docs/findings.md M1"},
      {StackFindingId::aiter_fold_trim, "aiter-fold-trim",
       "under a head fold AITER recomputes the trim as num_qo_tiles - (qo_start / ratio) % ori_seqlen_qo - 1, non-zero for "
       "some tiles with q tiling: their rows lose KV entries they should see",
       "ROCm/aiter/csrc/kernels/mla/metadata/v1_2_device.cuh@e4048607 L473-479 (split works: L626-631)", "docs/findings.md M2"},
      {StackFindingId::aiter_negative_kv_range, "aiter-negative-kv-range",
       "the causal trim of a q tile exceeds the request's KV length: AITER emits kv_end < kv_start and the kernel reads nothing",
       "ROCm/aiter/csrc/kernels/mla/metadata/v1_2_device.cuh@e4048607 L481-491", "docs/findings.md M3"},
      {StackFindingId::vllm_sparse_dtypes_omitted, "vllm-sparse-dtypes-omitted",
       "vLLM's sparse builder calls get_mla_metadata_v1 without dtype_q/dtype_kv: AITER plans bf16/bf16 while the kernel "
       "folds on the real (fp8) dtypes, so planner and kernel disagree on the head fold",
       "vllm-project/vllm/vllm/v1/attention/backends/mla/rocm_aiter_mla_sparse.py@0f1d78db (the get_mla_metadata_v1 call; "
       "lines not pinned), docs/stacks/vllm-rocm-aiter.md §V1 (e), §A6",
       "docs/findings.md M4"},
      {StackFindingId::sglang_aiter_noncausal_plan, "sglang-aiter-noncausal-plan",
       "SGLang plans get_mla_metadata_v1 with is_causal False in q tiles shorter than the block while the kernel masks "
       "causally from each work's kv_offset: rows of a non-last tile read the KV of the request's later tokens",
       "sgl-project/sglang/python/sglang/srt/layers/attention/aiter_backend.py@888a8794 (is_causal False; lines not pinned), "
       "docs/stacks/sglang.md §S8, §S16",
       "docs/findings.md M5"},
  };
  return t;
}

const StackFindingInfo& stack_finding_info(StackFindingId id) {
  for (const auto& f : stack_finding_table())
    if (f.id == id) return f;
  return stack_finding_table().front();  // unreachable: every id has a row
}

std::optional<StackFindingId> stack_finding_from_name(const std::string& name) {
  for (const auto& f : stack_finding_table())
    if (name == f.name) return f.id;
  return std::nullopt;
}

std::string stack_finding_text(StackFindingId id) {
  const StackFindingInfo& f = stack_finding_info(id);
  return std::string("finding in the modelled stack: ") + f.name + ": " + f.rule + " (" + f.upstream + ")";
}

}  // namespace mlactl
