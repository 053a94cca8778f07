// fp32 matrix products bit for bit Eigen's, and the grow-only buffers their callers
// keep per worker. Used by the reference (core/reference.cpp) and the CPU executor
// (kernels/cpu_executor.cpp) for their Q·Kᵀ and P·V: both were Eigen GEMMs, and what
// they give is what every report compares, so neither may move by one ulp. Sharing
// this is sharing Eigen's arithmetic, as both did before; the oracle's independence
// (docs/design.md §2) is about metadata, which nothing here sees.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <optional>

namespace mlactl {

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
      cap_ = n > cap_ + cap_ / 2 ? n : cap_ + cap_ / 2;
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

namespace gemm {

// Which code runs the products' main rows: Eigen itself, or the same per-element
// arithmetic on 8 (AVX) or 16 (AVX-512) lanes; the fastest the CPU has by default.
enum class Isa { eigen, avx, avx512 };
const char* to_string(Isa isa);
bool isa_available(Isa isa);
Isa active_isa();
// Tests run every available Isa against Eigen; nullopt restores the default.
void set_isa_for_testing(std::optional<Isa> isa);

// What the exactness test of a product needs to know about one operand's fp32 values
// (their bit patterns without the sign): a product a·b is exact in fp32 when the
// significands' widths add up to at most 24 bits and its exponent stays inside the
// normal-or-exact-subnormal range; then round(acc + round(a·b)) == fma(a, b, acc), so
// an FMA gives Eigen's unfused mul + add bit for bit. bf16 values (8 bits) and fp16
// values (11 bits) qualify; fp32 values of a softmax (P) do not.
struct OperandBits {
  uint32_t mantissa_or = 0;          // OR of all mantissa fields: its trailing zeros bound every value's width
  uint32_t min_nonzero = 0xffffffffu;  // smallest nonzero |x| bits (0xffffffff: none)
  uint32_t max_abs = 0;              // largest |x| bits (>= 0x7f800000: Inf or NaN)
};
// Scans n floats (n >= 0).
OperandBits scan_operand(const float* x, size_t n);
// True when every product of a value of `a` and one of `b` is exact in fp32 (so FMA
// and mul + add agree bit for bit); false for any Inf or NaN (their payloads may differ).
bool products_exact(const OperandBits& a, const OperandBits& b);

// Per-worker packing buffers. With `keep_b`, B' (the left operand's rows, packed) is
// kept and reused while the same operand comes again: a work's queries, the same for
// all its KV tiles. The caller clears `b_valid` whenever it rewrites that operand.
struct Scratch {
  GrowBuffer<float> a, b, ea, eb;
  bool keep_b = false;
  bool b_valid = false;
  const float* b_src = nullptr;
  int64_t b_ld = 0, b_cols = 0, b_depth = 0, b_kc = 0;
  OperandBits b_bits;  // of the kept B', all depth panels
  // (row block, depth panel) pairs of the main rows run with the exact-FMA kernel or
  // with mul + add; tests read them to see which path ran
  int64_t fused_blocks = 0, unfused_blocks = 0;
};

// Tests: false keeps every product on mul + add even where FMA is exact; nullopt
// restores the default (FMA where exact and the CPU has it).
void set_exact_fma_for_testing(std::optional<bool> allowed);
bool exact_fma_available();  // the active Isa has an FMA kernel on this CPU

// dst (row-major M x N, leading dimension ldd) = A·B, or += when `accumulate`, with
// A(i, k) = a[i*lda + k] (M x K) and B(k, j) = BT ? b[j*ldb + k] : b[k*ldb + j];
// bit for bit `dst.noalias() = A * X.transpose()` (BT) or `= A * X` in Eigen.
template <bool BT>
void product(const float* a, int64_t lda, const float* b, int64_t ldb, float* dst, int64_t ldd, int64_t M, int64_t N, int64_t K,
             bool accumulate, Scratch& s);

}  // namespace gemm
}  // namespace mlactl
