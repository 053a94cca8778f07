// FlashInfer's MLAPlan (flashinfer_mla.hpp) as mlactl's one work-list format
// (docs/stacks/sglang.md §S12 "mlactl"): cluster c is workgroup c and runs its works in
// MLAPlan's order; a work covers the q tokens of its packed-row tile and its KV chunk; a
// split tile's chunks write partial rows merged by one reduce tile.
#pragma once
#include <string>
#include <vector>

#include "core/stacks/sglang/planners/flashinfer_mla.hpp"
#include "core/worklist.hpp"

namespace mlactl::sglang {

// Packed rows are (token, head) pairs, token-major; mlactl's q rows hold a token's heads
// together. When the tiles fall on token boundaries (H divides the tile) a
// work's tokens are its tile's rows / H and its partial rows MLAPlan's partial_indptr / H:
// upstream's layout exactly. Otherwise a token belongs to the tile holding its first head
// (the tiles holding only later heads of it are folded into that one, noted), as the FA3
// planner does for its m blocks, and the partial rows are numbered by mlactl.
struct FlashinferMlaWorkInput {
  std::vector<int32_t> qo_indptr;     // [B+1] q rows (tokens) of each request in the view
  std::vector<int32_t> kv_list_indptr;// [B+1] each request's first entry in the route's KV index list
  int num_heads = 16;
  bool causal = false;
};
WorkList flashinfer_mla_work_list(const MlaPlan& plan, const FlashinferMlaWorkInput& in);

// "cluster 3: request 1 packed rows [0, 64) (tokens [0, 4)), KV [0, 192) of 400, partial rows [64, 128)"
std::vector<std::string> flashinfer_mla_words(const MlaPlan& plan, int num_heads);

}  // namespace mlactl::sglang
