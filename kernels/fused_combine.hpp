// Which reduce tile each work's partial belongs to, for the fused combine
// (mla::CombineMode::fused, kernels/combine_mode.hpp): host code with no GPU
// include, unit-tested in tests/unit/test_fused_combine.cpp.
//
// In fused mode the workgroup that writes the last split of a reduce tile
// combines the tile (kernels/stage1_wgmma.cuh, fused_combine_arrive): each
// work with a split adds one to its tile's counter after its partial rows are
// written and fenced; the arrival that brings the count to the tile's split
// count combines and resets the counter. That is only sound when the plan says
// exactly which works complete a tile, so plan_fused_combine accepts a plan only
// when every split of every tile the reduce would combine is written by exactly
// one work that a workgroup runs, that work writes exactly the split's rows and
// nothing else overlaps them, and no range the kernels check on the device is
// out of bounds (a skipped work would never arrive). Anything else keeps the
// separate reduce, which handles (and reports) every plan.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl {

struct FusedCombinePlan {
  // Per work (work_info order): the reduce tile whose split this work writes, or
  // -1 (a final-output work, a work the reduce ignores, or one no workgroup runs).
  std::vector<int32_t> work_tile;
  // Per work: its split index in that tile (k - s for reduce_partial_map[k] of the
  // tile's [s, e)), or -1 with work_tile; CombineMode::spread's share of the tile.
  std::vector<int32_t> work_split;
  int32_t num_tiles = 0;       // reduce tiles: one counter each on the device
  int32_t combined_tiles = 0;  // tiles the stage-1 kernel combines (more than one split)
};

// The fused plan of `w` (num_q_rows, num_kv_indices: the buffers the works index),
// or nullopt with the reason in *why.
std::optional<FusedCombinePlan> plan_fused_combine(const WorkList& w, int64_t num_q_rows, int64_t num_kv_indices,
                                                   std::string* why);

}  // namespace mlactl
