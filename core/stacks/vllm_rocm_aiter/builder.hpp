// vLLM R1 `_build_decode` and the R0 small-head verify flatten
// (docs/stacks/vllm-rocm-aiter.md §V1 (a), §V2; docs/design.md §4 "Builder").
#pragma once
#include "core/batch.hpp"
#include "core/decode_metadata.hpp"

namespace mlactl {

// Builds the AITER stack's DecodeMetadata. `with_flatten` computes the R0 flatten (it
// doubles the index memory, so `metadata` on huge batches can skip it when not routed there).
DecodeMetadata build_decode(const Batch& b, bool with_flatten = true);

}  // namespace mlactl
