// Which stage-1 kernel a launch runs, and why: the one place that decides
// (launch_stage1 dispatches on it, GpuExecutor reports it, gpu_tests predicts
// it, tests/unit/test_select_stage1.cpp checks it). Host code with no GPU
// include: the device it decides for is an input, not a query.
#pragma once
#include <algorithm>
#include <cstdint>
#include <string>

#include "kernels/mla_decode.hpp"
#include "kernels/stage1_kernel.hpp"

namespace mla {

enum class GpuVendor : int { none = 0, nvidia = 1, amd = 2 };

// What select_stage1 reads about the build and the device.
struct Stage1Device {
  GpuVendor vendor = GpuVendor::none;  // the build's backend (none: nothing runs)
  int compute_capability = 0;          // NVIDIA major * 10 + minor of the device (90: Hopper); 0 unknown / AMD
  bool wgmma_built = false;            // the build has the sm_90a warpgroup kernels (MLACTL_CUDA_WGMMA)
};

struct Stage1Choice {
  Stage1Kernel kernel = Stage1Kernel::cuda_core;  // never automatic
  std::string why;                                // one line: what was asked, what applies, the fallback
};

// Reads p.kernel (what is asked), p.q_type, p.kv_type, p.heads, p.head_dim,
// p.v_dim and p.max_pairs (0: heads), and for the transposed kernel's fp8 paths
// p.fp8_fnuz, p.q_f16_exact and the fp8_* options; nothing else of p.
//
// NVIDIA: cuda_core when asked. Else wgmma when asked or `automatic`, and it
// applies (wgmma_rejects: fp8 KV on works of <= 16 pairs only); else mma when it
// applies (mma_rejects); else cuda_core.
// AMD: mma only when asked and it applies (the MFMA build is compile-checked,
// never run on AMD hardware); everything else, wgmma asked included, cuda_core.
// No backend: cuda_core (nothing runs).
Stage1Choice select_stage1(const Stage1Params& p, const Stage1Device& device);

// Why a kernel cannot serve p on device, or "" when it can.
std::string wgmma_rejects(const Stage1Params& p, const Stage1Device& device);
std::string mma_rejects(const Stage1Params& p, const Stage1Device& device);

// The only v_dim and head_dims the warpgroup kernels are built for
// (static_assert against wg:: in kernels/stage1_wgmma.hip).
constexpr int kWgmmaVDim = 512;
constexpr int kWgmmaHeadDims[2] = {576, 512};
// Works of at most this many (row, head) pairs run the transposed wgmma kernel
// (the only one with fp8 KV) and the one-m-tile mma kernel.
constexpr int kSmallWorkPairs = 16;
// (row, head) pairs of one chunk of the row-major wgmma kernel (its wgmma M).
constexpr int kRowMajorPairs = 64;

// max_pairs as the kernels read it: 0 means one q row of `heads` pairs.
inline int64_t stage1_pairs(const Stage1Params& p) { return p.max_pairs > 0 ? p.max_pairs : p.heads; }

// The wgmma family runs its transposed kernel (kernels/stage1_wgmma.hip): fp8 KV
// always, else works of at most kSmallWorkPairs pairs.
inline bool wgmma_runs_transposed(const Stage1Params& p) {
  return p.kv_type == ElemType::fp8 || stage1_pairs(p) <= kSmallWorkPairs;
}

// fp8 q with e4m3fn KV on the transposed wgmma kernel: Q·Kᵀ runs on e4m3 wgmma from
// the codes as they are and the consumers convert only V, in registers
// (kernels/stage1_wgmma.cuh, E4M3). The wgmma e4m3 type is e4m3fn's encoding;
// e4m3fnuz codes (other bias and NaN) and bf16 q take the staged conversion, and
// so does Stage1Params::fp8_qk fp16 (exact scores).
inline bool wgmma_qk_e4m3(const Stage1Params& p) {
  return p.kv_type == ElemType::fp8 && p.q_type == ElemType::fp8 && !p.fp8_fnuz && p.fp8_qk == Fp8QkMma::e4m3;
}
// e4m3fn KV with Q·Kᵀ on fp16 wgmma (bf16 q, or fp8 q with Fp8QkMma::fp16), q exact in
// fp16 (Stage1Params::q_f16_exact), Fp8Convert::registers: the consumers convert K
// and V from the raw codes in registers (kernels/stage1_wgmma.cuh, KREG).
inline bool wgmma_k_registers(const Stage1Params& p) {
  return p.kv_type == ElemType::fp8 && !p.fp8_fnuz && !wgmma_qk_e4m3(p) && p.q_f16_exact &&
         (p.q_type == ElemType::bf16 || p.q_type == ElemType::fp8) && p.fp8_convert == Fp8Convert::registers;
}
// The producer only copies raw codes (no 16-bit stage): the two paths above.
inline bool wgmma_raw_ring(const Stage1Params& p) { return wgmma_qk_e4m3(p) || wgmma_k_registers(p); }
// On those paths, P·V on e4m3 wgmma too (Stage1Params::fp8_pv, Fp8PvMma::automatic: on
// the e4m3 path only; kernels/stage1_wgmma.cuh, PV8).
inline bool wgmma_pv_e4m3(const Stage1Params& p) {
  return (wgmma_qk_e4m3(p) && p.fp8_pv != Fp8PvMma::fp16) || (wgmma_k_registers(p) && p.fp8_pv == Fp8PvMma::e4m3);
}

// Blocks per workgroup of a wgmma launch (Stage1Params::pair_tiles): the row-major
// kernel runs each 64-pair chunk of a work in its own block, and block b runs workgroup
// b / pair_tiles, chunk b % pair_tiles (kernel_common.cuh: block_works, first_chunk),
// so the blocks that read the same KV are adjacent in the grid and run at the same
// time: the KV comes from DRAM once and the other chunks hit L2, as with FlashMLA's grid of
// (SM part, 64-head tile) (FlashMLA csrc/sm90/decode/dense/splitkv_mla.cu@9241ae3).
// One block running a work's chunks in turn read C1's KV from DRAM twice (1.23 GB,
// ncu: docs/bench_notes.md step 37). The transposed kernel: 1.
inline int wgmma_pair_tiles(const Stage1Params& p) {
  if (wgmma_runs_transposed(p)) return 1;
  return int(std::max<int64_t>(1, (stage1_pairs(p) + kRowMajorPairs - 1) / kRowMajorPairs));
}

// The row-major wgmma kernel runs on 64-token tiles (WgmmaSchedule::serial_64, seesaw, pair).
inline bool wgmma_rows_64(const Stage1Params& p) {
  return !wgmma_runs_transposed(p) &&
         (p.wgmma_schedule == WgmmaSchedule::serial_64 || p.wgmma_schedule == WgmmaSchedule::seesaw ||
          p.wgmma_schedule == WgmmaSchedule::pair);
}
// The row-major kernel with the pair schedule (kernels/stage1_wgmma_pair.cuh; pair or
// pair_32): 16-bit KV.
inline bool wgmma_runs_pair(const Stage1Params& p) {
  return !wgmma_runs_transposed(p) &&
         (p.wgmma_schedule == WgmmaSchedule::pair || p.wgmma_schedule == WgmmaSchedule::pair_32) &&
         p.kv_type != ElemType::fp8;
}
// The wgmma kernels run 16-bit KV's P·V with P rounded once (Stage1Params::pv_precision;
// kernels/stage1_wgmma.cuh, P1): the transposed kernel, and the row-major one's serial,
// split_qk, serial_64 and seesaw schedules; the pair schedule always (no room for two
// parts). (fp8 KV: the raw-code paths take P once in fp16 anyway; staged keeps two parts.)
inline bool wgmma_p_once(const Stage1Params& p) {
  if (wgmma_runs_pair(p)) return true;
  return p.pv_precision == PvPrecision::once && p.kv_type != ElemType::fp8 &&
         (wgmma_runs_transposed(p) || p.wgmma_schedule != WgmmaSchedule::qk_ahead);
}

// Why the fused combine (CombineMode::fused, and separate_early's early release)
// cannot run with p on device, or "" when it can: only the transposed wgmma kernel
// does them, so select_stage1 must pick wgmma and the works the transposed kernel.
std::string fused_combine_rejects(const Stage1Params& p, const Stage1Device& device);

}  // namespace mla
