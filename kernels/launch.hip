// The stage-1 launch: select_stage1 (kernels/select_stage1.hpp) picks the kernel
// family for this build and device (or refuses what was asked), this switch enqueues it. The families'
// launches: kernels/stage1_launch.hpp.
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/select_stage1.hpp"
#include "kernels/stage1_launch.hpp"

namespace mla {

Stage1Device current_stage1_device() {
  Stage1Device d;
#if defined(MLACTL_GPU_CUDA)
  d.vendor = GpuVendor::nvidia;
  static const int cc = gpu_current_compute_capability();  // queried once
  d.compute_capability = cc;
#if defined(MLACTL_CUDA_WGMMA)
  d.wgmma_built = true;
#endif
#else
  d.vendor = GpuVendor::amd;
#endif
  return d;
}

bool launch_stage1(const Stage1Params& p, std::optional<Stage1Ran>* ran, std::string* error) {
  if (p.num_workgroups <= 0) return true;
  const Stage1Choice choice = select_stage1(p, current_stage1_device());
  if (choice.refusal) {
    if (error) *error = "stage-1: " + *choice.refusal;
    return false;
  }
  Stage1Ran enqueued;
  bool ok = false;
  switch (choice.kernel) {
    case Stage1Kernel::wgmma:
#if defined(MLACTL_GPU_CUDA) && defined(MLACTL_CUDA_WGMMA)
      ok = launch_stage1_wgmma(p, &enqueued, error);
      break;
#else
      if (error) *error = "stage-1: wgmma selected in a build without the sm_90a kernels";
      return false;
#endif
    case Stage1Kernel::mma: ok = launch_stage1_mma(p, &enqueued, error); break;
    case Stage1Kernel::cuda_core: ok = launch_stage1_cuda_core(p, &enqueued, error); break;
    case Stage1Kernel::automatic:
      if (error) *error = "stage-1: select_stage1 returned automatic";
      return false;
  }
  if (ok && ran) *ran = enqueued;
  return ok;
}

}  // namespace mla
