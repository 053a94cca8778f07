// The transposed wgmma kernel with Q·Kᵀ on e4m3 (fp8 q, e4m3fn KV).
// Explicit instantiations of kernels/wgmma/launch.cuh; the table: kernels/wgmma/dispatch.hip.
#include "kernels/wgmma/launch.cuh"

#if defined(MLACTL_CUDA_WGMMA)
MLA_WGMMA_TRANSPOSED(true, 576, true, true, false, false, false)
MLA_WGMMA_TRANSPOSED(true, 576, true, true, true, false, false)
MLA_WGMMA_TRANSPOSED(true, 512, true, true, false, false, false)
MLA_WGMMA_TRANSPOSED(true, 512, true, true, true, false, false)
#endif
