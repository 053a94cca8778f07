// The q/output layouts a kernel view implies (docs/design.md §4 "kernel view"): head padding,
// AITER's head→batch fold (docs/stacks/vllm-rocm-aiter.md §A5.1) and flattened
// rows; and the inverse for the output and LSE, back to the user layout
// [rows, num_heads, v_dim] that compare works on.
#pragma once
#include <cstdint>
#include <vector>

#include "core/heads.hpp"
#include "core/inputs.hpp"
#include "core/worklist.hpp"

namespace mlactl {

// Where each user (row, padded head) lives in the kernel's q/out tensors.
struct ViewLayout {
  int64_t user_rows = 0;
  int user_heads = 0;       // raw heads n
  int padded_heads = 0;     // m = heads.padded_heads
  int64_t view_rows = 0;    // rows of the kernel's q tensor
  int view_heads = 0;       // heads per kernel q row (view.heads)
  int fold_ratio = 1;       // k
  int64_t fold_qlen = 1;    // L (uniform q tokens per request) when folded
  HeadPadding heads;
  // kernel (row, head) of user row `row`, padded head `p`
  int64_t view_row(int64_t row, int p) const {
    if (fold_ratio == 1) return row;
    const int64_t b = row / fold_qlen, t = row % fold_qlen;
    return (b * fold_ratio + p / view_heads) * fold_qlen + t;
  }
  int view_head(int p) const { return fold_ratio == 1 ? p : p % view_heads; }
};

// Checks the view against the padding map: view.heads * view.fold_ratio must be
// heads.padded_heads; a fold needs user_rows to be a multiple of `uniform_qlen`
// (AITER requires uni_seqlen_qo > 0, docs/stacks/vllm-rocm-aiter.md §A5.1). Throws std::invalid_argument.
ViewLayout make_view_layout(int64_t user_rows, const KernelView& view, const HeadPadding& heads, int64_t uniform_qlen);

// The kernel's q tensor [view_rows, view_heads, view.head_dim] in the q dtype:
// (a) per_request / (c) flattened rows: row r, padded head i = raw head source[i];
// (b) fold k over L: row (b*k+g)*L+t holds padded heads [16g, 16g+16) of request b
// token t. When view.head_dim differs from the inputs' head_dim, the rows are
// packed at the inputs' width (what the stack hands over) and the buffer is
// sized for the kernel's stride, tail NaN: the kernel then reads mis-strided
// data, as the real one does (seed 002).
EncodedTensor build_kernel_q(const Inputs& in, const ViewLayout& layout, const KernelView& view);

// Inverse for outputs: view out [view_rows, view_heads, v_dim] (out-dtype bits)
// → user out [user_rows, user_heads, v_dim] floats via HeadPadding::unpad.
// NaN poison in unwritten view rows stays NaN.
std::vector<float> unlayout_out(const ViewLayout& layout, DType out_dtype, const uint16_t* view_out, int v_dim);
// Same for LSE [view_rows, view_heads] → [user_rows, user_heads].
std::vector<float> unlayout_lse(const ViewLayout& layout, const float* view_lse);

}  // namespace mlactl
