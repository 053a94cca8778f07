// Split-KV planners (docs/design.md §4). Each takes plain index arrays, never a Batch, so a
// captured vLLM/AITER call can be replayed exactly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

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
  // Only "is fp8" matters. dtypes_given=false models the omitted dtypes (C++ default bf16).
  bool dtypes_given = true;
  DType dtype_q = DType::bf16;
  DType dtype_kv = DType::bf16;
};

// AITER's per-case decisions that both the planner and the kernel view need.
struct AiterFold {
  bool native = true;
  int ratio = 1;         // head->batch fold
  int heads = 16;        // heads per q row after the fold
  int wg = 128;          // kPackedQoLenPerWg
  bool qo_splits = false;
};
AiterFold aiter_fold(Arch arch, int num_heads, int max_seqlen_qo, bool q_fp8, bool kv_fp8, bool experimental);

// v1.2 fast-mode serial planner, kn_get_mla_metadata_v1_2 (docs/stacks/vllm-rocm-aiter.md §V2–§V3, §V10).
WorkList plan_aiter_v12(const AiterPlanInput& in);
// get_mla_metadata_info_v1 (docs/stacks/vllm-rocm-aiter.md §V1.1).
MetadataInfo mla_metadata_info_v1(Arch arch, int num_cu, int64_t batch_size, int max_seqlen_qo, int num_head_qo,
                                  DType q_dtype, DType kv_dtype, bool is_sparse, bool fast_mode = true,
                                  int num_kv_splits = 32, bool intra_batch_mode = false,
                                  int max_split_per_batch = -1, bool experimental = false);

// Row-per-work planners over flattened rows: row i has KV [row_indptr[i], row_indptr[i+1]).
struct RowPlanInput {
  std::vector<int32_t> row_indptr;  // [rows+1] into the route's kv index list
  int heads = 16;
  int num_cu = 256;
  // Gluon's BLOCK_N, the floor of its split length (docs/stacks/vllm-rocm-aiter.md §V7.3): 64 for bh16bn64
  // (bf16 KV), 128 for bh16bn128 (fp8 KV). Only plan_gluon_split reads it.
  int gluon_block_n = 64;
  int page_size = 1;  // KV unit of row_indptr, recorded in the planned view
};
// Gluon (seed 003): no split, one work per row (head-only parallelism).
WorkList plan_gluon(const RowPlanInput& in);
// Gluon with AITER's later fixed-budget split (docs/stacks/vllm-rocm-aiter.md §V7.3, bh16).
WorkList plan_gluon_split(const RowPlanInput& in, int batch_size, int q_len);
// TRITON_MLA: min(next_pow2(max(1, max_seq_len // 512)), 2·CU) equal chunks, empty chunks dropped.
WorkList plan_triton(const RowPlanInput& in, int64_t max_seq_len);
int triton_num_kv_splits(int64_t max_seq_len, int num_cu);

// AITER non-persistent (get_meta_param, docs/stacks/vllm-rocm-aiter.md §V7.2): per request equal chunks.
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
