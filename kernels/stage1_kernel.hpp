// The stage-1 kernels by name, the precision modes a caller may ask of them, and
// what a launch reports it ran: plain C++, no GPU include, so the executor contract
// (kernels/executor.hpp), the CLI and host tests can name them in any build. Which
// kernel serves a launch: kernels/select_stage1.hpp.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "kernels/enum_from_name.hpp"

namespace mla {

// The stage-1 kernel families: all implement the same contract (kernels/README.md).
//   wgmma     NVIDIA sm_90a builds on a compute-9.0 device: warpgroup MMA with a producer
//             warpgroup (kernels/wgmma/);
//   mma       matrix cores through kernels/fragment.hpp: mma.sync on NVIDIA, MFMA on AMD
//             (kernels/stage1_mma.hip);
//   cuda_core every view and every vendor (kernels/stage1_cuda_core.hip).
// `automatic` asks select_stage1 for the fastest that applies; a named kernel that
// does not apply to a view is refused (select_stage1 says why), never substituted.
enum class Stage1Kernel : int32_t { automatic = 0, wgmma = 1, mma = 2, cuda_core = 3 };
inline constexpr Stage1Kernel kStage1Kernels[] = {Stage1Kernel::automatic, Stage1Kernel::wgmma, Stage1Kernel::mma,
                                                  Stage1Kernel::cuda_core};
inline constexpr const char* kStage1KernelNames[] = {"automatic", "wgmma", "mma", "cuda_core"};
MLA_ENUM_NAMES(Stage1Kernel, kStage1Kernels, kStage1KernelNames, stage1_kernel_from_name)

// ---- Precision modes: settings that change the arithmetic on purpose ----
// Each has `automatic` (the path's own default, never refused); a named mode that the
// path select_stage1 picks cannot run is refused (select_stage1.hpp, precision_rejects).
// Measured error and speed of each: docs/bench_notes.md, "Precision modes".

// How P (the softmax weights, fp32) enters P·V on the 16-bit-KV wgmma kernels:
//   split  P as hi + lo parts in the operand type (hi + lo = P to ~2^-17 relative), two
//          wgmmas a P·V step: the output as accurate as with fp32 P. automatic's choice.
//   once   P rounded once to the operand type, as FlashMLA does
//          (deepseek-ai/FlashMLA csrc/sm90/decode/dense/splitkv_mla.cu@9241ae3: rPb, a
//          tensor of InputT): half the P·V wgmmas; gpu_tests holds it to kPOnceTol.
enum class PvPrecision : int32_t { automatic = 0, split = 1, once = 2 };
inline constexpr PvPrecision kPvPrecisions[] = {PvPrecision::automatic, PvPrecision::split, PvPrecision::once};
inline constexpr const char* kPvPrecisionNames[] = {"automatic", "split", "once"};
MLA_ENUM_NAMES(PvPrecision, kPvPrecisions, kPvPrecisionNames, pv_precision_from_name)

// Q·Kᵀ of fp8 q by e4m3fn KV codes on the transposed wgmma kernel:
//   e4m3  wgmma on the codes as they are; Hopper's fp8 MMA accumulates with ~14 bits,
//         so the scores are exact to ~2^-13 only (gpu_tests kFp8MmaTol). automatic's choice.
//   fp16  the codes converted to fp16 (exact) and fp16 wgmma accumulating in fp32.
enum class Fp8QkMma : int32_t { automatic = 0, e4m3 = 1, fp16 = 2 };
inline constexpr Fp8QkMma kFp8QkMmas[] = {Fp8QkMma::automatic, Fp8QkMma::e4m3, Fp8QkMma::fp16};
inline constexpr const char* kFp8QkMmaNames[] = {"automatic", "e4m3", "fp16"};
MLA_ENUM_NAMES(Fp8QkMma, kFp8QkMmas, kFp8QkMmaNames, fp8_qk_mma_from_name)

// P·V on the raw-code fp8 paths (Q·Kᵀ on e4m3, or K converted in registers):
//   e4m3  wgmma on the V codes as they are, P as two e4m3 parts (P·256 = hi + lo/16,
//         ~2^-8 relative), each tile's product accumulated from zero and added to the
//         fp32 O; automatic's choice where Q·Kᵀ runs on e4m3.
//   fp16  V converted to fp16 by the consumers, P once in fp16; automatic's choice where
//         K is converted in registers (exact scores).
enum class Fp8PvMma : int32_t { automatic = 0, e4m3 = 1, fp16 = 2 };
inline constexpr Fp8PvMma kFp8PvMmas[] = {Fp8PvMma::automatic, Fp8PvMma::e4m3, Fp8PvMma::fp16};
inline constexpr const char* kFp8PvMmaNames[] = {"automatic", "e4m3", "fp16"};
MLA_ENUM_NAMES(Fp8PvMma, kFp8PvMmas, kFp8PvMmaNames, fp8_pv_mma_from_name)

// Where e4m3fn KV codes become fp16 operands when Q·Kᵀ is not on e4m3 (bf16 q, or fp8 q
// with Fp8QkMma::fp16), q exact in fp16 (Stage1Params::q_f16_exact):
//   registers  the consumers convert K and V in registers, P once in fp16 (2^-11
//              relative). automatic's choice.
//   staged     the producer converts the codes into 16-bit stages and P·V takes P in two
//              16-bit parts (fp32-level); e4m3fnuz and q not exact in fp16 always take it.
enum class Fp8Convert : int32_t { automatic = 0, registers = 1, staged = 2 };
inline constexpr Fp8Convert kFp8Converts[] = {Fp8Convert::automatic, Fp8Convert::registers, Fp8Convert::staged};
inline constexpr const char* kFp8ConvertNames[] = {"automatic", "registers", "staged"};
MLA_ENUM_NAMES(Fp8Convert, kFp8Converts, kFp8ConvertNames, fp8_convert_from_name)

// ---- What ran: reported by the launch site (never predicted by the host) ----

// The kernel form a stage-1 launch enqueued.
//   wgmma_rows        row-major wgmma: 64 (row, head) pairs x 64-token tiles, two stages,
//                     one block per 64-pair chunk of a work (kernels/wgmma/rows.cuh);
//   wgmma_transposed  transposed wgmma: 64 tokens x 16 pairs, the two consumer warpgroups
//                     on alternate tiles (kernels/wgmma/transposed.cuh);
//   mma_m16           mma.sync / MFMA on m16 tiles of 16 pairs (kernels/stage1_mma.hip);
//   cuda_core         fp32 FMAs (kernels/stage1_cuda_core.hip).
enum class Stage1Schedule : int32_t { wgmma_rows = 0, wgmma_transposed = 1, mma_m16 = 2, cuda_core = 3 };
inline constexpr Stage1Schedule kStage1Schedules[] = {Stage1Schedule::wgmma_rows, Stage1Schedule::wgmma_transposed,
                                                      Stage1Schedule::mma_m16, Stage1Schedule::cuda_core};
inline constexpr const char* kStage1ScheduleNames[] = {"rows-64", "transposed-64", "mma-m16", "cuda-core"};
MLA_ENUM_NAMES(Stage1Schedule, kStage1Schedules, kStage1ScheduleNames, stage1_schedule_from_name)

// The arithmetic a stage-1 launch ran (the precision modes above, as resolved):
//   fp32                 operands decoded to fp32, fp32 FMAs (cuda_core);
//   p_split              16-bit MMA operands, P in two 16-bit parts (fp32-level P·V);
//   p_once               16-bit MMA operands, P rounded once to the operand type;
//   qk_e4m3              Q·Kᵀ on e4m3 MMA, P·V fp16 with P once;
//   qk_e4m3_pv_e4m3      Q·Kᵀ and P·V on e4m3 MMA;
//   k_registers          K and V converted to fp16 in registers, P once in fp16;
//   k_registers_pv_e4m3  K converted in registers, P·V on e4m3 MMA.
enum class Stage1Precision : int32_t {
  fp32 = 0, p_split = 1, p_once = 2, qk_e4m3 = 3, qk_e4m3_pv_e4m3 = 4, k_registers = 5, k_registers_pv_e4m3 = 6
};
inline constexpr Stage1Precision kStage1Precisions[] = {
    Stage1Precision::fp32,    Stage1Precision::p_split,         Stage1Precision::p_once,
    Stage1Precision::qk_e4m3, Stage1Precision::qk_e4m3_pv_e4m3, Stage1Precision::k_registers,
    Stage1Precision::k_registers_pv_e4m3};
inline constexpr const char* kStage1PrecisionNames[] = {"fp32",        "p-split",         "p-once",
                                                        "qk-e4m3",     "qk-e4m3+pv-e4m3", "k-registers",
                                                        "k-registers+pv-e4m3"};
MLA_ENUM_NAMES(Stage1Precision, kStage1Precisions, kStage1PrecisionNames, stage1_precision_from_name)

// One stage-1 launch as its launch site enqueued it.
struct Stage1Ran {
  Stage1Kernel kernel = Stage1Kernel::cuda_core;  // the family (never automatic)
  Stage1Schedule schedule = Stage1Schedule::cuda_core;
  Stage1Precision precision = Stage1Precision::fp32;
  std::string instance;     // the __global__ template instance, e.g. "wgmma_rows<bf16, 576, p-split>"
  int64_t grid_blocks = 0;  // blocks launched
  int block_threads = 0;    // threads a block
  int64_t smem_bytes = 0;   // dynamic shared memory a block
};

// How the split partials became the output (the launch site of kernels/reduce.hip):
//   none        no tile has more than one split: stage 1 wrote every output, no reduce launch;
//   few_splits  mla_reduce_few_kernel<NMAX> (tiles of at most kReduceFewSplits splits);
//   general     mla_reduce_kernel.
enum class ReduceKind : int32_t { none = 0, few_splits = 1, general = 2 };
inline constexpr ReduceKind kReduceKinds[] = {ReduceKind::none, ReduceKind::few_splits, ReduceKind::general};
inline constexpr const char* kReduceKindNames[] = {"none", "few-splits", "general"};
MLA_ENUM_NAMES(ReduceKind, kReduceKinds, kReduceKindNames, reduce_kind_from_name)

struct ReduceRan {
  ReduceKind kind = ReduceKind::none;
  std::string instance;     // e.g. "mla_reduce_few_kernel<4>"; "" for none
  int64_t grid_blocks = 0;
  int block_threads = 0;
};

}  // namespace mla
