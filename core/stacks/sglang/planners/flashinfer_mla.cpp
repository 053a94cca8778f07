// FlashInfer MLAPlan (flashinfer-ai/flashinfer/include/flashinfer/attention/scheduler.cuh@fb28d724
// lines 1579-1848; docs/stacks/sglang.md §S12), its MinHeap (include/flashinfer/attention/heap.h@fb28d724)
// with libstdc++'s heap steps (bits/stl_heap.h, GCC 12) written out.
#include "core/stacks/sglang/planners/flashinfer_mla.hpp"

#include <algorithm>
#include <string>

#include "core/types.hpp"

namespace mlactl::sglang {

namespace flashinfer_mla_detail {

// Upstream's lengths are int; mlactl refuses inputs that come near overflowing them
// (packed row offsets qo_indptr·H, remaining_len · cluster_size, f(x)'s ceil_div(x, 256)·256).
constexpr int64_t kLengthBound = int64_t{1} << 30;

// utils.cuh ceil_div, (x + y − 1) / y: C++ division truncates, so a negative total
// (packed_causal_kv_end before #1533) rounds towards zero, not up.
inline int64_t upstream_ceil_div(int64_t x, int64_t y) { return (x + y - 1) / y; }

// f in MLAPlan (scheduler.cuh lines 1635-1646): the KV chunk length for an average of x
// KV tokens per cluster (docs/stacks/sglang.md §S12 step 5).
inline int kv_len_limit_for(int64_t x) {
  if (x <= 8) return 32;
  if (x <= 16) return 64;
  if (x <= 32) return 128;
  if (x <= 64) return 192;
  return static_cast<int>(upstream_ceil_div(x, 256) * 256);
}

// One entry of upstream's per-cluster vectors (cluster_q_indptr[c], cluster_kv_indptr[c], …).
struct Work {
  int32_t request;
  int32_t q_indptr;
  int32_t kv_indptr;
  int32_t partial_indptr;
  int32_t q_len;
  int32_t kv_len;
  int32_t q_start;
  int32_t kv_start;
  int32_t kv_end;
};

}  // namespace flashinfer_mla_detail

float flashinfer_mla_cost(int qo_len, int kv_len) { return 2 * float(qo_len) + kv_len; }

int64_t packed_causal_kv_end(int qo_len, int kv_len, int qo_tile_idx, int cluster_tile_q, int num_qo_tiles,
                             int group_size, bool clamp_at_zero) {
  if (qo_tile_idx + 1 == num_qo_tiles) return kv_len;
  const int64_t kv_len_init = int64_t{kv_len} - qo_len;  // right aligned
  const int64_t end = std::min<int64_t>(
      kv_len_init + flashinfer_mla_detail::upstream_ceil_div(int64_t{qo_tile_idx + 1} * cluster_tile_q, group_size),
      kv_len);
  return clamp_at_zero ? std::max<int64_t>(end, 0) : end;
}

// ---- MinHeap (heap.h) on libstdc++'s algorithm ----------------------------------------

FlashinferMlaMinHeap::FlashinferMlaMinHeap(int capacity) : heap_(static_cast<size_t>(std::max(capacity, 0))) {
  for (int i = 0; i < capacity; ++i) heap_[i] = {i, 0.f};
}

// std::__push_heap: the hole rises while its parent compares below the value (a strictly
// higher cost), so an equal cost stays under its parent.
void FlashinferMlaMinHeap::sift_up(std::ptrdiff_t hole, std::ptrdiff_t top, Element value) {
  std::ptrdiff_t parent = (hole - 1) / 2;
  while (hole > top && compare(heap_[parent], value)) {
    heap_[hole] = heap_[parent];
    hole = parent;
    parent = (hole - 1) / 2;
  }
  heap_[hole] = value;
}

// std::__adjust_heap: the hole at `hole` walks down to a leaf, each step taking the right
// child unless it compares below the left (higher cost), so on equal cost the right child;
// the value is only compared on the way back up.
void FlashinferMlaMinHeap::adjust_down(std::ptrdiff_t hole, std::ptrdiff_t len, Element value) {
  const std::ptrdiff_t top = hole;
  std::ptrdiff_t second_child = hole;
  while (second_child < (len - 1) / 2) {
    second_child = 2 * (second_child + 1);
    if (compare(heap_[second_child], heap_[second_child - 1])) second_child--;
    heap_[hole] = heap_[second_child];
    hole = second_child;
  }
  // a last parent with a left child only
  if ((len & 1) == 0 && second_child == (len - 2) / 2) {
    second_child = 2 * (second_child + 1);
    heap_[hole] = heap_[second_child - 1];
    hole = second_child - 1;
  }
  sift_up(hole, top, value);
}

void FlashinferMlaMinHeap::insert(const Element& element) {
  heap_.push_back(element);
  sift_up(static_cast<std::ptrdiff_t>(heap_.size()) - 1, 0, element);
}

// std::pop_heap (nothing to do for one element) then back() and pop_back().
FlashinferMlaMinHeap::Element FlashinferMlaMinHeap::pop() {
  const auto size = static_cast<std::ptrdiff_t>(heap_.size());
  if (size > 1) {
    const Element value = heap_[size - 1];
    heap_[size - 1] = heap_[0];
    adjust_down(0, size - 1, value);
  }
  const Element min_element = heap_.back();
  heap_.pop_back();
  return min_element;
}

// ---- MLAPlan ---------------------------------------------------------------------------

MlaPlan flashinfer_mla_plan(const MlaPlanInput& in) {
  using flashinfer_mla_detail::kLengthBound;
  using flashinfer_mla_detail::upstream_ceil_div;
  using flashinfer_mla_detail::Work;

  const int64_t batch_size = static_cast<int64_t>(in.kv_len.size());
  if (batch_size == 0)
    throw invalid_input("", "flashinfer MLAPlan: an empty batch (batch_size 0) is refused: upstream divides by it "
                            "(avg_packed_qo_len = accum_packed_qo_len / batch_size) without a check");
  if ((int64_t)in.qo_indptr.size() != batch_size + 1 || (int64_t)in.kv_indptr.size() != batch_size + 1)
    throw invalid_input("", "flashinfer MLAPlan: qo_indptr and kv_indptr need batch_size + 1 entries (kv_len has " +
                                std::to_string(batch_size) + ")");
  if (in.num_heads < 1) throw invalid_input("", "flashinfer MLAPlan: num_heads must be >= 1");
  if (in.num_sm < 1) throw invalid_input("", "flashinfer MLAPlan: num_sm must be >= 1");
  const int64_t heads = in.num_heads;

  // step 1: upstream's one check, in batch order (scheduler.cuh lines 1594-1600)
  for (int64_t i = 0; i < batch_size; ++i) {
    if (in.qo_indptr[i + 1] - int64_t{in.qo_indptr[i]} < 0)
      throw Error(kExitRefused, "",
                  "qo_indptr[" + std::to_string(i + 1) + "]" + std::to_string(in.qo_indptr[i + 1]) + " - qo_indptr[" +
                      std::to_string(i) + "]" + std::to_string(in.qo_indptr[i]) + " should be non-negative");
  }
  for (int64_t i = 0; i <= batch_size; ++i)
    if (in.qo_indptr[i] < 0 || in.qo_indptr[i] * heads >= kLengthBound)
      throw invalid_input("", "flashinfer MLAPlan: qo_indptr[" + std::to_string(i) + "] · num_heads must lie in [0, 2^30)");
  for (int64_t i = 0; i < batch_size; ++i)
    if (in.kv_len[i] < 0 || in.kv_len[i] >= kLengthBound)
      throw invalid_input("", "flashinfer MLAPlan: kv_len[" + std::to_string(i) + "] = " + std::to_string(in.kv_len[i]) +
                                  " must lie in [0, 2^30)");

  MlaPlan plan;
  plan.num_sm = in.num_sm;
  int64_t accum_packed_qo_len = 0;
  for (int64_t i = 0; i < batch_size; ++i) accum_packed_qo_len += (in.qo_indptr[i + 1] - in.qo_indptr[i]) * heads;

  // step 2: cluster shape (lines 1609-1621)
  plan.avg_packed_qo_len = static_cast<int>(accum_packed_qo_len / batch_size);
  plan.cluster_size = plan.avg_packed_qo_len > 64 ? 2 : 1;
  plan.num_clusters = in.num_sm / plan.cluster_size;
  if (plan.num_clusters < 1)
    // upstream divides by num_clusters = 0 (an integer division by zero on the host): the
    // stack fails, so mlactl refuses, as where upstream raises
    throw Error(kExitRefused, "", "flashinfer MLAPlan: num_sm " + std::to_string(in.num_sm) + " holds no cluster of " +
                                      std::to_string(plan.cluster_size) + " CTAs (upstream divides by num_clusters = 0)");
  plan.cluster_tile_q = plan.cluster_size * kMlaCtaTileQ;
  const int cluster_tile_q = plan.cluster_tile_q;
  plan.partial_o_rows = int64_t{2} * plan.num_clusters * cluster_tile_q;

  auto qo_len_of = [&](int64_t i) { return in.qo_indptr[i + 1] - in.qo_indptr[i]; };
  // steps 3-4: a tile's KV, causal or not (lines 1628-1630, 1672-1674)
  auto effective_kv_len = [&](int qo_len, int kv_len, int qo_tile_idx, int num_qo_tiles) -> int64_t {
    return in.causal ? packed_causal_kv_end(qo_len, kv_len, qo_tile_idx, cluster_tile_q, num_qo_tiles, in.num_heads,
                                            in.clamp_causal_kv_end)
                     : kv_len;
  };

  // step 5: the split limit (lines 1623-1648)
  for (int64_t i = 0; i < batch_size; ++i) {
    const int qo_len = qo_len_of(i);
    const int num_qo_tiles = static_cast<int>(upstream_ceil_div(qo_len * heads, cluster_tile_q));
    for (int t = num_qo_tiles - 1; t >= 0; --t) plan.total_kv_lens += effective_kv_len(qo_len, in.kv_len[i], t, num_qo_tiles);
  }
  const int64_t kv_per_cluster = std::max<int64_t>(upstream_ceil_div(plan.total_kv_lens, plan.num_clusters), 1);
  if (kv_per_cluster >= kLengthBound)
    throw invalid_input("", "flashinfer MLAPlan: " + std::to_string(plan.total_kv_lens) +
                                " KV tokens over the q tiles give more than 2^30 per cluster (upstream's int kv_len_limit overflows)");
  plan.kv_len_limit = flashinfer_mla_detail::kv_len_limit_for(kv_per_cluster);
  const int kv_len_limit = plan.kv_len_limit;

  // step 6: assignment (lines 1650-1734)
  FlashinferMlaMinHeap cluster_cost_heap(plan.num_clusters);
  std::vector<std::vector<Work>> cluster_works(static_cast<size_t>(plan.num_clusters));
  const size_t merge_entries = static_cast<size_t>(in.num_sm);
  plan.merge_packed_offset_start.assign(merge_entries, 0);
  plan.merge_packed_offset_end.assign(merge_entries, 0);
  plan.merge_partial_packed_offset_start.assign(merge_entries, 0);
  plan.merge_partial_packed_offset_end.assign(merge_entries, 0);
  plan.merge_partial_stride.assign(merge_entries, 0);
  int64_t merge_cta_counter = 0;
  int partial_o_nnz = 0;

  for (int64_t i = 0; i < batch_size; ++i) {
    const int qo_len = qo_len_of(i);
    const int kv_len = in.kv_len[i];
    const int packed_qo_len = static_cast<int>(qo_len * heads);
    const int num_qo_tiles = static_cast<int>(upstream_ceil_div(packed_qo_len, cluster_tile_q));
    const int64_t packed_request_start = in.qo_indptr[i] * heads;  // qo_indptr_h[i] * num_heads
    for (int t = num_qo_tiles - 1; t >= 0; --t) {
      int64_t remaining_len = effective_kv_len(qo_len, kv_len, t, num_qo_tiles);
      int64_t kv_start = 0;
      const bool split_kv = remaining_len > kv_len_limit;
      const int row_tile_size = std::min(cluster_tile_q, packed_qo_len - t * cluster_tile_q);
      if (split_kv) {
        const int64_t num_qo_chunks = std::max<int64_t>(remaining_len * plan.cluster_size / kv_len_limit, 1);
        const int64_t row_chunk_size = upstream_ceil_div(row_tile_size, num_qo_chunks);
        const int64_t num_kv_chunks = upstream_ceil_div(remaining_len, kv_len_limit);
        const int64_t tile_start = packed_request_start + int64_t{t} * cluster_tile_q;
        for (int64_t offset_start = 0; offset_start < row_tile_size; offset_start += row_chunk_size) {
          // upstream writes past its num_sm-entry vectors here before its check fires; mlactl
          // counts those merge CTAs without storing them
          if (merge_cta_counter < in.num_sm) {
            const size_t m = static_cast<size_t>(merge_cta_counter);
            plan.merge_packed_offset_start[m] = static_cast<int32_t>(tile_start + offset_start);
            plan.merge_packed_offset_end[m] =
                static_cast<int32_t>(tile_start + std::min<int64_t>(offset_start + row_chunk_size, row_tile_size));
            plan.merge_partial_packed_offset_start[m] = static_cast<int32_t>(partial_o_nnz + offset_start);
            plan.merge_partial_packed_offset_end[m] = static_cast<int32_t>(partial_o_nnz + num_kv_chunks * row_tile_size);
            plan.merge_partial_stride[m] = row_tile_size;
          }
          ++merge_cta_counter;
        }
      }
      // a tile with no KV still gets one work (kv_start == kv_end), a negative one none
      const bool zero_kv_len = remaining_len == 0;
      while (remaining_len > 0 || zero_kv_len) {
        const auto [cluster_idx, accum_cost] = cluster_cost_heap.pop();
        const int actual_len = static_cast<int>(std::min<int64_t>(remaining_len, kv_len_limit));
        cluster_cost_heap.insert({cluster_idx, accum_cost + flashinfer_mla_cost(cluster_tile_q, actual_len)});
        Work w;
        w.request = static_cast<int32_t>(i);
        w.q_indptr = in.qo_indptr[i];
        w.kv_indptr = in.kv_indptr[i];
        w.partial_indptr = split_kv ? partial_o_nnz : -1;
        if (split_kv) partial_o_nnz += row_tile_size;
        w.q_len = qo_len;
        w.kv_len = kv_len;
        w.q_start = t * cluster_tile_q;
        w.kv_start = static_cast<int32_t>(kv_start);
        w.kv_end = static_cast<int32_t>(kv_start + actual_len);
        cluster_works[static_cast<size_t>(cluster_idx)].push_back(w);
        remaining_len -= actual_len;
        kv_start += actual_len;
        if (zero_kv_len) break;
      }
    }
  }

  // step 8 (line 1736)
  if (merge_cta_counter > in.num_sm)
    throw Error(kExitRefused, "",
                "Internal Error: merge_cta_counter should be less than or equal to num_sm, please report this bug to "
                "the developers");
  plan.merge_cta_counter = static_cast<int>(merge_cta_counter);
  plan.partial_o_nnz = partial_o_nnz;

  // flatten in cluster order (lines 1740-1755)
  plan.work_indptr.assign(static_cast<size_t>(plan.num_clusters) + 1, 0);
  int64_t total_num_works = 0;
  for (int c = 0; c < plan.num_clusters; ++c) {
    total_num_works += static_cast<int64_t>(cluster_works[c].size());
    plan.work_indptr[c + 1] = static_cast<int32_t>(total_num_works);
  }
  plan.total_num_works = static_cast<int>(total_num_works);
  plan.overflows_work_arrays = total_num_works > kMlaMaxTotalNumWorks;
  for (auto* a : {&plan.q_indptr, &plan.kv_indptr, &plan.partial_indptr, &plan.q_len, &plan.kv_len, &plan.q_start,
                  &plan.kv_start, &plan.kv_end, &plan.work_cluster, &plan.work_request})
    a->reserve(static_cast<size_t>(total_num_works));
  for (int c = 0; c < plan.num_clusters; ++c)
    for (const Work& w : cluster_works[c]) {
      plan.q_indptr.push_back(w.q_indptr);
      plan.kv_indptr.push_back(w.kv_indptr);
      plan.partial_indptr.push_back(w.partial_indptr);
      plan.q_len.push_back(w.q_len);
      plan.kv_len.push_back(w.kv_len);
      plan.q_start.push_back(w.q_start);
      plan.kv_start.push_back(w.kv_start);
      plan.kv_end.push_back(w.kv_end);
      plan.work_cluster.push_back(c);
      plan.work_request.push_back(w.request);
    }

  plan.cluster_cost.assign(static_cast<size_t>(plan.num_clusters), 0.f);
  for (const auto& [cluster, cost] : cluster_cost_heap.elements()) plan.cluster_cost[static_cast<size_t>(cluster)] = cost;
  return plan;
}

}  // namespace mlactl::sglang
