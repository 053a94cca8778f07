#include "core/layout.hpp"

#include <algorithm>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>

#include "core/dtype.hpp"

namespace mlactl {

ViewLayout make_view_layout(int64_t user_rows, const KernelView& view, const HeadPadding& heads, int64_t uniform_qlen) {
  ViewLayout l;
  l.user_rows = user_rows;
  l.user_heads = heads.num_heads;
  l.padded_heads = heads.padded_heads;
  l.view_heads = view.heads;
  l.fold_ratio = std::max(1, view.fold_ratio);
  l.heads = heads;
  if ((int64_t)view.heads * l.fold_ratio != heads.padded_heads)
    throw std::invalid_argument("kernel view has " + std::to_string(view.heads) + " heads x fold " +
                                std::to_string(l.fold_ratio) + " but the padding map gives " +
                                std::to_string(heads.padded_heads) + " padded heads");
  if (l.fold_ratio > 1) {
    if (uniform_qlen <= 0 || user_rows % uniform_qlen != 0)
      throw std::invalid_argument("head->batch fold needs a uniform q length (uni_seqlen_qo > 0) dividing the " +
                                  std::to_string(user_rows) + " rows; got " + std::to_string(uniform_qlen));
    l.fold_qlen = uniform_qlen;
  }
  l.view_rows = user_rows * l.fold_ratio;
  return l;
}

EncodedTensor build_kernel_q(const Inputs& in, const ViewLayout& l, const KernelView& view) {
  EncodedTensor q;
  q.dtype = in.q.dtype;
  q.fp8_flavor = in.q.fp8_flavor;
  q.scale = in.q.scale;
  const int eb = dtype_bytes(q.dtype);
  const int64_t D = in.head_dim;
  const int64_t packed_elems = l.view_rows * l.view_heads * D;
  const int64_t kernel_elems = l.view_rows * l.view_heads * (int64_t)view.head_dim;
  const int64_t total = std::max(packed_elems, kernel_elems);
  q.bytes.assign((size_t)(total * eb), 0);  // zeros where no head is copied, as before
  // tail beyond the packed rows (only when the kernel's stride is wider): NaN
  if (total > packed_elems) {
    if (eb == 1) {
      std::memset(q.bytes.data() + packed_elems, fp8_nan_bits(q.fp8_flavor), (size_t)(total - packed_elems));
    } else {
      const uint16_t nan = nan_bits16(q.dtype);
      uint16_t* p = reinterpret_cast<uint16_t*>(q.bytes.data());
      for (int64_t e = packed_elems; e < total; ++e) p[e] = nan;
    }
  }
  const uint8_t* src = in.q.bytes.data();
  uint8_t* dst = q.bytes.data();
  const size_t head_bytes = (size_t)(D * eb);
  for (int64_t row = 0; row < l.user_rows; ++row)
    for (int p = 0; p < l.padded_heads; ++p) {
      const int raw = l.heads.source[p];
      const int64_t vr = l.view_row(row, p);
      const int vh = l.view_head(p);
      std::memcpy(dst + ((vr * l.view_heads + vh) * D) * eb, src + ((row * in.num_heads + raw) * D) * eb, head_bytes);
    }
  return q;
}

std::vector<float> unlayout_out(const ViewLayout& l, DType out_dtype, const uint16_t* view_out, int v_dim) {
  std::vector<float> out((size_t)(l.user_rows * l.user_heads * v_dim));
  for (int64_t row = 0; row < l.user_rows; ++row)
    for (int h = 0; h < l.user_heads; ++h) {
      const int p = l.heads.unpad[h];
      const uint16_t* src = view_out + (l.view_row(row, p) * l.view_heads + l.view_head(p)) * v_dim;
      float* dst = out.data() + (row * l.user_heads + h) * v_dim;
      decode_elements(out_dtype, Fp8Flavor::e4m3fn, src, 0, v_dim, 1.0f, dst);
    }
  return out;
}

std::vector<float> unlayout_lse(const ViewLayout& l, const float* view_lse) {
  std::vector<float> lse((size_t)(l.user_rows * l.user_heads));
  for (int64_t row = 0; row < l.user_rows; ++row)
    for (int h = 0; h < l.user_heads; ++h) {
      const int p = l.heads.unpad[h];
      lse[row * l.user_heads + h] = view_lse[l.view_row(row, p) * l.view_heads + l.view_head(p)];
    }
  return lse;
}

}  // namespace mlactl
