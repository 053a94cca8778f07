// The warpgroup kernels' producer loops (kernels/wgmma/common.cuh): the producer
// warpgroup walks a block's works, chunks and KV tiles in the consumers' order and
// fills the stage ring with cp.async; a stage's `full` mbarrier completes when its
// copies land, the consumers free it through `empty`.
#pragma once

#include "kernels/wgmma/common.cuh"

namespace mla {
namespace wg {

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
// copies at all, was the bottleneck (docs/bench_notes.md).
// fp8 KV (KV8, the transposed kernel's 64-token tiles): the codes cannot be
// converted in flight by cp.async, and loading them into registers to convert kept
// only two 16-byte loads in flight per thread (ptxas rotates two destination
// registers however the loads are batched: docs/bench_notes.md). So the raw
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

// RAW8: the tile is fp8 codes as they are (the transposed kernel's raw-code paths), in
// the 32-byte-swizzle K-major layout raw_offset gives, 8 threads a row, each copy
// instruction j of a row one whole 128-byte line of it (chunk 8j + c0 - lead, lead the
// row's 16-byte offset into its first line: a 576-byte row starts mid-line on every
// other slot). Four threads a row, 16-byte chunks c0 + 4j, gave the L2 one request per
// 32-byte sector and was slower (docs/bench_notes.md, "fp8 copy form").
template <int QR, int NT, int S, int HD, bool RAW8 = false>
__device__ inline void produce_kv_tiles(const Stage1Params& p, int32_t w_begin, int32_t w_end, uint8_t* kv_s,
                                        size_t stage_bytes, uint32_t full_bar, uint32_t empty_bar, int pw, int lane) {
  constexpr int kElemBytes = RAW8 ? 1 : 2;
  constexpr int kTpr = 8;  // threads per row (8 x 16 B = one 128-byte line)
  constexpr int kRowsPerPass = kProducers / kTpr;
  constexpr int kRowsPer = NT / kRowsPerPass;  // rows per thread
  constexpr int kRowChunks = HD * kElemBytes / 16;  // 16-byte chunks of a row (72 or 64; fp8 36 or 32)
  constexpr int kColsPer = kRowChunks / kTpr;      // 16-bit KV: chunks per thread and row (9 or 8)
  constexpr int kLines = (kRowChunks + 2 * kTpr - 2) / kTpr;  // RAW8: lines a row may touch at lead <= 7
  static_assert(NT % kRowsPerPass == 0 && (RAW8 || kRowChunks % kTpr == 0), "producer thread layout");
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
          if constexpr (RAW8) {
            // Rows outside the tile are zero-filled (lead 0), as every chunk of them.
            const int lead = ok ? int((reinterpret_cast<uintptr_t>(row) & 127) >> 4) : 0;
#pragma unroll
            for (int j = 0; j < kLines; ++j) {
              const int k = kTpr * j + c0 - lead;
              if (k >= 0 && k < kRowChunks)
                frag::cp_async16(stage + raw_offset(k, n, NT), row + (ok ? 16 * k : 0), ok ? 16 : 0);
            }
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

}  // namespace wg
}  // namespace mla
