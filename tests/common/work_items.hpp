// Hand-built work items for tests (unit, GPU): one helper, in WorkInfo's field order,
// so a test states a work the way AITER's work_info_set row reads
// (core/worklist.hpp: [batch_idx, partial_qo_loc, qo_start, qo_end, kv_start, kv_end, kv_offset, pad]).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "core/worklist.hpp"

namespace mlactl::testing {

// ploc -1: the work writes final output; kv_offset: KV of this batch after kv_end (the causal diagonal).
inline WorkInfo make_work(int64_t batch, int64_t ploc, int64_t qo_start, int64_t qo_end, int64_t kv_start, int64_t kv_end, int64_t kv_offset = 0) {
  WorkInfo w;
  w.batch_idx = static_cast<int32_t>(batch);
  w.partial_qo_loc = static_cast<int32_t>(ploc);
  w.qo_start = static_cast<int32_t>(qo_start);
  w.qo_end = static_cast<int32_t>(qo_end);
  w.kv_start = static_cast<int32_t>(kv_start);
  w.kv_end = static_cast<int32_t>(kv_end);
  w.kv_offset = static_cast<int32_t>(kv_offset);
  return w;
}

// A work as a row [b, ploc, qs, qe, ks, ke, koff], as the reference planners print them, and
// a work list's works as such rows (the planner tests compare against hand-worked lists).
using WorkRow7 = std::array<int32_t, 7>;
inline std::vector<WorkRow7> work_rows(const WorkList& wl) {
  std::vector<WorkRow7> out;
  for (const WorkInfo& w : wl.work_info)
    out.push_back({w.batch_idx, w.partial_qo_loc, w.qo_start, w.qo_end, w.kv_start, w.kv_end, w.kv_offset});
  return out;
}

}  // namespace mlactl::testing
