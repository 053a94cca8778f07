#include "core/reference.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>

#include <Eigen/Dense>

#include "core/parallel.hpp"

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MLACTL_REF_AVX512 1
#endif

namespace mlactl {

namespace {

using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Index = Eigen::Index;

// Bound on the score matrix of one GEMM (floats), so a long window times many
// query tokens stays within a few hundred MB per thread.
constexpr int64_t kMaxScoreElements = int64_t(1) << 24;

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
// The reference's two products (scores = Q·Kᵀ, out = P·V) were Eigen GEMMs; their
// results are what every report compares against, so they must not move by one
// ulp. Eigen (built without FMA, SSE: mr 8, nr 4) transposes a row-major product
// into a col-major C' = A'·B' and, per depth panel of kc, accumulates every element
// of its 2-packet rows as a plain sequential fp32 sum from 0 (one mul, one add per
// step), then adds that to C'. Only the last row block's tail (< mr rows) takes
// other paths (1-packet rows with split accumulators, scalar rows). `product` runs
// the 2-packet rows with the same per-element arithmetic in AVX-512 (no FMA: the
// products stay rounded) and hands the tail rows to Eigen's own packing and kernel
// on exactly the blocks Eigen's driver would give them; anything else (no AVX-512,
// GEMV or coefficient-based shapes, a different Eigen kernel) is Eigen itself.
// test_numerics.cpp checks the result bit for bit against Eigen's expressions.
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
};

#ifdef MLACTL_REF_AVX512
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
  for (Index k2 = 0; k2 < depth; k2 += kc) {
    const Index akc = std::min(k2 + kc, depth) - k2;
    float* const bp = s.b.get((size_t)(col_tiles * kColTile * akc));
    for (Index t = 0; t < col_tiles; ++t)
      pack_transposed(a + t * kColTile * lda + k2, lda, std::min<Index>(kColTile, cols - t * kColTile), akc,
                      bp + t * kColTile * akc, kColTile);
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

struct RequestRows {
  int64_t begin = 0, end = 0;  // rows [begin, end) of oracle_windows
};

struct Workspace {
  GrowBuffer<float> keys, queries, scores, probs;
  GrowBuffer<double> expo, lse;
  gemm::Scratch gemm;
};

// Softmax of one (row, head) over the score columns [c0, c1) of `scores_row`
// (raw q·k), written as normalised probabilities into `probs_row` (zero elsewhere).
// Max, sum and log in double; each exponential computed once (`e` holds them).
// Returns the natural-log LSE.
// max over j of scale * (double)s[j], as the sequential std::max loop gives it.
double max_scaled_scalar(const float* s, int64_t n, double scale) {
  double m = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < n; ++j) m = std::max(m, scale * (double)s[j]);
  return m;
}

#ifdef MLACTL_REF_AVX512
typedef float F32x8 __attribute__((vector_size(32)));
typedef double F64x8 __attribute__((vector_size(64)));

__attribute__((target("avx512f"))) double max_scaled_avx512(const float* s, int64_t n, double scale) {
  F64x8 mv = F64x8{} - std::numeric_limits<double>::infinity();
  int64_t j = 0;
  for (; j + 8 <= n; j += 8) {
    F32x8 x;
    std::memcpy(&x, s + j, sizeof x);
    const F64x8 v = __builtin_convertvector(x, F64x8) * scale;
    mv = v > mv ? v : mv;  // a NaN v keeps mv, as std::max(m, NaN) keeps m
  }
  double m = -std::numeric_limits<double>::infinity();
  for (int l = 0; l < 8; ++l) m = std::max(m, mv[l]);
  for (; j < n; ++j) m = std::max(m, scale * (double)s[j]);
  return m;
}
#endif

double max_scaled(const float* s, int64_t n, double scale) {
#ifdef MLACTL_REF_AVX512
  static const bool avx512 = __builtin_cpu_supports("avx512f");
  if (avx512) {
    // max is exact and order-free but for the sign of a zero: a zero maximum is
    // taken from the sequential loop (scores hold no NaN: every slot read is used)
    const double m = max_scaled_avx512(s, n, scale);
    if (m != 0) return m;
  }
#endif
  return max_scaled_scalar(s, n, scale);
}

double softmax_row(const float* scores_row, float* probs_row, double* e, int64_t num_cols, int64_t c0, int64_t c1,
                   double scale) {
  const double m = max_scaled(scores_row + c0, c1 - c0, scale);
  double sum = 0;
  for (int64_t j = c0; j < c1; ++j) {
    e[j] = std::exp(scale * (double)scores_row[j] - m);
    sum += e[j];
  }
  const double inv = 1.0 / sum;
  std::fill(probs_row, probs_row + c0, 0.0f);
  for (int64_t j = c0; j < c1; ++j) probs_row[j] = (float)(e[j] * inv);
  std::fill(probs_row + c1, probs_row + num_cols, 0.0f);
  return m + std::log(sum);
}

// q rows [row0, row0 + num_rows), all heads: [num_rows * H, D] floats.
float* decode_query_rows(const Inputs& in, int64_t row0, int64_t num_rows, Workspace& ws) {
  const int64_t D = in.head_dim;
  float* q = ws.queries.get((size_t)(num_rows * in.num_heads * D));
  in.q.decode(row0 * in.num_heads * D, num_rows * in.num_heads * D, q);
  return q;
}

// Decodes the KV rows of slots slot(0..n-1) into keys [n, D]. The slots are
// scattered over the cache (shuffled blocks): the rows a few ahead are prefetched,
// so the gather is not one DRAM round trip per row.
template <class Slot>
void gather_keys(const Inputs& in, int64_t n, Slot slot, float* keys) {
  constexpr int64_t kAhead = 8;
  const int64_t D = in.head_dim;
  const int64_t row_bytes = D * dtype_bytes(in.kv.dtype);
  const char* base = static_cast<const char*>(in.kv.data());
  auto prefetch = [&](int64_t j) {
    const char* p = base + slot(j) * row_bytes;
    for (int64_t o = 0; o < row_bytes; o += 64) __builtin_prefetch(p + o, 0, 2);
  };
  for (int64_t j = 0; j < std::min(n, kAhead); ++j) prefetch(j);
  for (int64_t j = 0; j < n; ++j) {
    if (j + kAhead < n) prefetch(j + kAhead);
    in.kv.decode(slot(j) * D, D, keys + j * D);
  }
}

// softmax(scale · q·Kᵀ)·V for rows [r0, r0 + nr) against the n keys at `keys`
// ([n, D]): scores and P·V as fp32 GEMMs over all heads × rows, the output written
// straight into ref.out. `window(t)` gives row t's column range [c0, c1) of the keys.
template <class Window>
void attend_rows(const Inputs& in, double scale, const float* keys, int64_t n, int64_t r0, int64_t nr, Window window,
                 Workspace& ws, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  const int v_dim = in.v_dim;
  const int64_t M = nr * H;
  const float* q = decode_query_rows(in, r0, nr, ws);
  float* scores = ws.scores.get((size_t)(M * n));
  gemm::product<true>(q, D, keys, D, scores, n, M, n, D, false, ws.gemm);  // [M, n] = Q·Kᵀ
  float* probs = ws.probs.get((size_t)(M * n));
  double* e = ws.expo.get((size_t)n);
  double* lse = ws.lse.get((size_t)M);
  for (int64_t t = 0; t < nr; ++t) {
    const std::pair<int64_t, int64_t> w = window(r0 + t);
    for (int h = 0; h < H; ++h) {
      const int64_t i = t * H + h;
      lse[i] = softmax_row(scores + i * n, probs + i * n, e, n, w.first, w.second, scale);
    }
  }
  float* out = ref.out.data() + r0 * H * v_dim;
  gemm::product<false>(probs, n, keys, D, out, v_dim, M, v_dim, n, false, ws.gemm);  // [M, v_dim] = P·V
  for (int64_t i = 0; i < M; ++i) ref.lse[r0 * H + i] = (float)lse[i];
  for (int64_t t = 0; t < nr; ++t) ref.computed[r0 + t] = 1;
}

// Dense rows (causal / non-causal): all tokens of the request share one gathered
// key matrix; each row uses the prefix/range of it its window names.
void dense_request(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in, const RequestRows& rr,
                   Workspace& ws, ReferenceOutput& ref) {
  const int H = in.num_heads;
  const int64_t D = in.head_dim;
  int64_t lo = std::numeric_limits<int64_t>::max(), hi = 0;
  for (int64_t i = rr.begin; i < rr.end; ++i) {
    lo = std::min(lo, rows[i].begin);
    hi = std::max(hi, rows[i].end);
  }
  const int64_t n = hi - lo;
  const int request = rows[rr.begin].request;
  float* keys = ws.keys.get((size_t)(n * D));
  gather_keys(in, n, [&](int64_t j) { return kv_slot_of(b, request, lo + j); }, keys);
  const int64_t tokens_per_chunk = std::max<int64_t>(1, kMaxScoreElements / std::max<int64_t>(1, n * H));
  const auto window = [&](int64_t row) { return std::make_pair(rows[row].begin - lo, rows[row].end - lo); };
  for (int64_t r0 = rr.begin; r0 < rr.end; r0 += tokens_per_chunk)
    attend_rows(in, b.model.softmax_scale, keys, n, r0, std::min(tokens_per_chunk, rr.end - r0), window, ws, ref);
}

// Sparse rows: each token attends to its own position set (docs/design.md §3).
void sparse_row(const Batch& b, const RowWindow& w, const Inputs& in, Workspace& ws, ReferenceOutput& ref) {
  const int64_t D = in.head_dim;
  const int64_t n = (int64_t)w.sparse_positions.size();
  float* keys = ws.keys.get((size_t)(n * D));
  gather_keys(in, n, [&](int64_t j) { return kv_slot_of(b, w.request, w.sparse_positions[j]); }, keys);
  const auto window = [n](int64_t) { return std::make_pair(int64_t(0), n); };
  attend_rows(in, b.model.softmax_scale, keys, n, w.row, 1, window, ws, ref);
}

bool row_is_empty(const RowWindow& w) {
  return w.kind == MaskKind::sparse ? w.sparse_positions.empty() : w.length() <= 0;
}

}  // namespace

ReferenceOutput compute_reference(const Batch& b, const std::vector<RowWindow>& rows, const Inputs& in, int threads) {
  ReferenceOutput ref;
  ref.num_rows = (int64_t)rows.size();
  ref.num_heads = in.num_heads;
  ref.v_dim = in.v_dim;
  const float nan = std::numeric_limits<float>::quiet_NaN();
  ref.out.assign((size_t)(ref.num_rows * ref.num_heads * ref.v_dim), nan);
  ref.lse.assign((size_t)(ref.num_rows * ref.num_heads), nan);
  ref.computed.assign((size_t)ref.num_rows, 0);

  // Group each request's computable rows into maximal runs (rows are request-major).
  std::vector<RequestRows> jobs;
  for (int64_t i = 0; i < ref.num_rows;) {
    const RowWindow& w = rows[i];
    if (w.kind == MaskKind::padding) {
      ++ref.padding_rows;
      ++i;
      continue;
    }
    if (row_is_empty(w)) {
      ++ref.empty_rows;
      ++i;
      continue;
    }
    int64_t j = i + 1;
    while (j < ref.num_rows && rows[j].request == w.request && rows[j].kind != MaskKind::padding && !row_is_empty(rows[j]))
      ++j;
    jobs.push_back({i, j});
    i = j;
  }
  parallel_for_with_state<Workspace>((int64_t)jobs.size(), threads, [&](Workspace& ws, int64_t job) {
    const RequestRows& rr = jobs[job];
    if (rows[rr.begin].kind == MaskKind::sparse) {
      for (int64_t i = rr.begin; i < rr.end; ++i) sparse_row(b, rows[i], in, ws, ref);
    } else {
      dense_request(b, rows, in, rr, ws, ref);
    }
  });
  return ref;
}

}  // namespace mlactl
