// The warpgroup (wgmma, NVIDIA sm_90a) kernels' shared machinery: block shape and
// register split, shared-memory descriptors and swizzles, fences, named barriers and
// mbarriers, the wgmma instructions both kernels issue, and q staging. The producer
// loops are in kernels/wgmma/producer.cuh, the kernels in rows.cuh and transposed.cuh
// (the layout of deepseek-ai/FlashMLA csrc/sm90/decode/dense/@9241ae3: kernels apart
// from their helpers, one translation unit per dtype instantiation).
//
// Shared-memory tiles use the 128-byte swizzle of the wgmma descriptors: a row of 64
// 16-bit elements is 128 bytes, 16-byte chunk c of row r is stored at chunk c ^ (r % 8),
// and tiles are [64-element column block][rows][128 bytes], each block 1024-byte
// aligned. K (and Q) are K-major operands; V, the first 512 elements of the same KV
// rows, is the N-major B operand of P·V (transpose bit), read in 64-column
// instructions so one swizzle atom spans N.
#pragma once

#include <type_traits>

#include "kernels/fp8x2.hpp"
#include "kernels/fragment.hpp"
#include "kernels/gpu.hpp"
#include "kernels/kernel_common.cuh"
#include "kernels/mla_decode.hpp"

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
// docs/bench_notes.md was measured with.
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
// instruction-bound: docs/bench_notes.md); the same bits.
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
// another (docs/bench_notes.md, "S1 by instruction").
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

}  // namespace wg
}  // namespace mla
