// The one work-list format every planner produces and every executor consumes
// (docs/design.md §4): AITER's arrays (docs/stacks/vllm-rocm-aiter.md §A1.2) plus a view.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "core/stack_findings.hpp"
#include "core/types.hpp"

namespace mlactl {

// One row of AITER's work_info_set (MlaWorkInfo, 8 x int32).
struct WorkInfo {
  int32_t batch_idx = 0;       // (folded) batch index
  int32_t partial_qo_loc = -1; // -1: final output; >= 0: first fp32 partial row
  int32_t qo_start = 0;        // q-row range [qo_start, qo_end) in the view's q tensor
  int32_t qo_end = 0;
  int32_t kv_start = 0;        // range into the kv index list (KV units)
  int32_t kv_end = 0;
  int32_t kv_offset = 0;       // KV tokens of this batch after kv_end (causal diagonal)
  int32_t pad = 0;
  std::array<int32_t, 8> as_array() const {
    return {batch_idx, partial_qo_loc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad};
  }
  bool operator==(const WorkInfo& o) const { return as_array() == o.as_array(); }
};

enum class QLayout {
  per_request,     // q rows are the batch's tokens, request-major (AITER qo_indptr rows)
  flattened_rows,  // one row per (request, token) with its own KV list (R0 flatten, TRITON_MLA)
  per_token_sparse // one row per query token with its own ragged index list
};
inline const char* to_string(QLayout l) {
  return l == QLayout::per_request ? "per_request" : l == QLayout::flattened_rows ? "flattened_rows" : "per_token_sparse";
}

// How a kernel interprets the work list and the q tensor. The planner records the
// view it planned with; the route supplies the view its kernel runs with.
struct KernelView {
  int heads = 16;            // heads per q row as the kernel sees them (raw, padded or folded)
  int fold_ratio = 1;        // head->batch fold (docs/stacks/vllm-rocm-aiter.md §A5.1): q row (b*ratio+g)*L+t has 16 heads
  QLayout q_layout = QLayout::per_request;
  int q_tokens_per_tile = 1; // T: q tokens per tile
  bool causal = true;
  int head_dim = 576;        // q.k width the kernel reads (and its KV row stride)
  int v_dim = 512;           // output width (first v_dim dims of each KV row)
  int page_size = 1;         // KV unit: 1 = token slots
  DType q_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  bool operator==(const KernelView& o) const {
    return heads == o.heads && fold_ratio == o.fold_ratio && q_layout == o.q_layout &&
           q_tokens_per_tile == o.q_tokens_per_tile && causal == o.causal && head_dim == o.head_dim &&
           v_dim == o.v_dim && page_size == o.page_size && q_dtype == o.q_dtype && kv_dtype == o.kv_dtype;
  }
  bool operator!=(const KernelView& o) const { return !(*this == o); }
};

struct WorkList {
  std::string planner;                   // "aiter_v12", "gluon", "gluon_split", "triton", "nonpersistent", ...
  int num_workgroups = 0;                // work_indptr has num_workgroups + 1 entries
  std::vector<int32_t> work_indptr;
  std::vector<WorkInfo> work_info;
  std::vector<int32_t> reduce_indptr;    // per q tile (emission order) + tail
  std::vector<std::array<int32_t, 2>> reduce_final_map;  // per q tile; {-1,-1} where unwritten
  std::vector<int32_t> reduce_partial_map;
  int64_t num_partial_rows = 0;          // fp32 partial rows the works write (max ploc + T)
  int64_t num_q_rows = 0;                // rows of the view's q tensor
  KernelView planned_view;
  std::vector<std::string> notes;        // planner findings (e.g. AITER would run its parallel planner)
  std::vector<StackFindingId> stack_findings;  // reads outside a causal window the upstream planner itself plans
};

// Buffer sizes of get_mla_metadata_info_v1 (docs/stacks/vllm-rocm-aiter.md §A1.1).
struct MetadataInfo {
  int64_t work_indptr = 0;        // (max_splits + 1)
  int64_t work_info_set = 0;      // rows of 8 int32
  int64_t reduce_indptr = 0;      // tile_cnt + 1
  int64_t reduce_final_map = 0;   // rows of 2 int32
  int64_t reduce_partial_map = 0; // entries
  int64_t tiles_per_batch = 0;
  int64_t max_splits = 0;
};

}  // namespace mlactl
