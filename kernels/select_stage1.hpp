// Which stage-1 kernel a launch runs, and why: the one place that decides
// (launch_stage1 dispatches on it, GpuExecutor reports it, gpu_tests predicts
// it, tests/unit/test_select_stage1.cpp checks it). Host code with no GPU
// include: the device it decides for is an input, not a query.
#pragma once
#include <algorithm>
#include <cstdint>
#include <optional>
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
  Stage1Kernel kernel = Stage1Kernel::cuda_core;  // never automatic; meaningless when refusal is set
  std::string why;                                // one line: what was asked, what applies
  // Set when what was asked (a named kernel, or a named precision mode) cannot serve p:
  // the launch is refused with this text, never run on something else.
  std::optional<std::string> refusal;
};

// Reads p.kernel (what is asked), p.q_type, p.kv_type, p.heads, p.head_dim,
// p.v_dim and p.max_pairs (0: heads), and for the transposed kernel's fp8 paths
// p.fp8_fnuz, p.q_f16_exact and the precision modes; nothing else of p.
//
// automatic: on NVIDIA wgmma where it applies, else mma where it applies, else
// cuda_core; on AMD cuda_core (the MFMA build is compile-checked, never run on AMD
// hardware). A named kernel runs where it applies and is refused elsewhere, as is a
// named precision mode the chosen path cannot run (precision_rejects). No backend:
// cuda_core (nothing runs).
Stage1Choice select_stage1(const Stage1Params& p, const Stage1Device& device);

// Why a kernel cannot serve p on device, or "" when it can.
std::string wgmma_rejects(const Stage1Params& p, const Stage1Device& device);
std::string mma_rejects(const Stage1Params& p, const Stage1Device& device);

// The only v_dim and head_dims the warpgroup kernels are built for
// (static_assert against wg:: in kernels/wgmma/launch.cuh).
constexpr int kWgmmaVDim = 512;
constexpr int kWgmmaHeadDims[2] = {576, 512};
// Works of at most this many (row, head) pairs run the transposed wgmma kernel
// (the only one with fp8 KV) and the one-m-tile mma kernel.
constexpr int kSmallWorkPairs = 16;
// (row, head) pairs of one chunk of the row-major wgmma kernel (its wgmma M).
constexpr int kRowMajorPairs = 64;

// max_pairs as the kernels read it: 0 means one q row of `heads` pairs.
inline int64_t stage1_pairs(const Stage1Params& p) { return p.max_pairs > 0 ? p.max_pairs : p.heads; }

// The wgmma family runs its transposed kernel (kernels/wgmma/transposed.cuh): fp8 KV
// always, else works of at most kSmallWorkPairs pairs.
inline bool wgmma_runs_transposed(const Stage1Params& p) {
  return p.kv_type == ElemType::fp8 || stage1_pairs(p) <= kSmallWorkPairs;
}

// fp8 q with e4m3fn KV on the transposed wgmma kernel: Q·Kᵀ runs on e4m3 wgmma from
// the codes as they are and the consumers convert only V, in registers
// (kernels/wgmma/transposed.cuh, E4M3). The wgmma e4m3 type is e4m3fn's encoding;
// e4m3fnuz codes (other bias and NaN) and bf16 q take the staged conversion, and
// so does Stage1Params::fp8_qk fp16 (exact scores).
inline bool wgmma_qk_e4m3(const Stage1Params& p) {
  return p.kv_type == ElemType::fp8 && p.q_type == ElemType::fp8 && !p.fp8_fnuz && p.fp8_qk != Fp8QkMma::fp16;
}
// e4m3fn KV with Q·Kᵀ on fp16 wgmma (bf16 q, or fp8 q with Fp8QkMma::fp16), q exact in
// fp16 (Stage1Params::q_f16_exact), Fp8Convert::registers: the consumers convert K
// and V from the raw codes in registers (kernels/wgmma/transposed.cuh, KREG).
inline bool wgmma_k_registers(const Stage1Params& p) {
  return p.kv_type == ElemType::fp8 && !p.fp8_fnuz && !wgmma_qk_e4m3(p) && p.q_f16_exact &&
         (p.q_type == ElemType::bf16 || p.q_type == ElemType::fp8) && p.fp8_convert != Fp8Convert::staged;
}
// The producer only copies raw codes (no 16-bit stage): the two paths above.
inline bool wgmma_raw_ring(const Stage1Params& p) { return wgmma_qk_e4m3(p) || wgmma_k_registers(p); }
// On those paths, P·V on e4m3 wgmma too (Stage1Params::fp8_pv, Fp8PvMma::automatic: on
// the e4m3 path only; kernels/wgmma/transposed.cuh, PV8).
inline bool wgmma_pv_e4m3(const Stage1Params& p) {
  return (wgmma_qk_e4m3(p) && p.fp8_pv != Fp8PvMma::fp16) || (wgmma_k_registers(p) && p.fp8_pv == Fp8PvMma::e4m3);
}

// Blocks per workgroup of a wgmma launch (Stage1Params::pair_tiles): the row-major
// kernel runs each 64-pair chunk of a work in its own block, and block b runs workgroup
// b / pair_tiles, chunk b % pair_tiles (kernel_common.cuh: block_works, first_chunk),
// so the blocks that read the same KV are adjacent in the grid and run at the same
// time: the KV comes from DRAM once and the other chunks hit L2, as with FlashMLA's grid of
// (SM part, 64-head tile) (FlashMLA csrc/sm90/decode/dense/splitkv_mla.cu@9241ae3).
// One block running a work's chunks in turn read the KV from DRAM once per chunk
// (docs/bench_notes.md). The transposed kernel: 1.
inline int wgmma_pair_tiles(const Stage1Params& p) {
  if (wgmma_runs_transposed(p)) return 1;
  return int(std::max<int64_t>(1, (stage1_pairs(p) + kRowMajorPairs - 1) / kRowMajorPairs));
}

// The wgmma kernels run 16-bit KV's P·V with P rounded once (PvPrecision::once;
// kernels/wgmma/, P1). fp8 KV: the raw-code paths take P once in fp16 anyway, the
// staged path keeps two parts.
inline bool wgmma_p_once(const Stage1Params& p) {
  return p.pv_precision == PvPrecision::once && p.kv_type != ElemType::fp8;
}

// Why the precision modes asked in p cannot run on `kernel` (as select_stage1 picks it
// for p), or "" when they can (automatic is never refused).
std::string precision_rejects(const Stage1Params& p, Stage1Kernel kernel);

// The wgmma instantiation that serves p: the key of kernels/wgmma/dispatch.hip's table.
//   rows_*            the row-major kernel (16-bit KV, more than 16 pairs);
//   t_bf16, t_fp16    the transposed kernel on 16-bit KV;
//   t_fp8_staged_*    fp8 KV converted into 16-bit stages by the producer;
//   t_e4m3            Q·Kᵀ on e4m3 wgmma (wgmma_qk_e4m3);
//   t_kreg            K converted in registers (wgmma_k_registers).
enum class WgmmaPath : int32_t { rows_bf16, rows_fp16, t_bf16, t_fp16, t_fp8_staged_bf16, t_fp8_staged_fp16, t_e4m3, t_kreg };
struct WgmmaKey {
  WgmmaPath path = WgmmaPath::rows_bf16;
  int head_dim = 576;
  bool p_once = false;   // wgmma_p_once
  bool pv_e4m3 = false;  // wgmma_pv_e4m3
  constexpr bool operator==(const WgmmaKey& o) const {
    return path == o.path && head_dim == o.head_dim && p_once == o.p_once && pv_e4m3 == o.pv_e4m3;
  }
};
WgmmaKey wgmma_key(const Stage1Params& p);

}  // namespace mla
