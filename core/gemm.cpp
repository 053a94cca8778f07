#include "core/gemm.hpp"

#include <algorithm>
#include <atomic>
#include <cstring>

#include <Eigen/Dense>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MLACTL_GEMM_X86 1
#endif

namespace mlactl::gemm {

const char* to_string(Isa isa) {
  switch (isa) {
    case Isa::eigen: return "eigen";
    case Isa::avx: return "avx";
    case Isa::avx512: return "avx512";
  }
  return "?";
}

namespace {

// Eigen (built without FMA, SSE: mr 8, nr 4) transposes a row-major product into a
// col-major C' = A'·B' and, per depth panel of kc, accumulates every element of its
// 2-packet rows as a plain sequential fp32 sum from 0 (one mul, one add per step),
// then adds that to C'. Only the last row block's tail (< mr rows) takes other paths
// (1-packet rows with split accumulators, scalar rows). `product` runs the 2-packet
// rows with the same per-element arithmetic on 8 or 16 lanes (the products stay
// rounded; an FMA only where the operands make every product exact, products_exact)
// and hands the tail rows to Eigen's own packing and kernel on exactly
// the blocks Eigen's driver would give them; anything else (no AVX, GEMV or
// coefficient-based shapes, a different Eigen kernel) is Eigen itself.
// tests/unit/test_gemm.cpp checks every Isa bit for bit against Eigen's expressions.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using Index = Eigen::Index;
namespace ei = Eigen::internal;
using Traits = ei::gebp_traits<float, float>;

constexpr bool kEigenSseKernel =
#if defined(EIGEN_VECTORIZE_SSE) && !defined(EIGEN_VECTORIZE_AVX) && !defined(EIGEN_HAS_SINGLE_INSTRUCTION_MADD)
    Traits::mr == 8 && Traits::nr == 4 && Traits::LhsProgress == 4;
#else
    false;
#endif

bool cpu_has(Isa isa) {
#ifdef MLACTL_GEMM_X86
  switch (isa) {
    case Isa::eigen: return true;
    case Isa::avx: return kEigenSseKernel && __builtin_cpu_supports("avx");
    case Isa::avx512: return kEigenSseKernel && __builtin_cpu_supports("avx512f");
  }
  return false;
#else
  return isa == Isa::eigen;
#endif
}

std::atomic<int> g_forced{-1};  // set_isa_for_testing; -1: the default

}  // namespace

bool isa_available(Isa isa) { return cpu_has(isa); }

Isa active_isa() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<Isa>(forced);
  static const Isa best = cpu_has(Isa::avx512) ? Isa::avx512 : cpu_has(Isa::avx) ? Isa::avx : Isa::eigen;
  return best;
}

void set_isa_for_testing(std::optional<Isa> isa) { g_forced.store(isa && cpu_has(*isa) ? static_cast<int>(*isa) : -1); }

namespace {

std::atomic<bool> g_exact_fma{true};  // set_exact_fma_for_testing

constexpr uint32_t kNoNonzero = 0xffffffffu;
constexpr uint32_t kInfBits = 0x7f800000u;

// One loop for every target below: GCC vectorises the OR / max / unsigned-min
// reductions. |x| - 1 wraps for zeros, so the min sees only nonzero values.
__attribute__((always_inline)) inline OperandBits scan_body(const float* x, size_t n) {
  uint32_t bits_or = 0, max_abs = 0, min_nonzero_less1 = kNoNonzero;
  for (size_t i = 0; i < n; ++i) {
    uint32_t u;
    std::memcpy(&u, x + i, sizeof u);
    u &= 0x7fffffffu;
    bits_or |= u;
    max_abs = std::max(max_abs, u);
    min_nonzero_less1 = std::min(min_nonzero_less1, u - 1);
  }
  OperandBits r;
  r.mantissa_or = bits_or & 0x007fffffu;
  r.max_abs = max_abs;
  r.min_nonzero = min_nonzero_less1 == kNoNonzero ? kNoNonzero : min_nonzero_less1 + 1;
  return r;
}

#ifdef MLACTL_GEMM_X86
__attribute__((target("avx512f"))) OperandBits scan_avx512(const float* x, size_t n) { return scan_body(x, n); }
__attribute__((target("avx2"))) OperandBits scan_avx2(const float* x, size_t n) { return scan_body(x, n); }
#endif

}  // namespace

OperandBits scan_operand(const float* x, size_t n) {
#ifdef MLACTL_GEMM_X86
  if (__builtin_cpu_supports("avx512f")) return scan_avx512(x, n);
  if (__builtin_cpu_supports("avx2")) return scan_avx2(x, n);
#endif
  return scan_body(x, n);
}

// With E the exponent field (subnormals counted as 1) and t the trailing zero bits
// common to all mantissa fields, a value has at most 24 - t significant bits, its
// lowest at or above 2^(E - 150 + t), and |x| < 2^(E - 126). A product a·b is exact
// in fp32 iff it has at most 24 significant bits, its lowest bit is at or above
// 2^-149 (the subnormal grid) and |a·b| < 2^128; the three lines below bound each
// over all pairs: (24 - ta) + (24 - tb) <= 24, Ea_min + Eb_min - 300 + ta + tb >= -149
// and Ea_max + Eb_max - 252 <= 128. bf16 values (t >= 16) pass for exponents
// summing to 119 .. 380 (|a|·|b| within about [2^-135, 2^128)).
bool products_exact(const OperandBits& a, const OperandBits& b) {
  if (a.max_abs >= kInfBits || b.max_abs >= kInfBits) return false;
  if (a.min_nonzero == kNoNonzero || b.min_nonzero == kNoNonzero) return true;  // every product is an exact ±0
  const int ta = __builtin_ctz(a.mantissa_or | (1u << 23)), tb = __builtin_ctz(b.mantissa_or | (1u << 23));
  if (ta + tb < 24) return false;
  const int ea_min = std::max<int>(1, (int)(a.min_nonzero >> 23)), eb_min = std::max<int>(1, (int)(b.min_nonzero >> 23));
  if (ea_min + eb_min + ta + tb < 151) return false;
  return (int)(a.max_abs >> 23) + (int)(b.max_abs >> 23) <= 380;
}

void set_exact_fma_for_testing(std::optional<bool> allowed) { g_exact_fma.store(allowed.value_or(true)); }

namespace {
bool has_fma_kernel(Isa isa) {
#ifdef MLACTL_GEMM_X86
  // AVX-512F has FMA on zmm; the 8-lane kernel needs the FMA extension besides AVX
  switch (isa) {
    case Isa::avx512: return true;
    case Isa::avx: return __builtin_cpu_supports("fma") && __builtin_cpu_supports("avx2");
    case Isa::eigen: return false;
  }
#endif
  (void)isa;
  return false;
}
}  // namespace

bool exact_fma_available() { return has_fma_kernel(active_isa()); }

namespace {

constexpr int kColTile = 12;  // columns of C' per packed B' tile

#ifdef MLACTL_GEMM_X86
// dst[k*W + r] = src[r*ld + k] for r < nrows, 0 for nrows <= r < W, k < kc (W % 4 == 0).
__attribute__((target("avx"))) void pack_transposed(const float* src, Index ld, Index nrows, Index kc, float* dst,
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

// dst[k*W + r] = src[k*ld + r] for r < valid, 0 for valid <= r < W, k < kc.
template <int W>
__attribute__((target("avx"))) void pack_rows(const float* src, Index ld, Index valid, Index kc, float* dst) {
  if (valid == W) {
    for (Index k = 0; k < kc; ++k)
      for (int r = 0; r < W; r += 8) _mm256_storeu_ps(dst + k * W + r, _mm256_loadu_ps(src + k * ld + r));
    return;
  }
  for (Index k = 0; k < kc; ++k)
    for (int r = 0; r < W; ++r) dst[k * W + r] = r < valid ? src[k * ld + r] : 0.0f;
}

// A' as the micro kernel reads it (packed): RZ panels of W rows, panel r at
// base + r*panel, depth k at + k*stride; rows past `valid` exist as zeros.
struct PanelView {
  const float* base;
  Index stride, panel;
  int valid;  // rows of the RZ panels that hold A' rows (1 .. W*RZ); only these are stored
};

// W fp32 lanes as a GCC vector: the code below is written once and compiled for AVX
// (W 8) and AVX-512 (W 16) by the target of the function it is inlined into.
template <int W>
struct VecOf;
template <>
struct VecOf<8> {
  typedef float T __attribute__((vector_size(32)));
};
template <>
struct VecOf<16> {
  typedef float T __attribute__((vector_size(64)));
};

// The micro tile per width: RZ panels x NC columns of accumulators, kept in registers
// (AVX-512: 24 + 4 + 1 of 32 zmm; AVX: 12 + 2 + 1 of 16 ymm). 64 x 6 on AVX-512 was
// measured faster than 32 x 12 (fewer broadcasts per multiply; docs/bench_notes.md).
template <int W>
struct MicroShape;
template <>
struct MicroShape<16> {
  static constexpr int panels = 4, cols = 6;
};
template <>
struct MicroShape<8> {
  static constexpr int panels = 2, cols = 6;
};

// C'[rows, NC columns] += A'·B' over one depth panel: per element a sequential fp32
// sum from 0 (mul, then add, each rounded), added to C' at the end. B: k-major,
// kColTile floats per k (the NC columns from B on). Only the `valid` rows are stored.
// Fused: acc = fma(a, b, acc) in one rounding, run only where products_exact holds
// for the block's operands: then the product is exact and the FMA gives the mul +
// add's result bit for bit, so whether the compiler contracts is a matter of speed
// alone. It contracts in the fused kernels' functions (GCC: their optimize
// attribute; clang: the pragma), not elsewhere in this -ffp-contract=off file.
template <int W, int RZ, int NC, bool Fused>
__attribute__((always_inline)) inline void micro_body(const PanelView& A, Index kc, const float* B, float* res, Index ldr) {
  typedef typename VecOf<W>::T V;
  V acc[RZ][NC];
  for (int r = 0; r < RZ; ++r)
    for (int j = 0; j < NC; ++j) acc[r][j] = V{};
  // kc >= 1. (A do-while: with a loop that may run zero times GCC 12 also stores
  // every accumulator to the stack on each step.)
  Index k = 0;
  do {
    V a[RZ];
    for (int r = 0; r < RZ; ++r) std::memcpy(&a[r], A.base + r * A.panel + k * A.stride, sizeof(V));
    for (int j = 0; j < NC; ++j) {
      const float bj = B[k * kColTile + j];
      if constexpr (Fused) {
#ifdef __clang__
#pragma clang fp contract(fast)
#endif
        for (int r = 0; r < RZ; ++r) acc[r][j] += a[r] * bj;
        continue;
      }
      for (int r = 0; r < RZ; ++r) {
        V t = a[r] * bj;
        // the product stays rounded, never contracted into an FMA: clang keeps this
        // file's -ffp-contract=off (CMakeLists.txt), GCC 12 drops it inside target
        // functions, so there an empty asm holds t in a register first
#ifndef __clang__
        __asm__("" : "+v"(t));
#endif
        acc[r][j] += t;
      }
    }
  } while (++k < kc);
  for (int j = 0; j < NC; ++j) {
    float* rj = res + j * ldr;
    for (int r = 0; r < RZ; ++r) {
      const int v = A.valid - r * W;
      if (v >= W) {
        V c;
        std::memcpy(&c, rj + r * W, sizeof c);
        c += acc[r][j];
        std::memcpy(rj + r * W, &c, sizeof c);
      } else {
        for (int l = 0; l < v; ++l) rj[r * W + l] += acc[r][j][l];
      }
    }
  }
}

template <int W, int RZ, bool Fused>
__attribute__((always_inline)) inline void micro_cols(int nc, const PanelView& A, Index kc, const float* B, float* res, Index ldr) {
  switch (nc) {
    case 1: micro_body<W, RZ, 1, Fused>(A, kc, B, res, ldr); break;
    case 2: micro_body<W, RZ, 2, Fused>(A, kc, B, res, ldr); break;
    case 3: micro_body<W, RZ, 3, Fused>(A, kc, B, res, ldr); break;
    case 4: micro_body<W, RZ, 4, Fused>(A, kc, B, res, ldr); break;
    case 5: micro_body<W, RZ, 5, Fused>(A, kc, B, res, ldr); break;
    case 6: micro_body<W, RZ, 6, Fused>(A, kc, B, res, ldr); break;
  }
}
static_assert(MicroShape<8>::cols == 6 && MicroShape<16>::cols == 6, "micro_cols instantiates 1..6 columns");

// The fused kernels may contract mul + add (see micro_body). GCC: by this attribute
// on them alone; clang: by the pragma in micro_body (it has no such attribute).
#if defined(__clang__)
#define MLACTL_MAY_CONTRACT
#else
#define MLACTL_MAY_CONTRACT __attribute__((optimize("fp-contract=fast")))
#endif

__attribute__((target("avx512f"))) void micro_tile_avx512(int rz, int nc, const PanelView& A, Index kc, const float* B, float* res,
                                                         Index ldr) {
  static_assert(MicroShape<16>::panels == 4, "micro_tile_avx512 instantiates 1..4 panels");
  switch (rz) {
    case 1: micro_cols<16, 1, false>(nc, A, kc, B, res, ldr); break;
    case 2: micro_cols<16, 2, false>(nc, A, kc, B, res, ldr); break;
    case 3: micro_cols<16, 3, false>(nc, A, kc, B, res, ldr); break;
    case 4: micro_cols<16, 4, false>(nc, A, kc, B, res, ldr); break;
  }
}

MLACTL_MAY_CONTRACT __attribute__((target("avx512f"))) void micro_tile_avx512_fma(int rz, int nc, const PanelView& A, Index kc,
                                                                                 const float* B, float* res, Index ldr) {
  switch (rz) {
    case 1: micro_cols<16, 1, true>(nc, A, kc, B, res, ldr); break;
    case 2: micro_cols<16, 2, true>(nc, A, kc, B, res, ldr); break;
    case 3: micro_cols<16, 3, true>(nc, A, kc, B, res, ldr); break;
    case 4: micro_cols<16, 4, true>(nc, A, kc, B, res, ldr); break;
  }
}

__attribute__((target("avx"))) void micro_tile_avx(int rz, int nc, const PanelView& A, Index kc, const float* B, float* res, Index ldr) {
  static_assert(MicroShape<8>::panels == 2, "micro_tile_avx instantiates 1..2 panels");
  switch (rz) {
    case 1: micro_cols<8, 1, false>(nc, A, kc, B, res, ldr); break;
    case 2: micro_cols<8, 2, false>(nc, A, kc, B, res, ldr); break;
  }
}

MLACTL_MAY_CONTRACT __attribute__((target("avx2,fma"))) void micro_tile_avx_fma(int rz, int nc, const PanelView& A, Index kc,
                                                                                const float* B, float* res, Index ldr) {
  switch (rz) {
    case 1: micro_cols<8, 1, true>(nc, A, kc, B, res, ldr); break;
    case 2: micro_cols<8, 2, true>(nc, A, kc, B, res, ldr); break;
  }
}

template <int W>
void micro_tile(bool fused, int rz, int nc, const PanelView& A, Index kc, const float* B, float* res, Index ldr) {
  if (W == 16) {
    if (fused) micro_tile_avx512_fma(rz, nc, A, kc, B, res, ldr);
    else micro_tile_avx512(rz, nc, A, kc, B, res, ldr);
  } else {
    if (fused) micro_tile_avx_fma(rz, nc, A, kc, B, res, ldr);
    else micro_tile_avx(rz, nc, A, kc, B, res, ldr);
  }
}

// res (col-major C', ld ldr) += A'·B' for rows [0, rows_main), all columns, in depth
// panels of kc:  A'(i, k) = BT ? b[i*ldb + k] : b[k*ldb + i],  B'(k, j) = a[j*lda + k].
// A' is packed W rows at a time (transposed for BT, copied otherwise).
// may_fuse: the exact-FMA kernel is allowed and this CPU has it; each (row block,
// depth panel) then runs it where products_exact holds for its packed A' and B'.
template <bool BT, int W>
void main_rows(const float* a, Index lda, const float* b, Index ldb, float* res, Index ldr, Index rows_main, Index cols,
               Index depth, Index kc, bool may_fuse, Scratch& s) {
  constexpr Index kRowBlock = 256;  // rows of A' at a time (stay in L2)
  constexpr int kMicroPanels = MicroShape<W>::panels, kMicroCols = MicroShape<W>::cols;
  const Index col_tiles = (cols + kColTile - 1) / kColTile;
  auto pack_b = [&](Index k2, Index akc, float* dst) {
    for (Index t = 0; t < col_tiles; ++t)
      pack_transposed(a + t * kColTile * lda + k2, lda, std::min<Index>(kColTile, cols - t * kColTile), akc, dst + t * kColTile * akc,
                      kColTile);
  };
  // keep_b: B' for every depth panel (panel k2 at col_tiles * kColTile * k2), kept for
  // the next call on the same operand; else one depth panel at a time
  float* bfull = nullptr;
  if (s.keep_b) {
    bfull = s.b.get((size_t)(col_tiles * kColTile * depth));
    const bool reuse = s.b_valid && s.b_src == a && s.b_ld == lda && s.b_cols == cols && s.b_depth == depth && s.b_kc == kc;
    if (!reuse) {
      for (Index k2 = 0; k2 < depth; k2 += kc) pack_b(k2, std::min(k2 + kc, depth) - k2, bfull + col_tiles * kColTile * k2);
      s.b_bits = scan_operand(bfull, (size_t)(col_tiles * kColTile * depth));
      s.b_valid = true;
      s.b_src = a;
      s.b_ld = lda;
      s.b_cols = cols;
      s.b_depth = depth;
      s.b_kc = kc;
    }
  }
  for (Index k2 = 0; k2 < depth; k2 += kc) {
    const Index akc = std::min(k2 + kc, depth) - k2;
    const float* bp;
    OperandBits b_bits;
    if (bfull) {
      bp = bfull + col_tiles * kColTile * k2;
      b_bits = s.b_bits;
    } else {
      float* const panel = s.b.get((size_t)(col_tiles * kColTile * akc));
      pack_b(k2, akc, panel);
      bp = panel;
      if (may_fuse) b_bits = scan_operand(panel, (size_t)(col_tiles * kColTile * akc));
    }
    // a B' with an odd mantissa somewhere (P's fp32 values) would need A' values of
    // no width at all (ta >= 24) to pass products_exact: skip scanning A'
    const bool b_may_fuse = may_fuse && b_bits.max_abs < kInfBits && (b_bits.mantissa_or & 1u) == 0;
    for (Index i0 = 0; i0 < rows_main; i0 += kRowBlock) {
      const Index nrows = std::min(kRowBlock, rows_main - i0);
      const Index panels = (nrows + W - 1) / W;
      const float* abase;
      Index astride, apanel;
      if (BT) {
        float* const ap = s.a.get((size_t)(panels * W * akc));
        for (Index p = 0; p < panels; ++p) {
          const Index r0 = i0 + p * W;
          pack_transposed(b + r0 * ldb + k2, ldb, std::min<Index>(W, rows_main - r0), akc, ap + p * W * akc, W);
        }
        abase = ap;
        astride = W;
        apanel = W * akc;
      } else {
        // A' is rows of b, ldb apart (the executor's V: a KV row per depth step);
        // copied into contiguous zero-padded panels like BT's, so the micro kernel
        // streams one buffer instead of touching a new page every other step.
        // Same values in the same order: the sums are unchanged.
        float* const ap = s.a.get((size_t)(panels * W * akc));
        for (Index p = 0; p < panels; ++p)
          pack_rows<W>(b + k2 * ldb + i0 + p * W, ldb, std::min<Index>(W, nrows - p * W), akc, ap + p * W * akc);
        abase = ap;
        astride = W;
        apanel = W * akc;
      }
      const bool fused = b_may_fuse && products_exact(scan_operand(abase, (size_t)(panels * W * akc)), b_bits);
      ++(fused ? s.fused_blocks : s.unfused_blocks);
      for (Index t = 0; t < col_tiles; ++t) {
        const int nc = (int)std::min<Index>(kColTile, cols - t * kColTile);
        for (int j0 = 0; j0 < nc; j0 += kMicroCols) {
          const float* B = bp + t * kColTile * akc + j0;
          float* r = res + (t * kColTile + j0) * ldr + i0;
          for (Index p = 0; p < panels; p += kMicroPanels) {
            const int rz = (int)std::min<Index>(kMicroPanels, panels - p);
            micro_tile<W>(fused, rz, std::min(kMicroCols, nc - j0),
                          PanelView{abase + p * apanel, astride, apanel, (int)std::min<Index>(rz * W, nrows - p * W)}, akc, B,
                          r + p * W, ldr);
          }
        }
      }
    }
  }
}

template <bool BT>
void main_rows_on(Isa isa, const float* a, Index lda, const float* b, Index ldb, float* res, Index ldr, Index rows_main, Index cols,
                  Index depth, Index kc, Scratch& s) {
  const bool may_fuse = g_exact_fma.load(std::memory_order_relaxed) && has_fma_kernel(isa);
  if (isa == Isa::avx512) main_rows<BT, 16>(a, lda, b, ldb, res, ldr, rows_main, cols, depth, kc, may_fuse, s);
  else main_rows<BT, 8>(a, lda, b, ldb, res, ldr, rows_main, cols, depth, kc, may_fuse, s);
}
#else
template <bool BT>
void main_rows_on(Isa, const float*, Index, const float*, Index, float*, Index, Index, Index, Index, Index, Scratch&) {}
#endif

}  // namespace

template <bool BT>
void product(const float* a, int64_t lda, const float* b, int64_t ldb, float* dst, int64_t ldd, int64_t M, int64_t N, int64_t K,
             bool accumulate, Scratch& s) {
  using Stride = Eigen::OuterStride<>;
  using ConstMap = Eigen::Map<const RowMatrix, 0, Stride>;
  // Eigen's col-major view of the row-major product: C'(N x M) = A'(N x K) · B'(K x M)
  const Index rows = N, cols = M, depth = K;
  const bool gemm_path = M > 1 && N > 1 && K > 0 && K + M + N >= EIGEN_GEMM_TO_COEFFBASED_THRESHOLD;
  Index kc = 0, mc = 0, nc = 0;
  const Isa isa = active_isa();
  if (gemm_path && isa != Isa::eigen) {
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
  if (rows_main > 0) main_rows_on<BT>(isa, a, lda, b, ldb, dst, ldd, rows_main, cols, depth, kc, s);
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

template void product<true>(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t, bool, Scratch&);
template void product<false>(const float*, int64_t, const float*, int64_t, float*, int64_t, int64_t, int64_t, int64_t, bool, Scratch&);

}  // namespace mlactl::gemm
