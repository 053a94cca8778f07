// The metadata each SGLang backend builds for its kernel in init_forward_metadata
// (docs/stacks/sglang.md §S3-§S8, §S11): the common request lists plus the backend's own
// arrays under their upstream names.
#pragma once
#include <optional>

#include "core/batch.hpp"
#include "core/decode_metadata.hpp"
#include "core/route.hpp"
#include "core/stacks/sglang/section.hpp"

namespace mlactl::sglang {

// `backend` is the one the router chose (nullopt when it refused: the common lists only).
DecodeMetadata build_sglang(const Batch& b, std::optional<Backend> backend);

// FlashMLA's block_kv_indices (§S5): row r, column j < ceil(len_r / 64) is the page of the
// request's token 64·j; the rest -1 in eager mode, 1 under a CUDA graph (§S11).
std::vector<int64_t> flashmla_block_kv_indices(const Batch& b, const DecodeMetadata& md, int64_t* width);

}  // namespace mlactl::sglang
