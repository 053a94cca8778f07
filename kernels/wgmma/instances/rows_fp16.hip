// The row-major wgmma kernel on fp16 operands.
// Explicit instantiations of kernels/wgmma/launch.cuh; the table: kernels/wgmma/dispatch.hip.
#include "kernels/wgmma/launch.cuh"

#if defined(MLACTL_CUDA_WGMMA)
MLA_WGMMA_ROWS(true, 576, false)
MLA_WGMMA_ROWS(true, 576, true)
MLA_WGMMA_ROWS(true, 512, false)
MLA_WGMMA_ROWS(true, 512, true)
#endif
