// A stack's own metadata arrays under their upstream names (FlashMLA's
// tile_scheduler_metadata and num_splits, ...), for `metadata`/`schedule` to print beside
// mlactl's work list. Values only: nothing executes them (the work list is what runs).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mlactl {

struct StackArray {
  std::string name;           // e.g. "tile_scheduler_metadata"
  int row_width = 0;          // 0: a flat list (or a scalar when it has one value and `scalar`); > 0: rows of this width
  bool scalar = false;
  std::vector<int64_t> values;
};

}  // namespace mlactl
