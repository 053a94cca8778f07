// The launches of the warpgroup kernels, each instantiated in its own translation unit
// (kernels/wgmma/instances/*.hip) and found by kernels/wgmma/dispatch.hip's table. Each
// launch reports what it enqueued (Stage1Ran): the launch site, not a prediction.
#pragma once
#include <string>

#include "kernels/select_stage1.hpp"
#include "kernels/wgmma/instances.hpp"
#include "kernels/wgmma/rows.cuh"
#include "kernels/wgmma/transposed.cuh"

namespace mla {
namespace wg {

// select_stage1 decides with the shape these kernels are built for.
static_assert(kVDim == kWgmmaVDim, "select_stage1's wgmma v_dim");
static_assert(kTPairs == kSmallWorkPairs, "select_stage1's bound for the transposed kernel");
static_assert(kRows == kRowMajorPairs, "wgmma_pair_tiles' chunk");

inline const char* operand_name(bool f16) { return f16 ? "fp16" : "bf16"; }

template <bool F16, int HD, bool P1>
bool launch_rows(const Stage1Params& p_in, Stage1Ran* ran, std::string* error) {
  Stage1Params p = p_in;
  p.pair_tiles = wgmma_pair_tiles(p);  // one block per 64-pair chunk, a work's chunks adjacent
  constexpr size_t smem = Plan{HD, P1}.total();
  auto kernel = stage1_wgmma_rows_kernel<F16, HD, P1>;
  if (!check(gpu_set_max_dynamic_shared(kernel, int(smem)), "set stage-1 (wgmma rows) shared memory", error))
    return false;
  const unsigned grid = unsigned(p.num_workgroups) * unsigned(p.pair_tiles);
  kernel<<<dim3(grid), dim3(kThreads), smem, 0>>>(p);
  if (!check_launch("stage-1 (wgmma rows) launch", error)) return false;
  const Stage1Precision precision = P1 ? Stage1Precision::p_once : Stage1Precision::p_split;
  *ran = Stage1Ran{Stage1Kernel::wgmma, Stage1Schedule::wgmma_rows, precision,
                   std::string("wgmma_rows<") + operand_name(F16) + ", " + std::to_string(HD) + ", " +
                       to_string(precision) + ">",
                   int64_t(grid), kThreads, int64_t(smem)};
  return true;
}

template <bool F16, int HD, bool KV8, bool E4M3, bool PV8, bool KREG, bool P1>
bool launch_transposed(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  const size_t smem = PlanT{HD, KV8, E4M3, KREG}.total();
  auto kernel = stage1_wgmma_t_kernel<F16, HD, KV8, E4M3, PV8, KREG, P1>;
  if (!check(gpu_set_max_dynamic_shared(kernel, int(smem)), "set stage-1 (wgmma, transposed) shared memory", error))
    return false;
  kernel<<<dim3(p.num_workgroups), dim3(kThreads), smem, 0>>>(p);
  if (!check_launch("stage-1 (wgmma, transposed) launch", error)) return false;
  const Stage1Precision precision =
      E4M3   ? (PV8 ? Stage1Precision::qk_e4m3_pv_e4m3 : Stage1Precision::qk_e4m3)
      : KREG ? (PV8 ? Stage1Precision::k_registers_pv_e4m3 : Stage1Precision::k_registers)
      : P1   ? Stage1Precision::p_once
             : Stage1Precision::p_split;
  *ran = Stage1Ran{Stage1Kernel::wgmma, Stage1Schedule::wgmma_transposed, precision,
                   std::string("wgmma_transposed<") + (E4M3 ? "e4m3" : operand_name(F16)) + (KV8 ? ", fp8 KV" : "") +
                       ", " + std::to_string(HD) + ", " + to_string(precision) + ">",
                   int64_t(p.num_workgroups), kThreads, int64_t(smem)};
  return true;
}

}  // namespace wg
}  // namespace mla

// One explicit instantiation a line, for the translation units of kernels/wgmma/instances/.
#define MLA_WGMMA_ROWS(F16, HD, P1) \
  template bool mla::wg::launch_rows<F16, HD, P1>(const mla::Stage1Params&, mla::Stage1Ran*, std::string*);
#define MLA_WGMMA_TRANSPOSED(F16, HD, KV8, E4M3, PV8, KREG, P1)                                                  \
  template bool mla::wg::launch_transposed<F16, HD, KV8, E4M3, PV8, KREG, P1>(const mla::Stage1Params&,        \
                                                                              mla::Stage1Ran*, std::string*);
