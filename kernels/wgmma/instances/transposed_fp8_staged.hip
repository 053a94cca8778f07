// The transposed wgmma kernel on fp8 KV converted into 16-bit stages by the producer.
// Explicit instantiations of kernels/wgmma/launch.cuh; the table: kernels/wgmma/dispatch.hip.
#include "kernels/wgmma/launch.cuh"

#if defined(MLACTL_CUDA_WGMMA)
MLA_WGMMA_TRANSPOSED(false, 576, true, false, false, false, false)
MLA_WGMMA_TRANSPOSED(true, 576, true, false, false, false, false)
MLA_WGMMA_TRANSPOSED(false, 512, true, false, false, false, false)
MLA_WGMMA_TRANSPOSED(true, 512, true, false, false, false, false)
#endif
