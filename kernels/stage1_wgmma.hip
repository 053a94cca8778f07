// Warpgroup stage 1 (Stage1Kernel::wgmma; NVIDIA sm_90a): the launches of the
// kernels in kernels/stage1_wgmma.cuh. Compiled only in CUDA builds; the
// launches exist only when CMAKE_CUDA_ARCHITECTURES has 90a (MLACTL_CUDA_WGMMA),
// and select_stage1 picks them only on a compute-9.0 device.
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/select_stage1.hpp"
#include "kernels/stage1_launch.hpp"
#include "kernels/stage1_wgmma.cuh"
#include "kernels/stage1_wgmma_seesaw.cuh"
#include "kernels/stage1_wgmma_pair.cuh"

#if !defined(MLACTL_GPU_CUDA)
#error "stage1_wgmma.hip is NVIDIA-only (nvcc)"
#endif

namespace mla {

// select_stage1 decides with the shape these kernels are built for.
static_assert(wg::kVDim == kWgmmaVDim, "select_stage1's wgmma v_dim");
static_assert(wg::kTPairs == kSmallWorkPairs, "select_stage1's bound for the transposed kernel");

#if defined(MLACTL_CUDA_WGMMA)
namespace {

// Blocks per workgroup for the row-major kernel (Stage1Params::pair_tiles): one per
// QR-pair chunk of a work, adjacent in the grid (select_stage1.hpp, wgmma_pair_tiles).
// FlashMLA plans num_sm_parts = SMs / ceil(h_q / 64) parts for a grid of parts x
// 64-head tiles, so one block per part would also leave half the SMs idle at 128 heads.
static_assert(wg::kRows == kRowMajorPairs, "wgmma_pair_tiles' chunk");

template <bool F16, bool KV8, int QR, int S, int NT, WgmmaSchedule SCHED, bool P1 = false>
bool launch_rows(const Stage1Params& p_in, std::string* error) {
  static_assert(QR == kRowMajorPairs, "wgmma_pair_tiles' chunk");
  constexpr bool kPair = SCHED == WgmmaSchedule::pair || SCHED == WgmmaSchedule::pair_32;
  Stage1Params p = p_in;
  p.pair_tiles = wgmma_pair_tiles(p);
  const size_t smem = wg::Plan{QR, S, p.head_dim, NT, SCHED == WgmmaSchedule::split_qk, P1, kPair}.total();
  void (*kernel)(Stage1Params);
  if constexpr (kPair) {
    static_assert(!KV8 && P1, "the pair kernel: 16-bit KV, P once");
    kernel = p.head_dim == 576 ? wg::stage1_wgmma_pair_kernel<F16, 576, NT, S>
                               : wg::stage1_wgmma_pair_kernel<F16, 512, NT, S>;
  } else if constexpr (SCHED == WgmmaSchedule::seesaw) {
    static_assert(!KV8 && S == 2 && NT == 64, "the seesaw kernel: 16-bit KV, serial-64's two 64-token stages");
    kernel = p.head_dim == 576 ? wg::stage1_wgmma_seesaw_kernel<F16, 576, P1> : wg::stage1_wgmma_seesaw_kernel<F16, 512, P1>;
  } else {
    kernel = p.head_dim == 576 ? wg::stage1_wgmma_kernel<F16, QR, S, 576, NT, KV8, SCHED, P1>
                               : wg::stage1_wgmma_kernel<F16, QR, S, 512, NT, KV8, SCHED, P1>;
  }
  if (!check(gpu_set_max_dynamic_shared(kernel, int(smem)), "set stage-1 (wgmma) shared memory", error)) return false;
  kernel<<<dim3(unsigned(p.num_workgroups) * unsigned(p.pair_tiles)), dim3(wg::kThreads), smem, 0>>>(p);
  return check_launch("stage-1 (wgmma) launch", error);
}
// The row-major kernel with P once where wgmma_p_once says so, else in two parts.
template <bool F16, int S, int NT, WgmmaSchedule SCHED>
bool launch_rows_pv(const Stage1Params& p, std::string* error) {
  return wgmma_p_once(p) ? launch_rows<F16, false, 64, S, NT, SCHED, true>(p, error)
                         : launch_rows<F16, false, 64, S, NT, SCHED>(p, error);
}
template <bool F16, bool KV8, bool E4M3 = false, bool PV8 = false, bool KREG = false, bool P1 = false>
bool launch_transposed(const Stage1Params& p, std::string* error) {
  const size_t smem = wg::PlanT{p.head_dim, KV8, E4M3, KREG}.total();
  auto kernel = p.head_dim == 576 ? wg::stage1_wgmma_t_kernel<F16, 576, KV8, E4M3, PV8, KREG, P1>
                                  : wg::stage1_wgmma_t_kernel<F16, 512, KV8, E4M3, PV8, KREG, P1>;
  if (!check(gpu_set_max_dynamic_shared(kernel, int(smem)), "set stage-1 (wgmma, transposed) shared memory", error))
    return false;
  kernel<<<dim3(p.num_workgroups), dim3(wg::kThreads), smem, 0>>>(p);
  return check_launch("stage-1 (wgmma, transposed) launch", error);
}
// Up to 16 pairs per work (M1, M3, S1: 16 or fewer heads, one q row): the
// transposed kernel (64 tokens as the wgmma rows, no padding). More pairs (M2,
// C1): 64 q rows (72 KB), 3 stages of 32-token tiles (206 KB). (The row-major
// kernel on 16 pairs, with 16 q rows and 4 stages or with 64-token tiles, lost to
// mma.sync: docs/bench_notes.md steps 11-12.) P once (wgmma_p_once) is built for the
// transposed kernel and the row-major one's serial and split_qk schedules; qk_ahead keeps
// P in two parts; serial_64 and seesaw (two stages of 64-token tiles, 216 KB) both; pair
// only P once.
template <bool F16>
bool launch_typed(const Stage1Params& p, std::string* error) {
  if (wgmma_runs_transposed(p))
    return wgmma_p_once(p) ? launch_transposed<F16, false, false, false, false, true>(p, error)
                           : launch_transposed<F16, false>(p, error);
  if (p.wgmma_schedule == WgmmaSchedule::qk_ahead)
    return launch_rows<F16, false, 64, 3, 32, WgmmaSchedule::qk_ahead>(p, error);
  if (p.wgmma_schedule == WgmmaSchedule::split_qk) return launch_rows_pv<F16, 3, 32, WgmmaSchedule::split_qk>(p, error);
  if (p.wgmma_schedule == WgmmaSchedule::serial_64) return launch_rows_pv<F16, 2, 64, WgmmaSchedule::serial_64>(p, error);
  if (p.wgmma_schedule == WgmmaSchedule::seesaw) return launch_rows_pv<F16, 2, 64, WgmmaSchedule::seesaw>(p, error);
  if (p.wgmma_schedule == WgmmaSchedule::pair) return launch_rows<F16, false, 64, 2, 64, WgmmaSchedule::pair, true>(p, error);
  if (p.wgmma_schedule == WgmmaSchedule::pair_32)
    return launch_rows<F16, false, 64, 4, 32, WgmmaSchedule::pair_32, true>(p, error);
  return launch_rows_pv<F16, 3, 32, WgmmaSchedule::serial>(p, error);
}

}  // namespace

bool launch_stage1_wgmma(const Stage1Params& p, std::string* error) {
  // fp8 KV: the transposed kernel only (select_stage1 checked <= 16 pairs). fp16
  // operands when q is exact in fp16 (every fp8 code is): e4m3fn then converts in
  // hardware (cvt.rn.f16x2.e4m3x2), two codes per instruction, where bf16 takes
  // ~4 integer operations per code pair; else bf16 operands. fp8 q with e4m3fn KV:
  // the e4m3 path (wgmma_qk_e4m3), which converts no K at all. Other q (exact in fp16)
  // with e4m3fn KV: K and V converted by the consumers (wgmma_k_registers).
  if (wgmma_qk_e4m3(p))
    return wgmma_pv_e4m3(p) ? launch_transposed<true, true, true, true>(p, error)
                            : launch_transposed<true, true, true>(p, error);
  if (wgmma_k_registers(p))
    return wgmma_pv_e4m3(p) ? launch_transposed<true, true, false, true, true>(p, error)
                            : launch_transposed<true, true, false, false, true>(p, error);
  if (p.kv_type == ElemType::fp8)
    return p.q_f16_exact ? launch_transposed<true, true>(p, error) : launch_transposed<false, true>(p, error);
  const bool f16 = p.q_type == ElemType::fp16 || p.kv_type == ElemType::fp16;
  return f16 ? launch_typed<true>(p, error) : launch_typed<false>(p, error);
}
#endif  // MLACTL_CUDA_WGMMA

}  // namespace mla
