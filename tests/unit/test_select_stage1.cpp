// select_stage1 (kernels/select_stage1.hpp) on the host: which stage-1 kernel runs
// for each KV dtype, each requested kernel, the refusals of a named kernel or
// precision mode that cannot serve and their reasons, on an sm_90 device, an older
// NVIDIA device, a build without sm_90a code, AMD, and no backend; the key of the
// wgmma dispatch table. Plus a sweep against a transcription of the rule it replaced
// (stage1_kernel_for, mla_decode.hip before the split by family), so what automatic
// picks stays exactly as it was, and a named kernel runs exactly where it applied.
#include <catch2/catch.hpp>

#include <string>

#include "kernels/select_stage1.hpp"
#include "kernels/stage1_mma_shape.hpp"

using mla::ElemType;
using mla::GpuVendor;
using mla::Stage1Device;
using mla::Stage1Kernel;
using mla::Stage1Params;

namespace {

const Stage1Device kH200{GpuVendor::nvidia, 90, true};      // sm_90a build on a compute-9.0 device
const Stage1Device kH200NoSm90a{GpuVendor::nvidia, 90, false};  // e.g. CMAKE_CUDA_ARCHITECTURES=80
const Stage1Device kA100{GpuVendor::nvidia, 80, true};      // sm_90a build, compute-8.0 device
const Stage1Device kMi300{GpuVendor::amd, 0, false};
const Stage1Device kNoBackend{};

Stage1Params params(Stage1Kernel k, ElemType q, ElemType kv, int heads = 16, int head_dim = 576, int v_dim = 512,
                    int64_t max_pairs = 0) {
  Stage1Params p;
  p.kernel = k;
  p.q_type = q;
  p.kv_type = kv;
  p.heads = heads;
  p.head_dim = head_dim;
  p.v_dim = v_dim;
  p.max_pairs = max_pairs;
  return p;
}

Stage1Kernel pick(const Stage1Params& p, const Stage1Device& d) {
  const mla::Stage1Choice c = mla::select_stage1(p, d);
  INFO("refusal: " << c.refusal.value_or("none"));
  REQUIRE_FALSE(c.refusal);
  return c.kernel;
}
// The refusal of p on d ("" when p runs).
std::string refusal(const Stage1Params& p, const Stage1Device& d) {
  return mla::select_stage1(p, d).refusal.value_or("");
}
bool refused_with(const Stage1Params& p, const Stage1Device& d, const std::string& text) {
  const std::string why = refusal(p, d);
  INFO("refusal: " << why);
  return !why.empty() && why.find(text) != std::string::npos;
}
bool why_has(const Stage1Params& p, const Stage1Device& d, const std::string& text) {
  const std::string why = mla::select_stage1(p, d).why;
  INFO("why: " << why);
  return why.find(text) != std::string::npos;
}

constexpr Stage1Kernel A = Stage1Kernel::automatic, W = Stage1Kernel::wgmma, M = Stage1Kernel::mma,
                       C = Stage1Kernel::cuda_core;
constexpr ElemType bf16 = ElemType::bf16, fp16 = ElemType::fp16, fp8 = ElemType::fp8;

// The rule before select_stage1, transcribed from mla_decode.hip (stage1_kernel_for,
// mma_applies, wgmma_applies, tc::smem_bytes), with the build and device as inputs.
Stage1Kernel old_rule(const Stage1Params& p, const Stage1Device& d) {
  const bool cuda = d.vendor == GpuVendor::nvidia;
  const int tile_n = cuda ? 8 : 16, parts = 32 / tile_n, cols = 16 * tile_n;
  auto exact = [&] {
    const bool f16 = p.q_type == fp16 || p.kv_type == fp16;
    return f16 ? (p.q_type != bf16 && p.kv_type != bf16) : true;
  };
  auto amd_smem = [&](int head_dim, bool kv_fp8) {  // tc::smem_bytes, AMD: one stage, no fp8 staging, G = 1
    const size_t rows16 = size_t(head_dim + 8) * 2;
    return 16 * rows16 + 32 * rows16 + 2 * 16 * 40 * 2 + 2 * 2 * 16 * 4 + 16 * 4 + (kv_fp8 ? 256 * 2 : 0);
  };
  auto mma_applies = [&] {
    const bool fits = cuda || amd_smem(p.head_dim, p.kv_type == fp8) <= 65536;
    return exact() && p.head_dim % 32 == 0 && p.v_dim % (2 * tile_n) == 0 && p.v_dim <= parts * cols && fits;
  };
  auto wgmma_applies = [&] {
    if (!d.wgmma_built) return false;
    const int64_t pairs = p.max_pairs > 0 ? p.max_pairs : p.heads;
    const bool kv8_ok = p.kv_type != fp8 || (p.q_type != fp16 && pairs <= 16);
    return d.compute_capability == 90 && exact() && kv8_ok && (p.head_dim == 576 || p.head_dim == 512) &&
           p.v_dim == 512;
  };
  if (cuda) {
    const Stage1Kernel want = p.kernel;
    if (want == C) return C;
    // automatic took wgmma for 16-bit KV only until fp8 KV was staged with cp.async
    // (docs/bench_notes.md); since then wherever wgmma applies.
    const bool auto_wgmma = want == A;
    if ((want == W || auto_wgmma) && wgmma_applies()) return W;
    if (mma_applies()) return M;
  } else {
    if (p.kernel == M && mma_applies()) return M;
  }
  return C;
}

}  // namespace

TEST_CASE("select_stage1: automatic on an sm_90 device: wgmma where it applies, fp8 KV on <= 16 pairs included") {
  CHECK(pick(params(A, bf16, bf16), kH200) == W);
  CHECK(pick(params(A, fp16, fp16), kH200) == W);
  CHECK(pick(params(A, fp8, bf16), kH200) == W);  // fp8 q is exact in bf16
  CHECK(pick(params(A, bf16, bf16, 128), kH200) == W);           // C1: the row-major kernel
  CHECK(pick(params(A, bf16, bf16, 16, 576, 512, 64), kH200) == W);  // M2: 4 q rows x 16 heads
  CHECK(pick(params(A, bf16, bf16, 16, 512, 512), kH200) == W);  // rope-free head_dim 512
  CHECK(why_has(params(A, bf16, bf16), kH200, "automatic"));

  CHECK(pick(params(A, bf16, fp8), kH200) == W);  // F1: the transposed kernel's staged fp8 producer
  CHECK(pick(params(A, fp8, fp8), kH200) == W);
  CHECK(why_has(params(A, bf16, fp8), kH200, "automatic: the warpgroup kernel applies"));
  // where the fp8 producer does not apply: fp16 q, works of more than 16 pairs
  CHECK(pick(params(A, fp16, fp8), kH200) == M);
  CHECK(why_has(params(A, fp16, fp8), kH200, "fp8 KV needs bf16 operands"));
  CHECK(pick(params(A, bf16, fp8, 16, 576, 512, 64), kH200) == M);
  CHECK(why_has(params(A, bf16, fp8, 16, 576, 512, 64), kH200, "transposed kernel only"));
}

TEST_CASE("select_stage1: each requested kernel on an sm_90 device, where it applies") {
  for (ElemType kv : {bf16, fp16, fp8}) {
    const ElemType q = kv == fp16 ? fp16 : bf16;
    INFO("KV " << int(kv));
    CHECK(pick(params(W, q, kv), kH200) == W);  // fp8 KV: the transposed kernel, 16 pairs
    CHECK(pick(params(M, q, kv), kH200) == M);
    CHECK(pick(params(C, q, kv), kH200) == C);
    CHECK(why_has(params(W, q, kv), kH200, "asked, and it applies"));
    CHECK(why_has(params(C, q, kv), kH200, "asked"));
  }
}

TEST_CASE("select_stage1: wgmma asked where it does not apply is refused with the reason, never substituted") {
  // fp8 KV beyond the transposed kernel's 16 pairs
  CHECK(refused_with(params(W, bf16, fp8, 128), kH200, "stage-1 kernel wgmma was asked but wgmma does not apply ("));
  CHECK(refused_with(params(W, bf16, fp8, 128), kH200, "transposed kernel only"));
  CHECK(refused_with(params(W, bf16, fp8, 16, 576, 512, 17), kH200, "here 17"));
  CHECK(pick(params(W, bf16, fp8, 128, 576, 512, 16), kH200) == W);  // max_pairs, not heads, when given
  CHECK(refused_with(params(W, bf16, fp8, 32), kH200, "here 32"));   // max_pairs 0 reads as heads
  CHECK(pick(params(A, bf16, fp8, 32), kH200) == M);                 // automatic chooses among what applies
  // fp8 KV with an fp16 q: exact in fp16, but the converting producer writes bf16
  CHECK(refused_with(params(W, fp16, fp8), kH200, "q is fp16"));
  // shapes the warpgroup kernels are not built for
  CHECK(refused_with(params(W, bf16, bf16, 20, 320, 256), kH200, "head_dim 320"));
  CHECK(refused_with(params(W, bf16, bf16, 16, 576, 256), kH200, "v_dim 256"));
  CHECK(pick(params(A, bf16, bf16, 16, 576, 256), kH200) == M);
  CHECK(pick(params(A, bf16, bf16, 16, 576, 504), kH200) == C);  // nor mma.sync: 504 % 16
  CHECK(why_has(params(A, bf16, bf16, 16, 576, 504), kH200, "not a multiple of 16"));
  // bf16 with fp16: exact in neither 16-bit type, for every matrix-core kernel
  for (Stage1Kernel k : {W, M}) {
    CHECK(refused_with(params(k, bf16, fp16), kH200, "not exact in one 16-bit MMA type"));
    CHECK(refused_with(params(k, fp16, bf16), kH200, "not exact in one 16-bit MMA type"));
  }
  CHECK(pick(params(A, bf16, fp16), kH200) == C);
}

TEST_CASE("select_stage1: mma asked where it does not apply is refused") {
  CHECK(refused_with(params(M, bf16, bf16, 16, 576, 504), kH200, "mma does not apply (v_dim 504"));
  CHECK(pick(params(M, bf16, bf16, 16, 576, 496), kH200) == M);  // 496 % 16 == 0 on NVIDIA
  CHECK(pick(params(M, bf16, bf16, 16, 320, 256), kH200) == M);
  CHECK(refused_with(params(M, bf16, bf16, 16, 72, 64), kH200, "mma does not apply (head_dim 72"));
}

TEST_CASE("select_stage1: older NVIDIA devices and builds without sm_90a code never run wgmma") {
  for (const Stage1Device& d : {kA100, kH200NoSm90a}) {
    CHECK(pick(params(A, bf16, bf16), d) == M);
    CHECK(pick(params(A, bf16, bf16, 128), d) == M);
    CHECK(!refusal(params(W, bf16, bf16), d).empty());
    CHECK(!refusal(params(W, bf16, fp8), d).empty());
    CHECK(pick(params(A, bf16, fp8), d) == M);
    CHECK(pick(params(A, bf16, fp16), d) == C);
    CHECK(pick(params(C, bf16, bf16), d) == C);
  }
  CHECK(refused_with(params(W, bf16, bf16), kA100, "compute capability 8.0"));
  CHECK(why_has(params(A, bf16, bf16), kH200NoSm90a, "no sm_90a code"));
}

TEST_CASE("select_stage1: AMD runs the MFMA kernel only when asked, everything else on cuda_core") {
  for (ElemType kv : {bf16, fp16, fp8}) {
    const ElemType q = kv == fp16 ? fp16 : bf16;
    CHECK(pick(params(A, q, kv), kMi300) == C);
    CHECK(refused_with(params(W, q, kv), kMi300, "NVIDIA sm_90a only"));
    CHECK(pick(params(M, q, kv), kMi300) == M);
    CHECK(pick(params(C, q, kv), kMi300) == C);
  }
  CHECK(why_has(params(A, bf16, bf16), kMi300, "ask for mma"));
  CHECK(pick(params(M, bf16, bf16, 16, 512, 512), kMi300) == M);
  // v_dim: whole pairs of 16-column MFMA tiles
  CHECK(refused_with(params(M, bf16, bf16, 16, 576, 496), kMi300, "not a multiple of 32"));
  // LDS: 64 KB; head_dim 640 fits with 16-bit KV, not with fp8's decode table
  CHECK(mla::mma_shape::smem_bytes(mla::mma_shape::kAmd, 640, false, 1) <= mla::mma_shape::kAmdLdsBytes);
  CHECK(mla::mma_shape::smem_bytes(mla::mma_shape::kAmd, 640, true, 1) > mla::mma_shape::kAmdLdsBytes);
  CHECK(pick(params(M, bf16, bf16, 16, 640, 512), kMi300) == M);
  CHECK(refused_with(params(M, bf16, fp8, 16, 640, 512), kMi300, "bytes of LDS"));
  CHECK(pick(params(M, bf16, fp8, 16, 640, 512), kH200) == M);  // NVIDIA: shared memory is no limit here
}

TEST_CASE("select_stage1: no GPU backend: cuda_core (nothing runs); a named matrix kernel is refused") {
  CHECK(pick(params(A, bf16, bf16), kNoBackend) == C);
  CHECK(pick(params(C, bf16, bf16), kNoBackend) == C);
  CHECK(why_has(params(A, bf16, bf16), kNoBackend, "no GPU backend"));
  for (Stage1Kernel k : {W, M}) CHECK(refused_with(params(k, bf16, bf16), kNoBackend, "no GPU backend"));
}

TEST_CASE("select_stage1: the same choice as the rule it replaced, over every input it reads") {
  const Stage1Device devices[] = {kH200, kH200NoSm90a, kA100, kMi300};
  int compared = 0;
  for (const Stage1Device& d : devices)
    for (Stage1Kernel k : {A, W, M, C})
      for (ElemType q : {bf16, fp16, fp8})
        for (ElemType kv : {bf16, fp16, fp8})
          for (int heads : {1, 16, 20, 128})
            for (int64_t max_pairs : {0, 4, 16, 17, 64, 512})
              for (int head_dim : {64, 72, 320, 512, 576, 640})
                for (int v_dim : {64, 256, 496, 504, 512}) {
                  const Stage1Params p = params(k, q, kv, heads, head_dim, v_dim, max_pairs);
                  const mla::Stage1Choice c = mla::select_stage1(p, d);
                  INFO("vendor " << int(d.vendor) << " cc " << d.compute_capability << " built " << d.wgmma_built
                                 << " asked " << to_string(k) << " q " << int(q) << " kv " << int(kv) << " heads "
                                 << heads << " max_pairs " << max_pairs << " head_dim " << head_dim << " v_dim "
                                 << v_dim << ": " << c.why);
                  // automatic and cuda_core choose as before; a named matrix kernel runs exactly
                  // where the old rule gave it, and is refused (never substituted) elsewhere.
                  const Stage1Kernel old = old_rule(p, d);
                  if (k == A || k == C) {
                    REQUIRE_FALSE(c.refusal);
                    REQUIRE(c.kernel == old);
                  } else if (old == k) {
                    REQUIRE_FALSE(c.refusal);
                    REQUIRE(c.kernel == k);
                  } else {
                    REQUIRE(c.refusal);
                  }
                  REQUIRE(c.kernel != A);
                  REQUIRE((c.refusal || !c.why.empty()));
                  ++compared;
                }
  CHECK(compared == 4 * 4 * 3 * 3 * 4 * 6 * 6 * 5);
}

TEST_CASE("select_stage1: fp8 q with e4m3fn KV takes the transposed kernel's e4m3 path, and says so",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, fp8, fp8);
  CHECK(mla::wgmma_qk_e4m3(p));
  CHECK(pick(p, kH200) == W);
  CHECK(mla::wgmma_pv_e4m3(p));  // P·V too, by default
  CHECK(why_has(p, kH200, "Q·Kᵀ and P·V on e4m3 wgmma"));
  p.fp8_pv = mla::Fp8PvMma::fp16;  // P·V on fp16, Q·Kᵀ still e4m3
  CHECK(mla::wgmma_qk_e4m3(p));
  CHECK_FALSE(mla::wgmma_pv_e4m3(p));
  CHECK(why_has(p, kH200, "Q·Kᵀ on e4m3 wgmma"));
  CHECK_FALSE(why_has(p, kH200, "P·V on e4m3"));
  p.fp8_pv = mla::Fp8PvMma::e4m3;
  p.fp8_qk = mla::Fp8QkMma::fp16;  // the staged path: neither
  CHECK_FALSE(mla::wgmma_pv_e4m3(p));
  p.fp8_qk = mla::Fp8QkMma::e4m3;
  p.fp8_fnuz = true;  // another bias and NaN code than wgmma's e4m3: the staged conversion
  CHECK_FALSE(mla::wgmma_qk_e4m3(p));
  CHECK_FALSE(why_has(p, kH200, "e4m3 wgmma"));
  CHECK_FALSE(mla::wgmma_qk_e4m3(params(A, bf16, fp8)));  // bf16 q: staged
  CHECK_FALSE(mla::wgmma_qk_e4m3(params(A, fp8, bf16)));  // 16-bit KV
  CHECK_FALSE(why_has(params(A, bf16, fp8), kH200, "e4m3 wgmma"));
}

TEST_CASE("select_stage1: e4m3fn KV with fp16 Q·Kᵀ converts K and V in registers when q is exact in fp16, and says so",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, fp8);  // F1 as issue 19 names it: bf16 q (AITER a16w8)
  p.q_f16_exact = true;
  CHECK(mla::wgmma_k_registers(p));
  CHECK(mla::wgmma_raw_ring(p));
  CHECK_FALSE(mla::wgmma_qk_e4m3(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "; bf16 q x e4m3fn KV: K and V converted to fp16 in registers"));
  CHECK(why_has(p, kH200, "P once in fp16"));
  CHECK_FALSE(mla::wgmma_pv_e4m3(p));  // automatic: fp16 P·V where the scores are exact
  p.fp8_pv = mla::Fp8PvMma::e4m3;      // asked: a precision mode
  CHECK(mla::wgmma_pv_e4m3(p));
  CHECK(why_has(p, kH200, "K converted to fp16 in registers, Q·Kᵀ on fp16 wgmma, P·V on e4m3 wgmma"));
  p.fp8_pv = mla::Fp8PvMma::fp16;
  CHECK_FALSE(mla::wgmma_pv_e4m3(p));
  p.fp8_pv = mla::Fp8PvMma::automatic;
  p.fp8_convert = mla::Fp8Convert::staged;  // the producer's 16-bit stages instead
  CHECK_FALSE(mla::wgmma_k_registers(p));
  CHECK_FALSE(mla::wgmma_raw_ring(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "fp8 KV converted into 16-bit stages by the producer"));
  p.fp8_convert = mla::Fp8Convert::automatic;
  p.q_f16_exact = false;  // q not exact in fp16: bf16 operands, staged
  CHECK_FALSE(mla::wgmma_k_registers(p));
  CHECK(why_has(p, kH200, "16-bit stages"));
  p.fp8_convert = mla::Fp8Convert::registers;  // asked by name where q is not exact: refused
  CHECK(refused_with(p, kH200, "--fp8-convert registers was asked but q is not exact in fp16"));
  p.fp8_convert = mla::Fp8Convert::automatic;
  p.q_f16_exact = true;
  p.fp8_fnuz = true;  // e4m3fnuz: cvt.rn.f16x2.e4m3x2 reads e4m3fn only, staged
  CHECK_FALSE(mla::wgmma_k_registers(p));

  Stage1Params q8 = params(A, fp8, fp8);  // fp8 q: e4m3 Q·Kᵀ by default, fp16 Q·Kᵀ in registers when asked
  q8.q_f16_exact = true;
  CHECK_FALSE(mla::wgmma_k_registers(q8));
  q8.fp8_qk = mla::Fp8QkMma::fp16;
  CHECK(mla::wgmma_k_registers(q8));
  CHECK(why_has(q8, kH200, "; fp8 q x e4m3fn KV: K and V converted to fp16 in registers"));
  CHECK_FALSE(mla::wgmma_k_registers(params(A, bf16, bf16)));  // 16-bit KV: nothing to convert
  CHECK_FALSE(why_has(params(A, bf16, bf16), kH200, "16-bit stages"));
}

TEST_CASE("select_stage1: P once applies to 16-bit KV on both wgmma kernels, and says so", "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, bf16, 16, 576, 512, 64);  // 64 pairs: the row-major kernel
  CHECK_FALSE(mla::wgmma_p_once(p));
  p.pv_precision = mla::PvPrecision::once;
  CHECK(mla::wgmma_p_once(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "P·V with P rounded once to the operand type (--pv-precision once)"));
  Stage1Params small = params(A, bf16, bf16);  // 16 pairs: the transposed kernel
  small.pv_precision = mla::PvPrecision::once;
  CHECK(mla::wgmma_p_once(small));
  CHECK(why_has(small, kH200, "P rounded once"));
  Stage1Params kv8 = params(A, bf16, fp8);  // fp8 KV: the raw paths round P once anyway, staged keeps two parts
  kv8.pv_precision = mla::PvPrecision::once;
  CHECK_FALSE(mla::wgmma_p_once(kv8));
  CHECK(refused_with(kv8, kH200, "--pv-precision once was asked but only the wgmma kernels on 16-bit KV round P once"));
}

TEST_CASE("select_stage1: a named precision mode the chosen path cannot run is refused, automatic never is",
          "[unit][select_stage1]") {
  using PP = mla::PvPrecision;
  using QK = mla::Fp8QkMma;
  using PV = mla::Fp8PvMma;
  using CV = mla::Fp8Convert;
  struct Refused {
    Stage1Params p;
    const Stage1Device& device;
    const char* text;
  };
  auto with = [](Stage1Params p, PP pp, QK qk, PV pv, CV cv) {
    p.pv_precision = pp;
    p.fp8_qk = qk;
    p.fp8_pv = pv;
    p.fp8_convert = cv;
    return p;
  };
  const Refused refused[] = {
      // the mma and CUDA-core kernels have no precision modes but the defaults
      {with(params(M, bf16, bf16), PP::once, QK::automatic, PV::automatic, CV::automatic), kH200, "--pv-precision once was asked"},
      {with(params(C, bf16, bf16), PP::once, QK::automatic, PV::automatic, CV::automatic), kH200, "--pv-precision once was asked"},
      {with(params(M, bf16, bf16), PP::automatic, QK::automatic, PV::e4m3, CV::automatic), kH200, "--fp8-pv e4m3 was asked"},
      {with(params(C, bf16, bf16), PP::automatic, QK::automatic, PV::e4m3, CV::automatic), kH200, "--fp8-pv e4m3 was asked"},
      // automatic on a device without wgmma: the named mode follows the kernel automatic picks
      {with(params(A, bf16, bf16), PP::once, QK::automatic, PV::automatic, CV::automatic), kA100, "(the mma kernel runs"},
      // 16-bit KV has no fp8 modes
      {with(params(W, bf16, bf16), PP::split, QK::fp16, PV::automatic, CV::automatic), kH200,
       "--fp8-qk fp16 was asked but only the wgmma kernel on fp8 q with e4m3fn KV"},
      {with(params(W, bf16, bf16), PP::split, QK::automatic, PV::automatic, CV::staged), kH200,
       "--fp8-convert staged was asked"},
  };
  for (const Refused& r : refused) CHECK(refused_with(r.p, r.device, r.text));
  CHECK(pick(with(params(W, bf16, bf16), PP::split, QK::automatic, PV::automatic, CV::automatic), kH200) == W);
  // fp8 q with e4m3fn KV: each mode by name.
  Stage1Params q8 = params(A, fp8, fp8);
  q8.q_f16_exact = true;
  for (mla::Fp8QkMma m : {mla::Fp8QkMma::e4m3, mla::Fp8QkMma::fp16}) {
    q8.fp8_qk = m;
    CHECK(pick(q8, kH200) == W);
  }
  q8.fp8_qk = mla::Fp8QkMma::automatic;
  q8.fp8_convert = mla::Fp8Convert::staged;  // Q·Kᵀ on e4m3: nothing is converted for Q·Kᵀ
  CHECK(refused_with(q8, kH200, "--fp8-convert staged was asked but only the wgmma kernel on e4m3fn KV with Q·Kᵀ on fp16"));
  q8.fp8_convert = mla::Fp8Convert::automatic;
  q8.pv_precision = mla::PvPrecision::split;  // the raw paths take P once in fp16
  CHECK(refused_with(q8, kH200, "--pv-precision split was asked but this fp8 path takes P once in fp16"));
  // e4m3fnuz: no e4m3 wgmma, no K in registers.
  Stage1Params fnuz = params(A, fp8, fp8);
  fnuz.fp8_fnuz = true;
  fnuz.fp8_qk = mla::Fp8QkMma::e4m3;
  CHECK(refused_with(fnuz, kH200, "--fp8-qk e4m3 was asked"));
  fnuz.fp8_qk = mla::Fp8QkMma::automatic;
  fnuz.fp8_pv = mla::Fp8PvMma::fp16;
  CHECK(refused_with(fnuz, kH200, "--fp8-pv fp16 was asked but only the wgmma kernel's raw-code fp8 paths"));
}

TEST_CASE("wgmma_key: every path of the dispatch table, from the view and the modes", "[unit][select_stage1]") {
  using P = mla::WgmmaPath;
  auto key = [](const Stage1Params& p) { return mla::wgmma_key(p); };
  CHECK(key(params(A, bf16, bf16, 16, 576, 512, 64)) == mla::WgmmaKey{P::rows_bf16, 576, false, false});
  CHECK(key(params(A, fp16, fp16, 16, 512, 512, 64)) == mla::WgmmaKey{P::rows_fp16, 512, false, false});
  Stage1Params once = params(A, bf16, bf16, 16, 576, 512, 64);
  once.pv_precision = mla::PvPrecision::once;
  CHECK(key(once) == mla::WgmmaKey{P::rows_bf16, 576, true, false});
  once.max_pairs = 16;
  CHECK(key(once) == mla::WgmmaKey{P::t_bf16, 576, true, false});
  CHECK(key(params(A, fp16, fp16)) == mla::WgmmaKey{P::t_fp16, 576, false, false});
  Stage1Params staged = params(A, bf16, fp8);
  CHECK(key(staged) == mla::WgmmaKey{P::t_fp8_staged_bf16, 576, false, false});
  staged.q_f16_exact = true;
  staged.fp8_convert = mla::Fp8Convert::staged;
  CHECK(key(staged) == mla::WgmmaKey{P::t_fp8_staged_fp16, 576, false, false});
  staged.fp8_convert = mla::Fp8Convert::automatic;
  CHECK(key(staged) == mla::WgmmaKey{P::t_kreg, 576, false, false});
  staged.fp8_pv = mla::Fp8PvMma::e4m3;
  CHECK(key(staged) == mla::WgmmaKey{P::t_kreg, 576, false, true});
  Stage1Params q8 = params(A, fp8, fp8, 16, 512);
  CHECK(key(q8) == mla::WgmmaKey{P::t_e4m3, 512, false, true});
  q8.fp8_pv = mla::Fp8PvMma::fp16;
  CHECK(key(q8) == mla::WgmmaKey{P::t_e4m3, 512, false, false});
}
