// The Eigen reference (docs/design.md §1, §3): every row's output computed from the batch
// semantics alone (oracle_windows) and the decoded inputs; it never reads metadata.
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch.hpp"
#include "core/inputs.hpp"
#include "core/semantics.hpp"

namespace mlactl {

struct ReferenceOutput {
  int64_t num_rows = 0;
  int num_heads = 0;
  int v_dim = 512;
  std::vector<float> out;         // [num_rows, num_heads, v_dim]; NaN where not computed
  std::vector<float> lse;         // [num_rows, num_heads], natural log; NaN where not computed
  std::vector<uint8_t> computed;  // per row: 1 when the reference has a value
  int64_t padding_rows = 0;       // not computed: discarded by the stack (docs/design.md §3)
  int64_t empty_rows = 0;         // non-padding rows with an empty window (e.g. an
                                  // explicit sparse list of only -1): undefined, not computed
};

// softmax(scale · q·Kᵀ)·V per non-padding row and head, K the full head_dim row,
// V its first v_dim dims, on the decoded q/KV (what the kernel sees). fp32 matrix
// products (one GEMM per request chunk over all heads × window), softmax max/sum
// and the log in double. Parallel over requests (threads <= 0: all cores).
ReferenceOutput compute_reference(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in,
                                  int threads = 0);

// What one of compute_reference's threads holds at most (its key, score and probability
// buffers grow to the largest request: heads × window floats twice over), so the budget
// covers it before it exists and caps the threads (core/pipeline.cpp; issue 39).
int64_t reference_workspace_bytes(const Batch& b, const std::vector<RowWindow>& rows);

}  // namespace mlactl
