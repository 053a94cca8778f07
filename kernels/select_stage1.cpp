// select_stage1: the stage-1 kernel a launch runs (kernels/select_stage1.hpp).
#include "kernels/select_stage1.hpp"

#include "kernels/stage1_mma_shape.hpp"

namespace mla {

namespace {

const char* name(ElemType t) {
  switch (t) {
    case ElemType::bf16: return "bf16";
    case ElemType::fp16: return "fp16";
    case ElemType::fp8: return "fp8";
  }
  return "?";
}

// Both operands must be exact in one 16-bit MMA type: bf16, or fp16 when q or KV
// is fp16 (fp8 codes are exact in either). "" when they are.
std::string operands_inexact(const Stage1Params& p) {
  const bool f16 = p.q_type == ElemType::fp16 || p.kv_type == ElemType::fp16;
  if (f16 && (p.q_type == ElemType::bf16 || p.kv_type == ElemType::bf16))
    return std::string("q ") + name(p.q_type) + " and KV " + name(p.kv_type) + " are not exact in one 16-bit MMA type";
  return {};
}

std::string explain(const char* kernel, const std::string& reason) {
  return std::string(kernel) + " does not apply (" + reason + ")";
}

// Which path of the wgmma family p takes, said because it changes the arithmetic
// (kernels/select_stage1.hpp: wgmma_qk_e4m3, wgmma_k_registers, wgmma_pv_e4m3,
// wgmma_p_once); "" for the plain 16-bit paths.
std::string wgmma_path_note(const Stage1Params& p) {
  const std::string pv_e4m3 = "P·V on e4m3 wgmma (fp8 accumulation, ~14 bits; P in two e4m3 parts)";
  if (wgmma_qk_e4m3(p))
    return wgmma_pv_e4m3(p) ? "; fp8 q x e4m3fn KV: Q·Kᵀ and " + pv_e4m3
                            : "; fp8 q x e4m3fn KV: Q·Kᵀ on e4m3 wgmma (fp8 accumulation, ~14 bits)";
  const std::string q_name = p.q_type == ElemType::bf16 ? "bf16" : "fp8";
  if (wgmma_k_registers(p))
    return wgmma_pv_e4m3(p) ? "; " + q_name + " q x e4m3fn KV: K converted to fp16 in registers, Q·Kᵀ on fp16 wgmma, " +
                                  pv_e4m3
                            : "; " + q_name +
                                  " q x e4m3fn KV: K and V converted to fp16 in registers, Q·Kᵀ and P·V on fp16 wgmma "
                                  "(P once in fp16)";
  if (p.kv_type == ElemType::fp8) return "; fp8 KV converted into 16-bit stages by the producer";
  std::string note;
  if (const int blocks = wgmma_pair_tiles(p); blocks > 1)
    note += "; " + std::to_string(blocks) + " blocks a workgroup, one per 64-pair chunk of its works, side by side";
  if (wgmma_rows_64(p))
    note += p.wgmma_schedule == WgmmaSchedule::seesaw
                ? "; 64-token tiles, Q·Kᵀ as m64n64 wgmmas, the warpgroups taking alternate tiles' Q·Kᵀ and softmax "
                  "(--wgmma-schedule seesaw)"
            : p.wgmma_schedule == WgmmaSchedule::pair
                ? "; 64-token tiles in pairs, Q·Kᵀ as m64n64 wgmmas, one tile of each pair a warpgroup "
                  "(--wgmma-schedule pair)"
                : "; 64-token tiles, Q·Kᵀ as m64n64 wgmmas (--wgmma-schedule serial-64)";
  if (wgmma_runs_pair(p) && p.wgmma_schedule == WgmmaSchedule::pair_32)
    note += "; 32-token tiles in pairs on four stages, one tile of each pair a warpgroup (--wgmma-schedule pair-32)";
  if (wgmma_runs_pair(p))
    note += "; P·V with P rounded once to the operand type (the pair schedule always: two parts do not fit)";
  else if (wgmma_p_once(p))
    note += "; P·V with P rounded once to the operand type (--pv-precision once)";
  if (!wgmma_runs_transposed(p) && p.wgmma_schedule == WgmmaSchedule::split_qk)
    note += "; the warpgroups split each tile's Q·Kᵀ and both run the softmax (--wgmma-schedule split-qk)";
  return note;
}

}  // namespace

std::string wgmma_rejects(const Stage1Params& p, const Stage1Device& d) {
  if (d.vendor != GpuVendor::nvidia) return "NVIDIA sm_90a only";
  if (!d.wgmma_built) return "this build has no sm_90a code: add 90a to CMAKE_CUDA_ARCHITECTURES";
  if (d.compute_capability != 90)
    return "device compute capability " + std::to_string(d.compute_capability / 10) + "." +
           std::to_string(d.compute_capability % 10) + ", the sm_90a kernels need 9.0";
  if (std::string why = operands_inexact(p); !why.empty()) return why;
  // fp8 KV: the producer converts the codes to bf16, or to fp16 when q is exact in
  // fp16 (Stage1Params::q_f16_exact; both exact), for q bf16 or fp8 (fp16 q with fp8
  // KV is not built), and only the transposed kernel (<= 16 pairs: its consumers
  // leave the producer the registers the conversion needs).
  if (p.kv_type == ElemType::fp8 && p.q_type == ElemType::fp16) return "fp8 KV needs bf16 operands; q is fp16";
  if (p.kv_type == ElemType::fp8 && stage1_pairs(p) > kSmallWorkPairs)
    return "fp8 KV runs on the transposed kernel only: works of <= " + std::to_string(kSmallWorkPairs) +
           " (row, head) pairs, here " + std::to_string(stage1_pairs(p));
  if (p.head_dim != kWgmmaHeadDims[0] && p.head_dim != kWgmmaHeadDims[1])
    return "head_dim " + std::to_string(p.head_dim) + ", built for 576 and 512";
  if (p.v_dim != kWgmmaVDim) return "v_dim " + std::to_string(p.v_dim) + ", built for " + std::to_string(kWgmmaVDim);
  return {};
}

std::string mma_rejects(const Stage1Params& p, const Stage1Device& d) {
  if (d.vendor == GpuVendor::none) return "no GPU backend";
  const mma_shape::Target t = d.vendor == GpuVendor::amd ? mma_shape::kAmd : mma_shape::kNvidia;
  if (std::string why = operands_inexact(p); !why.empty()) return why;
  if (p.head_dim % 32) return "head_dim " + std::to_string(p.head_dim) + " is not a multiple of 32";
  // v_dim: whole pairs of MMA n-tiles (16 columns on NVIDIA, 32 on AMD).
  if (p.v_dim % (2 * t.tile_n))
    return "v_dim " + std::to_string(p.v_dim) + " is not a multiple of " + std::to_string(2 * t.tile_n);
  if (p.v_dim > mma_shape::parts(t) * mma_shape::cols_per_part(t))
    return "v_dim " + std::to_string(p.v_dim) + " > " + std::to_string(mma_shape::parts(t) * mma_shape::cols_per_part(t));
  // AMD: one m-tile's LDS within the 64 KB of gfx90a / gfx94x.
  if (!t.async_copy) {
    const size_t bytes = mma_shape::smem_bytes(t, p.head_dim, p.kv_type == ElemType::fp8, 1);
    if (bytes > mma_shape::kAmdLdsBytes)
      return std::to_string(bytes) + " bytes of LDS > " + std::to_string(mma_shape::kAmdLdsBytes);
  }
  return {};
}

Stage1Choice select_stage1(const Stage1Params& p, const Stage1Device& d) {
  const Stage1Kernel want = p.kernel;
  if (want == Stage1Kernel::cuda_core) return {Stage1Kernel::cuda_core, "asked"};
  if (d.vendor == GpuVendor::none) return {Stage1Kernel::cuda_core, "no GPU backend in this build (nothing runs)"};

  if (d.vendor == GpuVendor::amd) {
    // The MFMA build of the tensor-core kernel is compile-checked (gfx90a, gfx940)
    // but has never run on AMD hardware: only an explicit mma selects it.
    if (want == Stage1Kernel::automatic)
      return {Stage1Kernel::cuda_core,
              "automatic keeps AMD on the CUDA-core kernel (the MFMA kernel has not run on AMD hardware; ask for mma)"};
    if (want == Stage1Kernel::wgmma)
      return {Stage1Kernel::cuda_core, explain("wgmma", wgmma_rejects(p, d)) +
                                           "; on AMD only an explicit mma selects the MFMA kernel: cuda_core"};
    if (std::string why = mma_rejects(p, d); !why.empty())
      return {Stage1Kernel::cuda_core, explain("mma", why) + ": cuda_core"};
    return {Stage1Kernel::mma, "asked (the MFMA kernel: compile-checked only, never run on AMD hardware)"};
  }

  // NVIDIA. Automatic runs the warpgroup kernels wherever they apply: they beat
  // mma.sync on every docs/design.md §8 shape (docs/bench_notes.md steps 16-17),
  // fp8 KV included since its codes are staged with cp.async and converted
  // shared -> shared (step 22).
  std::string path;  // the kernels passed over, in order
  if (want == Stage1Kernel::wgmma || want == Stage1Kernel::automatic) {
    if (std::string why = wgmma_rejects(p, d); !why.empty()) {
      path = (want == Stage1Kernel::automatic ? std::string("automatic: ") : std::string()) + explain("wgmma", why);
    } else {
      const std::string path_note = wgmma_path_note(p);
      const std::string copy_note =
          wgmma_raw_ring(p) && p.fp8_copy == Fp8Copy::half_lines ? "; the producer copies half-lines (64 bytes)" : "";
      return {Stage1Kernel::wgmma, (want == Stage1Kernel::automatic
                                        ? std::string("automatic: the warpgroup kernel applies (sm_90a build on 9.0)")
                                        : std::string("asked, and it applies")) +
                                       path_note + copy_note};
    }
  }
  if (std::string why = mma_rejects(p, d); !why.empty()) {
    path += (path.empty() ? "" : "; ") + explain("mma", why);
    return {Stage1Kernel::cuda_core, path + ": cuda_core"};
  }
  if (path.empty()) return {Stage1Kernel::mma, "asked, and it applies"};
  return {Stage1Kernel::mma, path + ": mma"};
}

std::string fused_combine_rejects(const Stage1Params& p, const Stage1Device& device) {
  const Stage1Kernel k = select_stage1(p, device).kernel;
  if (k != Stage1Kernel::wgmma)
    return std::string("needs the transposed wgmma stage-1 kernel; ") + to_string(k) + " runs";
  if (!wgmma_runs_transposed(p))
    return "needs the transposed wgmma stage-1 kernel (works of <= " +
           std::to_string(kSmallWorkPairs) + " pairs); the row-major one runs (" + std::to_string(stage1_pairs(p)) +
           " pairs)";
  return {};
}

}  // namespace mla
