// select_stage1 (kernels/select_stage1.hpp) on the host: which stage-1 kernel runs
// for each KV dtype, each requested kernel, the fallbacks and their reasons, on
// an sm_90 device, an older NVIDIA device, a build without sm_90a code, AMD, and
// no backend. Plus a sweep against a transcription of the rule it replaced
// (stage1_kernel_for, mla_decode.hip before the split by family), so what
// automatic and a fallback pick stays exactly as it was.
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

Stage1Kernel pick(const Stage1Params& p, const Stage1Device& d) { return mla::select_stage1(p, d).kernel; }
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
    // (docs/bench_notes.md step 22); since then wherever wgmma applies.
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

TEST_CASE("select_stage1: wgmma asked where it does not apply falls back to mma, then cuda_core, with the reason") {
  // fp8 KV beyond the transposed kernel's 16 pairs
  CHECK(pick(params(W, bf16, fp8, 128), kH200) == M);
  CHECK(why_has(params(W, bf16, fp8, 128), kH200, "transposed kernel only"));
  CHECK(pick(params(W, bf16, fp8, 16, 576, 512, 17), kH200) == M);
  CHECK(pick(params(W, bf16, fp8, 128, 576, 512, 16), kH200) == W);  // max_pairs, not heads, when given
  CHECK(pick(params(W, bf16, fp8, 32), kH200) == M);                 // max_pairs 0 reads as heads
  // fp8 KV with an fp16 q: exact in fp16, but the converting producer writes bf16
  CHECK(pick(params(W, fp16, fp8), kH200) == M);
  CHECK(why_has(params(W, fp16, fp8), kH200, "q is fp16"));
  // shapes the warpgroup kernels are not built for
  CHECK(pick(params(W, bf16, bf16, 20, 320, 256), kH200) == M);
  CHECK(why_has(params(W, bf16, bf16, 20, 320, 256), kH200, "head_dim 320"));
  CHECK(pick(params(W, bf16, bf16, 16, 576, 256), kH200) == M);
  CHECK(why_has(params(W, bf16, bf16, 16, 576, 256), kH200, "v_dim 256"));
  CHECK(pick(params(W, bf16, bf16, 16, 576, 504), kH200) == C);  // nor mma.sync: 504 % 16
  CHECK(why_has(params(W, bf16, bf16, 16, 576, 504), kH200, "not a multiple of 16"));
  CHECK(pick(params(W, bf16, bf16, 16, 72, 64), kH200) == C);    // head_dim 72 % 32
  // bf16 with fp16: exact in neither 16-bit type, for every matrix-core kernel
  for (Stage1Kernel k : {A, W, M}) {
    CHECK(pick(params(k, bf16, fp16), kH200) == C);
    CHECK(pick(params(k, fp16, bf16), kH200) == C);
    CHECK(why_has(params(k, bf16, fp16), kH200, "not exact in one 16-bit MMA type"));
  }
}

TEST_CASE("select_stage1: mma asked where it does not apply falls back to cuda_core") {
  CHECK(pick(params(M, bf16, bf16, 16, 576, 504), kH200) == C);
  CHECK(pick(params(M, bf16, bf16, 16, 576, 496), kH200) == M);  // 496 % 16 == 0 on NVIDIA
  CHECK(pick(params(M, bf16, bf16, 16, 320, 256), kH200) == M);
  CHECK(pick(params(M, bf16, bf16, 16, 72, 64), kH200) == C);
  CHECK(why_has(params(M, bf16, bf16, 16, 72, 64), kH200, "mma does not apply (head_dim 72"));
}

TEST_CASE("select_stage1: older NVIDIA devices and builds without sm_90a code never run wgmma") {
  for (const Stage1Device& d : {kA100, kH200NoSm90a}) {
    CHECK(pick(params(A, bf16, bf16), d) == M);
    CHECK(pick(params(A, bf16, bf16, 128), d) == M);
    CHECK(pick(params(W, bf16, bf16), d) == M);
    CHECK(pick(params(W, bf16, fp8), d) == M);
    CHECK(pick(params(A, bf16, fp8), d) == M);
    CHECK(pick(params(W, bf16, fp16), d) == C);
    CHECK(pick(params(C, bf16, bf16), d) == C);
  }
  CHECK(why_has(params(W, bf16, bf16), kA100, "compute capability 8.0"));
  CHECK(why_has(params(A, bf16, bf16), kH200NoSm90a, "no sm_90a code"));
}

TEST_CASE("select_stage1: AMD runs the MFMA kernel only when asked, everything else on cuda_core") {
  for (ElemType kv : {bf16, fp16, fp8}) {
    const ElemType q = kv == fp16 ? fp16 : bf16;
    CHECK(pick(params(A, q, kv), kMi300) == C);
    CHECK(pick(params(W, q, kv), kMi300) == C);  // not mma: only an explicit mma selects it
    CHECK(pick(params(M, q, kv), kMi300) == M);
    CHECK(pick(params(C, q, kv), kMi300) == C);
  }
  CHECK(why_has(params(A, bf16, bf16), kMi300, "ask for mma"));
  CHECK(why_has(params(W, bf16, bf16), kMi300, "NVIDIA sm_90a only"));
  CHECK(pick(params(M, bf16, bf16, 16, 512, 512), kMi300) == M);
  // v_dim: whole pairs of 16-column MFMA tiles
  CHECK(pick(params(M, bf16, bf16, 16, 576, 496), kMi300) == C);
  CHECK(why_has(params(M, bf16, bf16, 16, 576, 496), kMi300, "not a multiple of 32"));
  // LDS: 64 KB; head_dim 640 fits with 16-bit KV, not with fp8's decode table
  CHECK(mla::mma_shape::smem_bytes(mla::mma_shape::kAmd, 640, false, 1) <= mla::mma_shape::kAmdLdsBytes);
  CHECK(mla::mma_shape::smem_bytes(mla::mma_shape::kAmd, 640, true, 1) > mla::mma_shape::kAmdLdsBytes);
  CHECK(pick(params(M, bf16, bf16, 16, 640, 512), kMi300) == M);
  CHECK(pick(params(M, bf16, fp8, 16, 640, 512), kMi300) == C);
  CHECK(why_has(params(M, bf16, fp8, 16, 640, 512), kMi300, "bytes of LDS"));
  CHECK(pick(params(M, bf16, fp8, 16, 640, 512), kH200) == M);  // NVIDIA: shared memory is no limit here
}

TEST_CASE("select_stage1: no GPU backend: cuda_core (nothing runs)") {
  for (Stage1Kernel k : {A, W, M, C}) CHECK(pick(params(k, bf16, bf16), kNoBackend) == C);
  CHECK(why_has(params(A, bf16, bf16), kNoBackend, "no GPU backend"));
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
                  REQUIRE(c.kernel == old_rule(p, d));
                  REQUIRE(c.kernel != A);
                  REQUIRE(!c.why.empty());
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
  CHECK_FALSE(why_has(p, kH200, "half-lines"));  // whole lines: the default form, not said
  p.fp8_copy = mla::Fp8Copy::half_lines;  // the producer's other copy form, said
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "Q·Kᵀ and P·V on e4m3 wgmma"));
  CHECK(why_has(p, kH200, "; the producer copies half-lines (64 bytes)"));
  Stage1Params staged = params(A, bf16, fp8);  // bf16 q: the staged producer, which has one form
  staged.fp8_copy = mla::Fp8Copy::half_lines;
  CHECK_FALSE(why_has(staged, kH200, "half-lines"));
  p.fp8_copy = mla::Fp8Copy::lines;
  p.fp8_pv = mla::Fp8PvMma::fp16;  // P·V on fp16 (step 28's form), Q·Kᵀ still e4m3
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
  p.fp8_pv = mla::Fp8PvMma::e4m3;      // asked: the experiment of bench_notes step 31
  CHECK(mla::wgmma_pv_e4m3(p));
  CHECK(why_has(p, kH200, "K converted to fp16 in registers, Q·Kᵀ on fp16 wgmma, P·V on e4m3 wgmma"));
  p.fp8_pv = mla::Fp8PvMma::fp16;
  CHECK_FALSE(mla::wgmma_pv_e4m3(p));
  p.fp8_pv = mla::Fp8PvMma::automatic;
  p.fp8_copy = mla::Fp8Copy::half_lines;  // the raw ring's producer: both copy forms
  CHECK(why_has(p, kH200, "; the producer copies half-lines (64 bytes)"));
  p.fp8_convert = mla::Fp8Convert::staged;  // the producer's 16-bit stages instead
  CHECK_FALSE(mla::wgmma_k_registers(p));
  CHECK_FALSE(mla::wgmma_raw_ring(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "fp8 KV converted into 16-bit stages by the producer"));
  CHECK_FALSE(why_has(p, kH200, "half-lines"));
  p.fp8_convert = mla::Fp8Convert::registers;
  p.q_f16_exact = false;  // q not exact in fp16: bf16 operands, staged
  CHECK_FALSE(mla::wgmma_k_registers(p));
  CHECK(why_has(p, kH200, "16-bit stages"));
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

TEST_CASE("select_stage1: P once applies to 16-bit KV on the transposed kernel and the row-major serial and split-qk schedules, and says so",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, bf16, 16, 576, 512, 64);  // M2: 64 pairs a work, the row-major kernel
  CHECK_FALSE(mla::wgmma_p_once(p));  // default: P in two parts
  CHECK_FALSE(why_has(p, kH200, "P rounded once"));
  p.pv_precision = mla::PvPrecision::once;
  CHECK(mla::wgmma_p_once(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "; P·V with P rounded once to the operand type (--pv-precision once)"));
  p.wgmma_schedule = mla::WgmmaSchedule::split_qk;  // built with P once too, and says it splits Q·Kᵀ
  CHECK(mla::wgmma_p_once(p));
  CHECK(why_has(p, kH200, "; P·V with P rounded once to the operand type (--pv-precision once); the warpgroups split "
                          "each tile's Q·Kᵀ and both run the softmax (--wgmma-schedule split-qk)"));
  p.wgmma_schedule = mla::WgmmaSchedule::qk_ahead;  // built with P in two parts only
  CHECK_FALSE(mla::wgmma_p_once(p));
  CHECK_FALSE(why_has(p, kH200, "P rounded once"));
  Stage1Params small = params(A, bf16, bf16);  // 16 pairs: the transposed kernel, any schedule
  small.pv_precision = mla::PvPrecision::once;
  CHECK(mla::wgmma_p_once(small));
  CHECK(why_has(small, kH200, "P rounded once"));
  small.wgmma_schedule = mla::WgmmaSchedule::qk_ahead;  // the row-major kernel's option only
  CHECK(mla::wgmma_p_once(small));
  small.wgmma_schedule = mla::WgmmaSchedule::split_qk;  // likewise: the transposed kernel says nothing of it
  CHECK_FALSE(why_has(small, kH200, "split-qk"));
  Stage1Params kv8 = params(A, bf16, fp8);  // fp8 KV: its own P forms (Fp8Convert, Fp8PvMma)
  kv8.pv_precision = mla::PvPrecision::once;
  CHECK_FALSE(mla::wgmma_p_once(kv8));
  CHECK_FALSE(why_has(kv8, kH200, "P rounded once"));
  CHECK_FALSE(mla::wgmma_p_once(params(A, bf16, bf16, 16, 576, 512, 64)));
}

TEST_CASE("select_stage1: serial-64 runs the row-major kernel on 64-token tiles, with P as asked, and says so",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, bf16, 16, 576, 512, 64);  // M2: the row-major kernel
  p.wgmma_schedule = mla::WgmmaSchedule::serial_64;
  CHECK(mla::wgmma_rows_64(p));
  CHECK_FALSE(mla::wgmma_p_once(p));  // P in two parts (the default): the hi part in the tile's rope columns
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "; 64-token tiles, Q·Kᵀ as m64n64 wgmmas (--wgmma-schedule serial-64)"));
  CHECK_FALSE(why_has(p, kH200, "P rounded once"));
  p.pv_precision = mla::PvPrecision::once;
  CHECK(mla::wgmma_p_once(p));
  CHECK(why_has(p, kH200, "(--wgmma-schedule serial-64); P·V with P rounded once to the operand type (--pv-precision once)"));
  Stage1Params small = params(A, bf16, bf16);  // 16 pairs: the transposed kernel, which has no serial-64
  small.wgmma_schedule = mla::WgmmaSchedule::serial_64;
  CHECK_FALSE(mla::wgmma_rows_64(small));
  CHECK_FALSE(why_has(small, kH200, "serial-64"));
  Stage1Params kv8 = params(A, bf16, fp8);  // fp8 KV: the transposed kernel too
  kv8.wgmma_schedule = mla::WgmmaSchedule::serial_64;
  CHECK_FALSE(mla::wgmma_rows_64(kv8));
  CHECK(mla::to_string(mla::WgmmaSchedule::serial_64) == std::string("serial-64"));
  CHECK(mla::wgmma_schedule_from_name("serial-64") == mla::WgmmaSchedule::serial_64);
}

TEST_CASE("select_stage1: seesaw runs the row-major kernel on 64-token tiles with the warpgroups taking turns, and says so",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, bf16, 128, 576, 512, 0);  // C1: the row-major kernel
  p.wgmma_schedule = mla::WgmmaSchedule::seesaw;
  CHECK(mla::wgmma_rows_64(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "; 2 blocks a workgroup, one per 64-pair chunk of its works, side by side; 64-token tiles, "
                          "Q·Kᵀ as m64n64 wgmmas, the warpgroups taking alternate tiles' Q·Kᵀ and softmax "
                          "(--wgmma-schedule seesaw)"));
  CHECK_FALSE(why_has(p, kH200, "serial-64"));
  p.pv_precision = mla::PvPrecision::once;
  CHECK(mla::wgmma_p_once(p));
  CHECK(why_has(p, kH200, "(--wgmma-schedule seesaw); P·V with P rounded once to the operand type (--pv-precision once)"));
  Stage1Params small = params(A, bf16, bf16);  // 16 pairs: the transposed kernel, which has no seesaw
  small.wgmma_schedule = mla::WgmmaSchedule::seesaw;
  CHECK_FALSE(mla::wgmma_rows_64(small));
  CHECK_FALSE(why_has(small, kH200, "seesaw"));
  CHECK(mla::to_string(mla::WgmmaSchedule::seesaw) == std::string("seesaw"));
  CHECK(mla::wgmma_schedule_from_name("seesaw") == mla::WgmmaSchedule::seesaw);
}

TEST_CASE("select_stage1: pair runs the row-major kernel on pairs of 64-token tiles with P rounded once, and says why",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, bf16, 128, 576, 512, 0);  // C1: the row-major kernel
  p.wgmma_schedule = mla::WgmmaSchedule::pair;
  CHECK(mla::wgmma_rows_64(p));
  CHECK(mla::wgmma_runs_pair(p));
  CHECK(pick(p, kH200) == W);
  // P once without --pv-precision once: the schedule has no room for two parts, and says so.
  CHECK(p.pv_precision == mla::PvPrecision::split);
  CHECK(mla::wgmma_p_once(p));
  CHECK(why_has(p, kH200, "; 64-token tiles in pairs, Q·Kᵀ as m64n64 wgmmas, one tile of each pair a warpgroup "
                          "(--wgmma-schedule pair); P·V with P rounded once to the operand type (the pair schedule "
                          "always: two parts do not fit)"));
  CHECK_FALSE(why_has(p, kH200, "--pv-precision once"));
  Stage1Params small = params(A, bf16, bf16);  // 16 pairs: the transposed kernel, which has no pair schedule
  small.wgmma_schedule = mla::WgmmaSchedule::pair;
  CHECK_FALSE(mla::wgmma_runs_pair(small));
  CHECK_FALSE(mla::wgmma_p_once(small));  // nor P once unless asked
  CHECK_FALSE(why_has(small, kH200, "--wgmma-schedule pair"));
  CHECK(mla::to_string(mla::WgmmaSchedule::pair) == std::string("pair"));
  CHECK(mla::wgmma_schedule_from_name("pair") == mla::WgmmaSchedule::pair);
}

TEST_CASE("select_stage1: pair-32 runs the pair schedule on 32-token tiles and four stages, P once, and says so",
          "[unit][select_stage1]") {
  Stage1Params p = params(A, bf16, bf16, 128, 576, 512, 0);  // C1: the row-major kernel
  p.wgmma_schedule = mla::WgmmaSchedule::pair_32;
  CHECK_FALSE(mla::wgmma_rows_64(p));
  CHECK(mla::wgmma_runs_pair(p));
  CHECK(mla::wgmma_p_once(p));
  CHECK(pick(p, kH200) == W);
  CHECK(why_has(p, kH200, "; 32-token tiles in pairs on four stages, one tile of each pair a warpgroup "
                          "(--wgmma-schedule pair-32); P·V with P rounded once to the operand type (the pair schedule "
                          "always: two parts do not fit)"));
  Stage1Params fp8 = p;  // fp8 KV: the transposed kernel's raw-code paths, never the pair kernel
  fp8.kv_type = mla::ElemType::fp8;
  CHECK_FALSE(mla::wgmma_runs_pair(fp8));
  CHECK(mla::to_string(mla::WgmmaSchedule::pair_32) == std::string("pair-32"));
  CHECK(mla::wgmma_schedule_from_name("pair-32") == mla::WgmmaSchedule::pair_32);
}

TEST_CASE("wgmma_pair_tiles: one block per 64-pair chunk of the row-major kernel's works, 1 on the transposed kernel",
          "[unit][select_stage1]") {
  CHECK(mla::wgmma_pair_tiles(params(A, bf16, bf16)) == 1);                         // 16 pairs: transposed
  CHECK(mla::wgmma_pair_tiles(params(A, bf16, bf16, 16, 576, 512, 64)) == 1);      // M2: one chunk
  CHECK(mla::wgmma_pair_tiles(params(A, bf16, bf16, 16, 576, 512, 65)) == 2);      // a 1-pair second chunk
  CHECK(mla::wgmma_pair_tiles(params(A, bf16, bf16, 128, 576, 512, 0)) == 2);      // C1: 128 heads, one q row
  CHECK(mla::wgmma_pair_tiles(params(A, bf16, bf16, 128, 576, 512, 1024)) == 16);  // 8 q rows x 128 heads
  CHECK(mla::wgmma_pair_tiles(params(A, bf16, fp8, 128, 576, 512, 0)) == 1);       // fp8 KV: transposed
  Stage1Params many = params(A, bf16, bf16, 128);
  many.num_workgroups = 132;  // AITER's plan: the grid is 264 blocks, not capped at the SMs
  CHECK(mla::wgmma_pair_tiles(many) == 2);
  CHECK(why_has(many, kH200, "; 2 blocks a workgroup, one per 64-pair chunk of its works, side by side"));
  CHECK_FALSE(why_has(params(A, bf16, bf16, 16, 576, 512, 64), kH200, "blocks a workgroup"));  // one chunk
}
