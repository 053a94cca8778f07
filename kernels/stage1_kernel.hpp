// The stage-1 kernels by name: plain C++, no GPU include, so the executor
// contract (kernels/executor.hpp), the CLI and host tests can name them in any
// build. Which one runs for a launch: kernels/select_stage1.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/enum_from_name.hpp"

namespace mla {

// The stage-1 kernels: all implement the same contract (kernels/README.md).
//   wgmma     NVIDIA sm_90a builds on a compute-9.0 device: warpgroup MMA, producer warpgroup
//             (kernels/stage1_wgmma.hip);
//   mma       matrix cores through kernels/fragment.hpp: mma.sync on NVIDIA, MFMA on AMD
//             (kernels/stage1_mma.hip);
//   cuda_core every view and every vendor (kernels/stage1_cuda_core.hip).
// `automatic` asks select_stage1 for the fastest that applies; a named kernel that
// does not apply to a view falls back (select_stage1 says to which, and why).
enum class Stage1Kernel : int32_t { automatic = 0, wgmma = 1, mma = 2, cuda_core = 3 };

inline const char* to_string(Stage1Kernel k) {
  switch (k) {
    case Stage1Kernel::automatic: return "automatic";
    case Stage1Kernel::wgmma: return "wgmma";
    case Stage1Kernel::mma: return "mma";
    case Stage1Kernel::cuda_core: return "cuda_core";
  }
  return "unknown";
}
// to_string under the name cli/cmd_bench.cpp spells it.
inline const char* stage1_kernel_name(Stage1Kernel k) { return to_string(k); }

// The kernel a name (as to_string prints it) stands for; unknown names are
// automatic (the CLI validates names first).
inline Stage1Kernel stage1_kernel_from_name(const std::string& name) {
  for (Stage1Kernel k : {Stage1Kernel::wgmma, Stage1Kernel::mma, Stage1Kernel::cuda_core})
    if (name == to_string(k)) return k;
  return Stage1Kernel::automatic;
}

// The schedule of the row-major wgmma kernel's consumer warpgroups (works of more
// than 16 (row, head) pairs: M2, C1; kernels/stage1_wgmma.cuh). serial and qk_ahead
// keep the same split of the work: warpgroup 0 runs Q·Kᵀ, the softmax and P·V for
// columns 0-255, warpgroup 1 takes P through shared memory for columns 256-511.
//   serial    warpgroup 0 waits for tile t's Q·Kᵀ, then runs its softmax, so the
//             tensor cores idle through every softmax (docs/bench_notes.md step 27);
//   qk_ahead  warpgroup 0 issues tile t+1's Q·Kᵀ (asynchronous wgmma) before the
//             softmax of tile t, so the softmax runs while the tensor cores work.
//   split_qk  the warpgroups share Q·Kᵀ: warpgroup 0 runs the even k-steps' chain,
//             warpgroup 1 the odd one (serial's two chains), they swap the partial
//             scores through shared memory and add them (even + odd: serial's bits),
//             and each runs the softmax and packs P itself for its own columns: no P
//             hand-off, 18 + 16 wgmmas a warpgroup and tile instead of warpgroup 0's
//             36 + 16 (docs/bench_notes.md step 35). Same outputs as serial, bit for bit.
//   serial_64 serial over 64-token tiles: Q·Kᵀ as 36 m64n64k16 (one chain) where serial
//             issues 72 m64n32k16 per 64 tokens, two 64-token stages, P handed over
//             through a single buffer (with P in two parts, the hi part in the tile's
//             own rope columns: kernels/stage1_wgmma.cuh, Plan; docs/bench_notes.md
//             steps 37-39). Same arithmetic as serial but the order of Q·Kᵀ's k-steps
//             and the tile boundaries of the online softmax.
//   seesaw    64-token tiles as serial_64, but the warpgroups take turns: each runs Q·Kᵀ
//             and the softmax of alternate tiles, hands P and the running max to the
//             other, and issues its next tile's Q·Kᵀ right after its P·V of the other's
//             tile (FlashMLA's seesaw; kernels/stage1_wgmma_seesaw.cuh, docs/bench_notes.md
//             step 41). serial_64's P and alpha bits; the row sums are added per
//             warpgroup, so the output may differ from serial_64's in the last bit.
//             Slower than serial_64 on the H100 (step 41: with two stages the next
//             tile's Q·Kᵀ cannot run under a softmax); an option.
//   pair      64-token tiles taken two at a time: both warpgroups issue a Q·Kᵀ at once
//             (warpgroup 0 tile A, warpgroup 1 tile B), warpgroup 1 softmaxes B from A's
//             running max while warpgroup 0's P·V of A runs, and each warpgroup does
//             its half of both P·Vs (FlashMLA's order; kernels/stage1_wgmma_pair.cuh,
//             docs/bench_notes.md steps 46-47). P is rounded once (mla::wgmma_p_once):
//             two parts have no room beside two stages and q. Slower than serial_64 on
//             the H100 (step 47: each stage is held for the whole pair, so the next
//             pair waits for a whole load); an option.
//   pair_32   the pair schedule on 32-token tiles and four stages, so the next pair's
//             two tiles load while this pair's are read, Q·Kᵀ as two chains and
//             warpgroup 1's P_A·V under softmax(B) (step 48). P rounded once. Slower than
//             serial_64 on the H100 (the running max's hand-offs are its wait); an option.
// serial_64 is the default (kDefaultWgmmaSchedule): on the H100 it took C1 from 464 to
// 394 µs and M2 from 145 to 140 with P in two parts, 317 and 136 with P once
// (docs/bench_notes.md step 39); qk_ahead was slower on the H200 (step 27: warpgroup 0
// then holds two of the three stages, so each load has less time to land), split_qk
// on the H100 (step 35).
enum class WgmmaSchedule : int32_t { serial = 0, qk_ahead = 1, split_qk = 2, serial_64 = 3, seesaw = 4, pair = 5, pair_32 = 6 };
inline constexpr WgmmaSchedule kWgmmaSchedules[] = {WgmmaSchedule::serial, WgmmaSchedule::qk_ahead,
                                                    WgmmaSchedule::split_qk, WgmmaSchedule::serial_64,
                                                    WgmmaSchedule::seesaw, WgmmaSchedule::pair,
                                                    WgmmaSchedule::pair_32};

inline constexpr const char* kWgmmaScheduleNames[] = {"serial", "qk-ahead", "split-qk",
                                                      "serial-64", "seesaw", "pair", "pair-32"};  // in kWgmmaSchedules' order
inline constexpr WgmmaSchedule kDefaultWgmmaSchedule = WgmmaSchedule::serial_64;
inline const char* to_string(WgmmaSchedule v) { return enum_name(kWgmmaSchedules, kWgmmaScheduleNames, v); }
// The schedule a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<WgmmaSchedule> wgmma_schedule_from_name(const std::string& name) {
  return enum_from_name(kWgmmaSchedules, name);
}

// How the transposed wgmma kernel multiplies fp8 q by e4m3fn KV codes in Q·Kᵀ
// (kernels/stage1_wgmma.cuh; kernels/select_stage1.hpp, wgmma_qk_e4m3):
//   e4m3  wgmma on the codes as they are, V converted by the consumers in registers;
//         Hopper's fp8 MMA accumulates with ~14 bits, so the scores are exact to
//         ~2^-13 only (docs/bench_notes.md step 28). The default: the fastest.
//   fp16  the producer converts the codes into fp16 stages (exact) and the fp16
//         wgmma accumulates in fp32, as for e4m3fnuz and bf16 q.
enum class Fp8QkMma : int32_t { e4m3 = 0, fp16 = 1 };
inline constexpr Fp8QkMma kFp8QkMmas[] = {Fp8QkMma::e4m3, Fp8QkMma::fp16};

inline constexpr const char* kFp8QkMmaNames[] = {"e4m3", "fp16"};  // in kFp8QkMmas' order
inline const char* to_string(Fp8QkMma v) { return enum_name(kFp8QkMmas, kFp8QkMmaNames, v); }
// The mode a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<Fp8QkMma> fp8_qk_mma_from_name(const std::string& name) {
  return enum_from_name(kFp8QkMmas, name);
}

// How the raw-code paths (Fp8QkMma::e4m3, and K in registers: Fp8Convert::registers)
// multiply P by V:
//   automatic  e4m3 where Q·Kᵀ runs on e4m3 wgmma (its scores already carry fp8
//              accumulation's error), fp16 where K is converted in registers (exact
//              scores). The default.
//   e4m3       wgmma on the V codes as they are, P as two e4m3 parts (P·256 = hi +
//              lo/16, ~2^-8 relative), each tile's product accumulated from zero (fp8
//              MMA keeps ~14 bits) and added to the fp32 O: 16 wgmmas a tile. With K in
//              registers an experiment (docs/bench_notes.md step 31).
//   fp16       V converted to fp16 by the consumers, P once in fp16 (step 28): 32
//              wgmmas a tile.
enum class Fp8PvMma : int32_t { automatic = 0, e4m3 = 1, fp16 = 2 };
inline constexpr Fp8PvMma kFp8PvMmas[] = {Fp8PvMma::automatic, Fp8PvMma::e4m3, Fp8PvMma::fp16};

inline constexpr const char* kFp8PvMmaNames[] = {"automatic", "e4m3", "fp16"};  // in kFp8PvMmas' order
inline const char* to_string(Fp8PvMma v) { return enum_name(kFp8PvMmas, kFp8PvMmaNames, v); }
// The mode a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<Fp8PvMma> fp8_pv_mma_from_name(const std::string& name) {
  return enum_from_name(kFp8PvMmas, name);
}

// How the producer of that path (the raw fp8 tiles, no conversion) copies a KV row:
//   half-lines  4 threads a row, 16-byte chunks c0 + 4j: a warp's instruction covers 8
//               rows x 64 bytes (ncu on F2: the L2's tag lookups at 81 % of peak;
//               docs/bench_notes.md step 29).
//   lines       8 threads a row, instruction j one whole 128-byte line of it (chunk
//               8j + c0 - the row's offset into its first line). The default: 1.5-3.5 %
//               faster on F1, F2 and F1 with bf16 q (step 30), the same bits (gpu_tests).
enum class Fp8Copy : int32_t { half_lines = 0, lines = 1 };
inline constexpr Fp8Copy kFp8Copies[] = {Fp8Copy::half_lines, Fp8Copy::lines};

inline constexpr const char* kFp8CopyNames[] = {"half-lines", "lines"};  // in kFp8Copies' order
inline const char* to_string(Fp8Copy v) { return enum_name(kFp8Copies, kFp8CopyNames, v); }
// The form a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<Fp8Copy> fp8_copy_from_name(const std::string& name) { return enum_from_name(kFp8Copies, name); }

// Where the transposed wgmma kernel turns e4m3fn KV codes into fp16 operands when
// Q·Kᵀ is not on e4m3 wgmma (bf16 q, or fp8 q with Fp8QkMma::fp16), q exact in fp16
// (Stage1Params::q_f16_exact):
//   registers  the producer only copies the codes (the e4m3 path's raw ring); the
//              consumers convert K into the A fragments of Sᵀ = K·Qᵀ (q staged with
//              head_dim permuted to match, kernels/stage1_wgmma.cuh kreg_q_col) and V
//              as the e4m3 path does; P once in fp16 (2^-11 relative): 68 wgmmas a
//              tile. The default.
//   staged     the producer converts the codes into 16-bit stages and P·V takes P in
//              two 16-bit parts (fp32-level): 100 wgmmas a tile; e4m3fnuz and q not
//              exact in fp16 always take it.
enum class Fp8Convert : int32_t { registers = 0, staged = 1 };
inline constexpr Fp8Convert kFp8Converts[] = {Fp8Convert::registers, Fp8Convert::staged};

inline constexpr const char* kFp8ConvertNames[] = {"registers", "staged"};  // in kFp8Converts' order
inline const char* to_string(Fp8Convert v) { return enum_name(kFp8Converts, kFp8ConvertNames, v); }
// The form a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<Fp8Convert> fp8_convert_from_name(const std::string& name) {
  return enum_from_name(kFp8Converts, name);
}

// How P (the softmax weights, fp32) enters P·V in the wgmma kernels on 16-bit KV (the
// transposed kernel, and the row-major one's serial schedule; other kernels ignore it):
//   split  P as hi + lo parts in the operand type (hi + lo = P to ~2^-17 relative),
//          two wgmmas a P·V step: the output as accurate as with fp32 P. The default.
//   once   P rounded once to the operand type (bf16: 2^-9 relative, fp16: 2^-12), as
//          FlashMLA does (csrc/sm90/decode/dense/splitkv_mla.cu@9241ae3: rPb, a tensor
//          of InputT): half the P·V wgmmas (row-major: 52 instead of 68 a 32-token tile;
//          transposed: 68 instead of 100 a 64-token tile); gpu_tests holds it to
//          kPOnceTol (docs/bench_notes.md steps 32-33).
enum class PvPrecision : int32_t { split = 0, once = 1 };
inline constexpr PvPrecision kPvPrecisions[] = {PvPrecision::split, PvPrecision::once};

inline constexpr const char* kPvPrecisionNames[] = {"split", "once"};  // in kPvPrecisions' order
inline const char* to_string(PvPrecision v) { return enum_name(kPvPrecisions, kPvPrecisionNames, v); }
// The form a name (as to_string prints it) stands for; nullopt for other names.
inline std::optional<PvPrecision> pv_precision_from_name(const std::string& name) {
  return enum_from_name(kPvPrecisions, name);
}

}  // namespace mla
