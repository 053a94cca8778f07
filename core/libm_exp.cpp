#include "core/libm_exp.hpp"

#include <atomic>
#include <cmath>
#include <cstring>
#include <vector>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define MLACTL_LIBM_EXP_X86 1
#endif

namespace mlactl {

namespace {

// glibc's exp with N = 2^7 table entries: exp(x) = 2^(k/N) * exp(r), x = k ln2/N + r,
// |r| <= ln2/2N, 2^(k/N) = H[k] (1 + T[k]) from the table, exp(r) - 1 a degree-5
// polynomial. kTab[2k] = bits of T[k], kTab[2k+1] = bits of H[k] - (k << 45), H[k] the
// double nearest 2^(k/N) and T[k] = 2^(k/N) / H[k] - 1 rounded: generated with
// 80-digit decimal arithmetic, and equal to the __exp_data table of Debian's glibc 2.36
// libm.so.6 (docs/bench_notes.md). The constants are those of that libm's __exp_data
// (invln2N = N/ln2; -ln2/N in a high part with trailing zeros and a low part; the
// polynomial's C2..C5; the shift 0x1.8p52 that rounds k to an integer).
constexpr uint64_t kTab[256] = {
0x0000000000000000ull, 0x3ff0000000000000ull, 0x3c9b3b4f1a88bf6eull, 0x3feff63da9fb3335ull,
0xbc7160139cd8dc5dull, 0x3fefec9a3e778061ull, 0xbc905e7a108766d1ull, 0x3fefe315e86e7f85ull,
0x3c8cd2523567f613ull, 0x3fefd9b0d3158574ull, 0xbc8bce8023f98efaull, 0x3fefd06b29ddf6deull,
0x3c60f74e61e6c861ull, 0x3fefc74518759bc8ull, 0x3c90a3e45b33d399ull, 0x3fefbe3ecac6f383ull,
0x3c979aa65d837b6dull, 0x3fefb5586cf9890full, 0x3c8eb51a92fdeffcull, 0x3fefac922b7247f7ull,
0x3c3ebe3d702f9cd1ull, 0x3fefa3ec32d3d1a2ull, 0xbc6a033489906e0bull, 0x3fef9b66affed31bull,
0xbc9556522a2fbd0eull, 0x3fef9301d0125b51ull, 0xbc5080ef8c4eea55ull, 0x3fef8abdc06c31ccull,
0xbc91c923b9d5f416ull, 0x3fef829aaea92de0ull, 0x3c80d3e3e95c55afull, 0x3fef7a98c8a58e51ull,
0xbc801b15eaa59348ull, 0x3fef72b83c7d517bull, 0xbc8f1ff055de323dull, 0x3fef6af9388c8deaull,
0x3c8b898c3f1353bfull, 0x3fef635beb6fcb75ull, 0xbc96d99c7611eb26ull, 0x3fef5be084045cd4ull,
0x3c9aecf73e3a2f60ull, 0x3fef54873168b9aaull, 0xbc8fe782cb86389dull, 0x3fef4d5022fcd91dull,
0x3c8a6f4144a6c38dull, 0x3fef463b88628cd6ull, 0x3c807a05b0e4047dull, 0x3fef3f49917ddc96ull,
0x3c968efde3a8a894ull, 0x3fef387a6e756238ull, 0x3c875e18f274487dull, 0x3fef31ce4fb2a63full,
0x3c80472b981fe7f2ull, 0x3fef2b4565e27cddull, 0xbc96b87b3f71085eull, 0x3fef24dfe1f56381ull,
0x3c82f7e16d09ab31ull, 0x3fef1e9df51fdee1ull, 0xbc3d219b1a6fbffaull, 0x3fef187fd0dad990ull,
0x3c8b3782720c0ab4ull, 0x3fef1285a6e4030bull, 0x3c6e149289cecb8full, 0x3fef0cafa93e2f56ull,
0x3c834d754db0abb6ull, 0x3fef06fe0a31b715ull, 0x3c864201e2ac744cull, 0x3fef0170fc4cd831ull,
0x3c8fdd395dd3f84aull, 0x3feefc08b26416ffull, 0xbc86a3803b8e5b04ull, 0x3feef6c55f929ff1ull,
0xbc924aedcc4b5068ull, 0x3feef1a7373aa9cbull, 0xbc9907f81b512d8eull, 0x3feeecae6d05d866ull,
0xbc71d1e83e9436d2ull, 0x3feee7db34e59ff7ull, 0xbc991919b3ce1b15ull, 0x3feee32dc313a8e5ull,
0x3c859f48a72a4c6dull, 0x3feedea64c123422ull, 0xbc9312607a28698aull, 0x3feeda4504ac801cull,
0xbc58a78f4817895bull, 0x3feed60a21f72e2aull, 0xbc7c2c9b67499a1bull, 0x3feed1f5d950a897ull,
0x3c4363ed60c2ac11ull, 0x3feece086061892dull, 0x3c9666093b0664efull, 0x3feeca41ed1d0057ull,
0x3c6ecce1daa10379ull, 0x3feec6a2b5c13cd0ull, 0x3c93ff8e3f0f1230ull, 0x3feec32af0d7d3deull,
0x3c7690cebb7aafb0ull, 0x3feebfdad5362a27ull, 0x3c931dbdeb54e077ull, 0x3feebcb299fddd0dull,
0xbc8f94340071a38eull, 0x3feeb9b2769d2ca7ull, 0xbc87deccdc93a349ull, 0x3feeb6daa2cf6642ull,
0xbc78dec6bd0f385full, 0x3feeb42b569d4f82ull, 0xbc861246ec7b5cf6ull, 0x3feeb1a4ca5d920full,
0x3c93350518fdd78eull, 0x3feeaf4736b527daull, 0x3c7b98b72f8a9b05ull, 0x3feead12d497c7fdull,
0x3c9063e1e21c5409ull, 0x3feeab07dd485429ull, 0x3c34c7855019c6eaull, 0x3feea9268a5946b7ull,
0x3c9432e62b64c035ull, 0x3feea76f15ad2148ull, 0xbc8ce44a6199769full, 0x3feea5e1b976dc09ull,
0xbc8c33c53bef4da8ull, 0x3feea47eb03a5585ull, 0xbc845378892be9aeull, 0x3feea34634ccc320ull,
0xbc93cedd78565858ull, 0x3feea23882552225ull, 0x3c5710aa807e1964ull, 0x3feea155d44ca973ull,
0xbc93b3efbf5e2228ull, 0x3feea09e667f3bcdull, 0xbc6a12ad8734b982ull, 0x3feea012750bdabfull,
0xbc6367efb86da9eeull, 0x3fee9fb23c651a2full, 0xbc80dc3d54e08851ull, 0x3fee9f7df9519484ull,
0xbc781f647e5a3ecfull, 0x3fee9f75e8ec5f74ull, 0xbc86ee4ac08b7db0ull, 0x3fee9f9a48a58174ull,
0xbc8619321e55e68aull, 0x3fee9feb564267c9ull, 0x3c909ccb5e09d4d3ull, 0x3feea0694fde5d3full,
0xbc7b32dcb94da51dull, 0x3feea11473eb0187ull, 0x3c94ecfd5467c06bull, 0x3feea1ed0130c132ull,
0x3c65ebe1abd66c55ull, 0x3feea2f336cf4e62ull, 0xbc88a1c52fb3cf42ull, 0x3feea427543e1a12ull,
0xbc9369b6f13b3734ull, 0x3feea589994cce13ull, 0xbc805e843a19ff1eull, 0x3feea71a4623c7adull,
0xbc94d450d872576eull, 0x3feea8d99b4492edull, 0x3c90ad675b0e8a00ull, 0x3feeaac7d98a6699ull,
0x3c8db72fc1f0eab4ull, 0x3feeace5422aa0dbull, 0xbc65b6609cc5e7ffull, 0x3feeaf3216b5448cull,
0x3c7bf68359f35f44ull, 0x3feeb1ae99157736ull, 0xbc93091fa71e3d83ull, 0x3feeb45b0b91ffc6ull,
0xbc5da9b88b6c1e29ull, 0x3feeb737b0cdc5e5ull, 0xbc6c23f97c90b959ull, 0x3feeba44cbc8520full,
0xbc92434322f4f9aaull, 0x3feebd829fde4e50ull, 0xbc85ca6cd7668e4bull, 0x3feec0f170ca07baull,
0x3c71affc2b91ce27ull, 0x3feec49182a3f090ull, 0x3c6dd235e10a73bbull, 0x3feec86319e32323ull,
0xbc87c50422622263ull, 0x3feecc667b5de565ull, 0x3c8b1c86e3e231d5ull, 0x3feed09bec4a2d33ull,
0xbc91bbd1d3bcbb15ull, 0x3feed503b23e255dull, 0x3c90cc319cee31d2ull, 0x3feed99e1330b358ull,
0x3c8469846e735ab3ull, 0x3feede6b5579fdbfull, 0xbc82dfcd978e9db4ull, 0x3feee36bbfd3f37aull,
0x3c8c1a7792cb3387ull, 0x3feee89f995ad3adull, 0xbc907b8f4ad1d9faull, 0x3feeee07298db666ull,
0xbc55c3d956dcaebaull, 0x3feef3a2b84f15fbull, 0xbc90a40e3da6f640ull, 0x3feef9728de5593aull,
0xbc68d6f438ad9334ull, 0x3feeff76f2fb5e47ull, 0xbc91eee26b588a35ull, 0x3fef05b030a1064aull,
0x3c74ffd70a5fddcdull, 0x3fef0c1e904bc1d2ull, 0xbc91bdfbfa9298acull, 0x3fef12c25bd71e09ull,
0x3c736eae30af0cb3ull, 0x3fef199bdd85529cull, 0x3c8ee3325c9ffd94ull, 0x3fef20ab5fffd07aull,
0x3c84e08fd10959acull, 0x3fef27f12e57d14bull, 0x3c63cdaf384e1a67ull, 0x3fef2f6d9406e7b5ull,
0x3c676b2c6c921968ull, 0x3fef3720dcef9069ull, 0xbc808a1883ccb5d2ull, 0x3fef3f0b555dc3faull,
0xbc8fad5d3ffffa6full, 0x3fef472d4a07897cull, 0xbc900dae3875a949ull, 0x3fef4f87080d89f2ull,
0x3c74a385a63d07a7ull, 0x3fef5818dcfba487ull, 0xbc82919e2040220full, 0x3fef60e316c98398ull,
0x3c8e5a50d5c192acull, 0x3fef69e603db3285ull, 0x3c843a59ac016b4bull, 0x3fef7321f301b460ull,
0xbc82d52107b43e1full, 0x3fef7c97337b9b5full, 0xbc892ab93b470dc9ull, 0x3fef864614f5a129ull,
0x3c74b604603a88d3ull, 0x3fef902ee78b3ff6ull, 0x3c83c5ec519d7271ull, 0x3fef9a51fbc74c83ull,
0xbc8ff7128fd391f0ull, 0x3fefa4afa2a490daull, 0xbc8dae98e223747dull, 0x3fefaf482d8e67f1ull,
0x3c8ec3bc41aa2008ull, 0x3fefba1bee615a27ull, 0x3c842b94c3a9eb32ull, 0x3fefc52b376bba97ull,
0x3c8a64a931d185eeull, 0x3fefd0765b6e4540ull, 0xbc8e37bae43be3edull, 0x3fefdbfdad9cbe14ull,
0x3c77893b4d91cd9dull, 0x3fefe7c1819e90d8ull, 0x3c5305c14160cc89ull, 0x3feff3c22b8f71f1ull};
constexpr uint64_t kInvLn2N = 0x40671547652b82feull;
constexpr uint64_t kNegLn2HiN = 0xbf762e42fefa0000ull;
constexpr uint64_t kNegLn2LoN = 0xbd0cf79abc9e3b3aull;
constexpr uint64_t kC2 = 0x3fdffffffffffdbdull;
constexpr uint64_t kC3 = 0x3fc555555555543cull;
constexpr uint64_t kC4 = 0x3fa55555cf172b91ull;
constexpr uint64_t kC5 = 0x3f81111167a4d017ull;
constexpr uint64_t kShift = 0x4338000000000000ull;
// glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, __expf_fma) in double: N = 2^5,
// kTabF[k] = bits of the double nearest 2^(k/N) minus (k << 47) (generated likewise and
// equal to that libm's __exp2f_data table), exp(r) by a degree-3 polynomial C0..C2.
constexpr uint64_t kTabF[32] = {
0x3ff0000000000000ull, 0x3fefd9b0d3158574ull, 0x3fefb5586cf9890full, 0x3fef9301d0125b51ull,
0x3fef72b83c7d517bull, 0x3fef54873168b9aaull, 0x3fef387a6e756238ull, 0x3fef1e9df51fdee1ull,
0x3fef06fe0a31b715ull, 0x3feef1a7373aa9cbull, 0x3feedea64c123422ull, 0x3feece086061892dull,
0x3feebfdad5362a27ull, 0x3feeb42b569d4f82ull, 0x3feeab07dd485429ull, 0x3feea47eb03a5585ull,
0x3feea09e667f3bcdull, 0x3fee9f75e8ec5f74ull, 0x3feea11473eb0187ull, 0x3feea589994cce13ull,
0x3feeace5422aa0dbull, 0x3feeb737b0cdc5e5ull, 0x3feec49182a3f090ull, 0x3feed503b23e255dull,
0x3feee89f995ad3adull, 0x3feeff76f2fb5e47ull, 0x3fef199bdd85529cull, 0x3fef3720dcef9069ull,
0x3fef5818dcfba487ull, 0x3fef7c97337b9b5full, 0x3fefa4afa2a490daull, 0x3fefd0765b6e4540ull};
constexpr uint64_t kInvLn2NF = 0x40471547652b82feull;
constexpr uint64_t kC0F = 0x3ebc6af84b912394ull;
constexpr uint64_t kC1F = 0x3f2ebfce50fac4f3ull;
constexpr uint64_t kC2F = 0x3f962e42ff0c52d6ull;
// expf's main path: |x| < 88 (top12 <= 0x42a); other lanes are std::exp's.
constexpr float kMainEndF = 88.0f;
// glibc's main path covers 2^-54 <= |x| < 512; other lanes (0, tiny, huge, inf,
// NaN) are recomputed by std::exp.
constexpr double kMainMin = 0x1p-54, kMainEnd = 512.0;

double bits_double(uint64_t u) {
  double d;
  std::memcpy(&d, &u, sizeof d);
  return d;
}

void exp_scalar(double* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

void expf_scalar(float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i) x[i] = std::exp(x[i]);
}

#ifdef MLACTL_LIBM_EXP_X86
// W lanes of doubles, their bits, and floats as GCC vectors: each algorithm below is
// written once and compiled for AVX2+FMA (W 4) and AVX-512 (W 8) by the target of the
// function it is inlined into, as core/gemm.cpp's micro_body is. splat and fma_lanes
// return vectors by value, which -Wpsabi flags as an ABI change (AVX), but they are
// always inlined: no vector crosses a call.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wpsabi"
template <int W>
struct Lanes {
  typedef double D __attribute__((vector_size(8 * W)));
  typedef long long I __attribute__((vector_size(8 * W)));
  typedef float F __attribute__((vector_size(4 * W)));
  typedef int I32 __attribute__((vector_size(4 * W)));
};

template <class V, class S>
__attribute__((always_inline)) inline V splat(S s) {
  V v;
  for (int l = 0; l < (int)(sizeof v / sizeof s); ++l) v[l] = s;
  return v;
}

// fma per lane, as glibc's __exp_fma has one: the vectorizer makes it one vfmadd on the
// target's width (and it is a correctly rounded fma in any case)
template <class V>
__attribute__((always_inline)) inline V fma_lanes(const V& a, const V& b, const V& c) {
  V r;
  for (int l = 0; l < (int)(sizeof r / sizeof r[0]); ++l) r[l] = __builtin_fma(a[l], b[l], c[l]);
  return r;
}

// The steps GCC's vector extension has no good form for, one overload per width: the
// table lookups (a hardware gather; per-lane loads are W inserts, twice the time of the
// whole AVX-512 step), float -> double (below) and a comparison's lanes as bits, lane l
// in bit l (movemask; lane by lane it is W extracts). Not always_inline: GCC cannot
// inline a target function into the generic templates below, only into the target
// function they are inlined into, which is `flatten` for that. References, not values:
// at -O0 these stay calls from generic code, where a vector argument changes the ABI.
__attribute__((target("avx512f"))) inline void gather(const uint64_t* table, const Lanes<8>::I& idx, Lanes<8>::I& out) {
  out = (Lanes<8>::I)_mm512_mask_i64gather_epi64(_mm512_setzero_si512(), 0xFF, (__m512i)idx, table, 8);
}
__attribute__((target("avx2"))) inline void gather(const uint64_t* table, const Lanes<4>::I& idx, Lanes<4>::I& out) {
  out = (Lanes<4>::I)_mm256_i64gather_epi64(reinterpret_cast<const long long*>(table), (__m256i)idx, 8);
}
// float -> double lanes (exact): GCC 12 makes the 4-lane __builtin_convertvector two
// halves through memory, and its _mm512_cvtps_pd starts from _mm512_undefined
// (-Wmaybe-uninitialized), so each width has the form that compiles to one vcvtps2pd
__attribute__((target("avx512f"))) inline void widen(const Lanes<8>::F& f, Lanes<8>::D& d) {
  d = __builtin_convertvector(f, Lanes<8>::D);
}
__attribute__((target("avx2"))) inline void widen(const Lanes<4>::F& f, Lanes<4>::D& d) { d = (Lanes<4>::D)_mm256_cvtps_pd((__m128)f); }
__attribute__((target("avx512f"))) inline unsigned lane_bits(const Lanes<8>::I& mask) {
  return _mm512_test_epi64_mask((__m512i)mask, (__m512i)mask);
}
__attribute__((target("avx2"))) inline unsigned lane_bits(const Lanes<4>::I& mask) { return _mm256_movemask_pd((__m256d)mask); }
__attribute__((target("avx2"))) inline unsigned lane_bits(const Lanes<8>::I32& mask) { return _mm256_movemask_ps((__m256)mask); }
__attribute__((target("avx2"))) inline unsigned lane_bits(const Lanes<4>::I32& mask) { return _mm_movemask_ps((__m128)mask); }

// Each step is glibc's __exp_fma step (its disassembly, in order): every multiply-add
// there is an fma_lanes here and every plain add/multiply is one here; no mul feeds an add,
// so nothing can be contracted differently (the file is built -ffp-contract=off too).
template <int W>
inline void exp_lanes(double* x, int64_t n) {
  typedef typename Lanes<W>::D D;
  typedef typename Lanes<W>::I I;
  const D inv_ln2n = splat<D>(bits_double(kInvLn2N)), shift = splat<D>(bits_double(kShift));
  const D neg_hi = splat<D>(bits_double(kNegLn2HiN)), neg_lo = splat<D>(bits_double(kNegLn2LoN));
  const D c2 = splat<D>(bits_double(kC2)), c3 = splat<D>(bits_double(kC3));
  const D c4 = splat<D>(bits_double(kC4)), c5 = splat<D>(bits_double(kC5));
  const D lo = splat<D>(kMainMin), hi = splat<D>(kMainEnd);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    D v;
    std::memcpy(&v, x + i, sizeof v);
    const D kd_shifted = fma_lanes(v, inv_ln2n, shift);
    const I ki = (I)kd_shifted;
    const D kd = kd_shifted - shift;
    D r = fma_lanes(kd, neg_hi, v);
    r = fma_lanes(kd, neg_lo, r);
    const I idx = (ki & 127) << 1;
    I tail_bits, head_bits;
    gather(kTab, idx, tail_bits);
    gather(kTab + 1, idx, head_bits);
    const D tail = (D)tail_bits;
    const D a = fma_lanes(r, c3, c2);
    const D t = r + tail;
    const D r2 = r * r;
    const D b = fma_lanes(r, c5, c4);
    D tmp = fma_lanes(a, r2, t);
    const D r4 = r2 * r2;
    tmp = fma_lanes(r4, b, tmp);
    const D scale = (D)(head_bits + (ki << 45));
    const D y = fma_lanes(scale, tmp, scale);
    std::memcpy(x + i, &y, sizeof y);
    const D mag = (D)((I)v & 0x7fffffffffffffffll);
    // two lane_bits, not one of an `&`: GCC 12 does that `&` of comparisons lane by lane
    const unsigned main = lane_bits((I)(mag >= lo)) & lane_bits((I)(mag < hi));
    if (main != (1u << W) - 1)
      for (int l = 0; l < W; ++l)
        if (!((main >> l) & 1)) x[i + l] = std::exp(v[l]);
  }
  exp_scalar(x + i, n - i);
}

// __expf_fma's steps: xd = x; kd = fma_lanes(InvLn2N, xd, shift), ki its bits, kd -= shift;
// r = fma_lanes(InvLn2N, xd, -kd); s = bits(T[ki % N] + (ki << 47)); z = fma_lanes(r, C0, C1);
// y = fma_lanes(r, C2, 1); y = fma_lanes(z, r*r, y); (float)(y * s).
template <int W>
inline void expf_lanes(float* x, int64_t n) {
  typedef typename Lanes<W>::D D;
  typedef typename Lanes<W>::I I;
  typedef typename Lanes<W>::F F;
  typedef typename Lanes<W>::I32 I32;
  const D inv_ln2n = splat<D>(bits_double(kInvLn2NF)), shift = splat<D>(bits_double(kShift));
  const D c0 = splat<D>(bits_double(kC0F)), c1 = splat<D>(bits_double(kC1F));
  const D c2 = splat<D>(bits_double(kC2F)), one = splat<D>(1.0);
  const F end = splat<F>(kMainEndF);
  int64_t i = 0;
  for (; i + W <= n; i += W) {
    F v;
    std::memcpy(&v, x + i, sizeof v);
    D xd;
    widen(v, xd);
    const D kd_shifted = fma_lanes(inv_ln2n, xd, shift);
    const I ki = (I)kd_shifted;
    const D kd = kd_shifted - shift;
    const D r = fma_lanes(inv_ln2n, xd, -kd);
    const I idx = ki & 31;
    I table_bits;
    gather(kTabF, idx, table_bits);
    const D scale = (D)(table_bits + (ki << 47));
    const D z = fma_lanes(r, c0, c1);
    const D r2 = r * r;
    D y = fma_lanes(r, c2, one);
    y = fma_lanes(z, r2, y);
    y = y * scale;
    const F out = __builtin_convertvector(y, F);  // rounded to nearest
    std::memcpy(x + i, &out, sizeof out);
    const unsigned main = lane_bits((I32)((F)((I32)v & 0x7fffffff) < end));
    if (main != (1u << W) - 1)
      for (int l = 0; l < W; ++l)
        if (!((main >> l) & 1)) x[i + l] = std::exp(v[l]);
  }
  expf_scalar(x + i, n - i);
}
#pragma GCC diagnostic pop

__attribute__((target("avx512f"), flatten)) void exp_avx512(double* x, int64_t n) { exp_lanes<8>(x, n); }
__attribute__((target("avx2,fma"), flatten)) void exp_avx2_fma(double* x, int64_t n) { exp_lanes<4>(x, n); }
__attribute__((target("avx512f"), flatten)) void expf_avx512(float* x, int64_t n) { expf_lanes<8>(x, n); }
__attribute__((target("avx2,fma"), flatten)) void expf_avx2_fma(float* x, int64_t n) { expf_lanes<4>(x, n); }
#endif

void run_on(ExpIsa isa, double* x, int64_t n) {
  switch (isa) {
#ifdef MLACTL_LIBM_EXP_X86
    case ExpIsa::avx512: return exp_avx512(x, n);
    case ExpIsa::avx2_fma: return exp_avx2_fma(x, n);
#endif
    default: return exp_scalar(x, n);
  }
}

void run_on(ExpIsa isa, float* x, int64_t n) {
  switch (isa) {
#ifdef MLACTL_LIBM_EXP_X86
    case ExpIsa::avx512: return expf_avx512(x, n);
    case ExpIsa::avx2_fma: return expf_avx2_fma(x, n);
#endif
    default: return expf_scalar(x, n);
  }
}

bool cpu_has(ExpIsa isa) {
  switch (isa) {
    case ExpIsa::scalar: return true;
#ifdef MLACTL_LIBM_EXP_X86
    case ExpIsa::avx2_fma: return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    case ExpIsa::avx512: return __builtin_cpu_supports("avx512f");
#else
    default: return false;
#endif
  }
  return false;
}

// Whether `isa` gives std::exp's bits (double and float) on a spread of arguments: the softmax range
// [-60, 0] densely, all of [-745, 710] more sparsely, and the special values. A
// libm computing exp another way differs on a good part of these.
bool matches_std_exp(ExpIsa isa) {
  constexpr int kDense = 1 << 14, kWide = 1 << 12;
  std::vector<double> args(kDense + kWide + 16);
  int n = 0;
  uint64_t s = 0x9E3779B97F4A7C15ull;
  for (int i = 0; i < kDense; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    args[n++] = -60.0 * (double)(s >> 11) * 0x1p-53;
  }
  for (int i = 0; i < kWide; ++i) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    args[n++] = -745.0 + 1455.0 * (double)(s >> 11) * 0x1p-53;
  }
  for (double v : {0.0, -0.0, 0x1p-60, -0x1p-54, 0x1p-54, 511.9, 512.0, -512.0, -700.0, -746.0, 710.0, 720.0,
                   HUGE_VAL, -HUGE_VAL, std::nan("")})
    args[n++] = v;
  std::vector<double> got(args.begin(), args.begin() + n);
  run_on(isa, got.data(), n);
  for (int i = 0; i < n; ++i) {
    const double want = std::exp(args[i]);
    if (std::memcmp(&want, &got[i], sizeof want) != 0 && !(std::isnan(want) && std::isnan(got[i]))) return false;
  }
  // the float path on the same arguments as floats (those past ±104 give 0 or inf)
  std::vector<float> args_f(args.begin(), args.begin() + n), got_f = args_f;
  run_on(isa, got_f.data(), n);
  for (int i = 0; i < n; ++i) {
    const float want = std::exp(args_f[i]);
    if (std::memcmp(&want, &got_f[i], sizeof want) != 0 && !(std::isnan(want) && std::isnan(got_f[i]))) return false;
  }
  return true;
}

bool usable(ExpIsa isa) {
  if (isa == ExpIsa::scalar) return true;
  if (!cpu_has(isa)) return false;
  static const bool avx2_ok = cpu_has(ExpIsa::avx2_fma) && matches_std_exp(ExpIsa::avx2_fma);
  static const bool avx512_ok = cpu_has(ExpIsa::avx512) && matches_std_exp(ExpIsa::avx512);
  return isa == ExpIsa::avx512 ? avx512_ok : avx2_ok;
}

std::atomic<int> g_forced{-1};  // set_exp_isa_for_testing; -1: the default

ExpIsa active_isa() {
  const int forced = g_forced.load(std::memory_order_relaxed);
  if (forced >= 0) return static_cast<ExpIsa>(forced);
  static const ExpIsa best = usable(ExpIsa::avx512) ? ExpIsa::avx512 : usable(ExpIsa::avx2_fma) ? ExpIsa::avx2_fma : ExpIsa::scalar;
  return best;
}

}  // namespace

bool exp_isa_available(ExpIsa isa) { return usable(isa); }

void set_exp_isa_for_testing(std::optional<ExpIsa> isa) {
  g_forced.store(isa && usable(*isa) ? static_cast<int>(*isa) : -1);
}

void exp_in_place(double* x, int64_t n) { run_on(active_isa(), x, n); }

void exp_in_place(float* x, int64_t n) { run_on(active_isa(), x, n); }

}  // namespace mlactl
