// Row-per-work planners over flattened rows, shared by every stack that has them, and
// vLLM's TRITON_MLA split rule (docs/stacks/vllm-rocm-aiter.md §V4), which is the same on
// every platform vLLM serves. Plain index arrays in, a work list out.
#pragma once
#include <cstdint>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl {

// Row-per-work planners over flattened rows: row i has KV [row_indptr[i], row_indptr[i+1]).
struct RowPlanInput {
  std::vector<int32_t> row_indptr;  // [rows+1] into the route's kv index list
  int heads = 16;
  int num_cu = 256;
  // Gluon's BLOCK_N, the floor of its split length (docs/stacks/vllm-rocm-aiter.md §A7.3): 64 for bh16bn64
  // (bf16 KV), 128 for bh16bn128 (fp8 KV). Only plan_gluon_split reads it.
  int gluon_block_n = 64;
  int page_size = 1;  // KV unit of row_indptr, recorded in the planned view
};

// TRITON_MLA: min(next_pow2(max(1, max_seq_len // 512)), 2·CU) equal chunks, empty chunks dropped.
WorkList plan_triton(const RowPlanInput& in, int64_t max_seq_len);
// The same chunking with a given split count: vLLM's CUDA TRITON_MLA passes a fixed
// num_kv_splits = 4 (docs/stacks/vllm-cuda.md §C5).
WorkList plan_triton_splits(const RowPlanInput& in, int64_t num_kv_splits);
int triton_num_kv_splits(int64_t max_seq_len, int num_cu);

}  // namespace mlactl
