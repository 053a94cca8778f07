// Warpgroup stage 1 (NVIDIA sm_90a: wgmma + a cp.async producer warp + mbarriers).
// Included by kernels/stage1_wgmma.hip (CUDA builds only): the same contract as
// the other two stage-1 kernels (kernels/README.md), for the views where it pays
// (select_stage1: 16-bit KV, or fp8 KV on <= 16 pairs; head_dim 576 or 512,
// v_dim 512).
//
// Why this shape (docs/bench_notes.md step 10): the mma.sync kernel was bound by
// per-tile latency (ldmatrix + MMA issue per warp, block barriers, softmax between
// the two MMA phases). Here
//   * warp 8 is a producer: it loads each 32-token KV tile with cp.async into one
//     of S shared-memory stages, whose `full` mbarrier completes asynchronously
//     when the copies land (cp.async.mbarrier.arrive); consumers release a stage
//     through an `empty` mbarrier, so S tiles stay in flight and no block
//     barrier sits in the tile loop. (The producer must never wait for its own
//     copies: warpgroup 0 releases tile j only after Q·Kᵀ of tile j+1, so a
//     producer blocked on `empty` before publishing j+1 deadlocks.);
//   * warpgroup 0 computes S = Q·Kᵀ for 64 (row, head) pairs × 32 tokens with
//     wgmma (both operands from shared memory, read by the tensor cores, not by
//     ldmatrix), the online softmax (each warp owns 16 whole rows: no cross-warp
//     max), and O[:, 0:256] += P·V with P from registers;
//   * warpgroup 1 takes P from warpgroup 0 through shared memory (two named
//     barriers per tile) and computes O[:, 256:512] += P·V, overlapping
//     warpgroup 0's next Q·Kᵀ.
// P is split into hi + lo 16-bit parts (two wgmmas) as in the mma.sync kernel, so
// P·V stays within ~1e-5 of fp32 (gpu_tests' partial tolerance).
//
// Shared-memory tiles use the 128-byte swizzle of the wgmma descriptors: a row
// of 64 16-bit elements is 128 bytes, 16-byte chunk c of row r is stored at chunk
// c ^ (r % 8), and tiles are [64-element column block][rows][128 bytes], each
// block 1024-byte aligned. K (and Q) are K-major operands; V, the first 512
// elements of the same KV rows, is the N-major B operand of P·V (transpose bit),
// read in 64-column instructions so one swizzle atom spans N.
#pragma once

#include <type_traits>

#include "kernels/fp8x2.hpp"
#include "kernels/fragment.hpp"
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/kernel_common.cuh"
#include "kernels/reduce_combine.cuh"

namespace mla {
namespace wg {

constexpr int kRows = 64;                    // wgmma M: (row, head) pairs per chunk
constexpr int kConsumers = 256;              // two warpgroups
// + a producer warpgroup (4 warps, all of them loading): 9 warps would cap every
// thread at 168 registers (3 warps on one SM sub-partition), and the consumers
// need ~200 without spilling. With three warpgroups, setmaxnreg moves registers
// from producers to consumers: 40 + 232 + 232 = 504 of the 512 per lane of a
// sub-partition. (48 + 232 + 232 = 512 hung setmaxnreg.inc on the H200: the pool
// never had the last registers free.)
constexpr int kThreads = kConsumers + 128;
constexpr int kProducerRegs = 40, kConsumerRegs = 232;
// fp8 KV (transposed kernel only): the producer stages and converts the codes
// (produce_fp8_tiles), so it gets 152 registers and the consumers 176
// (152 + 2 x 176 = 504), the split the register-converting producer of
// docs/bench_notes.md step 19 was measured with.
__host__ __device__ constexpr int producer_regs(bool converts) { return converts ? 152 : kProducerRegs; }
__host__ __device__ constexpr int consumer_regs(bool converts) { return converts ? 176 : kConsumerRegs; }
// All four producer warps issue copies: one warp's 72 cp.async per lane per tile
// stalled at issue (a single producer warp was far slower on M1: docs/bench_notes.md,
// "Moved from kernel comments").
constexpr int kProducers = 128;
constexpr int kVCols = 256;                  // output columns per warpgroup
constexpr int kVDim = 2 * kVCols;            // the only v_dim this kernel serves
constexpr int kRowBytes = 128;               // one swizzle row: 64 16-bit elements
// Named barrier ids (0 is __syncthreads).
constexpr int kBarChunk = 1, kBarPFull = 2, kBarPFree = 4, kBarStats = 6, kBarRed = 7;  // kBarRed + warpgroup

// Shared-memory plan for QR staged q rows, S KV stages of NT tokens. split_qk
// (WgmmaSchedule::split_qk): the P region holds the partial scores the warpgroups
// swap instead, [2 tiles][2 warpgroups][16 accumulators][128 threads] f32.
// 64-token tiles (WgmmaSchedule::serial_64): q 72 KB and two 72 KB stages leave ~10 KB,
// so one P buffer (8 KB), one alpha buffer, and the row statistics in q_s (only read by
// warpgroup 0's Q·Kᵀ, all of whose wgmmas have completed when it writes them after the
// tile loop): 231,456 of the 232,448 bytes at head_dim 576. P in two parts puts the hi
// part in the tile's own rope column block (block 8 of the stage: only Q·Kᵀ reads it,
// and Q·Kᵀ of the tile is done before P exists; 64 x 64 16-bit = 8 KB); at head_dim
// 512 (no rope block, 32 KB less) the P buffer holds both parts.
struct Plan {
  int qr, stages, head_dim, nt;
  bool split_qk = false;
  bool p_once = false;  // wide only: P in one part
  bool pair = false;    // WgmmaSchedule::pair / pair_32 (P once): two P hand-off mbarriers, pair_p_slot
  __host__ __device__ constexpr bool wide() const { return nt == 64; }
  // P hand-off buffers: double-buffered by tile parity, one when wide; pair: one a stage
  // at head_dim 512, none at 576 (P goes to the stage's rope block: pair_p_slot).
  __host__ __device__ constexpr int p_bufs() const {
    return pair ? (head_dim == 576 ? 0 : stages) : wide() ? 1 : 2;
  }
  // Wide with P in two parts at head_dim 576: the hi part goes to the tile's rope block.
  __host__ __device__ constexpr bool p_hi_in_stage() const { return wide() && !p_once && head_dim == 576; }
  // P parts a buffer slot holds: hi and lo, or one (P once, or the lo part beside p_hi_in_stage).
  __host__ __device__ constexpr int p_slot_parts() const {
    return pair || (wide() && (p_once || p_hi_in_stage())) ? 1 : 2;
  }
  __host__ __device__ constexpr int blocks() const { return head_dim / 64; }
  __host__ __device__ constexpr size_t q_bytes() const { return size_t(blocks()) * qr * kRowBytes; }
  __host__ __device__ constexpr size_t stage_bytes() const { return size_t(blocks()) * nt * kRowBytes; }
  // P A fragments of one tile: nt / 16 k-steps x p_slot_parts() x 16 bytes per consumer thread.
  __host__ __device__ constexpr size_t p_buf_bytes() const { return size_t(nt / 16) * p_slot_parts() * 16 * 128; }
  __host__ __device__ constexpr size_t kv_off() const { return q_bytes(); }
  __host__ __device__ constexpr size_t p_off() const { return kv_off() + stages * stage_bytes(); }
  __host__ __device__ constexpr size_t p_region_bytes() const {
    return split_qk ? size_t(2 * 2 * 16 * 128 * 4) : p_bufs() * p_buf_bytes();
  }
  __host__ __device__ constexpr size_t alpha_off() const { return p_off() + p_region_bytes(); }
  // pair: the published running max (one float2 a consumer thread of a warpgroup).
  __host__ __device__ constexpr size_t alpha_bytes() const { return (pair ? 1 : p_bufs()) * 128 * 8; }
  __host__ __device__ constexpr size_t stats_off() const { return wide() ? 0 : alpha_off() + alpha_bytes(); }
  __host__ __device__ constexpr size_t bar_off() const {
    return alpha_off() + alpha_bytes() + (wide() || pair ? 0 : 128 * 16);
  }
  // + 1024: the dynamic window is aligned up to the swizzle atom in the kernel.
  __host__ __device__ constexpr size_t total() const { return bar_off() + 2 * stages * 8 + (pair ? 16 : 0) + 1024; }
  // pair: the P_A hand-off mbarrier (P_B's follows it), after the stages' full and empty ones.
  __device__ uint32_t pair_bar(uint32_t smem_addr) const { return smem_addr + uint32_t(bar_off()) + 2 * stages * 8; }
  // pair: the P fragments of the tile in stage s: its rope block at head_dim 576 (the
  // tile's Q·Kᵀ, the block's only reader, has completed), else P buffer s. Keyed by the
  // stage, so a P is not rewritten before both warpgroups gave its stage back.
  __device__ uint4* pair_p_slot(uint8_t* smem, const uint8_t* stage, int s, int ks) const {
    if (head_dim == 576) return reinterpret_cast<uint4*>(const_cast<uint8_t*>(stage) + 8 * nt * kRowBytes) + ks * 128;
    return reinterpret_cast<uint4*>(smem + p_off()) + (s * (nt / 16) + ks) * 128;
  }
  // The 128 A fragments (one uint4 a consumer thread) of P part hl, k-step ks, in P buffer b
  // or, for the hi part beside p_hi_in_stage, in the tile's rope block (block 8 of `stage`).
  __device__ uint4* p_slot(uint8_t* smem, const uint8_t* stage, int b, int ks, int hl) const {
    if (p_hi_in_stage() && hl == 0)
      return reinterpret_cast<uint4*>(const_cast<uint8_t*>(stage) + 8 * nt * kRowBytes) + ks * 128;
    const int part = p_hi_in_stage() ? 0 : hl;
    return reinterpret_cast<uint4*>(smem + p_off()) + (b * p_slot_parts() * (nt / 16) + ks * p_slot_parts() + part) * 128;
  }
};

// Every row-major launch fits the 227 KB a block may take (sm_90: 232,448 bytes).
constexpr size_t kMaxDynamicSmem = 232448;
static_assert(Plan{64, 3, 576, 32}.total() <= kMaxDynamicSmem && Plan{64, 3, 576, 32, true}.total() <= kMaxDynamicSmem &&
                  Plan{64, 2, 576, 64, false, false}.total() <= kMaxDynamicSmem &&
                  Plan{64, 2, 576, 64, false, true}.total() <= kMaxDynamicSmem &&
                  Plan{64, 2, 512, 64, false, false}.total() <= kMaxDynamicSmem &&
                  Plan{64, 2, 576, 64, false, true, true}.total() <= kMaxDynamicSmem &&
                  Plan{64, 2, 512, 64, false, true, true}.total() <= kMaxDynamicSmem &&
                  Plan{64, 4, 576, 32, false, true, true}.total() <= kMaxDynamicSmem &&
                  Plan{64, 4, 512, 32, false, true, true}.total() <= kMaxDynamicSmem,
              "row-major shared-memory plan over 227 KB");

__device__ inline uint32_t saddr(const void* p) { return static_cast<uint32_t>(__cvta_generic_to_shared(p)); }

// 128-byte-swizzle descriptor. SBO = 1024 (next 8 rows); LBO = 1024 too: unused
// for swizzled K-major operands, and for the N-major V operand each instruction
// spans one atom along N, so only the 8-token step along K is ever taken (the
// same value either way the two offsets are read).
__device__ inline uint64_t desc_sw128(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1024 >> 4) << 16) | (uint64_t(1024 >> 4) << 32) | (1ull << 62);
}

__device__ inline void fence_async_smem() { asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory"); }
// Stage1Params::block_clock (bench --block-times): thread 0 stores its SM and the
// globaltimer (ns) at the block's entry, then at its end, after its last output;
// block_clock_mark stores a phase's first time (the caller picks the one thread).
__device__ inline uint64_t global_ns() {
  uint64_t ns;
  asm volatile("mov.u64 %0, %%globaltimer;\n" : "=l"(ns));
  return ns;
}
__device__ inline void block_clock_start(const Stage1Params& p) {
  if (!p.block_clock || threadIdx.x != 0) return;
  uint32_t sm;
  asm volatile("mov.u32 %0, %%smid;\n" : "=r"(sm));
  p.block_clock[kBlockClockWords * size_t(blockIdx.x) + kClockSm] = sm;
  p.block_clock[kBlockClockWords * size_t(blockIdx.x) + kClockEntry] = global_ns();
}
__device__ inline void block_clock_end(const Stage1Params& p) {
  if (!p.block_clock || threadIdx.x != 0) return;
  p.block_clock[kBlockClockWords * size_t(blockIdx.x) + kClockEnd] = global_ns();
}
__device__ inline void block_clock_mark(const Stage1Params& p, BlockClockWord word) {
  if (!p.block_clock) return;
  uint64_t* at = p.block_clock + kBlockClockWords * size_t(blockIdx.x) + word;
  if (*at == 0) *at = global_ns();
}

__device__ inline void wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ inline void wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
__device__ inline void wg_wait0() { asm volatile("wgmma.wait_group.sync.aligned 0;\n" ::: "memory"); }
// Waits until at most N of this warpgroup's committed wgmma groups are pending
// (groups complete in commit order: PTX ISA, wgmma.wait_group).
template <int N>
__device__ inline void wg_wait() {
  asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
template <int N>
__device__ inline void pin(float (&r)[N]) {
#pragma unroll
  for (int i = 0; i < N; ++i) asm volatile("" : "+f"(r[i])::"memory");
}

__device__ inline void bar_sync(int id, int n) { asm volatile("bar.sync %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }
__device__ inline void bar_arrive(int id, int n) { asm volatile("bar.arrive %0, %1;\n" ::"r"(id), "r"(n) : "memory"); }

__device__ inline void mbar_init(uint32_t bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(bar), "r"(count) : "memory");
}
__device__ inline void mbar_arrive(uint32_t bar) {
  asm volatile("{\n.reg .b64 st;\nmbarrier.arrive.shared::cta.b64 st, [%0];\n}\n" ::"r"(bar) : "memory");
}
// Waits for the phase of `parity` to complete. A wait that lasts ~2 s (4e9
// cycles) is a protocol bug: it records kErrStall and returns, so a bug shows as
// a device error (exit 4) instead of a hung process.
__device__ inline void mbar_wait(uint32_t bar, uint32_t parity, int32_t* error) {
  uint32_t done = 0;
  long long start = 0;
  for (int spin = 0;; ++spin) {
    asm volatile(
        "{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\nselp.u32 %0, 1, 0, p;\n}\n"
        : "=r"(done)
        : "r"(bar), "r"(parity)
        : "memory");
    if (done) return;
    if (spin == 0) start = clock64();
    else if (spin % 256 == 0 && (*static_cast<volatile int32_t*>(error) & kErrStall)) return;  // one stall: stop waiting
    else if (clock64() - start > 4000000000LL) {
      record_error(error, kErrStall, int32_t(blockIdx.x), int32_t(parity));
      return;
    }
  }
}

// The 32 fp32 accumulators of an m64n64 wgmma (mma_qk at N = 64, mma_pv): asm operands
// %0..%31, as the instruction's register list and as the operand list.
#define MLA_WG_ACC32_REGS \
  " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15,%16,%17,%18,%19,%20,%21,%22,%23,%24,%25,%26,%27,%28,%29,%30,%31}"
#define MLA_WG_ACC32(d)                                                                                          \
  "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]),    \
      "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]),     \
      "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),    \
      "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])

// S (64 x 32, fp32) (+)= Q (64 x 16, smem) · K (32 x 16, smem)ᵀ.
template <bool F16>
__device__ inline void mma_qk(float (&d)[16], uint64_t da, uint64_t db, int accumulate) {
#define MLA_WG_QK(TY)                                                                                              \
  asm volatile(                                                                                                    \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %18, 0;\n"                                                                 \
      "wgmma.mma_async.sync.aligned.m64n32k16.f32." TY "." TY                                                      \
      " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, %16, %17, p, 1, 1, 0, 0;\n}\n"                     \
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]), "+f"(d[8]), \
        "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15])                   \
      : "l"(da), "l"(db), "r"(accumulate))
  if constexpr (F16) MLA_WG_QK("f16");
  else MLA_WG_QK("bf16");
#undef MLA_WG_QK
}
// S (64 x 64, fp32) (+)= Q (64 x 16, smem) · K (64 x 16, smem)ᵀ: the serial_64 schedule's
// 64-token tiles, half the Q·Kᵀ instructions of two m64n32k16 a tile.
template <bool F16>
__device__ inline void mma_qk(float (&d)[32], uint64_t da, uint64_t db, int accumulate) {
#define MLA_WG_QK64(TY)                                                                                             \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %34, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                       \
      MLA_WG_ACC32_REGS ", %32, %33, p, 1, 1, 0, 0;\n}\n"                                                  \
      : MLA_WG_ACC32(d)                                                                                            \
      : "l"(da), "l"(db), "r"(accumulate))
  if constexpr (F16) MLA_WG_QK64("f16");
  else MLA_WG_QK64("bf16");
#undef MLA_WG_QK64
}

// O (64 x 64, fp32) += P (64 x 16, registers) · V (16 x 64, smem, N-major).
template <bool F16>
__device__ inline void mma_pv(float (&d)[32], const uint32_t (&a)[4], uint64_t db) {
#define MLA_WG_PV(TY)                                                                                               \
  asm volatile(                                                                                                     \
      "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"                                                                  \
      "wgmma.mma_async.sync.aligned.m64n64k16.f32." TY "." TY                                                       \
      MLA_WG_ACC32_REGS ", {%32,%33,%34,%35}, %36, p, 1, 1, 1;\n}\n"                                        \
      : MLA_WG_ACC32(d)                                                                                            \
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(1))
  if constexpr (F16) MLA_WG_PV("f16");
  else MLA_WG_PV("bf16");
#undef MLA_WG_PV
}

// Two floats -> packed 16-bit pair (low half = x), and the rounding residue.
template <bool F16>
__device__ inline uint32_t pack2(float x, float y, float& rx, float& ry) {
  if constexpr (F16) {
    const __half2 h = __floats2half2_rn(x, y);
    const float2 f = __half22float2(h);
    rx = x - f.x;
    ry = y - f.y;
    return *reinterpret_cast<const uint32_t*>(&h);
  } else {
    const __nv_bfloat162 h = __floats2bfloat162_rn(x, y);
    const float2 f = __bfloat1622float2(h);
    rx = x - f.x;
    ry = y - f.y;
    return *reinterpret_cast<const uint32_t*>(&h);
  }
}
template <bool F16>
__device__ inline uint32_t pack2(float x, float y) {
  float rx, ry;
  return pack2<F16>(x, y, rx, ry);
}

// The descriptor `bytes` past desc's start address (a constant once the wgmma loops
// unroll): the start-address field is bits 0-13 (address >> 4) and shared memory ends
// below 256 KB, so the add never carries out of it. One add a wgmma where building
// each descriptor from its address took ~13 instructions (serial-64's Q·Kᵀ issue was
// instruction-bound: docs/bench_notes.md step 38); the same bits.
__device__ inline uint64_t desc_at(uint64_t desc, uint32_t bytes) { return desc + (bytes >> 4); }

// Descriptor of k-step kk (16 columns of 16 bits) of a K-major [column block][rows][128 B]
// tile: column block kk / 4, 32 bytes into its rows per step.
__device__ inline uint64_t kstep_desc(const uint8_t* tile, int rows, int kk) {
  return desc_at(desc_sw128(saddr(tile)), (kk >> 2) * rows * kRowBytes + (kk & 3) * 32);
}

// Byte offset of 16-byte chunk c of row r in a [column block][rows][128 B] tile.
__device__ inline uint32_t swz(int c, int r, int rows) {
  return uint32_t((c >> 3) * rows * kRowBytes + r * kRowBytes + (((c & 7) ^ (r & 7)) << 4));
}

// fp8 codes as wgmma's 8-bit operands (the transposed kernel's e4m3 path): both must
// be K-major, one k-step is 32 codes, so a tile is [k-block of 32 codes][rows][32 B]
// in the 32-byte swizzle (16-byte unit u of row r at u ^ ((r >> 2) & 1): PTX ISA,
// "Shared memory matrix layout", 32B swizzling), atoms of 8 rows x 32 B.
constexpr int kRawKBytes = 32;
// Byte offset of 16-byte chunk c (codes 16c..16c+15) of row r in such a tile of `rows` rows.
__host__ __device__ inline uint32_t raw_offset(int c, int r, int rows) {
  return uint32_t((c >> 1) * rows * kRawKBytes + r * kRawKBytes + (((c & 1) ^ ((r >> 2) & 1)) << 4));
}
// 32-byte-swizzle K-major descriptor: SBO = 256 (the next 8 rows), LBO unused (1).
__device__ inline uint64_t desc_sw32(uint32_t addr) {
  return uint64_t((addr & 0x3FFFF) >> 4) | (uint64_t(1) << 16) | (uint64_t(256 >> 4) << 32) | (3ull << 62);
}

// Block start shared by both wgmma kernels: thread 0 initialises the S-stage
// `full` (counted by the producer threads) and `empty` (by `empty_count` consumer
// warps) mbarriers, then the block's work range is read; a malformed
// work_indptr is recorded and the block does nothing (false).
__device__ inline bool pipeline_start(const Stage1Params& p, uint32_t full_bar, uint32_t empty_bar, int stages,
                                      int empty_count, int32_t& w_begin, int32_t& w_end) {
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) {
      mbar_init(full_bar + 8 * s, kProducers);
      mbar_init(empty_bar + 8 * s, empty_count);
    }
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
  }
  __syncthreads();
  return block_works(p, w_begin, w_end);
}

// Two q elements as the 16-bit operand word stage_q and stage_q_kreg write: fp8 q
// (two codes in the low 16 bits of `raw`) decoded exactly into F16 ? fp16 : bf16;
// bf16 q with F16 (fp8 KV, q exact in fp16 times q_f16_scale, Stage1Params::q_f16_exact)
// scaled into fp16; other 16-bit q as it is.
template <bool F16>
__device__ inline uint32_t q_word16(const Stage1Params& p, uint32_t raw) {
  if (p.q_type == ElemType::fp8)
    return uint32_t(encode16<F16>(decode_fp8(uint8_t(raw), p.fp8_fnuz))) |
           (uint32_t(encode16<F16>(decode_fp8(uint8_t(raw >> 8), p.fp8_fnuz))) << 16);
  if (F16 && p.q_type == ElemType::bf16)
    return uint32_t(encode_fp16(decode_bf16(uint16_t(raw)) * p.q_f16_scale)) |
           (uint32_t(encode_fp16(decode_bf16(uint16_t(raw >> 16)) * p.q_f16_scale)) << 16);
  return raw;
}

// q of a chunk (pairs [chunk, chunk + cp) of the work) into the swizzled
// [64-element block][QR rows][128 B] tile, 16-bit (fp8 q decoded exactly), rows
// past cp zero; by the kConsumers consumer threads, fenced for the async proxy.
// 16-bit q that needs no conversion goes straight to shared memory by cp.async (rows
// past cp zero-filled), all of a thread's copies in flight at once: through
// registers each copy's global load stalled its shared store, one round trip after
// another (docs/bench_notes.md, "S1 by instruction": 13 % of S1's stage-1 stalls).
template <bool F16, int QR, int HD>
__device__ inline void stage_q(const Stage1Params& p, const WorkRow& work, int chunk, int cp, uint8_t* q_s, int tid) {
  constexpr int kRowChunks = HD / 8;
  const int64_t q_base = (int64_t(work.qo_start) * p.heads + chunk) * HD;
  if (p.q_type != ElemType::fp8 && !(F16 && p.q_type == ElemType::bf16)) {
    const uint16_t* q = static_cast<const uint16_t*>(p.q) + q_base;
    for (int i = tid; i < QR * kRowChunks; i += kConsumers) {
      const int r = i / kRowChunks, ch = i % kRowChunks;
      const bool in = r < cp;
      frag::cp_async16(q_s + swz(ch, r, QR), q + (in ? int64_t(r) * HD + ch * 8 : 0), in ? 16 : 0);
    }
    frag::cp_async_wait_all();
    fence_async_smem();
    return;
  }
  for (int i = tid; i < QR * kRowChunks; i += kConsumers) {
    const int r = i / kRowChunks, ch = i % kRowChunks;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (r < cp) {
      const int64_t at = q_base + int64_t(r) * HD + ch * 8;
      if (p.q_type == ElemType::fp8) {
        const uint2 b8 = *reinterpret_cast<const uint2*>(static_cast<const uint8_t*>(p.q) + at);
        v = make_uint4(q_word16<F16>(p, b8.x), q_word16<F16>(p, b8.x >> 16), q_word16<F16>(p, b8.y),
                       q_word16<F16>(p, b8.y >> 16));
      } else {
        v = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p.q) + at);
        v = make_uint4(q_word16<F16>(p, v.x), q_word16<F16>(p, v.y), q_word16<F16>(p, v.z), q_word16<F16>(p, v.w));
      }
    }
    *reinterpret_cast<uint4*>(q_s + swz(ch, r, QR)) = v;
  }
  fence_async_smem();
}

// fp8 q codes as they are (the transposed kernel's e4m3 path): [k-block][QR rows][32 B]
// (raw_offset), rows past cp zero; by the consumer threads, fenced for the async proxy.
template <int QR, int HD>
__device__ inline void stage_q_codes(const Stage1Params& p, const WorkRow& work, int chunk, int cp, uint8_t* q_s,
                                     int tid) {
  constexpr int kRowChunks = HD / 16;
  const uint8_t* q = static_cast<const uint8_t*>(p.q) + (int64_t(work.qo_start) * p.heads + chunk) * HD;
  for (int i = tid; i < QR * kRowChunks; i += kConsumers) {  // by cp.async, as stage_q's 16-bit q
    const int r = i / kRowChunks, ch = i % kRowChunks;
    const bool in = r < cp;
    frag::cp_async16(q_s + raw_offset(ch, r, QR), q + (in ? int64_t(r) * HD + ch * 16 : 0), in ? 16 : 0);
  }
  frag::cp_async_wait_all();
  fence_async_smem();
}

// The producer warpgroup's loop (warp pw of 4, lane): walks the block's works,
// chunks of QR pairs and NT-token tiles in the consumers' order, and loads each
// tile into stage (tile count % S) once `empty` says the stage is free; `full`
// completes when the copies land. Slot errors are recorded and read as zeros.
//
// Producer thread t owns the tile rows t / 8 + 16u (u < NT / 16) and the 16-byte
// columns t % 8 + 8j of them, so a warp's copy instruction moves 4 whole 128-byte
// row segments, each thread's slot indices stay in its registers (loaded a tile
// ahead), and every destination is a constant offset from a per-row base. The
// first version mapped consecutive threads to consecutive chunks of the whole tile
// and shuffled each chunk's slot in from its owner lane: that loop alone, with no
// copies at all, was the bottleneck (docs/bench_notes.md step 16).
// fp8 KV (KV8, the transposed kernel's 64-token tiles): the codes cannot be
// converted in flight by cp.async, and loading them into registers to convert kept
// only two 16-byte loads in flight per thread (ptxas rotates two destination
// registers however the loads are batched: docs/bench_notes.md step 19). So the raw
// codes are staged asynchronously: each 64-token tile is two 32-token halves, each
// half copied with cp.async into one of kRawHalves raw buffers, and the producer
// converts half h - 2 shared -> shared into the swizzled bf16 stage while halves
// h - 1 and h are in flight. Producer thread t copies and converts the same 16-byte
// chunks (row t / 4 of each half, fp8 chunks t % 4 + 4j), so its own
// cp.async.wait_group is all the synchronisation the raw buffers need; the raw
// layout [chunk j][thread][16 B] makes every warp's shared load one contiguous
// 512-byte run. The conversion: with fp16 operands (F16: q exact in fp16,
// Stage1Params::q_f16_exact) e4m3fn by cvt.rn.f16x2.e4m3x2 and e4m3fnuz by
// fp8x4_to_f16x4_fast; with bf16 operands fp8x4_to_bf16x4_fast (kernels/fp8x2.hpp:
// one 16-bit x2 multiply per two codes; the exact form's ~10 integer operations
// per code limited the producer); NaN codes fixed where present. The scores and
// the output take kv_scale (the consumers).
constexpr int kRawHalves = 3;
__device__ inline void lds128(uint32_t addr, uint4& v) {
  asm volatile("ld.shared.v4.b32 {%0,%1,%2,%3}, [%4];\n" : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w) : "r"(addr) : "memory");
}
__device__ inline void cp_async16_ordered(uint32_t dst, const void* src, int src_bytes) {
  // With a memory clobber (unlike frag::cp_async16): a raw buffer is rewritten only
  // after this thread's own shared loads of it, and those must stay before it.
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(dst), "l"(src), "r"(src_bytes) : "memory");
}

// e4m3fn codes -> fp16 by the hardware conversion (sm_89+), two per instruction
// (CUTLASS include/cutlass/numeric_conversion.h@v3.5.0, float_e4m3_t x4 -> half_t x4).
__device__ inline void fp8x4_to_f16x4_cvt(uint32_t w, uint32_t* lo, uint32_t* hi) {
  asm("{\n.reg .b16 l, h;\nmov.b32 {l, h}, %2;\ncvt.rn.f16x2.e4m3x2 %0, l;\ncvt.rn.f16x2.e4m3x2 %1, h;\n}\n"
      : "=r"(*lo), "=r"(*hi)
      : "r"(w));
}

// FNUZ (the flavour) is a template parameter: each flavour's conversion is
// compiled and register-allocated on its own path (the fp16 integer form of
// e4m3fnuz needs more registers than the hardware conversion of e4m3fn).
template <bool F16, bool FNUZ, int QR, int NT, int S, int HD>
__device__ inline void produce_fp8_tiles(const Stage1Params& p, int32_t w_begin, int32_t w_end, uint8_t* kv_s,
                                         size_t stage_bytes, uint8_t* raw, uint32_t full_bar, uint32_t empty_bar,
                                         int ptid) {
  constexpr int kTpr = 4, kHalfRows = kProducers / kTpr;  // 32 rows per half, one per thread
  constexpr int kChunks = HD / 16 / kTpr;                 // 16-byte fp8 chunks per thread and row (9 or 8)
  constexpr uint32_t kHalfBytes = uint32_t(kHalfRows) * HD;
  static_assert(NT == 2 * kHalfRows && (HD / 16) % kTpr == 0, "fp8 producer: two 32-row halves per tile");
  const int heads = p.heads, r0 = ptid / kTpr, c0 = ptid % kTpr;
  constexpr bool fnuz = FNUZ;
  const uint8_t* kv = static_cast<const uint8_t*>(p.kv);
  const uint32_t raw_base = saddr(raw) + uint32_t(ptid) * 16;
  // Half h: chunk j of this thread at raw_base + (h % kRawHalves) * kHalfBytes + j * kProducers * 16.
  auto issue = [&](uint32_t h, int32_t slot_, bool in_tile, int32_t w) {
    const int64_t slot = slot_;
    const bool ok = in_tile && slot >= 0 && (slot + 1) * int64_t(HD) <= p.kv_elements;
    if (in_tile && !ok) record_error(p.error, kErrKvSlot, w, int32_t(slot));
    const uint8_t* src = ok ? kv + slot * HD + 16 * c0 : kv;
    const uint32_t dst = raw_base + (h % kRawHalves) * kHalfBytes;
#pragma unroll
    for (int j = 0; j < kChunks; ++j)
      cp_async16_ordered(dst + j * kProducers * 16, src + (ok ? 16 * kTpr * j : 0), ok ? 16 : 0);
    frag::cp_async_commit();
  };
  // Converts half h (its copies landed) into stage (h / 2) % S; the first half of a
  // tile waits for the stage to be free, the second publishes it on `full`. The
  // chunks go in two groups, each loaded whole, then converted (independent
  // chains that interleave: a load-convert-store chain per chunk left the one
  // producer warp per scheduler latency-bound), then stored; the first group is
  // converted before the `empty` wait, overlapping the consumers still reading the
  // stage. (All 9 chunks before the wait spilled at the producer's 152 registers.)
  // The hardware conversion (fp16 operands, e4m3fn) needs few enough registers
  // to convert a whole half before the wait.
  constexpr int kPre = F16 && !FNUZ ? kChunks : (kChunks + 1) / 2;
  auto group = [&](auto j0c, auto j1c, uint32_t src, uint8_t* d0, uint8_t* d1, uint32_t wait_bar, uint32_t parity) {
    constexpr int j0 = decltype(j0c)::value, j1 = decltype(j1c)::value;
    uint4 x[j1 - j0];
#pragma unroll
    for (int j = j0; j < j1; ++j) lds128(src + j * kProducers * 16, x[j - j0]);
    uint4 v[j1 - j0][2];
    uint32_t nan = 0;
    if constexpr (F16 && !FNUZ) {  // hardware conversion: NaN codes give NaN, nothing to fix
#pragma unroll
      for (int j = 0; j < j1 - j0; ++j) {
        fp8x4_to_f16x4_cvt(x[j].x, &v[j][0].x, &v[j][0].y);
        fp8x4_to_f16x4_cvt(x[j].y, &v[j][0].z, &v[j][0].w);
        fp8x4_to_f16x4_cvt(x[j].z, &v[j][1].x, &v[j][1].y);
        fp8x4_to_f16x4_cvt(x[j].w, &v[j][1].z, &v[j][1].w);
      }
    } else {
      auto cv = [&](uint32_t w4, uint32_t* lo, uint32_t* hi) {
        if constexpr (F16) fp8x4_to_f16x4_fast(w4, fnuz, lo, hi);
        else fp8x4_to_bf16x4_fast(w4, fnuz, lo, hi);
      };
#pragma unroll
      for (int j = 0; j < j1 - j0; ++j) {
        cv(x[j].x, &v[j][0].x, &v[j][0].y);
        cv(x[j].y, &v[j][0].z, &v[j][0].w);
        cv(x[j].z, &v[j][1].x, &v[j][1].y);
        cv(x[j].w, &v[j][1].z, &v[j][1].w);
        nan |= fp8x4_nan_bytes(x[j].x, fnuz) | fp8x4_nan_bytes(x[j].y, fnuz) | fp8x4_nan_bytes(x[j].z, fnuz) |
               fp8x4_nan_bytes(x[j].w, fnuz);
      }
    }
    if (nan) {  // NaN codes: rare (none in encoded finite data)
      auto fix = [&](uint32_t& u) { u = F16 ? fp8_fix_nan_f16x2(u, fnuz) : fp8_fix_nan_bf16x2(u, fnuz); };
#pragma unroll
      for (int j = 0; j < j1 - j0; ++j)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          fix(v[j][e].x);
          fix(v[j][e].y);
          fix(v[j][e].z);
          fix(v[j][e].w);
        }
    }
    if (wait_bar) mbar_wait(wait_bar, parity, p.error);
#pragma unroll
    for (int j = j0; j < j1; ++j) {
      *reinterpret_cast<uint4*>(d0 + j * NT * kRowBytes) = v[j - j0][0];
      *reinterpret_cast<uint4*>(d1 + j * NT * kRowBytes) = v[j - j0][1];
    }
  };
  auto convert = [&](uint32_t h) {
    const uint32_t k = h / 2;
    const int s = int(k % S);
    const uint32_t src = raw_base + (h % kRawHalves) * kHalfBytes;
    uint8_t* stage = kv_s + size_t(s) * stage_bytes;
    const int n = r0 + kHalfRows * int(h & 1);
    // fp8 chunk c = c0 + 4j is bf16 chunks 2c, 2c + 1 of row n: column block j,
    // chunks 2c0 and 2c0 + 1 of it, swizzled with n & 7.
    uint8_t* row = stage + n * kRowBytes;
    uint8_t* d0 = row + (((2 * c0) ^ (n & 7)) << 4);
    uint8_t* d1 = row + (((2 * c0 + 1) ^ (n & 7)) << 4);
    const uint32_t wait_bar = (h & 1) == 0 ? empty_bar + 8 * s : 0;  // 0: no wait (a shared address is never 0 here)
    group(std::integral_constant<int, 0>{}, std::integral_constant<int, kPre>{}, src, d0, d1, wait_bar,
          ((k / S) & 1) ^ 1);
    if constexpr (kPre < kChunks)
      group(std::integral_constant<int, kPre>{}, std::integral_constant<int, kChunks>{}, src, d0, d1, 0u, 0u);
    if (h & 1) {
      fence_async_smem();  // generic-proxy stores, read by wgmma (async proxy)
      mbar_arrive(full_bar + 8 * s);
    }
  };
  uint32_t h = 0;  // halves issued
  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    if (!work_ok(p, work, w, false)) continue;
    const int qn = work.qo_end - work.qo_start, pairs = qn * heads;
    for (int chunk = 0; chunk < pairs; chunk += QR) {
      const int cp = min(QR, pairs - chunk);
      const int max_end = visible_end(work, qn, heads, p.causal, chunk + cp - 1, pairs);
      int32_t next[2];  // slot indices a tile ahead (as produce_kv_tiles)
#pragma unroll
      for (int u = 0; u < 2; ++u) {
        const int t = work.kv_start + r0 + kHalfRows * u;
        next[u] = t < max_end ? p.kv_indices[t] : -1;
      }
      for (int tile = work.kv_start; tile < max_end; tile += NT) {
        int32_t cur[2];
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          cur[u] = next[u];
          const int t = tile + NT + r0 + kHalfRows * u;
          next[u] = t < max_end ? p.kv_indices[t] : -1;
        }
#pragma unroll
        for (int u = 0; u < 2; ++u) {
          issue(h, cur[u], tile + r0 + kHalfRows * u < max_end, w);
          if (h >= 2) {
            frag::cp_async_wait_pending<2>();
            convert(h - 2);
          }
          ++h;
        }
      }
    }
  }
  if (h >= 2) {  // h is even: the last tile's two halves
    frag::cp_async_wait_pending<1>();
    convert(h - 2);
    frag::cp_async_wait_pending<0>();
    convert(h - 1);
  }
}

// RAW8: the tile is fp8 codes as they are (the transposed kernel's e4m3 path), in
// the 32-byte-swizzle K-major layout raw_offset gives, copied in one of two forms
// (mla::Fp8Copy, kernels/stage1_kernel.hpp): LINES false, 4 threads per row, thread
// c0 copying 16-byte chunks c0 + 4j (9 or 8 of them); LINES true, 8 threads per row,
// each copy instruction j of a row one whole 128-byte line of it (chunk 8j + c0 -
// lead, lead the row's 16-byte offset into its first line: a 576-byte row starts
// mid-line on every other slot). The first gives the L2 one request per 32-byte
// sector, whose tag lookups limited F2 (ncu, docs/bench_notes.md step 29).
template <int QR, int NT, int S, int HD, bool RAW8 = false, bool LINES = false>
__device__ inline void produce_kv_tiles(const Stage1Params& p, int32_t w_begin, int32_t w_end, uint8_t* kv_s,
                                        size_t stage_bytes, uint32_t full_bar, uint32_t empty_bar, int pw, int lane) {
  constexpr int kElemBytes = RAW8 ? 1 : 2;
  static_assert(RAW8 || !LINES, "LINES: the RAW8 form only");
  constexpr int kTpr = RAW8 && !LINES ? 4 : 8;  // threads per row (8 x 16 B = one 128-byte line)
  constexpr int kRowsPerPass = kProducers / kTpr;
  constexpr int kRowsPer = NT / kRowsPerPass;  // rows per thread
  constexpr int kRowChunks = HD * kElemBytes / 16;  // 16-byte chunks of a row (72 or 64; fp8 36 or 32)
  constexpr int kColsPer = kRowChunks / kTpr;      // chunks per thread and row (9 or 8), but LINES
  constexpr int kLines = (kRowChunks + 2 * kTpr - 2) / kTpr;  // LINES: lines a row may touch at lead <= 7
  static_assert(NT % kRowsPerPass == 0 && (LINES || kRowChunks % kTpr == 0), "producer thread layout");
  const uint8_t* kv = static_cast<const uint8_t*>(p.kv);
  const int64_t row_bytes = int64_t(HD) * kElemBytes;  // the kernel's own stride (seed 002)
  const int ptid = pw * 32 + lane, r0 = ptid / kTpr, c0 = ptid % kTpr;
  uint32_t issued = 0;
  for_each_chunk<QR>(p, w_begin, w_end, false,
                     [&](int32_t w, const WorkRow& work, int qn, int chunk, int cp, int max_end) {
    // The slot indices of the next tile are loaded before waiting for a free
    // stage, so their latency overlaps the wait instead of adding to every tile.
    int32_t next[kRowsPer];
#pragma unroll
    for (int u = 0; u < kRowsPer; ++u) {
      const int t = work.kv_start + r0 + kRowsPerPass * u;
      next[u] = t < max_end ? p.kv_indices[t] : -1;
    }
    for (int tile = work.kv_start; tile < max_end; tile += NT) {
      const int s = int(issued % S);
      int32_t cur[kRowsPer];
#pragma unroll
      for (int u = 0; u < kRowsPer; ++u) {
        cur[u] = next[u];
        const int t = tile + NT + r0 + kRowsPerPass * u;
        next[u] = t < max_end ? p.kv_indices[t] : -1;
      }
      mbar_wait(empty_bar + 8 * s, ((issued / S) & 1) ^ 1, p.error);
      uint8_t* stage = kv_s + size_t(s) * stage_bytes;
      {
#pragma unroll
        for (int u = 0; u < kRowsPer; ++u) {
          const int n = r0 + kRowsPerPass * u;
          const int64_t slot = cur[u];
          const bool in_tile = tile + n < max_end;
          const bool ok = in_tile && slot >= 0 && (slot + 1) * int64_t(HD) <= p.kv_elements;
          if (in_tile && !ok) record_error(p.error, kErrKvSlot, w, int32_t(slot));
          const uint8_t* row = ok ? kv + slot * row_bytes : kv;  // zero-filled rows read nothing
          const uint8_t* src = ok ? row + 16 * c0 : kv;
          if constexpr (LINES) {
            // Rows outside the tile are zero-filled (lead 0), as every chunk of them.
            const int lead = ok ? int((reinterpret_cast<uintptr_t>(row) & 127) >> 4) : 0;
#pragma unroll
            for (int j = 0; j < kLines; ++j) {
              const int k = kTpr * j + c0 - lead;
              if (k >= 0 && k < kRowChunks)
                frag::cp_async16(stage + raw_offset(k, n, NT), row + (ok ? 16 * k : 0), ok ? 16 : 0);
            }
          } else if constexpr (RAW8) {
            // raw_offset(c0 + 4j, n, NT): k-block 2j + c0 / 2, a constant step per j.
            uint8_t* dst = stage + raw_offset(c0, n, NT);
#pragma unroll
            for (int j = 0; j < kColsPer; ++j)
              frag::cp_async16(dst + j * 2 * NT * kRawKBytes, src + (ok ? 16 * kTpr * j : 0), ok ? 16 : 0);
          } else {
            // swz(c0 + 8j, n, NT): column block j, row n, chunk c0 ^ (n & 7).
            uint8_t* dst = stage + n * kRowBytes + ((c0 ^ (n & 7)) << 4);
#pragma unroll
            for (int j = 0; j < kColsPer; ++j)
              frag::cp_async16(dst + j * NT * kRowBytes, src + (ok ? 16 * kTpr * j : 0), ok ? 16 : 0);
          }
        }
        // full[s] completes when every producer thread's copies of the tile have
        // landed (an asynchronous arrive per thread, counted in the barrier's 128).
        asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];\n" ::"r"(full_bar + 8 * s) : "memory");
      }
      if (issued == 0 && ptid == 0) block_clock_mark(p, kClockFirstIssue);
      ++issued;
    }
  });
  frag::cp_async_wait_all();
}

// The row-major kernels' KV ring (stage1_wgmma_kernel, seesaw, pair: S stages of
// plan.stage_bytes() from kv_s; stage s's `full` and `empty` mbarriers at full_bar + 8s
// and empty_bar + 8s): where tile t lies, the wait for it to land, and a warp's release.
template <int S>
struct StageRing {
  uint8_t* kv_s;
  size_t stage_bytes;
  uint32_t full_bar, empty_bar;
  __device__ const uint8_t* at(uint32_t t) const { return kv_s + size_t(t % S) * stage_bytes; }
  // Until tile t has landed; then the producer's cp.async writes (generic proxy) are
  // made visible to the wgmma reads (async proxy).
  __device__ void wait_full(uint32_t t, int32_t* error) const {
    mbar_wait(full_bar + 8 * (t % S), (t / S) & 1, error);
    fence_async_smem();
  }
  // This warp's release of tile t's stage (after its last read of it completed).
  __device__ void release(uint32_t t, int lane) const {
    __syncwarp();
    if (lane == 0) mbar_arrive(empty_bar + 8 * (t % S));
  }
};

// The row-major kernels' block start (stage1_wgmma_kernel, stage1_wgmma_seesaw_kernel):
// the pipeline's barriers and work range, then the producer warpgroup's registers
// lowered and its loop run. True in the consumer threads, their registers raised;
// false in the producers once their loop is done, and in every thread of a block
// that does nothing. warp and lane are the caller's: recomputing the lane here changed
// the whole kernel's register allocation and cost C1 4 % (docs/bench_notes.md step 43).
template <int QR, int NT, int S, int HD, bool KV8>
__device__ __forceinline__ bool row_major_start(const Stage1Params& p, const Plan& plan, uint8_t* kv_s, uint32_t full_bar,
                                                uint32_t empty_bar, int warp, int lane, int32_t& w_begin, int32_t& w_end) {
  block_clock_start(p);
  if (!pipeline_start(p, full_bar, empty_bar, S, /*empty_count=*/8, w_begin, w_end)) {  // every consumer warp
    block_clock_end(p);
    return false;
  }
  if (warp >= kConsumers / 32) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(producer_regs(KV8)));
    produce_kv_tiles<QR, NT, S, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(), full_bar, empty_bar, warp - kConsumers / 32,
                                    lane);
    return false;
  }
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(consumer_regs(KV8)));
  return true;
}

// The online softmax of one tile's scores in the log2 domain (this thread's NT / 2 of
// them: accumulators 4j, 4j+1 of row r0 and 4j+2, 4j+3 of row r1, tokens tile + 8j +
// 2tq, +1): masked past each row's visible end, scaled, the tile max across the quad,
// the new running max m, sc -> exp2(sc - m), and alpha, the factor that rescales what
// came before; l takes this tile's sum (this thread's columns only).
template <int NT>
__device__ inline void online_softmax(float (&sc)[NT / 2], int tile, int tq, int end0, int end1, float score_scale,
                                      float& m0, float& m1, float& l0, float& l1, float& alpha0, float& alpha1) {
  float mx0 = kNegInf, mx1 = kNegInf;
#pragma unroll
  for (int j = 0; j < NT / 8; ++j) {
    const int t0 = tile + 8 * j + 2 * tq;
    sc[4 * j + 0] = t0 < end0 ? sc[4 * j + 0] * score_scale : kNegInf;
    sc[4 * j + 1] = t0 + 1 < end0 ? sc[4 * j + 1] * score_scale : kNegInf;
    sc[4 * j + 2] = t0 < end1 ? sc[4 * j + 2] * score_scale : kNegInf;
    sc[4 * j + 3] = t0 + 1 < end1 ? sc[4 * j + 3] * score_scale : kNegInf;
    mx0 = fmaxf(mx0, fmaxf(sc[4 * j + 0], sc[4 * j + 1]));
    mx1 = fmaxf(mx1, fmaxf(sc[4 * j + 2], sc[4 * j + 3]));
  }
#pragma unroll
  for (int o_ = 1; o_ < 4; o_ <<= 1) {
    mx0 = fmaxf(mx0, __shfl_xor_sync(0xffffffffu, mx0, o_));
    mx1 = fmaxf(mx1, __shfl_xor_sync(0xffffffffu, mx1, o_));
  }
  const float n0 = fmaxf(m0, mx0), n1 = fmaxf(m1, mx1);
  alpha0 = n0 == kNegInf ? 1.0f : exp2f(m0 - n0);
  alpha1 = n1 == kNegInf ? 1.0f : exp2f(m1 - n1);
  m0 = n0;
  m1 = n1;
  float s0 = 0.0f, s1 = 0.0f;
#pragma unroll
  for (int j = 0; j < NT / 8; ++j) {
    sc[4 * j + 0] = sc[4 * j + 0] == kNegInf ? 0.0f : exp2f(sc[4 * j + 0] - n0);
    sc[4 * j + 1] = sc[4 * j + 1] == kNegInf ? 0.0f : exp2f(sc[4 * j + 1] - n0);
    sc[4 * j + 2] = sc[4 * j + 2] == kNegInf ? 0.0f : exp2f(sc[4 * j + 2] - n1);
    sc[4 * j + 3] = sc[4 * j + 3] == kNegInf ? 0.0f : exp2f(sc[4 * j + 3] - n1);
    s0 += sc[4 * j + 0] + sc[4 * j + 1];
    s1 += sc[4 * j + 2] + sc[4 * j + 3];
  }
  l0 = l0 * alpha0 + s0;
  l1 = l1 * alpha1 + s1;
}

// P (this thread's KS * 8 softmax values) as the A fragments of the KS 16-token k-steps,
// [k-step][hi, lo][4] (P1: the hi part only, P rounded once).
// (reg 0: row r0, tokens 0-7 of the k-step; 1: row r1; 2: row r0, tokens 8-15; 3: row r1.)
template <bool F16, bool P1, int KS>
__device__ inline void pack_p(const float (&sc)[KS * 8], uint32_t (&a)[KS][2][4]) {
#pragma unroll
  for (int ks = 0; ks < KS; ++ks)
#pragma unroll
    for (int h = 0; h < 2; ++h) {
      const int jb = 2 * ks + h;  // n8 block of the scores
      float ra, rb, rc, rd;
      a[ks][0][2 * h + 0] = pack2<F16>(sc[4 * jb + 0], sc[4 * jb + 1], ra, rb);
      a[ks][0][2 * h + 1] = pack2<F16>(sc[4 * jb + 2], sc[4 * jb + 3], rc, rd);
      if constexpr (!P1) {
        a[ks][1][2 * h + 0] = pack2<F16>(ra, rb);
        a[ks][1][2 * h + 1] = pack2<F16>(rc, rd);
      }
    }
}

// O = alpha · O + P · V over warpgroup g's 256 columns of an NT-token stage, as one
// committed wgmma group (P from registers: [k-step][hi, lo] fragments, P1: hi only).
template <bool F16, bool P1, int NT>
__device__ inline void rescale_and_issue_pv(float (&o)[4][32], const uint32_t (&a)[NT / 16][2][4], float alpha0,
                                            float alpha1, const uint8_t* stage, int g) {
#pragma unroll
  for (int nb = 0; nb < 4; ++nb)
#pragma unroll
    for (int j = 0; j < 8; ++j) {
      o[nb][4 * j + 0] *= alpha0;
      o[nb][4 * j + 1] *= alpha0;
      o[nb][4 * j + 2] *= alpha1;
      o[nb][4 * j + 3] *= alpha1;
    }
  // The rescale before the P·V wgmmas, not between them (unpinned, ptxas sank the
  // multiplies past the fence and injected a warpgroup.arrive per column block: C7519).
#pragma unroll
  for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
  wg_fence();
#pragma unroll
  for (int ks = 0; ks < NT / 16; ++ks)
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) {
      const uint64_t db = desc_at(desc_sw128(saddr(stage)), (g * 4 + nb) * NT * kRowBytes + ks * 16 * kRowBytes);
      mma_pv<F16>(o[nb], a[ks][0], db);
      if constexpr (!P1) mma_pv<F16>(o[nb], a[ks][1], db);
    }
  wg_commit();
}

// The running max another warpgroup published (mn: rows r0, r1) taken over: alpha as
// online_softmax computes it from the same two maxima (so the same bits), and this
// warpgroup's row sums rescaled by it (the seesaw; the pair schedule of
// docs/bench_notes.md step 46 too).
__device__ inline void adopt_max(float2 mn, float& m0, float& m1, float& l0, float& l1, float& alpha0, float& alpha1) {
  alpha0 = mn.x == kNegInf ? 1.0f : exp2f(m0 - mn.x);
  alpha1 = mn.y == kNegInf ? 1.0f : exp2f(m1 - mn.y);
  m0 = mn.x;
  m1 = mn.y;
  l0 *= alpha0;
  l1 *= alpha1;
}

// l = both warpgroups' row sums, kept apart through the tile loop (the seesaw; the pair
// schedule of step 46 too): each thread's columns first, then its quad, then the other warpgroup's
// through `l_swap` ([2][128] float2 in q_s: no Q·Kᵀ is in flight after the tile loop).
__device__ inline void add_row_sums_across_warpgroups(float2* l_swap, int g, int ct, float& l0, float& l1) {
#pragma unroll
  for (int o_ = 1; o_ < 4; o_ <<= 1) {
    l0 += __shfl_xor_sync(0xffffffffu, l0, o_);
    l1 += __shfl_xor_sync(0xffffffffu, l1, o_);
  }
  l_swap[g * 128 + ct] = make_float2(l0, l1);
  bar_sync(kBarStats, kConsumers);
  const float2 other = l_swap[(1 - g) * 128 + ct];
  l0 += other.x;  // (l0 + l1 of the two warpgroups: the same sum in both, addition commutes)
  l1 += other.y;
}

// A row-major chunk's start (stage1_wgmma_kernel, the seesaw and the pair kernels):
// the visible ends of this thread's rows r0 and r1, q staged between two consumer
// barriers (the first: the previous chunk is done with q_s), O zeroed.
template <bool F16, int QR, int HD>
__device__ __forceinline__ void start_row_chunk(const Stage1Params& p, const WorkRow& work, int qn, int chunk, int cp,
                                                uint8_t* q_s, int tid, int r0, int r1, int& end0, int& end1,
                                                float (&o)[4][32]) {
  end0 = visible_end(work, qn, p.heads, p.causal, chunk + r0, chunk + cp);
  end1 = visible_end(work, qn, p.heads, p.causal, chunk + r1, chunk + cp);
  bar_sync(kBarChunk, kConsumers);
  stage_q<F16, QR, HD>(p, work, chunk, cp, q_s, tid);
  bar_sync(kBarChunk, kConsumers);
#pragma unroll
  for (int nb = 0; nb < 4; ++nb)
#pragma unroll
    for (int i = 0; i < 32; ++i) o[nb][i] = 0.0f;
}

// A row-major chunk's output: warpgroup g's 256 columns of rows r0 and r1 (those below
// cp), O / l times kv_scale, as the final output (work.ploc < 0) or the split's partial
// rows; warpgroup 0's quad leader also writes the rows' LSE (natural log).
__device__ inline void store_chunk_rows(const Stage1Params& p, const WorkRow& work, int chunk, int cp, int g, int r0,
                                        int r1, int tq, const float (&o)[4][32], float m0, float l0, float m1, float l1,
                                        float kv_scale) {
  const int heads = p.heads;
  const bool final_out = work.ploc < 0;
  const int64_t row_base = final_out ? int64_t(work.qo_start) * heads + chunk : int64_t(work.ploc) * heads + chunk;
  const float inv0 = l0 == 0.0f ? 0.0f : kv_scale / l0, inv1 = l1 == 0.0f ? 0.0f : kv_scale / l1;
#pragma unroll
  for (int half = 0; half < 2; ++half) {
    const int r = half ? r1 : r0;
    if (r >= cp) continue;
    const float inv = half ? inv1 : inv0;
    const int64_t at_row = (row_base + r) * kVDim + g * kVCols + 2 * tq;
#pragma unroll
    for (int nb = 0; nb < 4; ++nb)
#pragma unroll
      for (int j = 0; j < 8; ++j) {
        const float x0 = o[nb][4 * j + 2 * half] * inv, x1 = o[nb][4 * j + 2 * half + 1] * inv;
        const int64_t at = at_row + nb * 64 + 8 * j;
        if (final_out) {
          *reinterpret_cast<uint32_t*>(p.out + at) =
              uint32_t(encode_out(p.out_type, x0)) | (uint32_t(encode_out(p.out_type, x1)) << 16);
        } else {
          *reinterpret_cast<float2*>(p.partial_out + at) = make_float2(x0, x1);
        }
      }
    if (g == 0 && tq == 0) {
      const float l = half ? l1 : l0, m = half ? m1 : m0;
      const float lse = l == 0.0f ? kNegInf : (m + log2f(l)) * 0.6931471805599453f;
      if (final_out) {
        if (p.lse) p.lse[row_base + r] = lse;
      } else {
        p.partial_lse[row_base + r] = lse;
      }
    }
  }
}

// HD: head_dim (576 or 512), a template parameter so the Q·Kᵀ chain of wgmmas
// unrolls (a rolled loop made ptxas serialise the wgmma pipeline).
// QR, S, NT: staged q rows, KV stages, tokens per tile. Launched as (64, 3, 32),
// and (64, 2, 64) for serial_64; the (16, 4, 32) and (16, 2, 64) variants for works of <= 16 pairs lost
// to mma.sync (bench_notes steps 11-12; the transposed kernel below serves those
// now). With QR = 16 the A descriptor's rows 16-63 would read past q_s into the
// stages: harmless padding rows, never written out.
// SCHED (WgmmaSchedule, kernels/stage1_kernel.hpp): serial, or qk_ahead, where
// warpgroup 0, once S(t) and P·V(t-1) are done (wait_group 0), issues Q·Kᵀ(t+1)
// and runs the softmax of tile t while it executes (the tensor cores otherwise
// idle through every softmax: docs/bench_notes.md step 27); P·V(t) is committed
// after it, so the next wait_group 0 completes both, and the Q·Kᵀ accumulators
// are never touched in flight. Warpgroup 0 then holds two stages (t, t+1), so
// warpgroup 1 releases its stage before waiting for P. The producer is the same.
// ptxas (nvcc 13.0) serialised the wgmmas (C7514/C7515) for several placements
// of the same steps: a wgmma under a branch in the loop, wait_group 1 at the
// top, warpgroup 0's stage release next to the top wait; check -Xptxas -v after
// any change here.
// P1 (PvPrecision::once): P·V takes P rounded once to the operand type, not as hi + lo
// parts: 16 P·V wgmmas a tile instead of 32, and half the P hand-off (Plan::p_slot).
template <bool F16, int QR, int S, int HD, int NT, bool KV8, WgmmaSchedule SCHED = WgmmaSchedule::serial,
          bool P1 = false>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  constexpr int kN = NT, kKSteps = NT / 16;
  constexpr int kPParts = P1 ? 1 : 2;  // P as [hi] or [hi, lo]
  constexpr bool kQkAhead = SCHED == WgmmaSchedule::qk_ahead;
  constexpr bool kSplitQk = SCHED == WgmmaSchedule::split_qk;  // both warpgroups run Q·Kᵀ and the softmax
  constexpr bool kWide = SCHED == WgmmaSchedule::serial_64;      // 64-token tiles, one m64n64 Q·Kᵀ chain
  static_assert(kWide ? NT == 64 : NT == 32, "Q·Kᵀ runs as two m64n32k16 chains, or (serial_64) one m64n64k16 chain");
  // The P hand-off layout, as Plan sizes it.
  constexpr Plan plan{QR, S, HD, NT, kSplitQk, P1};
  constexpr int kPBufs = plan.p_bufs();
  extern __shared__ __align__(16) uint8_t smem_dyn[];
  uint8_t* smem = smem_dyn + ((1024 - (saddr(smem_dyn) & 1023)) & 1023);
  uint8_t* q_s = smem;
  uint8_t* kv_s = smem + plan.kv_off();
  float* s_swap = reinterpret_cast<float*>(smem + plan.p_off());         // split_qk: [2][2][16][128]
  float2* alpha_buf = reinterpret_cast<float2*>(smem + plan.alpha_off());  // [kPBufs][128]
  float4* stats = reinterpret_cast<float4*>(smem + plan.stats_off());      // [128] (serial_64: in q_s)
  const uint32_t full_bar = saddr(smem + plan.bar_off()), empty_bar = full_bar + 8 * S;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;

  static_assert(!KV8, "fp8 KV runs on the transposed kernel only (select_stage1)");
  int32_t w_begin, w_end;
  if (!row_major_start<QR, NT, S, HD, KV8>(p, plan, kv_s, full_bar, empty_bar, warp, lane, w_begin, w_end)) return;
  const StageRing<S> ring{kv_s, plan.stage_bytes(), full_bar, empty_bar};

  // ---- consumers: warpgroup g = 0 (Q·Kᵀ, softmax, columns 0..255), 1 (columns 256..511) ----
  const int g = __shfl_sync(0xffffffffu, warp / 4, 0), ct = tid % 128, wq = (tid % 128) / 32;  // g: see the transposed kernel
  const int r0 = wq * 16 + lane / 4, r1 = r0 + 8;  // this thread's two chunk rows
  const int tq = lane % 4;
  constexpr float kLog2e = 1.4426950408889634f;
  const float kv_scale = KV8 ? p.kv_scale : 1.0f;  // fp8 KV: on the scores and the output, not the operands
  const float score_scale =
      p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kv_scale * kLog2e;  // log2 domain
  if (!kSplitQk && g == 1) {  // the P buffers start free
    bar_arrive(kBarPFree + 0, kConsumers);
    if constexpr (kPBufs == 2) bar_arrive(kBarPFree + 1, kConsumers);
  }
  uint32_t k = 0;  // tiles consumed by this block (stage and phase of the ring)

  for_each_chunk<QR>(p, w_begin, w_end, tid == 0,
                     [&](int32_t w, const WorkRow& work, int qn, int chunk, int cp, int max_end) {
    int end0, end1;
    float o[4][32];
    start_row_chunk<F16, QR, HD>(p, work, qn, chunk, cp, q_s, tid, r0, r1, end0, end1, o);  // (and stats free)
    float m0 = kNegInf, m1 = kNegInf, l0 = 0.0f, l1 = 0.0f;  // log2-domain running max, partial sums
    uint32_t a[kKSteps][2][4];                              // [k-step][hi, lo] P fragments (P1: hi only)
    // qk_ahead: the next tile's S, in flight across the softmax. Zeroed here only:
    // the first wgmma of each chain does not read its accumulators (scale-d 0).
    float qk[16], qk2[16];
#pragma unroll
    for (int x = 0; x < 16; ++x) qk[x] = qk2[x] = 0.0f;

    // S = Q·Kᵀ of one stage as one wgmma group, into two independent accumulator
    // chains (even / odd k-steps): one chain of 36 dependent wgmmas was latency-bound.
    auto issue_qk_uncommitted = [&](const uint8_t* st, float (&c0)[16], float (&c1)[16]) {
      wg_fence();
#pragma unroll
      for (int kk = 0; kk < HD / 16; ++kk) {
        const uint64_t da = kstep_desc(q_s, QR, kk), db = kstep_desc(st, kN, kk);
        if (kk % 2 == 0) mma_qk<F16>(c0, da, db, kk > 1);
        else mma_qk<F16>(c1, da, db, kk > 1);
      }
    };
    auto issue_qk = [&](const uint8_t* st, float (&c0)[16], float (&c1)[16]) {
      issue_qk_uncommitted(st, c0, c1);
      wg_commit();
    };
    // qk_ahead, warpgroup 0: the chunk's first Q·Kᵀ, peeled out of the tile loop
    // (and an empty group: each tile then starts with two groups pending).
    if (kQkAhead && g == 0 && work.kv_start < max_end) {
      ring.wait_full(k, p.error);
      issue_qk(ring.at(k), qk, qk2);
      wg_commit();
    }

    int i = 0;
    // This warp's release of the previous tile's stage (none before the chunk's first
    // tile; after the loop, the chunk's last).
    auto release_previous = [&] {
      if (i > 0) ring.release(k - 1, lane);
    };
    for (int tile = work.kv_start; tile < max_end; tile += kN, ++i, ++k) {
      const int b = kPBufs == 1 ? 0 : int(k & 1);
      const uint8_t* stage = ring.at(k);
      // (qk_ahead: warpgroup 0 waited for this tile before it issued its Q·Kᵀ.)
      if (!kQkAhead || g != 0) ring.wait_full(k, p.error);
      float alpha0, alpha1;
      if (kSplitQk || g == 0) {
        float sc[NT / 2];
        if constexpr (kSplitQk) {
          // This warpgroup's chain of serial's two (k-steps g, g + 2, ...), then the
          // other's through shared memory: sc = even + odd as serial adds them.
#pragma unroll
          for (int x = 0; x < 16; ++x) sc[x] = 0.0f;
          pin(sc);
          wg_fence();
#pragma unroll
          for (int j = 0; j < HD / 32; ++j) {
            const int kk = 2 * j + g;
            mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(stage, kN, kk), j > 0);
          }
          wg_commit();
          wg_wait0();  // S, and this warpgroup's P·V of the previous tile
          pin(sc);
          release_previous();
          // Buffer b of tile k: the other warpgroup read it two tiles ago, before it
          // reached the previous tile's barrier, which this one has passed.
#pragma unroll
          for (int x = 0; x < 16; ++x) s_swap[((b * 2 + g) * 16 + x) * 128 + ct] = sc[x];
          bar_sync(kBarPFull, kConsumers);
#pragma unroll
          for (int x = 0; x < 16; ++x) sc[x] += s_swap[((b * 2 + (1 - g)) * 16 + x) * 128 + ct];
        } else if constexpr (kQkAhead) {
          wg_wait0();  // S of this tile, and P·V of the previous tile
          pin(qk);
          pin(qk2);
#pragma unroll
          for (int x = 0; x < 16; ++x) sc[x] = qk[x] + qk2[x];
          // The next tile's Q·Kᵀ; on the chunk's last tile a discarded one on this
          // tile's stage (held until the chunk's final wait), so no wgmma sits
          // under a branch and every tile commits the same groups.
          const bool ahead = tile + kN < max_end;
          const uint32_t k1 = ahead ? k + 1 : k;
          if (ahead) ring.wait_full(k1, p.error);
          issue_qk(ring.at(k1), qk, qk2);
        } else if constexpr (kWide) {
          // One chain: an m64n64k16 takes twice an m64n32k16's tensor time, so the
          // chain's dependent issue latency is half as exposed (two chains would add
          // 32 registers to a warpgroup already at ~200).
          // P·V of the previous tile first: its stage goes back to the producer before
          // this Q·Kᵀ, not after it (with two stages the next tile's load would
          // otherwise start a Q·Kᵀ later). A wait_group 1 after issuing Q·Kᵀ would
          // keep the tensor pipe full, but ptxas then serialises the wgmmas (C7514).
          wg_wait0();
#pragma unroll
          for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
          release_previous();
#pragma unroll
          for (int x = 0; x < NT / 2; ++x) sc[x] = 0.0f;
          wg_fence();
#pragma unroll
          for (int kk = 0; kk < HD / 16; ++kk) mma_qk<F16>(sc, kstep_desc(q_s, QR, kk), kstep_desc(stage, kN, kk), kk > 0);
          wg_commit();
          wg_wait0();  // S
          pin(sc);
        } else {
          float sc2[16];
#pragma unroll
          for (int x = 0; x < 16; ++x) sc[x] = sc2[x] = 0.0f;
          issue_qk(stage, sc, sc2);
          wg_wait0();  // S, and P·V of the previous tile
          pin(sc);
          pin(sc2);
#pragma unroll
          for (int x = 0; x < 16; ++x) sc[x] += sc2[x];
          release_previous();
        }
        online_softmax<NT>(sc, tile, tq, end0, end1, score_scale, m0, m1, l0, l1, alpha0, alpha1);
        if constexpr (kQkAhead) {
          // Only the Q·Kᵀ just issued is pending (the top's wait_group 0 completed
          // the rest): a no-op for the hardware, but without this wait, the pins
          // and the release here, ptxas serialised the wgmmas.
          wg_wait<1>();
          pin(sc);
#pragma unroll
          for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
          release_previous();
        }
        pack_p<F16, P1>(sc, a);
        if constexpr (!kSplitQk) {
          bar_sync(kBarPFree + b, kConsumers);
#pragma unroll
          for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
            for (int hl = 0; hl < kPParts; ++hl)
              plan.p_slot(smem, stage, b, ks, hl)[ct] = make_uint4(a[ks][hl][0], a[ks][hl][1], a[ks][hl][2], a[ks][hl][3]);
          alpha_buf[b * 128 + ct] = make_float2(alpha0, alpha1);
          bar_arrive(kBarPFull + b, kConsumers);
        }
      } else {
        // qk_ahead: the previous stage is released before waiting for P, not after:
        // warpgroup 0 already holds this tile's and the next tile's stages, so the
        // producer's one free stage must come back as early as it can.
        // (serial_64 likewise: with two stages, every release counts.)
        if (!kQkAhead && !kWide) bar_sync(kBarPFull + b, kConsumers);
        wg_wait0();  // P·V of the previous tile: its registers and stage are free
        release_previous();
        if (kQkAhead || kWide) bar_sync(kBarPFull + b, kConsumers);
#pragma unroll
        for (int ks = 0; ks < kKSteps; ++ks)
#pragma unroll
          for (int hl = 0; hl < kPParts; ++hl) {
            const uint4 v = plan.p_slot(smem, stage, b, ks, hl)[ct];
            a[ks][hl][0] = v.x;
            a[ks][hl][1] = v.y;
            a[ks][hl][2] = v.z;
            a[ks][hl][3] = v.w;
          }
        const float2 al = alpha_buf[b * 128 + ct];
        alpha0 = al.x;
        alpha1 = al.y;
        bar_arrive(kBarPFree + b, kConsumers);
      }
      rescale_and_issue_pv<F16, P1, NT>(o, a, alpha0, alpha1, stage, g);
    }
    wg_wait0();
#pragma unroll
    for (int nb = 0; nb < 4; ++nb) pin(o[nb]);
    release_previous();

    // Row statistics from warpgroup 0 to warpgroup 1 (split_qk: each has its own).
    if (kSplitQk || g == 0) {
#pragma unroll
      for (int o_ = 1; o_ < 4; o_ <<= 1) {
        l0 += __shfl_xor_sync(0xffffffffu, l0, o_);
        l1 += __shfl_xor_sync(0xffffffffu, l1, o_);
      }
      if constexpr (!kSplitQk) {
        stats[ct] = make_float4(m0, l0, m1, l1);
        bar_arrive(kBarStats, kConsumers);
      }
    } else {
      bar_sync(kBarStats, kConsumers);
      const float4 st = stats[ct];
      m0 = st.x, l0 = st.y, m1 = st.z, l1 = st.w;
    }

    store_chunk_rows(p, work, chunk, cp, g, r0, r1, tq, o, m0, l0, m1, l1, kv_scale);
  });
  block_clock_end(p);
#else
  (void)p;  // compiled for an architecture without wgmma: never launched (select_stage1)
#endif
}

}  // namespace wg

namespace wg {

// ---- Transposed warpgroup stage 1, for works of at most 16 (row, head) pairs ----
//
// With 16 pairs the kernel above runs 64-row wgmmas that are 3/4 padding (and
// loses to mma.sync on M1: docs/bench_notes.md steps 11-12). Here the 64 rows are
// KV tokens instead:
//   Sᵀ (64 tokens x 16 pairs) = K (64 x d, smem) · Qᵀ   (wgmma m64n16k16, Q as B)
//   Oᵀ (512 cols x 16 pairs) += Vᵀ (512 x 64, the same tile read M-major) · Pᵀ
// so no row is padding and each KV tile is read once by the tensor cores. Each
// consumer warpgroup owns alternate 64-token tiles with its own softmax state
// (tile max across its 4 warps through shared memory), writes Pᵀ (hi and lo
// parts, bf16/fp16) into its own swizzled buffer, and the two states are merged
// at the end of a chunk. Producer: produce_kv_tiles with 2 stages of 64 tokens.
constexpr int kTNT = 64, kTPairs = 16, kTStages = 2;
// fp8 KV (kv8) adds the producer's raw buffers (kRawHalves x 32 rows of head_dim
// codes, 54 KB at 576) where 16-bit KV has the 32 KB merge buffer: both would not
// fit in 227 KB, so fp8 merges warpgroup 1's accumulators through q_s (18 KB) in
// two rounds of 16 KB at the chunk end, when q is no longer read.
// The e4m3 path (fp8 q and e4m3fn KV, stage1_wgmma_t_kernel's E4M3) has no 16-bit
// stage at all: q as codes (9 KB), the P buffers and statistics next to it, then
// kTRawStages tiles of raw codes (36 KB each at 576, the layout of raw_offset). It
// merges through q_s and the P buffers (16 KB from offset 0, two rounds), free at
// the chunk end, so its smem holds five raw stages.
constexpr int kTRawStages = 5;
struct PlanT {
  int head_dim;
  bool kv8 = false;
  bool e4m3 = false;  // q as codes (Q·Kᵀ on e4m3 wgmma)
  bool kreg = false;  // K converted in registers (KREG)
  __host__ __device__ static constexpr size_t align1k(size_t x) { return (x + 1023) & ~size_t(1023); }
  // The raw ring and no 16-bit stage: both paths that convert in the consumers.
  __host__ __device__ constexpr bool raw() const { return e4m3 || kreg; }
  __host__ __device__ constexpr int blocks() const { return head_dim / 64; }
  __host__ __device__ constexpr int stages() const { return raw() ? kTRawStages : kTStages; }
  __host__ __device__ constexpr size_t q_bytes() const {
    return e4m3 ? size_t(kTPairs) * head_dim : size_t(blocks()) * kTPairs * kRowBytes;
  }
  __host__ __device__ constexpr size_t stage_bytes() const {
    return raw() ? size_t(kTNT) * head_dim : size_t(blocks()) * kTNT * kRowBytes;
  }
  static constexpr size_t kPBytes = 2 * 2 * kTPairs * kRowBytes;  // [wg][hi, lo][16][128 B]
  static constexpr size_t kRedBytes = 2 * 4 * kTPairs * 4;        // [wg][4 warps][16] f32
  static constexpr size_t kMlBytes = (2 * 4 * kTPairs + kTPairs) * 4;  // [wg][4 warps][16] l, [16] m
  // 16-bit KV: [64 regs][128 thr] f32; staged fp8 KV: the raw buffers, [half][chunk][thread][16 B]; e4m3: none
  __host__ __device__ constexpr size_t raw_half_bytes() const { return size_t(kProducers / 4) * head_dim; }
  __host__ __device__ constexpr size_t merge_bytes() const { return raw() ? 0 : kv8 ? kRawHalves * raw_half_bytes() : 64 * 128 * 4; }
  __host__ __device__ constexpr size_t p_off() const { return raw() ? q_bytes() : kv_off() + stages() * stage_bytes(); }
  __host__ __device__ constexpr size_t red_off() const { return p_off() + kPBytes; }
  __host__ __device__ constexpr size_t merge_off() const { return red_off() + kRedBytes; }
  __host__ __device__ constexpr size_t ml_off() const { return merge_off() + merge_bytes(); }
  __host__ __device__ constexpr size_t kv_off() const { return raw() ? align1k(ml_off() + kMlBytes) : q_bytes(); }
  __host__ __device__ constexpr size_t bar_off() const {
    return raw() ? kv_off() + stages() * stage_bytes() : ml_off() + kMlBytes;
  }
  __host__ __device__ constexpr size_t total() const { return bar_off() + 2 * stages() * 8 + 1024; }
};
// The merge of warpgroup 1's 64 accumulators: in one round (its own buffer) or two
// (fp8 KV, from offset 0: q_s, with the P buffers after it on the e4m3 path, holds
// 16 KB: 32 accumulators x 128 threads).
__host__ __device__ constexpr int merge_rounds(bool merge_in_q) { return merge_in_q ? 2 : 1; }
static_assert(kTPairs * kRowBytes * (512 / 64) >= 32 * 128 * 4, "fp8 merge rounds fit in q_s (head_dim 512 or 576)");
static_assert(kTPairs * 512 + PlanT::kPBytes >= 32 * 128 * 4, "e4m3 merge rounds fit in q_s + P");
static_assert(kTPairs * 576 % 1024 == 0 && kTPairs * 512 % 1024 == 0,
              "e4m3 plan: q keeps the P buffers 1024-aligned (the 128-byte swizzle atom)");
static_assert(PlanT{576, true, true}.total() <= 232448 && PlanT{576, true, false, true}.total() <= 232448 &&
                  PlanT{576, true, false}.total() <= 232448 && PlanT{576, false, false}.total() <= 232448,
              "transposed plans within the 227 KB of an sm_90 block");
constexpr int kBarMergeStart = 9, kBarMergeRead = 10;

// D (64 x 16, fp32) (+)= A (64 x 16, smem; M-major when TRANS_A) · B (16 x 16, smem, K-major).
template <bool F16, int TRANS_A>
__device__ inline void mma_m64n16(float (&d)[8], uint64_t da, uint64_t db, int accumulate) {
#define MLA_WG_N16(TY)                                                                                  \
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"                                            \
               "wgmma.mma_async.sync.aligned.m64n16k16.f32." TY "." TY                                 \
               " {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1, %11, 0;\n}\n"                               \
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), \
                 "+f"(d[7])                                                                            \
               : "l"(da), "l"(db), "r"(accumulate), "n"(TRANS_A))
  if constexpr (F16) MLA_WG_N16("f16");
  else MLA_WG_N16("bf16");
#undef MLA_WG_N16
}

// D (64 x 16, fp32) (+)= A (64 x 32 e4m3 codes, smem) · B (32 x 16 e4m3 codes, smem); both
// K-major (8-bit operands have no transpose: PTX ISA, wgmma.mma_async).
__device__ inline void mma_m64n16k32_e4m3(float (&d)[8], uint64_t da, uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n16k32.f32.e4m3.e4m3"
               " {%0,%1,%2,%3,%4,%5,%6,%7}, %8, %9, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "l"(da), "l"(db), "r"(accumulate));
}

// D (64 x 16, fp32) += A (64 x 16 fp16, registers) · B (16 x 16 fp16, smem, K-major).
__device__ inline void mma_m64n16_f16_rs(float (&d)[8], const uint32_t (&a)[4], uint64_t db) {
  asm volatile("wgmma.mma_async.sync.aligned.m64n16k16.f32.f16.f16"
               " {%0,%1,%2,%3,%4,%5,%6,%7}, {%8,%9,%10,%11}, %12, 1, 1, 1, 0;\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

// The e4m3 path's P·V operand layout. Oᵀ = Vᵀ · Pᵀ with Vᵀ as the register A operand,
// converted by the consumer from the raw tile (no 16-bit V stage): thread (warp wq,
// lane 4gq + tq) holds A rows 16wq + gq (+ 8) of each 64-row block cb, and those rows
// stand for V columns e4m3_v_col(wq, gq, cb, h), so its 16 rows of a token are one
// 16-byte chunk (8wq + gq) of the raw row; and A's k columns 2tq, 2tq+1, 2tq+8, 2tq+9
// of k-step ks stand for tokens 16ks + tq + 4e (e = 0..3), so the 32 lanes of each
// load hit the 8 16-byte bank groups 4 times each. Pᵀ is written in that token order.
__device__ inline int e4m3_v_col(int wq, int gq, int cb, int h) { return 16 * (8 * wq + gq) + 2 * cb + h; }
// The k column within its 16-token k-step that token t of the tile is (the inverse
// of token 16ks + tq + 4e for column 2tq + (e & 1) + 8 (e >> 1)).
__device__ inline int e4m3_p_col(int t) {
  const int tl = t & 15, tq = tl & 3, e = tl >> 2;
  return (t & ~15) + 2 * tq + (e & 1) + 8 * (e >> 1);
}
// The A fragments of k-step ks for all 8 column blocks: x[e] is the 16-byte chunk
// of this thread's columns of token 16ks + tq + 4e. An A register pairs two tokens'
// codes of one column (one prmt), converted by cvt.rn.f16x2.e4m3x2 (NaN codes to
// NaN). The integer form of fp8x4_to_f16x4_fast in its place was slower
// (docs/bench_notes.md step 28): the conversion pipe is not what limits here.
__device__ inline void e4m3_v_frags(const uint4 (&x)[4], uint32_t (&a)[8][4]) {
  const uint32_t* x0 = &x[0].x;
  const uint32_t* x1 = &x[1].x;
  const uint32_t* x2 = &x[2].x;
  const uint32_t* x3 = &x[3].x;
#pragma unroll
  for (int cb = 0; cb < 8; ++cb) {
    const int wi = cb >> 1;
    const uint32_t sel = (cb & 1) ? 0x7362u : 0x5140u;  // bytes [x0 b, x1 b, x0 b+1, x1 b+1], b = 2cb % 4
    fp8x4_to_f16x4_cvt(__byte_perm(x0[wi], x1[wi], sel), &a[cb][0], &a[cb][1]);
    fp8x4_to_f16x4_cvt(__byte_perm(x2[wi], x3[wi], sel), &a[cb][2], &a[cb][3]);
  }
}

// D (64 x 32, fp32) (+)= A (64 x 32 e4m3 codes, registers) · B (32 x 32 e4m3 codes, smem,
// K-major); accumulate 0 starts D from zero (scale-d).
__device__ inline void mma_m64n32k32_e4m3_rs(float (&d)[16], const uint32_t (&a)[4], uint64_t db, int accumulate) {
  asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %21, 0;\n"
               "wgmma.mma_async.sync.aligned.m64n32k32.f32.e4m3.e4m3"
               " {%0,%1,%2,%3,%4,%5,%6,%7,%8,%9,%10,%11,%12,%13,%14,%15}, {%16,%17,%18,%19}, %20, p, 1, 1;\n}\n"
               : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
                 "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]),
                 "+f"(d[15])
               : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(accumulate));
}

// P·V on e4m3 wgmma (Fp8PvMma::e4m3): Oᵀ's tile part Dᵀ (64 V columns x 32) = Vᵀ (64 x 32
// tokens, the raw codes as the 8-bit register A operand) · [P_hiᵀ | P_loᵀ] (32 tokens x
// 16 pairs each, e4m3: P·256 = hi + lo/16), per 32-token k-step, two k-steps a tile, in
// four quarters of 2 column blocks (the per-tile accumulators are 16 registers a block:
// fp8 MMA accumulates with ~14 bits, so a tile's D starts from zero and is added to the
// fp32 O by the consumer, O·α + D_hi + D_lo/16).
// A's 8-bit fragment (CUTLASS include/cute/atom/mma_traits_sm90_gmma.hpp@v3.5.0,
// ALayout_64x32): register h + 2v of thread (warp wq, lane 4gq + tq) holds row
// 16wq + gq + 8h, k columns 4tq + 16v .. +3 (one per byte). Rows stand for V columns
// e4m3_v8_col (the thread's 4 rows of a pair of blocks are one word of a 16-byte chunk
// of a token: a 4-byte shared load per token, the word by gq >> 1 too, so the 32 lanes
// of each load hit 32 distinct banks); k column 4tq + (e & 3) + 16 (e >> 2)
// of k-step s stands for token 32s + tq + 4e (e = 0..7), so Pᵀ is written in that order
// (e4m3_p8_col).
__device__ inline int e4m3_v8_col(int wq, int gq, int cb, int h) {
  return 16 * (8 * wq + gq) + ((2 * cb + h) ^ (4 * (gq >> 1)));
}
// The k column of token t of the tile (the inverse of token 32s + tq + 4e).
__device__ inline int e4m3_p8_col(int t) { return (t & ~31) + 16 * ((t >> 4) & 1) + 4 * (t & 3) + ((t >> 2) & 3); }
// The A fragments of one k-step for a quarter's 2 column blocks: x[e] is this
// thread's word of the quarter of token 32s + tq + 4e; a[cl][h + 2v] = byte 2cl + h of
// the tokens e = 4v .. 4v + 3: a 4 x 4 byte transpose per token group, two prmt
// levels (8 prmt per 4 registers).
__device__ inline void e4m3_v8_frags(const uint32_t (&x)[8], uint32_t (&a)[2][4]) {
#pragma unroll
  for (int v = 0; v < 2; ++v) {
    const uint32_t t01l = __byte_perm(x[4 * v], x[4 * v + 1], 0x5140u), t01h = __byte_perm(x[4 * v], x[4 * v + 1], 0x7362u);
    const uint32_t t23l = __byte_perm(x[4 * v + 2], x[4 * v + 3], 0x5140u),
                   t23h = __byte_perm(x[4 * v + 2], x[4 * v + 3], 0x7362u);
    a[0][2 * v] = __byte_perm(t01l, t23l, 0x5410u);      // byte 0 of the word: block 0, h 0
    a[0][2 * v + 1] = __byte_perm(t01l, t23l, 0x7632u);  // byte 1: block 0, h 1
    a[1][2 * v] = __byte_perm(t01h, t23h, 0x5410u);      // byte 2: block 1, h 0
    a[1][2 * v + 1] = __byte_perm(t01h, t23h, 0x7632u);
  }
}
__device__ inline void lds32(uint32_t addr, uint32_t& v) {
  asm volatile("ld.shared.b32 %0, [%1];\n" : "=r"(v) : "r"(addr) : "memory");
}
// Two floats to e4m3fn codes (round to nearest, saturating): low byte x, high byte y.
__device__ inline uint32_t f32x2_to_e4m3x2(float x, float y) {
  uint16_t r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;\n" : "=h"(r) : "f"(y), "f"(x));
  return r;
}
// e4m3fn codes (low two bytes) back to floats: x from the low byte.
__device__ inline float2 e4m3x2_to_f32x2(uint32_t codes) {
  float2 r;
  asm("{\n.reg .b16 c, l, h;\n.reg .b32 h2;\ncvt.u16.u32 c, %2;\ncvt.rn.f16x2.e4m3x2 h2, c;\n"
      "mov.b32 {l, h}, h2;\ncvt.f32.f16 %0, l;\ncvt.f32.f16 %1, h;\n}\n"
      : "=f"(r.x), "=f"(r.y)
      : "r"(codes));
  return r;
}

// ---- KREG: K converted by the consumers into register A fragments (Fp8Convert::registers) ----
//
// Sᵀ = K·Qᵀ with K (64 tokens x head_dim) as the register A operand of
// wgmma.m64n16k16.f16: thread (warp wq, lane 4gq + tq) holds rows 16wq + gq (+ 8) and
// k columns 2tq, 2tq+1, 2tq+8, 2tq+9 of each k-step. A sum over head_dim is the same
// sum in any order of its terms, so the k columns need not be head_dim in order:
// k column c of k-step 4kb + j stands for head_dim kreg_q_col(kb, j, c), which makes
// this thread's 16 columns of k-steps 4kb .. 4kb + 3 one 16-byte chunk (4kb + tq) of
// the token's raw row: one shared load per row and 64 head_dim, the four bytes of
// word j being columns 2tq, 2tq+1, 2tq+8, 2tq+9 of k-step 4kb + j. q is staged in
// the same order (stage_q_kreg), so each score is the same Σ q_d k_d.
__host__ __device__ inline int kreg_q_col(int kb, int j, int c) {
  return 64 * kb + 16 * ((c & 7) >> 1) + 4 * j + 2 * (c >> 3) + (c & 1);
}
// q of a chunk as stage_q<true> stages it (fp16, bf16 q times q_f16_scale, fp8 q decoded),
// its columns in kreg_q_col's order: 16-byte unit u of row r's block kb holds k-step
// 4kb + u / 2, columns 8 (u & 1) .. + 7, i.e. head_dim 64kb + 16t + 4 (u / 2) + 2 (u & 1)
// + {0, 1} for t = 0..3.
template <int QR, int HD>
__device__ inline void stage_q_kreg(const Stage1Params& p, const WorkRow& work, int chunk, int cp, uint8_t* q_s,
                                    int tid) {
  constexpr int kRowChunks = HD / 8;
  const int64_t q_base = (int64_t(work.qo_start) * p.heads + chunk) * HD;
  for (int i = tid; i < QR * kRowChunks; i += kConsumers) {
    const int r = i / kRowChunks, ch = i % kRowChunks;
    uint32_t word[4] = {0, 0, 0, 0};
    if (r < cp) {
      const int kb = ch >> 3, u = ch & 7;
#pragma unroll
      for (int t = 0; t < 4; ++t) {
        const int64_t at = q_base + int64_t(r) * HD + kreg_q_col(kb, u >> 1, 2 * t + 8 * (u & 1));
        // fp8 q: the two codes; bf16 q (exact in fp16 times q_f16_scale): the two elements.
        const uint32_t raw = p.q_type == ElemType::fp8
                                 ? uint32_t(*reinterpret_cast<const uint16_t*>(static_cast<const uint8_t*>(p.q) + at))
                                 : *reinterpret_cast<const uint32_t*>(static_cast<const uint16_t*>(p.q) + at);
        word[t] = q_word16<true>(p, raw);
      }
    }
    *reinterpret_cast<uint4*>(q_s + swz(ch, r, QR)) = make_uint4(word[0], word[1], word[2], word[3]);
  }
  fence_async_smem();
}

// ---- Fused combine (CombineMode::fused; kernels/fused_combine.hpp says which plans) ----
//
// Tile t of the plan (fc.reduce) in the reduce's arithmetic (kernels/reduce_combine.cuh)
// and split order: the few kernel's when fc.few_order (the reduce launch would pick
// it, reduce_uses_few_kernel), else the general kernel's (a wave's LSE, per column
// split-group chains k = s + g (mod groups) summed in group order). By the
// kPairWarps warps of one warpgroup, a pair per warp at a time.
constexpr int kPairWarps = 4;
__device__ inline void fused_combine_tile(const FusedCombine& fc, int32_t t, int ct) {
  const ReduceParams& p = fc.reduce;
  const int32_t s = p.reduce_indptr[t], e = p.reduce_indptr[t + 1];
  const int32_t q0 = p.reduce_final_map[2 * t], rows = p.reduce_final_map[2 * t + 1] - q0;
  // pw through a lane-0 shuffle: warp-uniform to ptxas (as g in the kernel: C7520).
  const int heads = p.heads, pairs = rows * heads, lane = ct % 32, pw = __shfl_sync(0xffffffffu, ct / 32, 0);
  if (fc.few_order) {
    for (int pair = pw; pair < pairs; pair += kPairWarps)
      combine_pair_few_wave<kReduceFewSplits, true>(p, s, e - s, q0, pair / heads, pair % heads, lane);
    return;
  }
  // The general kernel's per-column chain of each split-group g, summed in group
  // order as its scratch sum does: out = chain_0 + chain_1 + ... (v_dim is kVDim
  // here: 4 float4 quads per lane).
  constexpr int kQuads = kVDim / 4 / 32;
  const int groups = reduce_split_groups(e - s);
  for (int pair = pw; pair < pairs; pair += kPairWarps) {
    const int r = pair / heads, h = pair % heads;
    const float lse = combine_lse_wave<true>(p, s, e, r, h, lane);
    const int64_t out_row = (int64_t(q0) + r) * heads + h;
    if (lane == 0 && p.lse) p.lse[out_row] = lse;
    float4 acc[kQuads];
    combine_chain_quads<kQuads, true>(p, s, e, groups, r, h, lse, lane, acc);
    for (int g = 1; g < groups; ++g) {
      float4 part[kQuads];
      combine_chain_quads<kQuads, true>(p, s + g, e, groups, r, h, lse, lane, part);
#pragma unroll
      for (int j = 0; j < kQuads; ++j) {
        acc[j].x += part[j].x;
        acc[j].y += part[j].y;
        acc[j].z += part[j].z;
        acc[j].w += part[j].w;
      }
    }
#pragma unroll
    for (int j = 0; j < kQuads; ++j) {
      const int c4 = 4 * lane + 128 * j;
      *reinterpret_cast<uint2*>(p.out + out_row * kVDim + c4) =
          make_uint2(uint32_t(encode_out(p.out_type, acc[j].x)) | (uint32_t(encode_out(p.out_type, acc[j].y)) << 16),
                     uint32_t(encode_out(p.out_type, acc[j].z)) | (uint32_t(encode_out(p.out_type, acc[j].w)) << 16));
    }
  }
}

// Work w's partial rows are stored (by warpgroup 0's 128 threads, thread ct, the
// only writers of a work's outputs), and w is a split of tile t: count it in at
// the tile's counter. True (in every thread) for the arrival that completes the
// tile, which zeroes the counter for the next launch and combines the tile after
// its last work (fused_combine_won_tiles: combine code inside the tile loop cost
// the consumers registers and serialised their wgmmas, ptxas C7520). Nobody waits
// for another workgroup: earlier arrivals just go on.
// Memory order as CUTLASS's split-K semaphore (include/cutlass/barrier.h: arrive =
// barrier, then one thread's fence.acq_rel.gpu + relaxed atomic; the reader's
// acquire, then barrier): every writer fences at gpu scope, the warpgroup barrier
// orders those before thread 0's fence and atomicAdd; the completing thread 0
// fences again (acquire: the other splits' stores, released the same way, are
// visible), the barrier hands that to the 128 threads, which fence once more and
// read the partials past L1 (ld.global.cg). `flag`: a shared word that only
// warpgroup 0 touches between the end of its work and the next chunk barrier.
__device__ inline bool fused_combine_arrive(const Stage1Params& p, int32_t t, int ct, volatile float* flag) {
  const FusedCombine& fc = p.combine;
  __threadfence();
  bar_sync(kBarRed, 128);  // warpgroup 0's barrier (the tile loop's max exchange)
  if (ct == 0) {
    const int32_t splits = fc.reduce.reduce_indptr[t + 1] - fc.reduce.reduce_indptr[t];
    __threadfence();
    const int32_t before = atomicAdd(fc.counters + t, 1);
    // More arrivals than splits: a counter an earlier, failed launch left behind.
    if (before >= splits) record_error(p.error, kErrReduceMap, t, before);
    // spread: every split's workgroup combines after the last arrival (spread_combine_tiles),
    // and the last of them to finish resets the counters.
    const bool last = !fc.work_split && before == splits - 1;
    if (last) {
      atomicExch(fc.counters + t, 0);  // every split has arrived: nobody else touches it this launch
      __threadfence();
    }
    *flag = last ? 1.0f : 0.0f;
  }
  bar_sync(kBarRed, 128);
  return __shfl_sync(0xffffffffu, *flag != 0.0f ? 1 : 0, 0) != 0;  // uniform to ptxas
}

// After warpgroup 0's last work: combine the tiles whose last split this block
// wrote. won: bit i for the block's i-th split work (in work order; the host keeps
// them to kFusedMaxSplitWorks per workgroup, plan_fused_combine).
__device__ inline void fused_combine_won_tiles(const Stage1Params& p, int32_t w_begin, int32_t w_end, uint32_t won,
                                               int ct) {
  __threadfence();  // acquire (with thread 0's fence after each completing atomic)
  int i = 0;
  for (int32_t w = w_begin; w < w_end && i < kFusedMaxSplitWorks && won >> i; ++w) {
    const int32_t t = __shfl_sync(0xffffffffu, p.combine.work_tile[w], 0);
    if (t < 0) continue;
    if ((won >> i) & 1u) fused_combine_tile(p.combine, t, ct);
    ++i;
  }
}

// ---- Spread combine (CombineMode::spread) ----
//
// Thread 0 waits until all `splits` splits of tile t have arrived (fused_combine_arrive's
// counter, read with acquire at gpu scope). Every workgroup arrives for all its split
// works before any of them waits here, and the executor runs this mode only when every
// workgroup is resident (kernels/gpu_executor.cpp), so the wait ends; one that lasts
// ~2 s is recorded as kErrStall and given up, as mbar_wait does. The polls back off
// to ~0.5 µs apart: up to one poller per workgroup reads the same word.
__device__ inline void spread_wait(const Stage1Params& p, int32_t t, int32_t splits) {
  const int32_t* counter = p.combine.counters + t;
  const long long start = clock64();
  unsigned ns = 128;
  for (int spin = 1;; ++spin) {
    int32_t arrived;
    asm volatile("ld.acquire.gpu.global.b32 %0, [%1];\n" : "=r"(arrived) : "l"(counter) : "memory");
    if (arrived >= splits) return;
    if (spin % 64 == 0 && (*static_cast<volatile int32_t*>(p.error) & kErrStall)) return;  // one stall: stop waiting
    if (clock64() - start > 4000000000LL) {
      record_error(p.error, kErrStall, int32_t(blockIdx.x), t);
      return;
    }
    __nanosleep(ns);
    ns = min(2 * ns, 512u);
  }
}

// After both consumer warpgroups' last work (tid < kConsumers, all of them): for each
// split work of the block, in work order, wait for its tile t (n splits, this work
// split i) to be complete, then combine the tile's parts i, i + n, i + 2n, ... in the
// separate reduce's arithmetic and order (the same bits):
//   few order   part = (pair, 128-column quarter), one warp each (combine_pair_few_wave,
//               one float4 a lane): warp w takes the block's parts w, w + 8, ...
//               (so part i + n (w + 8 j)).
//   general     part = (pair, 128-column quarter): `groups` warps (the general
//               kernel's split groups) each run their chain k = s + g (mod groups) for
//               one float4 a lane (combine_chain_quads) and write it to `scratch`; the
//               first warp of the set sums them in group order (the kernel's scratch
//               sum). 8 / groups such sets take the block's parts side by side.
// The last workgroup of the tile to finish zeroes both of its counters for the next
// launch (every other one has finished waiting by then). scratch: 8 x 32 float4 of
// shared memory no longer in use (q_s).
__device__ inline void spread_combine_tiles(const Stage1Params& p, int32_t w_begin, int32_t w_end, int tid,
                                            float4* scratch) {
  const FusedCombine& fc = p.combine;
  const ReduceParams& rp = fc.reduce;
  const int lane = tid % 32, warp = __shfl_sync(0xffffffffu, tid / 32, 0);  // warp-uniform to ptxas
  for (int32_t w = w_begin; w < w_end; ++w) {
    const int32_t t = fc.work_tile[w];
    if (t < 0) continue;
    const int32_t i = fc.work_split[w];
    const int32_t s = rp.reduce_indptr[t], e = rp.reduce_indptr[t + 1], n = e - s;
    const int32_t q0 = rp.reduce_final_map[2 * t], pairs = (rp.reduce_final_map[2 * t + 1] - q0) * rp.heads;
    // Thread 0's acquire, then the barrier, orders every thread's reads after the
    // splits' released stores (CUTLASS include/cutlass/barrier.h: wait_eq, then
    // __syncthreads); the partials are read past L1 (ld.global.cg).
    if (tid == 0) {
      spread_wait(p, t, n);
      block_clock_mark(p, kClockTileComplete);
    }
    bar_sync(kBarChunk, kConsumers);
    if (fc.few_order) {
      for (int32_t part = i + n * warp; part < 4 * pairs; part += n * (kConsumers / 32)) {
        const int pr = part / 4;
        combine_pair_few_wave<kReduceFewSplits, true, 1>(rp, s, n, q0, pr / rp.heads, pr % rp.heads, lane,
                                                         128 * (part % 4));
      }
    } else {
      const int groups = reduce_split_groups(n), sets = (kConsumers / 32) / groups;
      const int set = warp / groups, g = warp % groups;
      const int32_t parts = 4 * pairs, mine = i < parts ? (parts - i + n - 1) / n : 0;
      for (int32_t round = 0; round * sets < mine; ++round) {
        const int32_t j = round * sets + set, part = i + n * j;
        const bool active = set < sets && j < mine;
        const int pr = part / 4, quarter = part % 4, r = pr / rp.heads, h = pr % rp.heads;
        float lse = 0.0f;
        float4 acc[1];
        if (active) {
          lse = combine_lse_wave<true>(rp, s, e, r, h, lane);
          combine_chain_quads<1, true>(rp, s + g, e, groups, r, h, lse, lane, acc, 128 * quarter);
          scratch[warp * 32 + lane] = acc[0];
        }
        bar_sync(kBarChunk, kConsumers);
        if (active && g == 0) {
          float4 sum = acc[0];
          for (int k = 1; k < groups; ++k) {
            const float4 x = scratch[(warp + k) * 32 + lane];
            sum.x += x.x;
            sum.y += x.y;
            sum.z += x.z;
            sum.w += x.w;
          }
          const int64_t out_row = (int64_t(q0) + r) * rp.heads + h;
          if (lane == 0 && quarter == 0 && rp.lse) rp.lse[out_row] = lse;
          *reinterpret_cast<uint2*>(rp.out + out_row * kVDim + 128 * quarter + 4 * lane) =
              make_uint2(uint32_t(encode_out(rp.out_type, sum.x)) | (uint32_t(encode_out(rp.out_type, sum.y)) << 16),
                         uint32_t(encode_out(rp.out_type, sum.z)) | (uint32_t(encode_out(rp.out_type, sum.w)) << 16));
        }
        bar_sync(kBarChunk, kConsumers);  // scratch is free for the next round
      }
    }
    if (tid == 0) block_clock_mark(p, kClockShareDone);  // warp 0's part of it (the others' may follow)
    if (tid == 0 && atomicAdd(fc.counters + rp.num_tiles + t, 1) == n - 1) {
      atomicExch(fc.counters + t, 0);
      atomicExch(fc.counters + rp.num_tiles + t, 0);
    }
  }
}

// E4M3 (fp8 q and e4m3fn KV, F16 and KV8 with it): Q·Kᵀ on e4m3 wgmma straight from
// the raw codes (q staged as codes), V converted by the consumers into register A
// fragments (e4m3_v_frags), so no 16-bit KV stage is written or read; the producer
// only copies (produce_kv_tiles, RAW8) into kTRawStages stages. P·V takes P once,
// in fp16 (no lo part): the scores of e4m3 wgmma are exact to only ~2^-13 (its
// accumulation: tests/gpu/gpu_tests.cpp, kFp8MmaTol), which P's own rounding
// (2^-12 relative, unbiased) does not add to measurably, and the wgmmas per tile
// drop from 82 to 50. PV8 (Fp8PvMma::e4m3): P·V on e4m3 wgmma too, from the V codes as
// they are and P as e4m3 hi + lo parts (mma_m64n32k32_e4m3_rs), 16 P·V wgmmas a tile
// instead of 32.
// KREG (Fp8Convert::registers; bf16 q, or fp8 q with Fp8QkMma::fp16, e4m3fn KV, q exact
// in fp16): the e4m3 path's raw ring, P once in fp16 and V in registers, with Q·Kᵀ on
// fp16 wgmma, K converted by the consumers into register A fragments (stage_q_kreg's
// order of head_dim): exact scores, 36 + 32 wgmmas a tile and no 16-bit stage; with PV8
// (Fp8PvMma::e4m3 asked) the e4m3 path's P·V instead, 36 + 16.
// P1 (PvPrecision::once, 16-bit KV): P·V takes Pᵀ rounded once (no lo part): 36 + 32
// wgmmas a tile instead of 36 + 64.
template <bool F16, int HD, bool KV8, bool E4M3 = false, bool PV8 = false, bool KREG = false, bool P1 = false>
__global__ void __launch_bounds__(kThreads, 1) stage1_wgmma_t_kernel(Stage1Params p) {
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
  static_assert(!P1 || !KV8, "P once: the 16-bit KV path (the raw-code paths take P once already)");
  static_assert(!E4M3 || (F16 && KV8), "the e4m3 path: fp8 KV, fp16 operands for P·V");
  static_assert(!PV8 || E4M3 || KREG, "P·V on e4m3 wgmma: the raw-code paths only");
  static_assert(!KREG || (F16 && KV8 && !E4M3), "K in registers: fp8 KV, fp16 operands, Q·Kᵀ not on e4m3");
  constexpr bool kRaw = E4M3 || KREG;       // the raw ring: the consumers convert
  constexpr bool kConverts = KV8 && !kRaw;  // the producer converts fp8 into a 16-bit stage
  extern __shared__ __align__(16) uint8_t smem_dyn[];
  const PlanT plan{HD, KV8, E4M3, KREG};
  const int stages = plan.stages();
  // CombineMode::separate_early: the reduce (a programmatic dependent launch that
  // waits in griddepcontrol.wait for this whole grid) may be scheduled from now on.
  if (p.release_dependents) asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
  uint8_t* smem = smem_dyn + ((1024 - (saddr(smem_dyn) & 1023)) & 1023);
  uint8_t* q_s = smem;
  uint8_t* kv_s = smem + plan.kv_off();
  float* red = reinterpret_cast<float*>(smem + plan.red_off());
  float* merge = reinterpret_cast<float*>(smem + plan.merge_off());
  float* lsum = reinterpret_cast<float*>(smem + plan.ml_off());  // [wg][warp][16]
  float* mrec = lsum + 2 * 4 * kTPairs;                           // [16]: warpgroup 1's running max
  const uint32_t full_bar = saddr(smem + plan.bar_off()), empty_bar = full_bar + 8 * stages;

  const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32;
  const int heads = p.heads;
  int32_t w_begin, w_end;  // a tile's `empty`: the 4 warps of the warpgroup that owns it
  block_clock_start(p);
  if (!pipeline_start(p, full_bar, empty_bar, stages, /*empty_count=*/4, w_begin, w_end)) {
    block_clock_end(p);
    return;
  }
  if (warp >= kConsumers / 32) {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;\n" ::"n"(producer_regs(kConverts)));
    if constexpr (kRaw) {
      if (p.fp8_copy == Fp8Copy::lines)
        produce_kv_tiles<kTPairs, kTNT, kTRawStages, HD, true, true>(p, w_begin, w_end, kv_s, plan.stage_bytes(),
                                                                     full_bar, empty_bar, warp - kConsumers / 32, lane);
      else
        produce_kv_tiles<kTPairs, kTNT, kTRawStages, HD, true>(p, w_begin, w_end, kv_s, plan.stage_bytes(), full_bar,
                                                               empty_bar, warp - kConsumers / 32, lane);
    } else if constexpr (KV8) {
      if (p.fp8_fnuz)
        produce_fp8_tiles<F16, true, kTPairs, kTNT, kTStages, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(),
                                                                  smem + plan.merge_off(), full_bar, empty_bar,
                                                                  tid - kConsumers);
      else
        produce_fp8_tiles<F16, false, kTPairs, kTNT, kTStages, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(),
                                                                   smem + plan.merge_off(), full_bar, empty_bar,
                                                                   tid - kConsumers);
    } else
      produce_kv_tiles<kTPairs, kTNT, kTStages, HD>(p, w_begin, w_end, kv_s, plan.stage_bytes(), full_bar, empty_bar,
                                                    warp - kConsumers / 32, lane);
    return;
  }

  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(consumer_regs(kConverts)));
  // g through a shuffle from lane 0: ptxas then knows it is warp-uniform; derived
  // from threadIdx it saw the tile loop's `continue` as a divergent path and
  // serialised every wgmma (C7520).
  const int g = __shfl_sync(0xffffffffu, warp / 4, 0), wq = warp % 4, ct = tid % 128, gq = lane / 4, tq = lane % 4;
  uint8_t* p_hi = smem + plan.p_off() + size_t(g) * 2 * kTPairs * kRowBytes;
  uint8_t* p_lo = p_hi + kTPairs * kRowBytes;
  constexpr float kLog2e = 1.4426950408889634f;
  const float kv_scale = KV8 ? p.kv_scale : 1.0f;  // fp8 KV: on the scores and the output, not the operands
  // fp16 operands with bf16 q: q was staged times q_f16_scale, a power of two (exact).
  const float q_unscale = F16 && KV8 && p.q_type == ElemType::bf16 ? 1.0f / p.q_f16_scale : 1.0f;
  const float score_scale =
      p.softmax_scale * (p.q_type == ElemType::fp8 ? p.q_scale : 1.0f) * kv_scale * kLog2e * q_unscale;
  // This thread's 4 pair columns of every n16 accumulator: x = 2j + e (j: n8 block, e: low bit).
  auto pair_of = [&](int x) { return 8 * (x >> 1) + 2 * tq + (x & 1); };
  uint32_t k = 0;  // tiles of the block so far (both warpgroups count every tile)
  uint32_t fused_won = 0;  // fused combine: bit i, this block completed its i-th split work's tile
  int fused_splits = 0;    // split works of this block so far (warpgroup 0)

  for (int32_t w = w_begin; w < w_end; ++w) {
    const WorkRow work = *reinterpret_cast<const WorkRow*>(p.work_info + int64_t(w) * 8);
    if (!work_ok(p, work, w, tid == 0)) continue;
    const int qn = work.qo_end - work.qo_start, pairs = qn * heads;
    for (int chunk = 0; chunk < pairs; chunk += kTPairs) {
      const int cp = min(kTPairs, pairs - chunk);
      const int max_end = visible_end(work, qn, heads, p.causal, chunk + cp - 1, pairs);
      int end[4];
#pragma unroll
      for (int x = 0; x < 4; ++x) end[x] = visible_end(work, qn, heads, p.causal, chunk + pair_of(x), chunk + cp);

      bar_sync(kBarChunk, kConsumers);  // the previous chunk is done with q_s, merge, lsum
      if constexpr (E4M3) stage_q_codes<kTPairs, HD>(p, work, chunk, cp, q_s, tid);
      else if constexpr (KREG) stage_q_kreg<kTPairs, HD>(p, work, chunk, cp, q_s, tid);
      else stage_q<F16, kTPairs, HD>(p, work, chunk, cp, q_s, tid);
      bar_sync(kBarChunk, kConsumers);
      if (tid == 0) block_clock_mark(p, kClockQStaged);

      float o[8][8];  // Oᵀ: [64-column block][accumulator]: cols 16wq + gq (+8), pairs pair_of(x)
#pragma unroll
      for (int cb = 0; cb < 8; ++cb)
#pragma unroll
        for (int x = 0; x < 8; ++x) o[cb][x] = 0.0f;
      float m[4], l[4];  // log2-domain running max (same in every thread of the warpgroup), partial sums
#pragma unroll
      for (int x = 0; x < 4; ++x) m[x] = kNegInf, l[x] = 0.0f;

      int i = 0;
      for (int tile = work.kv_start; tile < max_end; tile += kTNT, ++i, ++k) {
        if ((i & 1) != g) continue;  // the other warpgroup's tile
        const int s = int(k % uint32_t(stages));
        const uint8_t* stage = kv_s + size_t(s) * plan.stage_bytes();
        mbar_wait(full_bar + 8 * s, (k / uint32_t(stages)) & 1, p.error);
        fence_async_smem();
        if (tid == 0) block_clock_mark(p, kClockFirstTile);

        float sa[8], sb[8];
#pragma unroll
        for (int x = 0; x < 8; ++x) sa[x] = sb[x] = 0.0f;
        wg_fence();
        if constexpr (E4M3) {
#pragma unroll
          for (int kk = 0; kk < HD / 32; ++kk) {
            const uint64_t da = desc_at(desc_sw32(saddr(stage)), kk * kTNT * kRawKBytes),
                           db = desc_at(desc_sw32(saddr(q_s)), kk * kTPairs * kRawKBytes);
            if (kk % 2 == 0) mma_m64n16k32_e4m3(sa, da, db, kk > 1);
            else mma_m64n16k32_e4m3(sb, da, db, kk > 1);
          }
        } else if constexpr (KREG) {
          // Rows 16wq + gq and + 8 (the same 32-byte swizzle phase), chunk 4kb + tq:
          // raw_offset(tq, r, 64) + 4096 kb. Block kb + 1's codes are loaded while kb's
          // are converted; kb's fragments are converted while kb - 1's wgmmas run (two
          // buffers: wait_group 1 frees the one kb - 2 read).
          constexpr int kBlocks = HD / 64;
          // The zeroed accumulators before kb = 0's fence (ptxas sank the zeroing to the first
          // wgmma and injected a warpgroup.arrive and a warpgroup.wait: C7519, C7517).
          pin(sa);
          pin(sb);
          const uint32_t k0 = saddr(stage) + raw_offset(tq, 16 * wq + gq, kTNT), k1 = k0 + 8 * kRawKBytes;
          uint32_t a[2][4][4];
          uint4 x0, x1;
          lds128(k0, x0);
          lds128(k1, x1);
#pragma unroll
          for (int kb = 0; kb < kBlocks; ++kb) {
            uint4 y0, y1;
            if (kb + 1 < kBlocks) {
              lds128(k0 + (kb + 1) * 2 * kTNT * kRawKBytes, y0);
              lds128(k1 + (kb + 1) * 2 * kTNT * kRawKBytes, y1);
            }
            if (kb >= 2) wg_wait<1>();
            const uint32_t* w0 = &x0.x;
            const uint32_t* w1 = &x1.x;
#pragma unroll
            for (int j = 0; j < 4; ++j) {  // word j: columns 2tq, 2tq+1 (low half), 2tq+8, 2tq+9 of k-step 4kb + j
              fp8x4_to_f16x4_cvt(w0[j], &a[kb & 1][j][0], &a[kb & 1][j][2]);
              fp8x4_to_f16x4_cvt(w1[j], &a[kb & 1][j][1], &a[kb & 1][j][3]);
              // converted before the fence (else ptxas injects one per wgmma: C7519)
              asm volatile("" : "+r"(a[kb & 1][j][0]), "+r"(a[kb & 1][j][1]), "+r"(a[kb & 1][j][2]),
                           "+r"(a[kb & 1][j][3])::"memory");
            }
            wg_fence();
#pragma unroll
            for (int j = 0; j < 4; ++j) {
              const uint64_t db = kstep_desc(q_s, kTPairs, 4 * kb + j);
              if (j % 2 == 0) mma_m64n16_f16_rs(sa, a[kb & 1][j], db);
              else mma_m64n16_f16_rs(sb, a[kb & 1][j], db);
            }
            wg_commit();
            if (kb + 1 < kBlocks) x0 = y0, x1 = y1;
          }
        } else {
#pragma unroll
          for (int kk = 0; kk < HD / 16; ++kk) {
            const uint64_t da = kstep_desc(stage, kTNT, kk), db = kstep_desc(q_s, kTPairs, kk);
            if (kk % 2 == 0) mma_m64n16<F16, 0>(sa, da, db, kk > 1);
            else mma_m64n16<F16, 0>(sb, da, db, kk > 1);
          }
        }
        wg_commit();
        wg_wait0();
        pin(sa);
        pin(sb);
        // Accumulator a = 4j + e: token 16wq + gq + 8 (e >> 1), pair 8j + 2tq + (e & 1).
        float v[8], mx[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) mx[x] = kNegInf;
#pragma unroll
        for (int a = 0; a < 8; ++a) {
          const int x = 2 * (a >> 2) + (a & 1);
          const int tok = tile + 16 * wq + gq + 8 * ((a >> 1) & 1);
          v[a] = tok < end[x] ? (sa[a] + sb[a]) * score_scale : kNegInf;
          mx[x] = fmaxf(mx[x], v[a]);
        }
#pragma unroll
        for (int x = 0; x < 4; ++x)
#pragma unroll
          for (int o_ = 4; o_ < 32; o_ <<= 1) mx[x] = fmaxf(mx[x], __shfl_xor_sync(0xffffffffu, mx[x], o_));
        if (gq == 0)
#pragma unroll
          for (int x = 0; x < 4; ++x) red[(g * 4 + wq) * kTPairs + pair_of(x)] = mx[x];
        bar_sync(kBarRed + g, 128);
        float alpha[4];
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          float t = red[(g * 4 + 0) * kTPairs + pair_of(x)];
#pragma unroll
          for (int w2 = 1; w2 < 4; ++w2) t = fmaxf(t, red[(g * 4 + w2) * kTPairs + pair_of(x)]);
          const float n = fmaxf(m[x], t);
          alpha[x] = n == kNegInf ? 1.0f : exp2f(m[x] - n);
          m[x] = n;
          l[x] *= alpha[x];
        }
        // Pᵀ into the warpgroup's buffers: row = pair, 64 tokens of 16 bits (one swizzle row);
        // PV8: [k-step][hi rows 0-15, lo rows 16-31][32 codes] (raw_offset's layout, 32 rows).
        if constexpr (PV8) {
#pragma unroll
          for (int a = 0; a < 8; a += 2) {
            const int x = 2 * (a >> 2);  // a: pair r = pair_of(x), a + 1: pair r + 1
            const float p0 = v[a] == kNegInf ? 0.0f : exp2f(v[a] - m[x]);
            const float p1 = v[a + 1] == kNegInf ? 0.0f : exp2f(v[a + 1] - m[x + 1]);
            l[x] += p0;
            l[x + 1] += p1;
            const int t = e4m3_p8_col(16 * wq + gq + 8 * ((a >> 1) & 1)), r = pair_of(x);
            const float s0 = p0 * 256.0f, s1 = p1 * 256.0f;  // P <= 1: e4m3's range is 448
            const uint32_t hi = f32x2_to_e4m3x2(s0, s1);
            const float2 hv = e4m3x2_to_f32x2(hi);
            const uint32_t lo = f32x2_to_e4m3x2((s0 - hv.x) * 16.0f, (s1 - hv.y) * 16.0f);
            auto at = [&](int n) { return p_hi + raw_offset(t >> 4, n, 32) + (t & 15); };
            *at(r) = uint8_t(hi);
            *at(r + 1) = uint8_t(hi >> 8);
            *at(16 + r) = uint8_t(lo);
            *at(17 + r) = uint8_t(lo >> 8);
          }
        } else
#pragma unroll
        for (int a = 0; a < 8; ++a) {
          const int x = 2 * (a >> 2) + (a & 1);
          const float pv = v[a] == kNegInf ? 0.0f : exp2f(v[a] - m[x]);
          l[x] += pv;
          const int tt = 16 * wq + gq + 8 * ((a >> 1) & 1), r = pair_of(x);
          const int t = kRaw ? e4m3_p_col(tt) : tt;  // Pᵀ's k column for the token
          const uint32_t off = swz(t >> 3, r, kTPairs) + (t & 7) * 2;
          const uint16_t hi = encode16<F16>(pv);
          *reinterpret_cast<uint16_t*>(p_hi + off) = hi;
          if constexpr (!kRaw && !P1) *reinterpret_cast<uint16_t*>(p_lo + off) = encode16<F16>(pv - decode16<F16>(hi));
        }
        fence_async_smem();
        bar_sync(kBarRed + g, 128);  // Pᵀ complete; every warp is past reading red
        bool released = false;       // this warp's arrival on the stage's `empty`
        if constexpr (!PV8)          // PV8 rescales O as it adds each tile's part
#pragma unroll
          for (int cb = 0; cb < 8; ++cb)
#pragma unroll
            for (int a = 0; a < 8; ++a) o[cb][a] *= alpha[2 * (a >> 2) + (a & 1)];
        if constexpr (PV8) {
          // Four quarters of 2 column blocks (e4m3_v8_col): quarter q reads word q ^ sh of
          // this thread's 16-byte chunk c of each token, token 32s + tq + 4e at
          // raw_offset(c, tq, 64) + (32s + 4e) 32 with the 16-byte unit flipped for odd e.
          // Two quarters in flight (D and A double-buffered), so a quarter's O update runs
          // while the next quarter's wgmmas do.
          const int c = 8 * wq + gq, sh = gq >> 1;
          const uint32_t vb[2] = {saddr(stage) + raw_offset(c, tq, kTNT), saddr(stage) + raw_offset(c ^ 1, tq, kTNT)};
          uint32_t av[2][2][2][4];  // [buffer][k-step][block of the quarter][register]
          float d[1][2][16];        // [block of the quarter][accumulator]
          auto load_quarter = [&](int q, uint32_t(&aq)[2][2][4]) {
#pragma unroll
            for (int ks = 0; ks < 2; ++ks) {
              uint32_t x[8];
#pragma unroll
              for (int e = 0; e < 8; ++e) lds32(vb[e & 1] + (32 * ks + 4 * e) * kRawKBytes + 4 * (q ^ sh), x[e]);
              e4m3_v8_frags(x, aq[ks]);
#pragma unroll
              for (int cl = 0; cl < 2; ++cl)  // converted before the fence (C7519)
                asm volatile("" : "+r"(aq[ks][cl][0]), "+r"(aq[ks][cl][1]), "+r"(aq[ks][cl][2]),
                             "+r"(aq[ks][cl][3])::"memory");
            }
          };
          auto issue_quarter = [&](const uint32_t(&aq)[2][2][4], float(&dq)[2][16]) {
            wg_fence();
#pragma unroll
            for (int ks = 0; ks < 2; ++ks) {
              const uint64_t db = desc_at(desc_sw32(saddr(p_hi)), ks * 32 * kRawKBytes);
#pragma unroll
              for (int cl = 0; cl < 2; ++cl) mma_m64n32k32_e4m3_rs(dq[cl], aq[ks][cl], db, ks);
            }
            wg_commit();
          };
          // O·α + D_hi + D_lo / 16 (both parts scaled by 256: inv takes 1/256 at the end).
          auto add_quarter = [&](int q, float(&dq)[2][16]) {
#pragma unroll
            for (int cl = 0; cl < 2; ++cl) {
              pin(dq[cl]);
#pragma unroll
              for (int a = 0; a < 8; ++a)
                o[2 * q + cl][a] =
                    fmaf(o[2 * q + cl][a], alpha[2 * (a >> 2) + (a & 1)], fmaf(dq[cl][a + 8], 0.0625f, dq[cl][a]));
            }
          };
          load_quarter(0, av[0]);
          issue_quarter(av[0], d[0]);
#pragma unroll
          for (int q = 0; q < 4; ++q) {
            if (q + 1 < 4) load_quarter(q + 1, av[(q + 1) & 1]);  // while quarter q's wgmmas run
            if (q == 3) {  // every quarter's V codes are in registers: the stage is free
              __syncwarp();
              if (lane == 0) mbar_arrive(empty_bar + 8 * s);
              released = true;
            }
            wg_wait0();
            add_quarter(q, d[0]);
            if (q + 1 < 4) issue_quarter(av[(q + 1) & 1], d[0]);
          }
        } else if constexpr (kRaw) {
#pragma unroll
          for (int cb = 0; cb < 8; ++cb) pin(o[cb]);  // rescaled before the first P·V wgmma (C7519)
          // Vᵀ from registers: k-step ks's fragments converted while ks - 1's
          // wgmmas run (two buffers; wait_group 1 frees the older one). Token
          // 16ks + tq + 4e of chunk c sits at raw_offset(c, tq, 64) + (16ks + 4e) 32
          // with the 16-byte unit flipped for odd e (bit 2 of the row is e & 1).
          const int c = 8 * wq + gq;
          const uint32_t vb[2] = {saddr(stage) + raw_offset(c, tq, kTNT), saddr(stage) + raw_offset(c ^ 1, tq, kTNT)};
          uint32_t a[2][8][4];
#pragma unroll
          for (int ks = 0; ks < kTNT / 16; ++ks) {
            uint4 x[4];
#pragma unroll
            for (int e = 0; e < 4; ++e) lds128(vb[e & 1] + (16 * ks + 4 * e) * kRawKBytes, x[e]);
            if (ks >= 2) wg_wait<1>();
            e4m3_v_frags(x, a[ks & 1]);
#pragma unroll
            for (int cb = 0; cb < 8; ++cb)  // converted before the fence (else ptxas injects one per wgmma: C7519)
              asm volatile("" : "+r"(a[ks & 1][cb][0]), "+r"(a[ks & 1][cb][1]), "+r"(a[ks & 1][cb][2]),
                           "+r"(a[ks & 1][cb][3])::"memory");
            const uint64_t dh = desc_at(desc_sw128(saddr(p_hi)), ks * 32);
            wg_fence();
#pragma unroll
            for (int cb = 0; cb < 8; ++cb) mma_m64n16_f16_rs(o[cb], a[ks & 1][cb], dh);
            wg_commit();
          }
        } else {
#pragma unroll
          for (int cb = 0; cb < 8; ++cb) pin(o[cb]);  // rescaled before the first P·V wgmma (C7519)
          wg_fence();
#pragma unroll
          for (int ks = 0; ks < kTNT / 16; ++ks) {
            const uint64_t dh = desc_at(desc_sw128(saddr(p_hi)), ks * 32), dl = desc_at(desc_sw128(saddr(p_lo)), ks * 32);
#pragma unroll
            for (int cb = 0; cb < 8; ++cb) {
              const uint64_t da = desc_at(desc_sw128(saddr(stage)), cb * kTNT * kRowBytes + ks * 16 * kRowBytes);
              mma_m64n16<F16, 1>(o[cb], da, dh, 1);
              if constexpr (!P1) mma_m64n16<F16, 1>(o[cb], da, dl, 1);
            }
          }
          wg_commit();
        }
        wg_wait0();  // this warp's share of P·V: the stage and (after the next barrier) Pᵀ are free
#pragma unroll
        for (int cb = 0; cb < 8; ++cb) pin(o[cb]);
        __syncwarp();
        if (lane == 0 && !released) mbar_arrive(empty_bar + 8 * s);
      }

      if (tid == 0) block_clock_mark(p, kClockTilesDone);
      // Merge the two warpgroups' states: per pair, L = Σ_wg l·2^(m_wg − M), O likewise.
#pragma unroll
      for (int x = 0; x < 4; ++x)
#pragma unroll
        for (int o_ = 4; o_ < 32; o_ <<= 1) l[x] += __shfl_xor_sync(0xffffffffu, l[x], o_);
      if (gq == 0)
#pragma unroll
        for (int x = 0; x < 4; ++x) lsum[(g * 4 + wq) * kTPairs + pair_of(x)] = l[x];
      if (g == 1 && wq == 0 && gq == 0)
#pragma unroll
        for (int x = 0; x < 4; ++x) mrec[pair_of(x)] = m[x];
      constexpr bool kMergeInQ = KV8;  // through q_s (and, e4m3, the P buffers after it)
      constexpr int kRounds = merge_rounds(kMergeInQ), kCbPer = 8 / kRounds;
      // fp8: merge goes through q_s (and P), so both warpgroups must be past their
      // last Q·Kᵀ and P·V (waited wgmmas) first; this barrier also publishes lsum and mrec.
      float* mbuf = kMergeInQ ? reinterpret_cast<float*>(q_s) : merge;
      if constexpr (kMergeInQ) bar_sync(kBarMergeStart, kConsumers);
      if (g == 1) {
#pragma unroll
        for (int rd = 0; rd < kRounds; ++rd) {
          if (rd > 0) bar_sync(kBarMergeRead, kConsumers);  // warpgroup 0 has read round rd - 1
#pragma unroll
          for (int cb = 0; cb < kCbPer; ++cb)
#pragma unroll
            for (int a = 0; a < 8; ++a) mbuf[(cb * 8 + a) * 128 + ct] = o[rd * kCbPer + cb][a];
          bar_arrive(kBarStats, kConsumers);
        }
        continue;
      }
      if constexpr (!kMergeInQ) bar_sync(kBarStats, kConsumers);  // round 0 (lsum, mrec with it)
      if (tid == 0) block_clock_mark(p, kClockMet);
      float f0[4], f1[4], inv[4], lse[4];
#pragma unroll
      for (int x = 0; x < 4; ++x) {
        const int r = pair_of(x);
        float l0 = 0.0f, l1 = 0.0f;
#pragma unroll
        for (int w2 = 0; w2 < 4; ++w2) {
          l0 += lsum[(0 * 4 + w2) * kTPairs + r];
          l1 += lsum[(1 * 4 + w2) * kTPairs + r];
        }
        const float m1 = mrec[r], M = fmaxf(m[x], m1);
        f0[x] = M == kNegInf ? 0.0f : exp2f(m[x] - M);
        f1[x] = M == kNegInf ? 0.0f : exp2f(m1 - M);
        const float L = l0 * f0[x] + l1 * f1[x];
        inv[x] = L == 0.0f ? 0.0f : (PV8 ? kv_scale / 256.0f : kv_scale) / L;  // PV8: P was scaled by 256
        lse[x] = L == 0.0f ? kNegInf : (M + log2f(L)) * 0.6931471805599453f;
      }
#pragma unroll
      for (int rd = 0; rd < kRounds; ++rd) {
        if (kMergeInQ || rd > 0) bar_sync(kBarStats, kConsumers);  // round rd written
#pragma unroll
        for (int cb = 0; cb < kCbPer; ++cb)
#pragma unroll
          for (int a = 0; a < 8; ++a) {
            const int x = 2 * (a >> 2) + (a & 1);
            o[rd * kCbPer + cb][a] = o[rd * kCbPer + cb][a] * f0[x] + mbuf[(cb * 8 + a) * 128 + ct] * f1[x];
          }
        if (rd + 1 < kRounds) bar_arrive(kBarMergeRead, kConsumers);
      }
      if (tid == 0) block_clock_mark(p, kClockCombined);
      const bool final_out = work.ploc < 0;
      const int64_t row_base = final_out ? int64_t(work.qo_start) * heads + chunk : int64_t(work.ploc) * heads + chunk;
      if constexpr (!kMergeInQ) {
        // Through the merge buffer (warpgroup 0 is done reading it; warpgroup 1 writes it
        // again only after the next chunk barrier), then whole rows: 16 coalesced 16-byte
        // stores a thread instead of 64 scattered 4-byte ones, whose issue took ~6 µs a
        // chunk (bench --block-times, docs/bench_notes.md step 33). Row r's column c at
        // r * kVDim + (c ^ ((r >> 1 & 3) << 3)): the 32 lanes of a scattered write hit 32 banks.
        bar_sync(kBarRed, 128);  // every thread of warpgroup 0 has read mbuf
#pragma unroll
        for (int cb = 0; cb < 8; ++cb)
#pragma unroll
          for (int a = 0; a < 8; ++a) {
            const int x = 2 * (a >> 2) + (a & 1), r = pair_of(x);
            const int col = cb * 64 + 16 * wq + gq + 8 * ((a >> 1) & 1);
            mbuf[r * kVDim + (col ^ (((r >> 1) & 3) << 3))] = o[cb][a] * inv[x];
          }
        bar_sync(kBarRed, 128);
        constexpr int kQuadsPerRow = kVDim / 4;
        for (int i = ct; i < cp * kQuadsPerRow; i += 128) {
          const int r = i / kQuadsPerRow, c = 4 * (i % kQuadsPerRow);
          const float4 v = *reinterpret_cast<const float4*>(mbuf + r * kVDim + (c ^ (((r >> 1) & 3) << 3)));
          const int64_t at = (row_base + r) * kVDim + c;
          if (final_out)
            *reinterpret_cast<uint2*>(p.out + at) =
                make_uint2(uint32_t(encode_out(p.out_type, v.x)) | (uint32_t(encode_out(p.out_type, v.y)) << 16),
                           uint32_t(encode_out(p.out_type, v.z)) | (uint32_t(encode_out(p.out_type, v.w)) << 16));
          else
            *reinterpret_cast<float4*>(p.partial_out + at) = v;
        }
      } else if constexpr (kRaw) {
        // The raw-code paths: this thread's columns of a pair are the 16 contiguous
        // e4m3_v_col(wq, gq, ·) (PV8: e4m3_v8_col, the same 16 with 4-column groups
        // XOR-permuted by gq >> 1), so four 16-byte stores a pair instead of 16 scalar
        // ones (the scattered stores cost ~6 µs a work: docs/bench_notes.md step 33).
        // Group kk's column i is 2cb + h = 4kk + i: cb = 2kk + i / 2, h = i % 2, and a
        // (pair x, half h) is accumulator 4 (x / 2) + 2h + x % 2; the same values as the
        // scalar loop below.
        const int base = 16 * (8 * wq + gq), sw = PV8 ? gq >> 1 : 0;
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int r = pair_of(x);
          if (r >= cp) continue;
#pragma unroll
          for (int kk = 0; kk < 4; ++kk) {
            float v[4];
#pragma unroll
            for (int i = 0; i < 4; ++i) v[i] = o[2 * kk + i / 2][4 * (x >> 1) + 2 * (i & 1) + (x & 1)] * inv[x];
            const int64_t at = (row_base + r) * kVDim + base + 4 * (kk ^ sw);
            if (final_out)
              *reinterpret_cast<uint2*>(p.out + at) =
                  make_uint2(uint32_t(encode_out(p.out_type, v[0])) | (uint32_t(encode_out(p.out_type, v[1])) << 16),
                             uint32_t(encode_out(p.out_type, v[2])) | (uint32_t(encode_out(p.out_type, v[3])) << 16));
            else
              *reinterpret_cast<float4*>(p.partial_out + at) = make_float4(v[0], v[1], v[2], v[3]);
          }
        }
      } else
#pragma unroll
      for (int cb = 0; cb < 8; ++cb)  // the staged fp8 path (producer-converted 16-bit stages, merged through q_s)
#pragma unroll
        for (int a = 0; a < 8; ++a) {
          const int x = 2 * (a >> 2) + (a & 1), r = pair_of(x);
          if (r >= cp) continue;
          const float val = o[cb][a] * inv[x];
          const int col = cb * 64 + 16 * wq + gq + 8 * ((a >> 1) & 1);
          const int64_t at = (row_base + r) * kVDim + col;
          if (final_out) p.out[at] = encode_out(p.out_type, val);
          else p.partial_out[at] = val;
        }
      if (wq == 0 && gq == 0)
#pragma unroll
        for (int x = 0; x < 4; ++x) {
          const int r = pair_of(x);
          if (r >= cp) continue;
          if (final_out) {
            if (p.lse) p.lse[row_base + r] = lse[x];
          } else {
            p.partial_lse[row_base + r] = lse[x];
          }
        }
      if (tid == 0) block_clock_mark(p, kClockOutputs);
      // Only warpgroup 0 is here (warpgroup 1 went on after the merge); after a
      // work's last chunk (its only one: this kernel serves <= 16 pairs) all its
      // outputs are stored.
      if (p.combine.work_tile && chunk + kTPairs >= pairs) {
        const int32_t t = __shfl_sync(0xffffffffu, p.combine.work_tile[w], 0);
        if (t >= 0) {
          if (fused_combine_arrive(p, t, ct, red)) {
            if (fused_splits < kFusedMaxSplitWorks) fused_won |= 1u << fused_splits;
            else if (ct == 0) record_error(p.error, kErrReduceMap, t, fused_splits);  // the host's bound broken
          }
          ++fused_splits;
        }
      }
    }
  }
  if (g == 0 && fused_won) fused_combine_won_tiles(p, w_begin, w_end, fused_won, ct);
  if (p.combine.work_split) {
    bar_sync(kBarChunk, kConsumers);  // both warpgroups are past their last chunk: q_s is free
    spread_combine_tiles(p, w_begin, w_end, tid, reinterpret_cast<float4*>(q_s));
  }
  block_clock_end(p);
#else
  (void)p;  // compiled for an architecture without wgmma: never launched (select_stage1)
#endif
}

}  // namespace wg
}  // namespace mla
