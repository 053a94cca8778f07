// Fills the router's inputs from a batch and its decode metadata.
#pragma once
#include "core/batch.hpp"
#include "core/stacks/vllm_rocm_aiter/builder.hpp"
#include "core/stacks/vllm_rocm_aiter/router.hpp"

namespace mlactl {

RouteInput route_input_from_batch(const Batch& b, const DecodeMetadata& md);

}  // namespace mlactl
