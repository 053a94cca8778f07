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
typedef long long I64x8 __attribute__((vector_size(64)));
// the float <-> double conversions as vector casts: GCC 12's _mm512_cvtps_pd /
// _mm512_cvtpd_ps start from _mm512_undefined as well
typedef float F32x8 __attribute__((vector_size(32)));
typedef double F64x8 __attribute__((vector_size(64)));

// Each step is glibc's __exp_fma step (its disassembly, in order): every multiply-add
// there is an fma here and every plain add/multiply is one here; no mul feeds an add,
// so nothing can be contracted differently (the file is built -ffp-contract=off too).
__attribute__((target("avx512f"))) void exp_avx512(double* x, int64_t n) {
  const __m512d inv_ln2n = _mm512_set1_pd(bits_double(kInvLn2N)), shift = _mm512_set1_pd(bits_double(kShift));
  const __m512d neg_hi = _mm512_set1_pd(bits_double(kNegLn2HiN)), neg_lo = _mm512_set1_pd(bits_double(kNegLn2LoN));
  const __m512d c2 = _mm512_set1_pd(bits_double(kC2)), c3 = _mm512_set1_pd(bits_double(kC3));
  const __m512d c4 = _mm512_set1_pd(bits_double(kC4)), c5 = _mm512_set1_pd(bits_double(kC5));
  const __m512d lo = _mm512_set1_pd(kMainMin), hi = _mm512_set1_pd(kMainEnd);
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m512d v = _mm512_loadu_pd(x + i);
    const __m512d kd_shifted = _mm512_fmadd_pd(v, inv_ln2n, shift);
    const I64x8 ki = (I64x8)_mm512_castpd_si512(kd_shifted);
    const __m512d kd = _mm512_sub_pd(kd_shifted, shift);
    __m512d r = _mm512_fmadd_pd(kd, neg_hi, v);
    r = _mm512_fmadd_pd(kd, neg_lo, r);
    // integer steps in vector types, and masked gathers into zeros: GCC 12's
    // _mm512_slli_epi64 / _mm512_i64gather_epi64 start from _mm512_undefined and
    // trip -Wmaybe-uninitialized
    const __m512i idx = (__m512i)((ki & 127) << 1);
    const I64x8 top = ki << 45;
    const __m512i zero = _mm512_setzero_si512();
    const __m512d tail = _mm512_castsi512_pd(_mm512_mask_i64gather_epi64(zero, 0xFF, idx, kTab, 8));
    const __m512i sbits = (__m512i)((I64x8)_mm512_mask_i64gather_epi64(zero, 0xFF, idx, kTab + 1, 8) + top);
    const __m512d a = _mm512_fmadd_pd(r, c3, c2);
    const __m512d t = _mm512_add_pd(r, tail);
    const __m512d r2 = _mm512_mul_pd(r, r);
    const __m512d b = _mm512_fmadd_pd(r, c5, c4);
    __m512d tmp = _mm512_fmadd_pd(a, r2, t);
    const __m512d r4 = _mm512_mul_pd(r2, r2);
    tmp = _mm512_fmadd_pd(r4, b, tmp);
    const __m512d scale = _mm512_castsi512_pd(sbits);
    _mm512_storeu_pd(x + i, _mm512_fmadd_pd(scale, tmp, scale));
    const __m512d mag = _mm512_abs_pd(v);
    const __mmask8 main = _mm512_cmp_pd_mask(mag, lo, _CMP_GE_OQ) & _mm512_cmp_pd_mask(mag, hi, _CMP_LT_OQ);
    if (main != 0xFF)
      for (int l = 0; l < 8; ++l)
        if (!((main >> l) & 1)) x[i + l] = std::exp(v[l]);
  }
  exp_scalar(x + i, n - i);
}

__attribute__((target("avx2,fma"))) void exp_avx2_fma(double* x, int64_t n) {
  const __m256d inv_ln2n = _mm256_set1_pd(bits_double(kInvLn2N)), shift = _mm256_set1_pd(bits_double(kShift));
  const __m256d neg_hi = _mm256_set1_pd(bits_double(kNegLn2HiN)), neg_lo = _mm256_set1_pd(bits_double(kNegLn2LoN));
  const __m256d c2 = _mm256_set1_pd(bits_double(kC2)), c3 = _mm256_set1_pd(bits_double(kC3));
  const __m256d c4 = _mm256_set1_pd(bits_double(kC4)), c5 = _mm256_set1_pd(bits_double(kC5));
  const __m256d lo = _mm256_set1_pd(kMainMin), hi = _mm256_set1_pd(kMainEnd);
  const __m256d abs_mask = _mm256_castsi256_pd(_mm256_set1_epi64x(0x7fffffffffffffffll));
  const __m256i idx_mask = _mm256_set1_epi64x(127);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m256d v = _mm256_loadu_pd(x + i);
    const __m256d kd_shifted = _mm256_fmadd_pd(v, inv_ln2n, shift);
    const __m256i ki = _mm256_castpd_si256(kd_shifted);
    const __m256d kd = _mm256_sub_pd(kd_shifted, shift);
    __m256d r = _mm256_fmadd_pd(kd, neg_hi, v);
    r = _mm256_fmadd_pd(kd, neg_lo, r);
    const __m256i idx = _mm256_slli_epi64(_mm256_and_si256(ki, idx_mask), 1);
    const __m256i top = _mm256_slli_epi64(ki, 45);
    const __m256d tail = _mm256_castsi256_pd(_mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab), idx, 8));
    const __m256i sbits =
        _mm256_add_epi64(_mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTab + 1), idx, 8), top);
    const __m256d a = _mm256_fmadd_pd(r, c3, c2);
    const __m256d t = _mm256_add_pd(r, tail);
    const __m256d r2 = _mm256_mul_pd(r, r);
    const __m256d b = _mm256_fmadd_pd(r, c5, c4);
    __m256d tmp = _mm256_fmadd_pd(a, r2, t);
    const __m256d r4 = _mm256_mul_pd(r2, r2);
    tmp = _mm256_fmadd_pd(r4, b, tmp);
    const __m256d scale = _mm256_castsi256_pd(sbits);
    _mm256_storeu_pd(x + i, _mm256_fmadd_pd(scale, tmp, scale));
    const __m256d mag = _mm256_and_pd(v, abs_mask);
    const int main =
        _mm256_movemask_pd(_mm256_and_pd(_mm256_cmp_pd(mag, lo, _CMP_GE_OQ), _mm256_cmp_pd(mag, hi, _CMP_LT_OQ)));
    if (main != 0xF)
      for (int l = 0; l < 4; ++l)
        if (!((main >> l) & 1)) x[i + l] = std::exp(v[l]);
  }
  exp_scalar(x + i, n - i);
}

// __expf_fma's steps: xd = x; kd = fma(InvLn2N, xd, shift), ki its bits, kd -= shift;
// r = fma(InvLn2N, xd, -kd); s = bits(T[ki % N] + (ki << 47)); z = fma(r, C0, C1);
// y = fma(r, C2, 1); y = fma(z, r*r, y); (float)(y * s).
__attribute__((target("avx512f"))) void expf_avx512(float* x, int64_t n) {
  const __m512d inv_ln2n = _mm512_set1_pd(bits_double(kInvLn2NF)), shift = _mm512_set1_pd(bits_double(kShift));
  const __m512d c0 = _mm512_set1_pd(bits_double(kC0F)), c1 = _mm512_set1_pd(bits_double(kC1F));
  const __m512d c2 = _mm512_set1_pd(bits_double(kC2F)), one = _mm512_set1_pd(1.0);
  const __m256 end = _mm256_set1_ps(kMainEndF);
  const __m256 abs_mask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
  const __m512i zero = _mm512_setzero_si512();
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 v = _mm256_loadu_ps(x + i);
    const __m512d xd = (__m512d)__builtin_convertvector((F32x8)v, F64x8);  // exact
    const __m512d kd_shifted = _mm512_fmadd_pd(inv_ln2n, xd, shift);
    const I64x8 ki = (I64x8)_mm512_castpd_si512(kd_shifted);
    const __m512d kd = _mm512_sub_pd(kd_shifted, shift);
    const __m512d r = _mm512_fmsub_pd(inv_ln2n, xd, kd);
    const __m512i idx = (__m512i)(ki & 31);
    const __m512d scale =
        _mm512_castsi512_pd((__m512i)((I64x8)_mm512_mask_i64gather_epi64(zero, 0xFF, idx, kTabF, 8) + (ki << 47)));
    const __m512d z = _mm512_fmadd_pd(r, c0, c1);
    const __m512d r2 = _mm512_mul_pd(r, r);
    __m512d y = _mm512_fmadd_pd(r, c2, one);
    y = _mm512_fmadd_pd(z, r2, y);
    y = _mm512_mul_pd(y, scale);
    _mm256_storeu_ps(x + i, (__m256)__builtin_convertvector((F64x8)y, F32x8));  // rounded to nearest
    const int main = _mm256_movemask_ps(_mm256_cmp_ps(_mm256_and_ps(v, abs_mask), end, _CMP_LT_OQ));
    if (main != 0xFF)
      for (int l = 0; l < 8; ++l)
        if (!((main >> l) & 1)) x[i + l] = std::exp(v[l]);
  }
  expf_scalar(x + i, n - i);
}

__attribute__((target("avx2,fma"))) void expf_avx2_fma(float* x, int64_t n) {
  const __m256d inv_ln2n = _mm256_set1_pd(bits_double(kInvLn2NF)), shift = _mm256_set1_pd(bits_double(kShift));
  const __m256d c0 = _mm256_set1_pd(bits_double(kC0F)), c1 = _mm256_set1_pd(bits_double(kC1F));
  const __m256d c2 = _mm256_set1_pd(bits_double(kC2F)), one = _mm256_set1_pd(1.0);
  const __m128 end = _mm_set1_ps(kMainEndF);
  const __m128 abs_mask = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
  const __m256i idx_mask = _mm256_set1_epi64x(31);
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    const __m128 v = _mm_loadu_ps(x + i);
    const __m256d xd = _mm256_cvtps_pd(v);
    const __m256d kd_shifted = _mm256_fmadd_pd(inv_ln2n, xd, shift);
    const __m256i ki = _mm256_castpd_si256(kd_shifted);
    const __m256d kd = _mm256_sub_pd(kd_shifted, shift);
    const __m256d r = _mm256_fmsub_pd(inv_ln2n, xd, kd);
    const __m256i idx = _mm256_and_si256(ki, idx_mask);
    const __m256d scale = _mm256_castsi256_pd(_mm256_add_epi64(
        _mm256_i64gather_epi64(reinterpret_cast<const long long*>(kTabF), idx, 8), _mm256_slli_epi64(ki, 47)));
    const __m256d z = _mm256_fmadd_pd(r, c0, c1);
    const __m256d r2 = _mm256_mul_pd(r, r);
    __m256d y = _mm256_fmadd_pd(r, c2, one);
    y = _mm256_fmadd_pd(z, r2, y);
    y = _mm256_mul_pd(y, scale);
    _mm_storeu_ps(x + i, _mm256_cvtpd_ps(y));
    const int main = _mm_movemask_ps(_mm_cmp_ps(_mm_and_ps(v, abs_mask), end, _CMP_LT_OQ));
    if (main != 0xF)
      for (int l = 0; l < 4; ++l)
        if (!((main >> l) & 1)) x[i + l] = std::exp(v[l]);
  }
  expf_scalar(x + i, n - i);
}
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
