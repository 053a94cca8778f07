// vLLM's CUDA MLA backends as its selector sees them (docs/stacks/vllm-cuda.md §C1): the
// sm90 priority list and each backend's validate_configuration reasons, as plain values.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/route.hpp"

namespace mlactl::vllm_cuda {

// _get_backend_priorities(use_mla=True), the non-Blackwell branch.
const std::vector<AttentionBackend>& sm90_priorities();

// The mlactl route a backend decodes on; nullopt for the Blackwell-only backends
// (never valid on sm90).
std::optional<Route> route_of(AttentionBackend a);
std::optional<AttentionBackend> backend_of(Route r);

// AttentionBackend.validate_configuration(...) on sm90 (capability 9.0), with
// block_size None (the selector drops it): the reasons in vLLM's order; empty = valid.
std::vector<std::string> validate_configuration(AttentionBackend a, const Batch& b);

// Python's repr of a list of strings: ['a', 'b'].
std::string py_list(const std::vector<std::string>& items);

// Per-backend builder facts (docs/stacks/vllm-cuda.md §C3).
enum class QueryLenSupport { single_only, uniform, varlen };
const char* to_string(QueryLenSupport q);
QueryLenSupport query_len_support(AttentionBackend a);
int reorder_batch_threshold(AttentionBackend a);  // decode rows are queries up to this many tokens

}  // namespace mlactl::vllm_cuda
