// The warpgroup stage 1 (Stage1Kernel::wgmma; NVIDIA sm_90a): one table from the key
// select_stage1 derives (wgmma_key: dtype path, head_dim, P once, P·V on e4m3) to the
// instantiated launch (kernels/wgmma/instances.hpp). Compiled only in CUDA builds; the
// table exists only when CMAKE_CUDA_ARCHITECTURES has 90a (MLACTL_CUDA_WGMMA).
#include "kernels/select_stage1.hpp"
#include "kernels/stage1_launch.hpp"
#include "kernels/wgmma/instances.hpp"

#if !defined(__CUDACC__)
#error "kernels/wgmma/dispatch.hip is NVIDIA-only (nvcc)"
#endif

namespace mla {

#if defined(MLACTL_CUDA_WGMMA)
namespace {

using wg::launch_rows;
using wg::launch_transposed;
using P = WgmmaPath;

struct Entry {
  WgmmaKey key;
  wg::Launch launch;
};

// Every instantiation once (the seven files of kernels/wgmma/instances/).
constexpr Entry kTable[] = {
    {{P::rows_bf16, 576, false, false}, launch_rows<false, 576, false>},
    {{P::rows_bf16, 576, true, false}, launch_rows<false, 576, true>},
    {{P::rows_bf16, 512, false, false}, launch_rows<false, 512, false>},
    {{P::rows_bf16, 512, true, false}, launch_rows<false, 512, true>},
    {{P::rows_fp16, 576, false, false}, launch_rows<true, 576, false>},
    {{P::rows_fp16, 576, true, false}, launch_rows<true, 576, true>},
    {{P::rows_fp16, 512, false, false}, launch_rows<true, 512, false>},
    {{P::rows_fp16, 512, true, false}, launch_rows<true, 512, true>},
    {{P::t_bf16, 576, false, false}, launch_transposed<false, 576, false, false, false, false, false>},
    {{P::t_bf16, 576, true, false}, launch_transposed<false, 576, false, false, false, false, true>},
    {{P::t_bf16, 512, false, false}, launch_transposed<false, 512, false, false, false, false, false>},
    {{P::t_bf16, 512, true, false}, launch_transposed<false, 512, false, false, false, false, true>},
    {{P::t_fp16, 576, false, false}, launch_transposed<true, 576, false, false, false, false, false>},
    {{P::t_fp16, 576, true, false}, launch_transposed<true, 576, false, false, false, false, true>},
    {{P::t_fp16, 512, false, false}, launch_transposed<true, 512, false, false, false, false, false>},
    {{P::t_fp16, 512, true, false}, launch_transposed<true, 512, false, false, false, false, true>},
    {{P::t_fp8_staged_bf16, 576, false, false}, launch_transposed<false, 576, true, false, false, false, false>},
    {{P::t_fp8_staged_bf16, 512, false, false}, launch_transposed<false, 512, true, false, false, false, false>},
    {{P::t_fp8_staged_fp16, 576, false, false}, launch_transposed<true, 576, true, false, false, false, false>},
    {{P::t_fp8_staged_fp16, 512, false, false}, launch_transposed<true, 512, true, false, false, false, false>},
    {{P::t_e4m3, 576, false, false}, launch_transposed<true, 576, true, true, false, false, false>},
    {{P::t_e4m3, 576, false, true}, launch_transposed<true, 576, true, true, true, false, false>},
    {{P::t_e4m3, 512, false, false}, launch_transposed<true, 512, true, true, false, false, false>},
    {{P::t_e4m3, 512, false, true}, launch_transposed<true, 512, true, true, true, false, false>},
    {{P::t_kreg, 576, false, false}, launch_transposed<true, 576, true, false, false, true, false>},
    {{P::t_kreg, 576, false, true}, launch_transposed<true, 576, true, false, true, true, false>},
    {{P::t_kreg, 512, false, false}, launch_transposed<true, 512, true, false, false, true, false>},
    {{P::t_kreg, 512, false, true}, launch_transposed<true, 512, true, false, true, true, false>},
};

}  // namespace

bool launch_stage1_wgmma(const Stage1Params& p, Stage1Ran* ran, std::string* error) {
  const WgmmaKey key = wgmma_key(p);
  for (const Entry& e : kTable)
    if (e.key == key) return e.launch(p, ran, error);
  if (error) *error = "stage-1: no wgmma instantiation for this view (head_dim " + std::to_string(p.head_dim) + ")";
  return false;
}
#endif  // MLACTL_CUDA_WGMMA

}  // namespace mla
