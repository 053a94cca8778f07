// The row-major wgmma kernel on bf16 operands.
// Explicit instantiations of kernels/wgmma/launch.cuh; the table: kernels/wgmma/dispatch.hip.
#include "kernels/wgmma/launch.cuh"

#if defined(MLACTL_CUDA_WGMMA)
MLA_WGMMA_ROWS(false, 576, false)
MLA_WGMMA_ROWS(false, 576, true)
MLA_WGMMA_ROWS(false, 512, false)
MLA_WGMMA_ROWS(false, 512, true)
#endif
