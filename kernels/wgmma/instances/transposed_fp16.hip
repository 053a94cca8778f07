// The transposed wgmma kernel on fp16 operands (16-bit KV).
// Explicit instantiations of kernels/wgmma/launch.cuh; the table: kernels/wgmma/dispatch.hip.
#include "kernels/wgmma/launch.cuh"

#if defined(MLACTL_CUDA_WGMMA)
MLA_WGMMA_TRANSPOSED(true, 576, false, false, false, false, false)
MLA_WGMMA_TRANSPOSED(true, 576, false, false, false, false, true)
MLA_WGMMA_TRANSPOSED(true, 512, false, false, false, false, false)
MLA_WGMMA_TRANSPOSED(true, 512, false, false, false, false, true)
#endif
