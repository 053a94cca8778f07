// The transposed wgmma kernel with K converted in registers (e4m3fn KV, Q·Kᵀ on fp16).
// Explicit instantiations of kernels/wgmma/launch.cuh; the table: kernels/wgmma/dispatch.hip.
#include "kernels/wgmma/launch.cuh"

#if defined(MLACTL_CUDA_WGMMA)
MLA_WGMMA_TRANSPOSED(true, 576, true, false, false, true, false)
MLA_WGMMA_TRANSPOSED(true, 576, true, false, true, true, false)
MLA_WGMMA_TRANSPOSED(true, 512, true, false, false, true, false)
MLA_WGMMA_TRANSPOSED(true, 512, true, false, true, true, false)
#endif
