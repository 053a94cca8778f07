#include "core/stacks/vllm_cuda/schedule_arrays.hpp"

#include "core/planners/planner_util.hpp"

namespace mlactl::vllm_cuda {

NoWorkMarker schedule_marker(const Batch&) {
  // vLLM runs its fork (vllm-project/FlashMLA PR #3): -1. The upstream marker is modelled
  // (flashmla_get_mla_metadata) but no defect switches it on yet (docs/stacks/vllm-cuda.md §C10).
  return NoWorkMarker::minus_one;
}

std::vector<StackArray> flashmla_arrays(const FlashMlaSchedule& s) {
  StackArray parts{"num_sm_parts", 0, true, {s.num_sm_parts}};
  StackArray tsm{"tile_scheduler_metadata", 8, false, {}};
  for (const auto& row : s.tile_scheduler_metadata)
    for (int32_t x : row) tsm.values.push_back(x);
  StackArray ns{"num_splits", 0, false, {s.num_splits.begin(), s.num_splits.end()}};
  return {parts, tsm, ns};
}

std::vector<std::string> flashmla_words(const FlashMlaSchedule& s, const std::vector<int64_t>& seqlens_k) {
  std::vector<std::string> out;
  const int64_t b = (int64_t)seqlens_k.size();
  auto range = [](int64_t a, int64_t e) { return "[" + std::to_string(a) + ", " + std::to_string(e) + ")"; };
  for (size_t p = 0; p < s.tile_scheduler_metadata.size(); ++p) {
    const auto& row = s.tile_scheduler_metadata[p];
    std::string line = "SM part " + std::to_string(p) + ": ";
    if (row[0] < 0 || row[0] >= b) {
      out.push_back(line + "no work (begin_req " + std::to_string(row[0]) + ")");
      continue;
    }
    for (int64_t r = row[0]; r <= row[2] && r < b; ++r) {
      const int64_t nb = planner_util::ceil_div(seqlens_k[r], kFlashMlaBlockN);
      const int64_t sb = r == row[0] ? row[1] : 0, eb = r == row[2] ? row[3] : nb;
      const int64_t split = r == row[0] ? row[4] : 0;
      const int64_t splits = (int64_t)s.num_splits[r + 1] - s.num_splits[r];
      if (r != row[0]) line += "; ";
      line += "request " + std::to_string(r) + " blocks " + range(sb, eb);
      line += splits <= 1 ? " (whole, written directly)" : ", split " + std::to_string(split) + " of " + std::to_string(splits);
    }
    out.push_back(line);
  }
  return out;
}

}  // namespace mlactl::vllm_cuda
