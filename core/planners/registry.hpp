// Planner ids: what `--planner` names and `schedule` prints (docs/design.md §4 route ->
// planner table). Which routes a planner serves, and how it is called, is each stack's
// registry (core/stack.hpp PlannerEntry; the AITER stack's is in
// core/stacks/vllm_rocm_aiter/plan.cpp).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mlactl {

enum class PlannerId {
  aiter,
  gluon,
  gluon_split,
  triton,
  nonpersistent,
  sparse_rows,
  flashmla,  // FlashMLA's get_mla_metadata (docs/stacks/vllm-cuda.md §C4)
  fa3,       // FA3's scheduler for FLASH_ATTN_MLA (docs/stacks/vllm-cuda.md §C5)
  flashinfer_mla,  // FlashInfer's MLAPlan (docs/stacks/sglang.md §S12)
  sglang_triton,   // SGLang's Triton decode splits, get_num_kv_splits_triton (docs/stacks/sglang.md §S13)
  triton_extend,   // SGLang's Triton extend kernel: one work per request, no split (docs/stacks/sglang.md §S7)
  captured,  // the work list came from the batch's `captured` arrays (run --use-captured); not a --planner choice
};

// The --planner spelling: aiter, gluon, gluon-split, triton, nonpersistent, sparse-rows, flashmla, fa3,
// flashinfer-mla, sglang-triton, triton-extend.
const char* to_string(PlannerId p);
std::optional<PlannerId> planner_from_string(const std::string& s);
const std::vector<PlannerId>& all_planners();  // the --planner choices (no `captured`)
std::vector<std::string> planner_names();  // to_string of all_planners(), in order

}  // namespace mlactl
