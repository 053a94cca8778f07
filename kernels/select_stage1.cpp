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
  if (wgmma_p_once(p)) note += "; P·V with P rounded once to the operand type (--pv-precision once)";
  return note;
}

// The kernel asked for cannot serve p: refused with the reason.
Stage1Choice refuse(const char* kernel, const std::string& why) {
  Stage1Choice c;
  c.refusal = std::string("stage-1 kernel ") + kernel + " was asked but " + explain(kernel, why);
  return c;
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

namespace {
Stage1Choice choose_kernel(const Stage1Params& p, const Stage1Device& d) {
  const Stage1Kernel want = p.kernel;
  if (want == Stage1Kernel::cuda_core) return {Stage1Kernel::cuda_core, "asked", std::nullopt};
  if (d.vendor == GpuVendor::none) {
    if (want != Stage1Kernel::automatic) return refuse(to_string(want), "no GPU backend in this build");
    return {Stage1Kernel::cuda_core, "no GPU backend in this build (nothing runs)", std::nullopt};
  }
  if (d.vendor == GpuVendor::amd) {
    // The MFMA build of the tensor-core kernel is compile-checked but has never run on
    // AMD hardware: only an explicit mma selects it.
    if (want == Stage1Kernel::automatic)
      return {Stage1Kernel::cuda_core,
              "automatic keeps AMD on the CUDA-core kernel (the MFMA kernel has not run on AMD hardware; ask for mma)",
              std::nullopt};
    if (want == Stage1Kernel::wgmma) return refuse("wgmma", wgmma_rejects(p, d));
    if (std::string why = mma_rejects(p, d); !why.empty()) return refuse("mma", why);
    return {Stage1Kernel::mma, "asked (the MFMA kernel: compile-checked only, never run on AMD hardware)", std::nullopt};
  }
  // NVIDIA. automatic runs the warpgroup kernels wherever they apply: they beat
  // mma.sync on every docs/design.md §8 shape, fp8 KV included (docs/bench_notes.md).
  if (want == Stage1Kernel::wgmma) {
    if (std::string why = wgmma_rejects(p, d); !why.empty()) return refuse("wgmma", why);
    return {Stage1Kernel::wgmma, "asked, and it applies" + wgmma_path_note(p), std::nullopt};
  }
  if (want == Stage1Kernel::mma) {
    if (std::string why = mma_rejects(p, d); !why.empty()) return refuse("mma", why);
    return {Stage1Kernel::mma, "asked, and it applies", std::nullopt};
  }
  const std::string wgmma_why = wgmma_rejects(p, d);
  if (wgmma_why.empty())
    return {Stage1Kernel::wgmma, "automatic: the warpgroup kernel applies (sm_90a build on 9.0)" + wgmma_path_note(p),
            std::nullopt};
  std::string path = "automatic: " + explain("wgmma", wgmma_why);
  if (std::string why = mma_rejects(p, d); !why.empty())
    return {Stage1Kernel::cuda_core, path + "; " + explain("mma", why) + ": cuda_core", std::nullopt};
  return {Stage1Kernel::mma, path + ": mma", std::nullopt};
}
}  // namespace

Stage1Choice select_stage1(const Stage1Params& p, const Stage1Device& d) {
  Stage1Choice c = choose_kernel(p, d);
  if (!c.refusal) {
    if (std::string why = precision_rejects(p, c.kernel); !why.empty()) c.refusal = why;
  }
  return c;
}

std::string precision_rejects(const Stage1Params& p, Stage1Kernel kernel) {
  const bool wgmma = kernel == Stage1Kernel::wgmma;
  const std::string on = std::string(" (the ") + to_string(kernel) + " kernel runs";
  if (p.pv_precision == PvPrecision::once && !(wgmma && p.kv_type != ElemType::fp8))
    return "--pv-precision once was asked but only the wgmma kernels on 16-bit KV round P once" + on + ", KV " +
           name(p.kv_type) + ")";
  if (p.pv_precision == PvPrecision::split && wgmma && wgmma_raw_ring(p))
    return "--pv-precision split was asked but this fp8 path takes P once in fp16 (use --fp8-convert staged for "
           "P in two parts)";
  const bool e4m3fn_kv = p.kv_type == ElemType::fp8 && !p.fp8_fnuz;
  if (p.fp8_qk != Fp8QkMma::automatic && !(wgmma && e4m3fn_kv && p.q_type == ElemType::fp8))
    return std::string("--fp8-qk ") + to_string(p.fp8_qk) +
           " was asked but only the wgmma kernel on fp8 q with e4m3fn KV has that choice" + on + ")";
  if (p.fp8_pv != Fp8PvMma::automatic && !(wgmma && wgmma_raw_ring(p)))
    return std::string("--fp8-pv ") + to_string(p.fp8_pv) +
           " was asked but only the wgmma kernel's raw-code fp8 paths (e4m3fn KV: Q·Kᵀ on e4m3, or K in registers) "
           "have that choice" + on + ")";
  if (p.fp8_convert != Fp8Convert::automatic && !(wgmma && e4m3fn_kv && !wgmma_qk_e4m3(p)))
    return std::string("--fp8-convert ") + to_string(p.fp8_convert) +
           " was asked but only the wgmma kernel on e4m3fn KV with Q·Kᵀ on fp16 has that choice" + on + ")";
  if (p.fp8_convert == Fp8Convert::registers && !wgmma_k_registers(p))
    return "--fp8-convert registers was asked but q is not exact in fp16 (the codes must be staged)";
  return {};
}

WgmmaKey wgmma_key(const Stage1Params& p) {
  const bool f16 = p.q_type == ElemType::fp16 || p.kv_type == ElemType::fp16;
  WgmmaKey k;
  k.head_dim = p.head_dim;
  k.p_once = wgmma_p_once(p);
  k.pv_e4m3 = wgmma_pv_e4m3(p);
  if (wgmma_qk_e4m3(p)) k.path = WgmmaPath::t_e4m3;
  else if (wgmma_k_registers(p)) k.path = WgmmaPath::t_kreg;
  else if (p.kv_type == ElemType::fp8) k.path = p.q_f16_exact ? WgmmaPath::t_fp8_staged_fp16 : WgmmaPath::t_fp8_staged_bf16;
  else if (wgmma_runs_transposed(p)) k.path = f16 ? WgmmaPath::t_fp16 : WgmmaPath::t_bf16;
  else k.path = f16 ? WgmmaPath::rows_fp16 : WgmmaPath::rows_bf16;
  return k;
}

}  // namespace mla
