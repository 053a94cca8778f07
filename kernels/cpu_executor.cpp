#include "kernels/cpu_executor.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>
#include <string>

#include <Eigen/Dense>

#include "core/dtype.hpp"
#include "core/parallel.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MLACTL_CPU_EXEC_AVX512 1
#endif

namespace mlactl {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Index = Eigen::Index;

// KV entries per tile: each tile's rows are decoded once and used by every
// (q row, head) of the work through two small GEMMs (scores, P·V).
constexpr int64_t kKvTile = 128;
// (q row, head) pairs processed together; a work with more rows is run in
// row chunks (each re-streams the KV), which only huge works need.
constexpr int64_t kMaxRowHeads = 1024;

// A fault a device kernel would raise (exit 4): reads outside a buffer.
struct DeviceFault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

std::string work_name(int64_t workgroup, int64_t w, const WorkInfo& wi) {
  return "workgroup " + std::to_string(workgroup) + " work " + std::to_string(w) + " (batch " +
         std::to_string(wi.batch_idx) + ", qo [" + std::to_string(wi.qo_start) + ", " + std::to_string(wi.qo_end) +
         "), kv [" + std::to_string(wi.kv_start) + ", " + std::to_string(wi.kv_end) + "), ploc " +
         std::to_string(wi.partial_qo_loc) + ")";
}

uint16_t encode_out(float x, DType out_dtype) {
  return out_dtype == DType::fp16 ? float_to_fp16_bits(x) : float_to_bf16_bits(x);
}

// A buffer on 64-byte boundaries that only grows: one per worker, reused across
// requests instead of reallocated (and page-faulted) for every one.
template <class T>
class GrowBuffer {
 public:
  GrowBuffer() = default;
  GrowBuffer(const GrowBuffer&) = delete;
  GrowBuffer& operator=(const GrowBuffer&) = delete;
  ~GrowBuffer() { std::free(p_); }
  T* get(size_t n) {
    if (n > cap_) {
      std::free(p_);
      p_ = nullptr;
      cap_ = std::max(n, cap_ + cap_ / 2);
      p_ = static_cast<T*>(std::aligned_alloc(64, ((cap_ * sizeof(T) + 63) / 64) * 64));
      if (!p_) {
        cap_ = 0;
        throw std::bad_alloc();
      }
    }
    return p_;
  }

 private:
  T* p_ = nullptr;
  size_t cap_ = 0;
};

// ---- fp32 matrix products, bit for bit Eigen's --------------------------------
//
// The executor's two products per KV tile (scores = Q·Kᵀ, acc += P·V) were Eigen
// GEMMs; the output and LSE they give are what compare reports, so they must not
// move by one ulp. (The reference has its own copy of this code on purpose: the
// oracle shares no helper with the executor.) Eigen (built without FMA, SSE: mr 8, nr 4) transposes a row-major product
// into a col-major C' = A'·B' and, per depth panel of kc, accumulates every element
// of its 2-packet rows as a plain sequential fp32 sum from 0 (one mul, one add per
// step), then adds that to C'. Only the last row block's tail (< mr rows) takes
// other paths (1-packet rows with split accumulators, scalar rows). `product` runs
// the 2-packet rows with the same per-element arithmetic in AVX-512 (no FMA: the
// products stay rounded) and hands the tail rows to Eigen's own packing and kernel
// on exactly the blocks Eigen's driver would give them; anything else (no AVX-512,
// GEMV or coefficient-based shapes, a different Eigen kernel) is Eigen itself.
// test_cpu_executor.cpp checks the result bit for bit against Eigen's expressions.
namespace gemm {

namespace ei = Eigen::internal;
using Traits = ei::gebp_traits<float, float>;

constexpr bool kEigenSseKernel =
#if defined(EIGEN_VECTORIZE_SSE) && !defined(EIGEN_VECTORIZE_AVX) && !defined(EIGEN_HAS_SINGLE_INSTRUCTION_MADD)
    Traits::mr == 8 && Traits::nr == 4 && Traits::LhsProgress == 4;
#else
    false;
#endif

struct Scratch {
  GrowBuffer<float> a, b, ea, eb;
  // With `keep_b`, B' (the left operand's rows, packed) is kept and reused while
  // the same operand comes again: a work's queries, the same for all its KV
  // tiles. The caller clears `b_valid` whenever it rewrites that operand.
  bool keep_b = false;
  bool b_valid = false;
  const float* b_src = nullptr;
  Index b_ld = 0, b_cols = 0, b_depth = 0, b_kc = 0;
};

#ifdef MLACTL_CPU_EXEC_AVX512
bool fast_available() {
  static const bool ok = kEigenSseKernel && __builtin_cpu_supports("avx512f");
  return ok;
}

constexpr int kPanel = 16;    // rows of C' per zmm register
constexpr int kColTile = 12;  // columns of C' per micro tile

// dst[k*W + r] = src[r*ld + k] for r < nrows, 0 for nrows <= r < W, k < kc (W % 4 == 0).
__attribute__((target("avx512f"))) void pack_transposed(const float* src, Index ld, Index nrows, Index kc, float* dst,
                                                        int W) {
  Index k = 0;
  for (; k + 8 <= kc; k += 8) {
    for (int r0 = 0; r0 < W; r0 += 8) {
      __m256 row[8];
      for (int r = 0; r < 8; ++r)
        row[r] = (r0 + r < nrows) ? _mm256_loadu_ps(src + (r0 + r) * ld + k) : _mm256_setzero_ps();
      const __m256 t0 = _mm256_unpacklo_ps(row[0], row[1]), t1 = _mm256_unpackhi_ps(row[0], row[1]);
      const __m256 t2 = _mm256_unpacklo_ps(row[2], row[3]), t3 = _mm256_unpackhi_ps(row[2], row[3]);
      const __m256 t4 = _mm256_unpacklo_ps(row[4], row[5]), t5 = _mm256_unpackhi_ps(row[4], row[5]);
      const __m256 t6 = _mm256_unpacklo_ps(row[6], row[7]), t7 = _mm256_unpackhi_ps(row[6], row[7]);
      const __m256 u0 = _mm256_shuffle_ps(t0, t2, 0x44), u1 = _mm256_shuffle_ps(t0, t2, 0xEE);
      const __m256 u2 = _mm256_shuffle_ps(t1, t3, 0x44), u3 = _mm256_shuffle_ps(t1, t3, 0xEE);
      const __m256 u4 = _mm256_shuffle_ps(t4, t6, 0x44), u5 = _mm256_shuffle_ps(t4, t6, 0xEE);
      const __m256 u6 = _mm256_shuffle_ps(t5, t7, 0x44), u7 = _mm256_shuffle_ps(t5, t7, 0xEE);
      __m256 o[8];
      o[0] = _mm256_permute2f128_ps(u0, u4, 0x20);
      o[1] = _mm256_permute2f128_ps(u1, u5, 0x20);
      o[2] = _mm256_permute2f128_ps(u2, u6, 0x20);
      o[3] = _mm256_permute2f128_ps(u3, u7, 0x20);
      o[4] = _mm256_permute2f128_ps(u0, u4, 0x31);
      o[5] = _mm256_permute2f128_ps(u1, u5, 0x31);
      o[6] = _mm256_permute2f128_ps(u2, u6, 0x31);
      o[7] = _mm256_permute2f128_ps(u3, u7, 0x31);
      if (r0 + 8 <= W) {
        for (int kk = 0; kk < 8; ++kk) _mm256_storeu_ps(dst + (k + kk) * W + r0, o[kk]);
      } else {  // W % 8 == 4: the last four rows
        for (int kk = 0; kk < 8; ++kk) _mm_storeu_ps(dst + (k + kk) * W + r0, _mm256_castps256_ps128(o[kk]));
      }
    }
  }
  for (; k < kc; ++k)
    for (int r = 0; r < W; ++r) dst[k * W + r] = r < nrows ? src[r * ld + k] : 0.0f;
}

// A' as the micro kernel reads it: RZ panels of 16 rows, panel r at base + r*panel,
// depth k at + k*stride; lanes past `valid` rows of the last panel read as 0.
struct PanelView {
  const float* base;
  Index stride, panel;
  int valid;  // rows of the RZ panels that exist (1 .. 16*RZ)
};

// C'[rows, NC columns] += A'·B' over one depth panel: per element a sequential fp32
// sum from 0 (mul, then add, never fused), added to C' at the end. B: k-major,
// kColTile floats per k (the NC columns from B on). Only the `valid` rows are
// stored. (64 rows x 6 columns: measured 20% faster than 32 x 12 here, fewer
// broadcasts per multiply.)
template <int RZ, int NC>
__attribute__((target("avx512f"))) void micro(PanelView A, Index kc, const float* B, float* res, Index ldr) {
  __m512 acc[RZ][NC];
  for (int r = 0; r < RZ; ++r)
    for (int j = 0; j < NC; ++j) acc[r][j] = _mm512_setzero_ps();
  const int last_valid = A.valid - (RZ - 1) * kPanel;
  const __mmask16 last_mask = last_valid >= kPanel ? (__mmask16)0xFFFF : (__mmask16)((1u << last_valid) - 1u);
  // kc >= 1. (A do-while: with a loop that may run zero times GCC 12 also stores
  // every accumulator to the stack on each step.)
  Index k = 0;
  do {
    __m512 a[RZ];
    for (int r = 0; r + 1 < RZ; ++r) a[r] = _mm512_loadu_ps(A.base + r * A.panel + k * A.stride);
    a[RZ - 1] = _mm512_maskz_loadu_ps(last_mask, A.base + (RZ - 1) * A.panel + k * A.stride);
    for (int j = 0; j < NC; ++j) {
      const __m512 bj = _mm512_set1_ps(B[k * kColTile + j]);
      for (int r = 0; r < RZ; ++r) {
        __m512 t = _mm512_mul_ps(a[r], bj);
        __asm__("" : "+v"(t));  // the product stays rounded: no contraction into an FMA
        acc[r][j] = _mm512_add_ps(acc[r][j], t);
      }
    }
  } while (++k < kc);
  for (int j = 0; j < NC; ++j) {
    float* rj = res + j * ldr;
    for (int r = 0; r < RZ; ++r) {
      const int v = A.valid - r * kPanel;
      if (v >= kPanel) {
        _mm512_storeu_ps(rj + r * kPanel, _mm512_add_ps(acc[r][j], _mm512_loadu_ps(rj + r * kPanel)));
      } else {
        const __mmask16 m = (__mmask16)((1u << v) - 1u);
        _mm512_mask_storeu_ps(rj + r * kPanel, m, _mm512_add_ps(acc[r][j], _mm512_maskz_loadu_ps(m, rj + r * kPanel)));
      }
    }
  }
}

constexpr int kMicroCols = 6;   // columns per micro kernel call (two per packed tile)
constexpr int kMicroPanels = 4;  // 16-row panels per micro kernel call

template <int RZ>
void micro_cols(int nc, PanelView A, Index kc, const float* B, float* res, Index ldr) {
  switch (nc) {
#define MLACTL_MICRO(N) \
  case N: micro<RZ, N>(A, kc, B, res, ldr); break;
    MLACTL_MICRO(1) MLACTL_MICRO(2) MLACTL_MICRO(3) MLACTL_MICRO(4) MLACTL_MICRO(5) MLACTL_MICRO(6)
#undef MLACTL_MICRO
  }
}

void micro_tile(int rz, int nc, PanelView A, Index kc, const float* B, float* res, Index ldr) {
  switch (rz) {
    case 1: micro_cols<1>(nc, A, kc, B, res, ldr); break;
    case 2: micro_cols<2>(nc, A, kc, B, res, ldr); break;
    case 3: micro_cols<3>(nc, A, kc, B, res, ldr); break;
    case 4: micro_cols<4>(nc, A, kc, B, res, ldr); break;
  }
}

// res (col-major C', ld ldr) += A'·B' for rows [0, rows_main), all columns, in depth
// panels of kc:  A'(i, k) = BT ? b[i*ldb + k] : b[k*ldb + i],  B'(k, j) = a[j*lda + k].
// BT's A' is packed (transposed) 16 rows at a time; otherwise it is read in place.
template <bool BT>
void main_rows(const float* a, Index lda, const float* b, Index ldb, float* res, Index ldr, Index rows_main, Index cols,
               Index depth, Index kc, Scratch& s) {
  constexpr Index kRowBlock = 256;  // rows of A' at a time (stay in L2)
  const Index col_tiles = (cols + kColTile - 1) / kColTile;
  // B' for every depth panel, panel k2 at col_tiles * kColTile * k2
  float* const bfull = s.b.get((size_t)(col_tiles * kColTile * depth));
  const bool reuse = s.keep_b && s.b_valid && s.b_src == a && s.b_ld == lda && s.b_cols == cols && s.b_depth == depth &&
                     s.b_kc == kc;
  if (!reuse) {
    for (Index k2 = 0; k2 < depth; k2 += kc) {
      const Index akc = std::min(k2 + kc, depth) - k2;
      for (Index t = 0; t < col_tiles; ++t)
        pack_transposed(a + t * kColTile * lda + k2, lda, std::min<Index>(kColTile, cols - t * kColTile), akc,
                        bfull + col_tiles * kColTile * k2 + t * kColTile * akc, kColTile);
    }
    s.b_valid = true;
    s.b_src = a;
    s.b_ld = lda;
    s.b_cols = cols;
    s.b_depth = depth;
    s.b_kc = kc;
  }
  for (Index k2 = 0; k2 < depth; k2 += kc) {
    const Index akc = std::min(k2 + kc, depth) - k2;
    const float* const bp = bfull + col_tiles * kColTile * k2;
    for (Index i0 = 0; i0 < rows_main; i0 += kRowBlock) {
      const Index nrows = std::min(kRowBlock, rows_main - i0);
      const Index panels = (nrows + kPanel - 1) / kPanel;
      const float* abase;
      Index astride, apanel;
      if (BT) {
        float* const ap = s.a.get((size_t)(panels * kPanel * akc));
        for (Index p = 0; p < panels; ++p) {
          const Index r0 = i0 + p * kPanel;
          pack_transposed(b + r0 * ldb + k2, ldb, std::min<Index>(kPanel, rows_main - r0), akc, ap + p * kPanel * akc,
                          kPanel);
        }
        abase = ap;
        astride = kPanel;
        apanel = kPanel * akc;
      } else {
        abase = b + k2 * ldb + i0;
        astride = ldb;
        apanel = kPanel;
      }
      for (Index t = 0; t < col_tiles; ++t) {
        const int nc = (int)std::min<Index>(kColTile, cols - t * kColTile);
        for (int j0 = 0; j0 < nc; j0 += kMicroCols) {
          const float* B = bp + t * kColTile * akc + j0;
          float* r = res + (t * kColTile + j0) * ldr + i0;
          for (Index p = 0; p < panels; p += kMicroPanels) {
            const int rz = (int)std::min<Index>(kMicroPanels, panels - p);
            micro_tile(rz, std::min(kMicroCols, nc - j0),
                       PanelView{abase + p * apanel, astride, apanel, (int)std::min<Index>(rz * kPanel, nrows - p * kPanel)},
                       akc, B, r + p * kPanel, ldr);
          }
        }
      }
    }
  }
}
#else
bool fast_available() { return false; }
template <bool BT>
void main_rows(const float*, Index, const float*, Index, float*, Index, Index, Index, Index, Index, Scratch&) {}
#endif

// dst (row-major M x N, leading dimension ldd) = A·B, or += when `accumulate`, with
// A(i, k) = a[i*lda + k] (M x K) and B(k, j) = BT ? b[j*ldb + k] : b[k*ldb + j];
// bit for bit `dst.noalias() = A * X.transpose()` (BT) or `= A * X` in Eigen.
template <bool BT>
void product(const float* a, Index lda, const float* b, Index ldb, float* dst, Index ldd, Index M, Index N, Index K,
             bool accumulate, Scratch& s) {
  using Stride = Eigen::OuterStride<>;
  using ConstMap = Eigen::Map<const RowMatrix, 0, Stride>;
  // Eigen's col-major view of the row-major product: C'(N x M) = A'(N x K) · B'(K x M)
  const Index rows = N, cols = M, depth = K;
  const bool gemm_path = M > 1 && N > 1 && K > 0 && K + M + N >= EIGEN_GEMM_TO_COEFFBASED_THRESHOLD;
  Index kc = 0, mc = 0, nc = 0;
  if (gemm_path && fast_available()) {
    ei::gemm_blocking_space<Eigen::ColMajor, float, float, Eigen::Dynamic, Eigen::Dynamic, Eigen::Dynamic, 1, false>
        blocking(rows, cols, depth, 1, true);
    kc = blocking.kc();
    mc = std::min(rows, blocking.mc());
    nc = std::min(cols, blocking.nc());
  }
  if (kc <= 0 || (rows > mc && mc % Traits::mr != 0)) {
    ConstMap A(a, M, K, Stride(lda));
    Eigen::Map<RowMatrix, 0, Stride> C(dst, M, N, Stride(ldd));
    if (BT) {
      ConstMap X(b, N, K, Stride(ldb));
      if (accumulate) C.noalias() += A * X.transpose();
      else C.noalias() = A * X.transpose();
    } else {
      ConstMap X(b, K, N, Stride(ldb));
      if (accumulate) C.noalias() += A * X;
      else C.noalias() = A * X;
    }
    return;
  }
  if (!accumulate)
    for (Index i = 0; i < M; ++i) std::fill(dst + i * ldd, dst + i * ldd + N, 0.0f);
  // C' rows Eigen runs through its 2-packet paths: all but the last row block's tail
  const Index last_i2 = ((rows - 1) / mc) * mc;
  const Index rows_main = last_i2 + ((rows - last_i2) / Traits::mr) * Traits::mr;
  if (rows_main > 0) main_rows<BT>(a, lda, b, ldb, dst, ldd, rows_main, cols, depth, kc, s);
  if (rows_main == rows) return;
  // the tail rows: Eigen's own packing and kernel, on the blocks its driver makes
  using LhsMapper = ei::const_blas_data_mapper<float, Index, BT ? Eigen::RowMajor : Eigen::ColMajor>;
  using RhsMapper = ei::const_blas_data_mapper<float, Index, Eigen::ColMajor>;
  using ResMapper = ei::blas_data_mapper<float, Index, Eigen::ColMajor, Eigen::Unaligned, 1>;
  const LhsMapper lhs(b, ldb);
  const RhsMapper rhs(a, lda);
  const ResMapper res(dst, ldd);
  ei::gemm_pack_lhs<float, Index, LhsMapper, Traits::mr, Traits::LhsProgress, typename Traits::LhsPacket4Packing,
                    BT ? Eigen::RowMajor : Eigen::ColMajor>
      pack_lhs;
  ei::gemm_pack_rhs<float, Index, RhsMapper, Traits::nr, Eigen::ColMajor> pack_rhs;
  ei::gebp_kernel<float, float, Index, ResMapper, Traits::mr, Traits::nr, false, false> gebp;
  const Index tail = rows - rows_main;
  float* const ea = s.ea.get((size_t)(tail * kc));
  float* const eb = s.eb.get((size_t)(kc * nc));
  for (Index k2 = 0; k2 < depth; k2 += kc) {
    const Index akc = std::min(k2 + kc, depth) - k2;
    pack_lhs(ea, lhs.getSubMapper(rows_main, k2), akc, tail);
    for (Index j2 = 0; j2 < cols; j2 += nc) {
      const Index anc = std::min(j2 + nc, cols) - j2;
      pack_rhs(eb, rhs.getSubMapper(k2, j2), akc, anc);
      gebp(res.getSubMapper(rows_main, j2), ea, eb, tail, akc, anc, 1.0f);
    }
  }
}

}  // namespace gemm

// max over j of scale * s[j] as the sequential std::max loop gives it (a NaN
// score is skipped, as std::max(m, NaN) keeps m).
float max_scaled_scalar(const float* s, int64_t n, float scale) {
  float m = -std::numeric_limits<float>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, scale * s[j]);
  return m;
}

#ifdef MLACTL_CPU_EXEC_AVX512
typedef float F32x16 __attribute__((vector_size(64)));

__attribute__((target("avx512f"))) float max_scaled_avx512(const float* s, int64_t n, float scale) {
  F32x16 mv = F32x16{} - std::numeric_limits<float>::infinity();
  int64_t j = 0;
  for (; j + 16 <= n; j += 16) {
    F32x16 x;
    std::memcpy(&x, s + j, sizeof x);
    const F32x16 v = x * scale;
    mv = v > mv ? v : mv;  // a NaN v keeps mv, as std::max(m, NaN) keeps m
  }
  float m = -std::numeric_limits<float>::infinity();
  for (int l = 0; l < 16; ++l) m = std::max(m, mv[l]);
  for (; j < n; ++j) m = std::max(m, scale * s[j]);
  return m;
}
#endif

float max_scaled(const float* s, int64_t n, float scale) {
#ifdef MLACTL_CPU_EXEC_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    // max is exact and order-free but for the sign of a zero: a zero maximum is
    // taken from the sequential loop
    const float m = max_scaled_avx512(s, n, scale);
    if (m != 0) return m;
  }
#endif
  return max_scaled_scalar(s, n, scale);
}

struct Stage1Scratch {
  Stage1Scratch() { qk.keep_b = true; }
  GrowBuffer<float> queries, keys, scores, probs, acc;
  std::vector<float> row_max, row_sum;
  std::vector<int64_t> limit;  // per q row of the chunk: index-list end it may see
  gemm::Scratch qk, pv;        // qk keeps the packed queries across a chunk's KV tiles
};

// One work (reference §7.1 stage 1): q rows [qs, qe) with all heads over the index
// list [ks, ke), causal diagonal from kv_offset, online softmax in fp32.
void run_work(const ExecArgs& a, int64_t workgroup, int64_t w, Stage1Scratch& s) {
  const WorkInfo& wi = a.work->work_info[w];
  const KernelView& v = a.view;
  const int64_t H = v.heads, D = v.head_dim, V = v.v_dim;
  const int64_t qs = wi.qo_start, qe = wi.qo_end, ks = wi.kv_start, ke = wi.kv_end;
  const int64_t Qn = qe - qs;
  if (Qn <= 0) return;
  if (qs < 0 || qe > a.num_q_rows)
    throw DeviceFault(work_name(workgroup, w, wi) + ": q rows outside the q tensor of " + std::to_string(a.num_q_rows) + " rows");
  const bool has_kv = ke > ks;
  if (has_kv && (ks < 0 || ke > a.num_kv_indices))
    throw DeviceFault(work_name(workgroup, w, wi) + ": kv range outside the index list of " +
                      std::to_string(a.num_kv_indices) + " entries");
  const int64_t ploc = wi.partial_qo_loc;
  if (ploc >= 0 && ploc + Qn > a.work->num_partial_rows)
    throw DeviceFault(work_name(workgroup, w, wi) + ": partial rows [" + std::to_string(ploc) + ", " +
                      std::to_string(ploc + Qn) + ") outside the " + std::to_string(a.work->num_partial_rows) +
                      " partial rows");
  const int64_t kv_elems = a.num_slots * (int64_t)a.kv_row_stride;
  const float q_scale = v.q_dtype == DType::fp8 ? a.q_scale : 1.0f;
  const float kv_scale = v.kv_dtype == DType::fp8 ? a.kv_scale : 1.0f;
  const float softmax_scale = a.softmax_scale;
  const int64_t rows_per_chunk = std::max<int64_t>(1, kMaxRowHeads / H);

  for (int64_t i0 = 0; i0 < Qn; i0 += rows_per_chunk) {
    const int64_t i1 = std::min(Qn, i0 + rows_per_chunk);
    const int64_t nr = i1 - i0, M = nr * H;
    // causal (docs/design.md §4): q row i of Qn sees KV < kv_end - max(0, (Qn-1-i) - kv_offset)
    s.limit.resize(nr);
    for (int64_t i = i0; i < i1; ++i) {
      int64_t lim = ke;
      if (v.causal) lim = ke - std::max<int64_t>(0, (Qn - 1 - i) - wi.kv_offset);
      s.limit[i - i0] = std::max(ks, lim);
    }
    const int64_t chunk_end = has_kv ? s.limit[nr - 1] : ks;  // limits grow with i
    float* const queries = s.queries.get((size_t)(M * D));
    decode_elements(v.q_dtype, a.fp8_flavor, a.q, (qs + i0) * H * D, M * D, q_scale, queries);
    s.qk.b_valid = false;  // new queries: pack them again
    float* const acc = s.acc.get((size_t)(M * V));
    std::fill(acc, acc + M * V, 0.0f);
    s.row_max.assign(M, -std::numeric_limits<float>::infinity());
    s.row_sum.assign(M, 0.0f);
    float* const keys = s.keys.get((size_t)(kKvTile * D));
    float* const scores = s.scores.get((size_t)(M * kKvTile));
    float* const probs = s.probs.get((size_t)(M * kKvTile));
    // KV rows are scattered over the cache: rows a few entries ahead are prefetched
    // (only those inside the buffer; the bounds check below stays the one that counts)
    constexpr int64_t kAhead = 8;
    const int64_t row_bytes = D * dtype_bytes(v.kv_dtype);
    const char* const kv_bytes = static_cast<const char*>(a.kv);
    auto prefetch = [&](int64_t e) {
      const int64_t slot = a.kv_indices[e];
      if (slot < 0 || slot * D + D > kv_elems) return;
      const char* p = kv_bytes + slot * row_bytes;
      for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(p + o, 0, 2);
    };
    for (int64_t e = ks; e < std::min(chunk_end, ks + kAhead); ++e) prefetch(e);
    for (int64_t e0 = ks; e0 < chunk_end; e0 += kKvTile) {
      const int64_t e1 = std::min(chunk_end, e0 + kKvTile), n = e1 - e0;
      for (int64_t e = e0; e < e1; ++e) {
        if (e + kAhead < chunk_end) prefetch(e + kAhead);
        const int64_t slot = a.kv_indices[e];
        // the kernel reads slot at slot * head_dim with its own stride (docs/design.md §5)
        if (slot < 0 || slot * D + D > kv_elems)
          throw DeviceFault(work_name(workgroup, w, wi) + ": kv index " + std::to_string(e) + " reads slot " +
                            std::to_string(slot) + " at element " + std::to_string(slot * D) + " (+" +
                            std::to_string(D) + ") past the KV buffer of " + std::to_string(kv_elems) + " elements");
        decode_elements(v.kv_dtype, a.fp8_flavor, a.kv, slot * D, D, kv_scale, keys + (e - e0) * D);
      }
      gemm::product<true>(queries, D, keys, D, scores, n, M, n, D, false, s.qk);  // [M, n] = Q·Kᵀ
      for (int64_t r = 0; r < M; ++r) {
        const int64_t visible = std::min(e1, s.limit[r / H]) - e0;
        float* p = probs + r * n;
        if (visible <= 0) {
          std::fill(p, p + n, 0.0f);
          continue;
        }
        const float* sc = scores + r * n;
        const float tile_max = max_scaled(sc, visible, softmax_scale);
        const float m_new = std::max(s.row_max[r], tile_max);
        // NaN scores (stray reads of poisoned slots) propagate through p and the sum
        const float alpha = std::exp(s.row_max[r] - m_new);
        float sum = 0;
        for (int64_t j = 0; j < visible; ++j) {
          p[j] = std::exp(softmax_scale * sc[j] - m_new);
          sum += p[j];
        }
        std::fill(p + visible, p + n, 0.0f);
        s.row_sum[r] = s.row_sum[r] * alpha + sum;
        s.row_max[r] = m_new;
        if (alpha != 1.0f)
          for (int64_t d = 0; d < V; ++d) acc[r * V + d] *= alpha;
      }
      // P·V over the tile: like a device kernel's MMA, masked entries have p = 0 but
      // their V rows are still read (all entries are inside the work's own range).
      gemm::product<false>(probs, n, keys, D, acc, V, M, V, n, true, s.pv);  // acc += P·V
    }
    // finalise: o = acc / l, lse = m + ln(l); a row that saw nothing gets 0 / -inf
    for (int64_t r = 0; r < M; ++r) {
      const int64_t qrow = i0 + r / H, h = r % H;
      const float l = s.row_sum[r];
      const bool empty = l == 0.0f;
      const float inv = empty ? 0.0f : 1.0f / l;
      const float lse = empty ? -std::numeric_limits<float>::infinity() : s.row_max[r] + std::log(l);
      float* accr = acc + r * V;
      if (ploc < 0) {
        // encode_out(acc * inv) per element, as one bulk encode of the scaled row
        for (int64_t d = 0; d < V; ++d) accr[d] *= inv;
        encode_elements(a.out_dtype, a.fp8_flavor, accr, V, a.out, ((qs + qrow) * H + h) * V);
        if (a.lse) a.lse[(qs + qrow) * H + h] = lse;
      } else {
        float* o = a.partial_out + ((ploc + qrow) * H + h) * V;
        for (int64_t d = 0; d < V; ++d) o[d] = accr[d] * inv;
        a.partial_lse[(ploc + qrow) * H + h] = lse;
      }
    }
  }
}

// Reduce (reference §7.1 stage 2) of one tile.
void reduce_tile(const ExecArgs& a, int64_t t) {
  const WorkList& wl = *a.work;
  const int64_t s0 = wl.reduce_indptr[t], s1 = wl.reduce_indptr[t + 1];
  if (s1 - s0 <= 1) return;  // unsplit tiles were written by stage 1
  const std::string where = "reduce tile " + std::to_string(t);
  if (t >= (int64_t)wl.reduce_final_map.size()) throw DeviceFault(where + ": no reduce_final_map entry");
  const int64_t q0 = wl.reduce_final_map[t][0], q1 = wl.reduce_final_map[t][1];
  if (q0 < 0) return;  // {-1, -1}: nothing to write
  if (!a.partial_out || !a.partial_lse) throw DeviceFault(where + ": merges partials but no partial buffers were given");
  if (s0 < 0 || s1 > (int64_t)wl.reduce_partial_map.size())
    throw DeviceFault(where + ": partial-map range [" + std::to_string(s0) + ", " + std::to_string(s1) + ") outside " +
                      std::to_string(wl.reduce_partial_map.size()) + " entries");
  if (q1 < q0 || q1 > a.num_q_rows)
    throw DeviceFault(where + ": output rows [" + std::to_string(q0) + ", " + std::to_string(q1) + ") outside the " +
                      std::to_string(a.num_q_rows) + " q rows");
  const int64_t H = a.view.heads, V = a.view.v_dim, Lt = q1 - q0;
  for (int64_t k = s0; k < s1; ++k) {
    const int64_t p = wl.reduce_partial_map[k];
    if (p < 0 || p + Lt > wl.num_partial_rows)
      throw DeviceFault(where + ": partial rows [" + std::to_string(p) + ", " + std::to_string(p + Lt) + ") outside the " +
                        std::to_string(wl.num_partial_rows) + " partial rows");
  }
  std::vector<float> weight(s1 - s0), acc(V);
  for (int64_t r = 0; r < Lt; ++r)
    for (int64_t h = 0; h < H; ++h) {
      // LSE = M + ln Σ exp(lse_k - M); +inf when the sum is 0 or NaN
      float M = -std::numeric_limits<float>::infinity();
      for (int64_t k = s0; k < s1; ++k) M = std::fmax(M, a.partial_lse[(wl.reduce_partial_map[k] + r) * H + h]);
      float S = 0;
      for (int64_t k = s0; k < s1; ++k) S += std::exp(a.partial_lse[(wl.reduce_partial_map[k] + r) * H + h] - M);
      const float LSE = (S == 0.0f || std::isnan(S)) ? std::numeric_limits<float>::infinity() : M + std::log(S);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t k = s0; k < s1; ++k) {
        const int64_t prow = wl.reduce_partial_map[k] + r;
        const float wk = std::exp(a.partial_lse[prow * H + h] - LSE);
        const float* part = a.partial_out + (prow * H + h) * V;
        for (int64_t d = 0; d < V; ++d) acc[d] += wk * part[d];
      }
      uint16_t* o = a.out + ((q0 + r) * H + h) * V;
      for (int64_t d = 0; d < V; ++d) o[d] = encode_out(acc[d], a.out_dtype);
      if (a.lse) a.lse[(q0 + r) * H + h] = LSE;
    }
}

std::string validate(const ExecArgs& a) {
  if (!a.work) return "no work list";
  if (!a.q || !a.kv || !a.out) return "q, kv and out buffers are required";
  if (a.view.page_size != 1) return "the CPU executor runs KV unit 1 (token slots) only; got page size " + std::to_string(a.view.page_size);
  if (a.out_dtype == DType::fp8) return "fp8 output is not a kernel output dtype";
  if (a.view.v_dim > a.view.head_dim) return "v_dim exceeds head_dim";
  if (a.view.heads <= 0) return "view has no heads";
  const WorkList& wl = *a.work;
  if (wl.work_indptr.empty()) return "empty work_indptr";
  for (size_t c = 0; c + 1 < wl.work_indptr.size(); ++c)
    if (wl.work_indptr[c] > wl.work_indptr[c + 1] || wl.work_indptr[c] < 0 ||
        wl.work_indptr[c + 1] > (int32_t)wl.work_info.size())
      return "work_indptr[" + std::to_string(c) + ".." + std::to_string(c + 1) + "] = [" +
             std::to_string(wl.work_indptr[c]) + ", " + std::to_string(wl.work_indptr[c + 1]) + ") is not a range of the " +
             std::to_string(wl.work_info.size()) + " works";
  for (const WorkInfo& wi : wl.work_info)
    if (wi.partial_qo_loc >= 0 && (!a.partial_out || !a.partial_lse)) return "a work writes partials but no partial buffers were given";
  return {};
}

}  // namespace

ExecResult CpuExecutor::run(const ExecArgs& args) {
  ExecResult res;
  const std::string bad = validate(args);
  if (!bad.empty()) {
    res.ok = false;
    res.error = "cpu executor: " + bad;
    return res;
  }
  const WorkList& wl = *args.work;
  using clock = std::chrono::steady_clock;
  try {
    const auto t0 = clock::now();
    const int64_t num_workgroups = (int64_t)wl.work_indptr.size() - 1;
    parallel_for_with_state<Stage1Scratch>(num_workgroups, threads_, [&](Stage1Scratch& scratch, int64_t c) {
      for (int64_t w = wl.work_indptr[c]; w < wl.work_indptr[c + 1]; ++w) run_work(args, c, w, scratch);
    });
    const auto t1 = clock::now();
    const int64_t num_tiles = wl.reduce_indptr.empty() ? 0 : (int64_t)wl.reduce_indptr.size() - 1;
    parallel_for(num_tiles, threads_, [&](int64_t t) { reduce_tile(args, t); });
    const auto t2 = clock::now();
    res.stage1_ms = std::chrono::duration<double, std::milli>(t1 - t0).count();
    res.reduce_ms = std::chrono::duration<double, std::milli>(t2 - t1).count();
  } catch (const DeviceFault& e) {
    res.ok = false;
    res.error = std::string("cpu executor: device fault: ") + e.what();
  }
  return res;
}

}  // namespace mlactl
