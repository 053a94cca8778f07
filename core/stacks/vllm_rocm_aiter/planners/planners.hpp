// The AITER stack's split-KV planners (docs/design.md §4): AITER's own (get_mla_metadata_v1
// v1.2, get_meta_param) and Gluon's. Each takes plain index arrays, never a Batch, so a
// captured vLLM/AITER call can be replayed exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/planners/row_plan.hpp"
#include "core/types.hpp"
#include "core/worklist.hpp"

namespace mlactl {

// Arguments of AITER get_mla_metadata_v1 (docs/stacks/vllm-rocm-aiter.md §A1.2).
struct AiterPlanInput {
  Arch arch = Arch::gfx950;
  int num_cu = 256;
  std::vector<int32_t> qo_indptr;        // [B+1]
  std::vector<int32_t> kv_indptr;        // [B+1], tokens when page_size == 1, else pages
  std::vector<int32_t> kv_last_page_len; // [B]
  int num_heads = 16;                    // num_heads_per_head_k (padded heads)
  int num_heads_k = 1;
  bool causal = true;
  int page_size = 1;
  int kv_granularity = 16;
  int max_seqlen_qo = -1;
  int uni_seqlen_qo = -1;
  bool fast_mode = true;
  int topk = -1;                         // >= 0: sparse
  int max_split_per_batch = -1;
  bool intra_batch_mode = false;
  bool is_cp_round_robin = false;
  bool experimental = false;             // AITER_ENABLE_EXPERIMENTAL
  AiterRules rules = AiterRules::r2026_08;  // platform.aiter: r2026_08_pr4899 adapts the split count
  // Only "is fp8" matters. dtypes_given=false models the omitted dtypes (C++ default bf16).
  bool dtypes_given = true;
  DType dtype_q = DType::bf16;
  DType dtype_kv = DType::bf16;
};

// ROCm/aiter#4899's split count (rule set 2026.08+4899), exposed for the hand-worked tests:
// the float sum of the per-batch terms in AITER's wave64 order, and eff from it.
float aiter_sum_sqrt_blocks_wave64(const std::vector<float>& unit_terms);
int64_t aiter_effective_splits(float sum_sqrt_blocks, int64_t num_splits);

// v1.2 fast-mode serial planner, kn_get_mla_metadata_v1_2 (docs/stacks/vllm-rocm-aiter.md §A2–§A3, §A10).
WorkList plan_aiter_v12(const AiterPlanInput& in);
// get_mla_metadata_info_v1 (docs/stacks/vllm-rocm-aiter.md §A1.1).
MetadataInfo mla_metadata_info_v1(Arch arch, int num_cu, int64_t batch_size, int max_seqlen_qo, int num_head_qo,
                                  DType q_dtype, DType kv_dtype, bool is_sparse, bool fast_mode = true,
                                  int num_kv_splits = 32, bool intra_batch_mode = false,
                                  int max_split_per_batch = -1, bool experimental = false);

// Gluon (seed 003): no split, one work per row (head-only parallelism).
WorkList plan_gluon(const RowPlanInput& in);
// Gluon with AITER's later fixed-budget split (docs/stacks/vllm-rocm-aiter.md §A7.3, bh16).
WorkList plan_gluon_split(const RowPlanInput& in, int batch_size, int q_len);

// AITER non-persistent (get_meta_param, docs/stacks/vllm-rocm-aiter.md §A7.2): per request equal chunks.
struct NonPersistentInput {
  std::vector<int32_t> qo_indptr;
  std::vector<int32_t> kv_indptr;
  int heads = 16;
  int q_len = 1;
  bool causal = true;
  bool kv_fp8 = false;
  int num_cu = 256;
};
int get_meta_param_splits(int64_t batch_size, double avg_kv, int heads, int q_len, bool kv_fp8, int num_cu);
WorkList plan_nonpersistent(const NonPersistentInput& in);

}  // namespace mlactl
