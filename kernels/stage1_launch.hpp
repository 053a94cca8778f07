// The stage-1 launch of each kernel family, which kernels/launch.hip dispatches to
// once select_stage1 has picked the family (each launch then picks its own variant:
// dtype, m-tiles, transposed or row-major). Plain types: host code of the GPU build.
#pragma once
#include <string>

#include "kernels/mla_decode.hpp"

namespace mla {

// Each reports what it enqueued in *ran.
bool launch_stage1_cuda_core(const Stage1Params& p, Stage1Ran* ran, std::string* error);  // stage1_cuda_core.hip
bool launch_stage1_mma(const Stage1Params& p, Stage1Ran* ran, std::string* error);        // stage1_mma.hip
#if defined(MLACTL_CUDA_WGMMA)
bool launch_stage1_wgmma(const Stage1Params& p, Stage1Ran* ran, std::string* error);  // wgmma/dispatch.hip (sm_90a)
#endif

}  // namespace mla
