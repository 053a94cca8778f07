// The oracle (docs/design.md §3): what each query row may attend to, from the batch alone.
// The reference and every check use this; it never reads metadata.
#pragma once
#include <cstdint>
#include <vector>

#include "core/batch.hpp"

namespace mlactl {

enum class MaskKind { causal, non_causal, padding, sparse };
inline const char* to_string(MaskKind k) {
  switch (k) {
    case MaskKind::causal: return "causal";
    case MaskKind::non_causal: return "non_causal";
    case MaskKind::padding: return "padding";
    case MaskKind::sparse: return "sparse";
  }
  return "?";
}

struct RowWindow {
  int64_t row = 0;       // global query row (request-major, token-minor), padding rows included
  int request = 0;
  int64_t token = 0;     // t within the request's query block
  int64_t position = 0;  // c + t
  int64_t begin = 0;     // KV positions [begin, end) of the request
  int64_t end = 0;
  MaskKind kind = MaskKind::causal;
  int64_t length() const { return end - begin; }
  // sparse: the positions this token sees (sorted ascending, distinct); else empty
  std::vector<int64_t> sparse_positions;
};

// Rows of a padding request: vLLM's uniform-MTP padding gives it K rows when it
// applies (R1 seq_k = K; R0 flatten: K rows of length 0), else none.
int64_t padded_rows_per_padding_request(const Batch& b);

std::vector<RowWindow> oracle_windows(const Batch& b);

// KV entries that row t of a q block of `q_rows` tokens gets from a request of
// seq_len `s` under the causal diagonal: a prefix of length max(0, s - (q_rows-1) + t).
// The R0 flatten, TRITON_MLA's flatten and the kernels' in-kernel bound all use it
// (docs/stacks/vllm-rocm-aiter.md §V1 (a), §V4).
inline int64_t causal_prefix_length(int64_t s, int64_t q_rows, int64_t t) {
  const int64_t n = s - (q_rows - 1) + t;
  return n > 0 ? n : 0;
}

// Sparse index sets per query token (explicit or drawn from data.seed), in the
// token order of oracle_windows' non-padding rows.
std::vector<std::vector<int64_t>> sparse_index_sets(const Batch& b);

}  // namespace mlactl
