#include "kernels/fused_combine.hpp"

#include <algorithm>
#include <unordered_map>
#include <utility>

#include "kernels/mla_decode.hpp"

namespace mlactl {

namespace {
std::optional<FusedCombinePlan> refuse(std::string* why, std::string text) {
  if (why) *why = std::move(text);
  return std::nullopt;
}
}  // namespace

std::optional<FusedCombinePlan> plan_fused_combine(const WorkList& w, int64_t num_q_rows, int64_t num_kv_indices,
                                                   std::string* why) {
  const int64_t num_works = int64_t(w.work_info.size());
  // The works some workgroup runs: block_works (kernels/kernel_common.cuh) reads
  // [work_indptr[c], work_indptr[c + 1]) and skips a malformed range.
  if (w.num_workgroups < 0 || w.work_indptr.size() != size_t(w.num_workgroups) + 1)
    return refuse(why, "work_indptr does not have num_workgroups + 1 entries");
  std::vector<char> runs(size_t(num_works), 0);
  for (int c = 0; c < w.num_workgroups; ++c) {
    const int32_t b = w.work_indptr[size_t(c)], e = w.work_indptr[size_t(c) + 1];
    if (b < 0 || e < b || e > num_works) return refuse(why, "work_indptr is out of range at workgroup " + std::to_string(c));
    for (int32_t i = b; i < e; ++i) {
      if (runs[size_t(i)]) return refuse(why, "work " + std::to_string(i) + " is in two workgroups");
      runs[size_t(i)] = 1;
    }
  }
  // Every range work_ok (kernels/kernel_common.cuh) checks: a work it skips would
  // never arrive at its tile's counter.
  struct Rows {
    int64_t begin, end;
    int32_t work;
  };
  std::vector<Rows> partial_rows, final_rows;
  std::unordered_map<int64_t, int32_t> work_at_partial_row;  // first partial row -> work
  for (int32_t i = 0; i < num_works; ++i) {
    const WorkInfo& wi = w.work_info[size_t(i)];
    const int64_t qn = int64_t(wi.qo_end) - wi.qo_start;
    if (!runs[size_t(i)] || qn <= 0) continue;  // never run, or no rows: writes nothing
    if (wi.qo_start < 0 || wi.qo_end > num_q_rows) return refuse(why, "work " + std::to_string(i) + "'s q rows are out of range");
    if (wi.kv_end > wi.kv_start && (wi.kv_start < 0 || wi.kv_end > num_kv_indices))
      return refuse(why, "work " + std::to_string(i) + "'s kv range is out of range");
    if (wi.partial_qo_loc >= 0) {
      if (int64_t(wi.partial_qo_loc) + qn > w.num_partial_rows)
        return refuse(why, "work " + std::to_string(i) + "'s partial rows are out of range");
      partial_rows.push_back({wi.partial_qo_loc, wi.partial_qo_loc + qn, i});
      work_at_partial_row.emplace(wi.partial_qo_loc, i);
    } else {
      final_rows.push_back({wi.qo_start, wi.qo_end, i});
    }
  }
  auto overlapping = [](std::vector<Rows>& v) {
    std::sort(v.begin(), v.end(), [](const Rows& a, const Rows& b) { return a.begin < b.begin; });
    for (size_t j = 1; j < v.size(); ++j)
      if (v[j].begin < v[j - 1].end) return true;
    return false;
  };
  if (overlapping(partial_rows)) return refuse(why, "two works write overlapping partial rows");

  FusedCombinePlan plan;
  plan.work_tile.assign(size_t(num_works), -1);
  plan.work_split.assign(size_t(num_works), -1);
  plan.num_tiles = w.reduce_indptr.empty() ? 0 : int32_t(w.reduce_indptr.size() - 1);
  // The tiles the reduce combines (reduce_tile in kernels/reduce.hip): more than one
  // split and a final map other than {-1, -1}; their maps must be in range (the
  // reduce would record kErrReduceMap: the separate path reports it).
  for (int32_t t = 0; t < plan.num_tiles; ++t) {
    const int32_t s = w.reduce_indptr[size_t(t)], e = w.reduce_indptr[size_t(t) + 1];
    if (e - s <= 1) continue;
    if (size_t(t) >= w.reduce_final_map.size()) return refuse(why, "reduce tile " + std::to_string(t) + " has no final map");
    const int32_t q0 = w.reduce_final_map[size_t(t)][0], q1 = w.reduce_final_map[size_t(t)][1];
    if (q0 < 0) continue;
    const int64_t rows = int64_t(q1) - q0;
    if (s < 0 || size_t(e) > w.reduce_partial_map.size() || rows < 0 || q1 > num_q_rows)
      return refuse(why, "reduce tile " + std::to_string(t) + "'s maps are out of range");
    if (rows == 0) continue;  // nothing to write
    for (int32_t k = s; k < e; ++k) {
      const int32_t r0 = w.reduce_partial_map[size_t(k)];
      if (r0 < 0 || int64_t(r0) + rows > w.num_partial_rows)
        return refuse(why, "reduce tile " + std::to_string(t) + "'s partial map is out of range");
      const auto it = work_at_partial_row.find(r0);
      if (it == work_at_partial_row.end())
        return refuse(why, "split " + std::to_string(k - s) + " of reduce tile " + std::to_string(t) +
                               " is not the partial of one run work");
      const WorkInfo& wi = w.work_info[size_t(it->second)];
      if (int64_t(wi.qo_end) - wi.qo_start != rows)
        return refuse(why, "a work writes part of reduce tile " + std::to_string(t) + "'s split rows, or more");
      if (plan.work_tile[size_t(it->second)] >= 0)
        return refuse(why, "work " + std::to_string(it->second) + " is a split of two reduce tiles");
      plan.work_tile[size_t(it->second)] = t;
      plan.work_split[size_t(it->second)] = k - s;
    }
    // The combine writes final rows [q0, q1): no other writer of them (a stage-1
    // work's direct output, another tile) may race with it.
    final_rows.push_back({q0, q1, -1 - t});
    ++plan.combined_tiles;
  }
  if (overlapping(final_rows)) return refuse(why, "a combined tile's output rows are also written by another work or tile");
  for (int c = 0; c < w.num_workgroups; ++c) {
    int splits = 0;
    for (int32_t i = w.work_indptr[size_t(c)]; i < w.work_indptr[size_t(c) + 1]; ++i) splits += plan.work_tile[size_t(i)] >= 0;
    if (splits > mla::kFusedMaxSplitWorks)
      return refuse(why, "workgroup " + std::to_string(c) + " runs " + std::to_string(splits) + " split works (at most " +
                             std::to_string(mla::kFusedMaxSplitWorks) + " in fused mode)");
  }
  return plan;
}

}  // namespace mlactl
