// FlashInfer's MLAPlan (docs/stacks/sglang.md §S12): cases worked by hand from
// flashinfer-ai/flashinfer/include/flashinfer/attention/scheduler.cuh@fb28d724, the MinHeap
// against std::push_heap / std::pop_heap, and a sweep of small batches whose plans must
// cover every q tile's KV once, split and merge consistently and account every cost.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <random>
#include <sstream>
#include <string>
#include <tuple>
#include <vector>

#include "core/stacks/sglang/planners/flashinfer_mla.hpp"
#include "core/types.hpp"

using namespace mlactl;
using namespace mlactl::sglang;

namespace {

constexpr const char* kMlaMergeCounterError =
    "Internal Error: merge_cta_counter should be less than or equal to num_sm, please report this bug to the developers";

// qo_indptr and kv_indptr as prefix sums (page size 1: KV index entries = tokens)
MlaPlanInput mla_input(const std::vector<int32_t>& qo_lens, const std::vector<int32_t>& kv_lens, int heads, bool causal,
                       int num_sm = kMlaDefaultNumSm, bool clamp = true) {
  MlaPlanInput in;
  in.qo_indptr = {0};
  in.kv_indptr = {0};
  for (int32_t q : qo_lens) in.qo_indptr.push_back(in.qo_indptr.back() + q);
  for (int32_t k : kv_lens) in.kv_indptr.push_back(in.kv_indptr.back() + k);
  in.kv_len = kv_lens;
  in.num_heads = heads;
  in.num_sm = num_sm;
  in.causal = causal;
  in.clamp_causal_kv_end = clamp;
  return in;
}

// One work as MLAPlan produced it.
struct MlaTestWork {
  int request, cluster, q_start, kv_start, kv_end, partial_indptr;
  bool operator==(const MlaTestWork& o) const {
    return std::tie(request, cluster, q_start, kv_start, kv_end, partial_indptr) ==
           std::tie(o.request, o.cluster, o.q_start, o.kv_start, o.kv_end, o.partial_indptr);
  }
};
std::ostream& operator<<(std::ostream& os, const MlaTestWork& w) {
  return os << "{r" << w.request << " c" << w.cluster << " q" << w.q_start << " kv[" << w.kv_start << "," << w.kv_end
            << ") p" << w.partial_indptr << "}";
}

// The works back in the order MLAPlan assigned them: requests in batch order, tiles last
// to first, chunks by kv_start (the plan lists them in cluster order).
std::vector<MlaTestWork> mla_planning_order(const MlaPlan& p) {
  std::vector<MlaTestWork> ws;
  for (int w = 0; w < p.total_num_works; ++w)
    ws.push_back({p.work_request[w], p.work_cluster[w], p.q_start[w], p.kv_start[w], p.kv_end[w], p.partial_indptr[w]});
  std::stable_sort(ws.begin(), ws.end(), [](const MlaTestWork& a, const MlaTestWork& b) {
    return std::make_tuple(a.request, -a.q_start, a.kv_start) < std::make_tuple(b.request, -b.q_start, b.kv_start);
  });
  return ws;
}

std::vector<int> mla_clusters(const std::vector<MlaTestWork>& ws) {
  std::vector<int> c;
  for (const auto& w : ws) c.push_back(w.cluster);
  return c;
}

// num_sm entries: the given ones, then zeros
std::vector<int32_t> mla_merge_array(std::vector<int32_t> used, int num_sm = kMlaDefaultNumSm) {
  used.resize(static_cast<size_t>(num_sm), 0);
  return used;
}

// Everything a plan must satisfy, from the input alone; the first failure, or "" when none.
// Per q tile [t·ctq, min((t+1)·ctq, qo_len·H)) of request i, the KV it needs: every packed
// row r (token r / H) of the tile sees kv_len − qo_len + r / H + 1 entries causally, so the
// tile needs that of its last row (at most kv_len; at least 0 with #1533's clamp; a tile
// whose end is negative gets no work), non-causally kv_len.
std::string mla_check_plan(const MlaPlanInput& in, const MlaPlan& p) {
  std::ostringstream err;
  const int b = static_cast<int>(in.kv_len.size());
  const int64_t heads = in.num_heads;
  int64_t accum = 0;
  for (int i = 0; i < b; ++i) accum += (in.qo_indptr[i + 1] - in.qo_indptr[i]) * heads;
  const int cs = accum / b > 64 ? 2 : 1;
  const int ctq = 64 * cs;
  if (p.cluster_size != cs || p.cluster_tile_q != ctq || p.num_clusters != in.num_sm / cs)
    return "cluster shape";
  const int nc = p.num_clusters;
  const size_t nw = static_cast<size_t>(p.total_num_works);
  for (const auto* a : {&p.q_indptr, &p.kv_indptr, &p.partial_indptr, &p.q_len, &p.kv_len, &p.q_start, &p.kv_start,
                        &p.kv_end, &p.work_cluster, &p.work_request})
    if (a->size() != nw) return "per-work array size";
  if (p.overflows_work_arrays != (p.total_num_works > kMlaMaxTotalNumWorks)) return "overflows_work_arrays";
  if (p.work_indptr.size() != static_cast<size_t>(nc) + 1 || p.work_indptr[0] != 0 || p.work_indptr[nc] != p.total_num_works)
    return "work_indptr ends";
  for (int c = 0; c < nc; ++c) {
    if (p.work_indptr[c + 1] < p.work_indptr[c]) return "work_indptr decreases";
    // each cluster's cost: Σ cost_function(cluster_tile_q, chunk) in the order it got its works
    float cost = 0.f;
    for (int w = p.work_indptr[c]; w < p.work_indptr[c + 1]; ++w) {
      if (p.work_cluster[w] != c) return "work_cluster";
      cost = cost + flashinfer_mla_cost(ctq, p.kv_end[w] - p.kv_start[w]);
    }
    if (cost != p.cluster_cost[c]) {
      err << "cluster " << c << " cost " << p.cluster_cost[c] << ", its works sum to " << cost;
      return err.str();
    }
  }

  // works by (request, tile, kv_start)
  std::vector<int> order(nw);
  for (size_t w = 0; w < nw; ++w) {
    order[w] = static_cast<int>(w);
    const int i = p.work_request[w];
    if (i < 0 || i >= b) return "work_request out of range";
    if (p.q_indptr[w] != in.qo_indptr[i] || p.kv_indptr[w] != in.kv_indptr[i] ||
        p.q_len[w] != in.qo_indptr[i + 1] - in.qo_indptr[i] || p.kv_len[w] != in.kv_len[i])
      return "a work's request fields";
  }
  std::sort(order.begin(), order.end(), [&](int x, int y) {
    return std::make_tuple(p.work_request[x], p.q_start[x], p.kv_start[x]) <
           std::make_tuple(p.work_request[y], p.q_start[y], p.kv_start[y]);
  });

  std::vector<char> partial_rows(static_cast<size_t>(std::max(p.partial_o_nnz, 0)), 0);
  struct SplitTile {
    int64_t packed_start, partial_base, chunks, row_tile;
  };
  std::vector<SplitTile> split_tiles;  // by batch-wide first packed row
  size_t next = 0;                     // into order
  for (int i = 0; i < b; ++i) {
    const int qo_len = in.qo_indptr[i + 1] - in.qo_indptr[i];
    const int64_t packed = qo_len * heads;
    // the tiles [t·ctq, min((t+1)·ctq, packed)) partition the request's packed rows
    for (int64_t row_begin = 0; row_begin < packed; row_begin += ctq) {
      const int64_t row_end = std::min<int64_t>(row_begin + ctq, packed), row_tile = row_end - row_begin;
      int64_t end = in.kv_len[i];
      if (in.causal) {
        end = std::min<int64_t>(in.kv_len[i], int64_t{in.kv_len[i]} - qo_len + (row_end - 1) / heads + 1);
        if (in.clamp_causal_kv_end) end = std::max<int64_t>(end, 0);
      }
      const size_t first = next;
      while (next < nw && p.work_request[order[next]] == i && p.q_start[order[next]] == row_begin) ++next;
      const size_t count = next - first;
      auto fail = [&](const char* what) {
        err << "request " << i << " rows from " << row_begin << " (KV end " << end << ", limit " << p.kv_len_limit
            << "): " << what;
        return err.str();
      };
      if (end < 0) {
        if (count != 0) return fail("a tile with a negative KV end got works");
        continue;
      }
      if (end == 0) {
        const int w = count == 1 ? order[first] : -1;
        if (w < 0 || p.kv_start[w] != 0 || p.kv_end[w] != 0 || p.partial_indptr[w] != -1)
          return fail("a tile without KV needs one empty work");
        continue;
      }
      // the chunks tile [0, end) in order, none longer than the limit
      int64_t at = 0;
      for (size_t k = first; k < next; ++k) {
        const int w = order[k];
        if (p.kv_start[w] != at || p.kv_end[w] <= p.kv_start[w] || p.kv_end[w] - p.kv_start[w] > p.kv_len_limit)
          return fail("KV chunks leave a gap, overlap or exceed the limit");
        at = p.kv_end[w];
      }
      if (at != end) return fail("KV chunks stop short of the end");
      const bool split = end > p.kv_len_limit;
      if (split != (count > 1)) return fail("split iff more than one chunk");
      if (!split) {
        if (p.partial_indptr[order[first]] != -1) return fail("an unsplit work has partial rows");
        continue;
      }
      // chunk k writes partial rows [base + k·row_tile, base + (k+1)·row_tile)
      const int64_t base = p.partial_indptr[order[first]];
      for (size_t k = first; k < next; ++k) {
        const int64_t rows_from = p.partial_indptr[order[k]];
        if (rows_from != base + static_cast<int64_t>(k - first) * row_tile) return fail("partial rows not consecutive");
        if (rows_from < 0 || rows_from + row_tile > p.partial_o_nnz) return fail("partial rows exceed partial_o_nnz");
        for (int64_t r = rows_from; r < rows_from + row_tile; ++r) {
          if (partial_rows[r]) return fail("partial rows of two works overlap");
          partial_rows[r] = 1;
        }
      }
      split_tiles.push_back({int64_t{in.qo_indptr[i]} * heads + row_begin, base, static_cast<int64_t>(count), row_tile});
    }
  }
  if (next != nw) return "a work on no tile of its request";
  for (char c : partial_rows)
    if (!c) return "a partial row no work writes";
  // unchecked upstream, but with every tile's KV counted in total_kv_lens the split tiles'
  // chunks stay below 2·num_clusters, so their rows fit the float workspace
  if ((in.clamp_causal_kv_end || !in.causal) && p.partial_o_nnz > p.partial_o_rows) return "partial_o_nnz > partial_o_rows";

  // merge CTAs: each within one split tile, those of a tile covering its rows once, in order
  if (p.merge_cta_counter > in.num_sm) return "merge_cta_counter > num_sm without the upstream error";
  for (const auto* a : {&p.merge_packed_offset_start, &p.merge_packed_offset_end, &p.merge_partial_packed_offset_start,
                        &p.merge_partial_packed_offset_end, &p.merge_partial_stride}) {
    if (a->size() != static_cast<size_t>(in.num_sm)) return "merge array size";
    for (int m = p.merge_cta_counter; m < in.num_sm; ++m)
      if ((*a)[m] != 0) return "an unused merge entry is not 0";
  }
  std::vector<int> merges(static_cast<size_t>(p.merge_cta_counter));
  for (int m = 0; m < p.merge_cta_counter; ++m) merges[m] = m;
  std::sort(merges.begin(), merges.end(),
            [&](int x, int y) { return p.merge_packed_offset_start[x] < p.merge_packed_offset_start[y]; });
  std::sort(split_tiles.begin(), split_tiles.end(),
            [](const SplitTile& x, const SplitTile& y) { return x.packed_start < y.packed_start; });
  size_t m_at = 0;
  for (const SplitTile& tile : split_tiles) {
    int64_t row = tile.packed_start;
    while (row < tile.packed_start + tile.row_tile) {
      if (m_at == merges.size() || p.merge_packed_offset_start[merges[m_at]] != row) {
        err << "packed row " << row << " of a split tile: no merge CTA starts there";
        return err.str();
      }
      const int m = merges[m_at++];
      const int64_t e = p.merge_packed_offset_end[m];
      if (e <= row || e > tile.packed_start + tile.row_tile) return "a merge CTA's rows leave its tile";
      if (p.merge_partial_packed_offset_start[m] != tile.partial_base + (row - tile.packed_start) ||
          p.merge_partial_packed_offset_end[m] != tile.partial_base + tile.chunks * tile.row_tile ||
          p.merge_partial_stride[m] != tile.row_tile)
        return "a merge CTA's partial rows";
      row = e;
    }
  }
  if (m_at != merges.size()) return "a merge CTA outside every split tile";
  return "";
}

// Plans and checks; true when planned, false when MLAPlan raised its merge_cta_counter error.
std::string mla_describe(const MlaPlanInput& in);
bool mla_plan_and_check(const MlaPlanInput& in) {
  MlaPlan p;
  try {
    p = flashinfer_mla_plan(in);
  } catch (const Error& e) {
    if (std::string(e.bare_message()) != kMlaMergeCounterError) FAIL(mla_describe(in) << ": " << e.what());
    return false;
  }
  const std::string failure = mla_check_plan(in, p);
  if (!failure.empty()) FAIL(mla_describe(in) << ": " << failure);
  return true;
}

std::string mla_describe(const MlaPlanInput& in) {
  std::ostringstream os;
  os << "H " << in.num_heads << (in.causal ? " causal" : "") << (in.clamp_causal_kv_end ? "" : " no-clamp") << " q/kv";
  for (size_t i = 0; i < in.kv_len.size(); ++i) os << " " << in.qo_indptr[i + 1] - in.qo_indptr[i] << "/" << in.kv_len[i];
  return os.str();
}

}  // namespace

TEST_CASE("flashinfer mla: packed_causal_kv_end and cost_function", "[sglang][flashinfer_mla]") {
  // H 128, ctq 128 (one token per tile), qo 4, kv 1000: tile t ends at 996 + ceil((t+1)·128 / 128)
  CHECK(packed_causal_kv_end(4, 1000, 0, 128, 4, 128) == 997);
  CHECK(packed_causal_kv_end(4, 1000, 2, 128, 4, 128) == 999);
  CHECK(packed_causal_kv_end(4, 1000, 3, 128, 4, 128) == 1000);  // last tile: kv_len
  // H 16, ctq 64 (four tokens per tile), qo 12, kv 20: 8 + ceil(64/16) = 12, 8 + 8 = 16, last 20
  CHECK(packed_causal_kv_end(12, 20, 0, 64, 3, 16) == 12);
  CHECK(packed_causal_kv_end(12, 20, 1, 64, 3, 16) == 16);
  CHECK(packed_causal_kv_end(12, 20, 2, 64, 3, 16) == 20);
  // ceil, not floor: H 48, ctq 64: kv − qo + ceil(64/48) = 10 − 3 + 2
  CHECK(packed_causal_kv_end(3, 10, 0, 64, 3, 48) == 9);
  // #1533: qo 4 > kv 1, H 128: 1 − 4 + (t+1) = −2, −1, 0 for t = 0..2; the clamp lifts them to 0
  for (int t = 0; t < 3; ++t) {
    CHECK(packed_causal_kv_end(4, 1, t, 128, 4, 128, false) == t - 2);
    CHECK(packed_causal_kv_end(4, 1, t, 128, 4, 128, true) == 0);
  }
  CHECK(packed_causal_kv_end(4, 1, 3, 128, 4, 128, false) == 1);
  // 2·float(qo) + kv
  CHECK(flashinfer_mla_cost(64, 192) == 320.f);
  CHECK(flashinfer_mla_cost(128, 0) == 256.f);
}

TEST_CASE("flashinfer mla: decode, 16 heads, [1000, 64, 5000, 0]", "[sglang][flashinfer_mla]") {
  const auto in = mla_input({1, 1, 1, 1}, {1000, 64, 5000, 0}, 16, false);
  const MlaPlan p = flashinfer_mla_plan(in);
  // Σ qo·H = 64, / 4 = 16 <= 64: one CTA per cluster, 132 clusters, tiles of 64 rows (16 used)
  CHECK(p.avg_packed_qo_len == 16);
  CHECK(p.cluster_size == 1);
  CHECK(p.num_clusters == 132);
  CHECK(p.cluster_tile_q == 64);
  // one tile per request: 1000 + 64 + 5000 + 0 = 6064; ceil(6064 / 132) = 46 <= 64 -> 192
  CHECK(p.total_kv_lens == 6064);
  CHECK(p.kv_len_limit == 192);
  // 1000 > 192: 6 chunks (5·192 + 40), partial rows 16 each from 0; 64: one work; 5000 > 192:
  // 27 chunks (26·192 + 8), partial rows from 96; 0: one empty work
  std::vector<MlaTestWork> want;
  for (int k = 0; k < 6; ++k) want.push_back({0, -1, 0, 192 * k, std::min(192 * (k + 1), 1000), 16 * k});
  want.push_back({1, -1, 0, 0, 64, -1});
  for (int k = 0; k < 27; ++k) want.push_back({2, -1, 0, 192 * k, std::min(192 * (k + 1), 5000), 96 + 16 * k});
  want.push_back({3, -1, 0, 0, 0, -1});
  auto got = mla_planning_order(p);
  REQUIRE(got.size() == 35);
  CHECK(p.total_num_works == 35);
  CHECK_FALSE(p.overflows_work_arrays);
  // 35 pops of 132 clusters: each pops a cluster still at cost 0, so all differ; the first
  // eight walk the heap's right spine (ties take the right child): 0, 2, 6, 14, 30, 62, 126,
  // then 131 (the last element, moved into the spine by the first pop)
  const auto clusters = mla_clusters(got);
  CHECK(std::vector<int>(clusters.begin(), clusters.begin() + 8) == std::vector<int>{0, 2, 6, 14, 30, 62, 126, 131});
  auto sorted = clusters;
  std::sort(sorted.begin(), sorted.end());
  CHECK(std::adjacent_find(sorted.begin(), sorted.end()) == sorted.end());
  for (auto& w : got) w.cluster = -1;
  CHECK(got == want);
  // merge CTAs: request 0: 1000·1/192 = 5 q chunks, ceil(16/5) = 4 rows each -> offsets
  // 0,4,8,12, partial end 0 + ceil(1000/192)·16 = 96; request 2: 5000/192 = 26 chunks,
  // ceil(16/26) = 1 row each -> 16 CTAs on rows 32..47, partial rows 96 + off, end 96 + 27·16 = 528
  std::vector<int32_t> start{0, 4, 8, 12}, end{4, 8, 12, 16}, pstart{0, 4, 8, 12}, pend(4, 96), stride(20, 16);
  for (int r = 0; r < 16; ++r) {
    start.push_back(32 + r);
    end.push_back(33 + r);
    pstart.push_back(96 + r);
    pend.push_back(528);
  }
  CHECK(p.merge_cta_counter == 20);
  CHECK(p.merge_packed_offset_start == mla_merge_array(start));
  CHECK(p.merge_packed_offset_end == mla_merge_array(end));
  CHECK(p.merge_partial_packed_offset_start == mla_merge_array(pstart));
  CHECK(p.merge_partial_packed_offset_end == mla_merge_array(pend));
  CHECK(p.merge_partial_stride == mla_merge_array(stride));
  CHECK(p.partial_o_nnz == 528);
  CHECK(p.partial_o_rows == 2 * 132 * 64);
  // costs 2·64 + chunk: cluster 0 took request 0's first chunk, 126 request 1's
  CHECK(p.cluster_cost[0] == 320.f);
  CHECK(p.cluster_cost[126] == 192.f);
  CHECK(mla_check_plan(in, p).empty());
}

TEST_CASE("flashinfer mla: decode, 128 heads, [4096, 100]", "[sglang][flashinfer_mla]") {
  const auto in = mla_input({1, 1}, {4096, 100}, 128, false);
  const MlaPlan p = flashinfer_mla_plan(in);
  // Σ qo·H / 2 = 128 > 64: clusters of 2 CTAs, 66 clusters, tiles of 128 rows
  CHECK(p.cluster_size == 2);
  CHECK(p.num_clusters == 66);
  CHECK(p.cluster_tile_q == 128);
  // 4196 / 66 -> 64 -> 192
  CHECK(p.total_kv_lens == 4196);
  CHECK(p.kv_len_limit == 192);
  // 4096 > 192: 22 chunks (21·192 + 64), 128 partial rows each; 100: one work
  std::vector<MlaTestWork> want;
  for (int k = 0; k < 22; ++k) want.push_back({0, -1, 0, 192 * k, std::min(192 * (k + 1), 4096), 128 * k});
  want.push_back({1, -1, 0, 0, 100, -1});
  auto got = mla_planning_order(p);
  // a 66-entry heap's right spine: 0, 2, 6, 14, 30, 62, then 65 (the last element, moved to
  // hole 62 by the first pop: 62 has no children in 65 entries)
  const auto clusters = mla_clusters(got);
  REQUIRE(got.size() == 23);
  CHECK(std::vector<int>(clusters.begin(), clusters.begin() + 7) == std::vector<int>{0, 2, 6, 14, 30, 62, 65});
  for (auto& w : got) w.cluster = -1;
  CHECK(got == want);
  // 4096·2 / 192 = 42 q chunks, ceil(128 / 42) = 4 rows each: 32 merge CTAs at rows 4m,
  // partial end 0 + ceil(4096 / 192)·128 = 22·128 = 2816
  std::vector<int32_t> start, end, pstart, pend(32, 2816), stride(32, 128);
  for (int m = 0; m < 32; ++m) {
    start.push_back(4 * m);
    end.push_back(4 * m + 4);
    pstart.push_back(4 * m);
  }
  CHECK(p.merge_cta_counter == 32);
  CHECK(p.merge_packed_offset_start == mla_merge_array(start));
  CHECK(p.merge_packed_offset_end == mla_merge_array(end));
  CHECK(p.merge_partial_packed_offset_start == mla_merge_array(pstart));
  CHECK(p.merge_partial_packed_offset_end == mla_merge_array(pend));
  CHECK(p.merge_partial_stride == mla_merge_array(stride));
  CHECK(p.partial_o_nnz == 2816);
  CHECK(p.partial_o_rows == 2 * 66 * 128);
  // every work carries its request's indptrs and lengths, whatever cluster it went to
  for (int w = 0; w < p.total_num_works; ++w) {
    const int r = p.work_request[w];
    CHECK(p.q_indptr[w] == r);
    CHECK(p.kv_indptr[w] == (r == 0 ? 0 : 4096));
    CHECK(p.q_len[w] == 1);
    CHECK(p.kv_len[w] == (r == 0 ? 4096 : 100));
  }
  CHECK(mla_check_plan(in, p).empty());
}

TEST_CASE("flashinfer mla: verify, 4 draft tokens, 16 heads: a split tile and its merge CTAs", "[sglang][flashinfer_mla]") {
  // qo 4 each, kv [100, 3], causal: packed 64 each, average 64 (not > 64): cluster_size 1,
  // one 64-row tile per request, the last, so its KV is kv_len
  const auto in = mla_input({4, 4}, {100, 3}, 16, true);
  const MlaPlan p = flashinfer_mla_plan(in);
  CHECK(p.avg_packed_qo_len == 64);
  CHECK(p.cluster_size == 1);
  CHECK(p.cluster_tile_q == 64);
  // 103 / 132 -> ceil 1 -> 32
  CHECK(p.total_kv_lens == 103);
  CHECK(p.kv_len_limit == 32);
  // 100 > 32: ceil(100/32) = 4 chunks, 64 partial rows each; 3: one work
  const auto got = mla_planning_order(p);
  const std::vector<MlaTestWork> want{{0, 0, 0, 0, 32, 0},    {0, 2, 0, 32, 64, 64}, {0, 6, 0, 64, 96, 128},
                                      {0, 14, 0, 96, 100, 192}, {1, 30, 0, 0, 3, -1}};
  CHECK(got == want);
  // 100·1/32 = 3 q chunks, ceil(64/3) = 22 rows: CTAs on rows [0,22), [22,44), [44,64), each
  // reading partial rows off + k·64 below 0 + 4·64 = 256
  CHECK(p.merge_cta_counter == 3);
  CHECK(p.merge_packed_offset_start == mla_merge_array({0, 22, 44}));
  CHECK(p.merge_packed_offset_end == mla_merge_array({22, 44, 64}));
  CHECK(p.merge_partial_packed_offset_start == mla_merge_array({0, 22, 44}));
  CHECK(p.merge_partial_packed_offset_end == mla_merge_array({256, 256, 256}));
  CHECK(p.merge_partial_stride == mla_merge_array({64, 64, 64}));
  CHECK(p.partial_o_nnz == 256);
  // cluster order: 0, 2, 6, 14, 30 hold one work each
  CHECK(p.work_indptr[1] == 1);
  CHECK(p.work_indptr[2] == 1);
  CHECK(p.work_indptr[3] == 2);
  CHECK(p.q_indptr[4] == 4);  // cluster 30's work: request 1
  CHECK(p.kv_indptr[4] == 100);
  CHECK(p.cluster_cost[14] == 64 * 2 + 4);
  CHECK(mla_check_plan(in, p).empty());
}

TEST_CASE("flashinfer mla: verify, 4 draft tokens, 128 heads: four causal tiles", "[sglang][flashinfer_mla]") {
  // qo 4, kv 300: packed 512, cluster_size 2, tiles of 128 rows = one token each; tile t
  // needs 300 − 4 + ceil((t+1)·128 / 128) = 297 + t, the last 300
  const auto in = mla_input({4}, {300}, 128, true);
  const MlaPlan p = flashinfer_mla_plan(in);
  CHECK(p.cluster_size == 2);
  CHECK(p.num_clusters == 66);
  // 300 + 299 + 298 + 297 = 1194; ceil(1194 / 66) = 19 -> 128
  CHECK(p.total_kv_lens == 1194);
  CHECK(p.kv_len_limit == 128);
  // tiles from last to first, each split in 3 chunks of 128 rows: partial bases 0, 384, 768, 1152
  std::vector<MlaTestWork> want;
  for (int t = 3, n = 0; t >= 0; --t)
    for (int k = 0; k < 3; ++k, ++n) want.push_back({0, -1, 128 * t, 128 * k, std::min(128 * (k + 1), 297 + t), 128 * n});
  auto got = mla_planning_order(p);
  REQUIRE(got.size() == 12);
  CHECK(std::vector<int>{got[0].cluster, got[1].cluster, got[2].cluster} == std::vector<int>{0, 2, 6});
  for (auto& w : got) w.cluster = -1;
  CHECK(got == want);
  // each tile: (297+t)·2 / 128 = 4 q chunks of 32 rows; tile 3 first (packed rows 384..511)
  std::vector<int32_t> start, end, pstart, pend, stride(16, 128);
  for (int t = 3; t >= 0; --t) {
    const int base = 384 * (3 - t);
    for (int off = 0; off < 128; off += 32) {
      start.push_back(128 * t + off);
      end.push_back(128 * t + off + 32);
      pstart.push_back(base + off);
      pend.push_back(base + 3 * 128);
    }
  }
  CHECK(p.merge_cta_counter == 16);
  CHECK(p.merge_packed_offset_start == mla_merge_array(start));
  CHECK(p.merge_packed_offset_end == mla_merge_array(end));
  CHECK(p.merge_partial_packed_offset_start == mla_merge_array(pstart));
  CHECK(p.merge_partial_packed_offset_end == mla_merge_array(pend));
  CHECK(p.merge_partial_stride == mla_merge_array(stride));
  CHECK(p.partial_o_nnz == 1536);
  CHECK(mla_check_plan(in, p).empty());
}

TEST_CASE("flashinfer mla: empty q and zero-length KV", "[sglang][flashinfer_mla]") {
  // qo [0, 1], kv [50, 0], 16 heads: Σ 16 / 2 = 8, cluster_size 1; request 0 has no tile,
  // request 1 one tile of KV 0: total 0, ceil(0 / 132) = 0 -> max 1 -> 32
  const auto in = mla_input({0, 1}, {50, 0}, 16, false);
  const MlaPlan p = flashinfer_mla_plan(in);
  CHECK(p.avg_packed_qo_len == 8);
  CHECK(p.total_kv_lens == 0);
  CHECK(p.kv_len_limit == 32);
  // one empty work (kv_start == kv_end) on cluster 0, cost 2·64 + 0
  REQUIRE(p.total_num_works == 1);
  CHECK(mla_planning_order(p) == std::vector<MlaTestWork>{{1, 0, 0, 0, 0, -1}});
  CHECK(p.q_indptr == std::vector<int32_t>{0});
  CHECK(p.kv_indptr == std::vector<int32_t>{50});
  CHECK(p.q_len == std::vector<int32_t>{1});
  CHECK(p.kv_len == std::vector<int32_t>{0});
  std::vector<int32_t> indptr(133, 1);
  indptr[0] = 0;
  CHECK(p.work_indptr == indptr);
  CHECK(p.cluster_cost[0] == 128.f);
  CHECK(p.merge_cta_counter == 0);
  CHECK(p.partial_o_nnz == 0);
  CHECK(mla_check_plan(in, p).empty());
}

TEST_CASE("flashinfer mla: qo_len > kv_len over several tiles, with and without #1533's clamp", "[sglang][flashinfer_mla]") {
  // a draft-extend padding slot: qo 4 (steps + 1), kv 1 (fill), 128 heads, causal: 4 tiles
  // of one token each; tile t < 3 needs 1 − 4 + (t+1) = −2, −1, 0, the last tile 1
  SECTION("clamped (flashinfer >= 480d1ae0): every tile gets a work, three of them empty") {
    const auto in = mla_input({4}, {1}, 128, true);
    const MlaPlan p = flashinfer_mla_plan(in);
    CHECK(p.total_kv_lens == 1);  // 1 + 0 + 0 + 0
    CHECK(p.kv_len_limit == 32);
    const std::vector<MlaTestWork> want{{0, 0, 384, 0, 1, -1}, {0, 2, 256, 0, 0, -1}, {0, 6, 128, 0, 0, -1}, {0, 14, 0, 0, 0, -1}};
    CHECK(mla_planning_order(p) == want);
    CHECK(mla_check_plan(in, p).empty());
  }
  SECTION("before #1533: tiles 0 and 1 (ends −2, −1) get no work, their rows are never written") {
    const auto in = mla_input({4}, {1}, 128, true, kMlaDefaultNumSm, false);
    const MlaPlan p = flashinfer_mla_plan(in);
    // 1 + 0 − 1 − 2 = −2; (−2 + 65) / 66 = 0 -> max 1 -> 32
    CHECK(p.total_kv_lens == -2);
    CHECK(p.kv_len_limit == 32);
    const std::vector<MlaTestWork> want{{0, 0, 384, 0, 1, -1}, {0, 2, 256, 0, 0, -1}};
    CHECK(mla_planning_order(p) == want);
    CHECK(mla_check_plan(in, p).empty());
  }
}

TEST_CASE("flashinfer mla: equal costs pop in libstdc++'s order, not cluster order", "[sglang][flashinfer_mla]") {
  // 4 SMs, 16 heads, five requests of qo 1, kv 100: cluster_size 1, 4 clusters; 500 / 4 =
  // 125 > 64 -> ceil(125/256)·256 = 256, no split; every work costs 2·64 + 100 = 228.
  // Heap [0,1,2,3] all 0: pop 0 (value 3 fills the hole that walked to the right child 2:
  // [2,1,3]); pop 2 ([3,1,(0,228)]); pop 3 (right child (0,228) costs more: the left, 1,
  // rises: [1,(2,228),(0,228)]); pop 1; then the costs tie at 228 and 0 is on top
  const auto in = mla_input({1, 1, 1, 1, 1}, {100, 100, 100, 100, 100}, 16, false, 4);
  const MlaPlan p = flashinfer_mla_plan(in);
  CHECK(p.num_clusters == 4);
  CHECK(p.kv_len_limit == 256);
  CHECK(mla_clusters(mla_planning_order(p)) == std::vector<int>{0, 2, 3, 1, 0});
  CHECK(p.work_indptr == std::vector<int32_t>{0, 2, 3, 4, 5});
  CHECK(p.q_indptr == std::vector<int32_t>{0, 4, 3, 1, 2});
  CHECK(p.kv_indptr == std::vector<int32_t>{0, 400, 300, 100, 200});
  CHECK(p.cluster_cost == std::vector<float>{456.f, 228.f, 228.f, 228.f});
  CHECK(p.merge_packed_offset_start == std::vector<int32_t>(4, 0));
  CHECK(mla_check_plan(in, p).empty());
}

TEST_CASE("flashinfer mla: errors", "[sglang][flashinfer_mla]") {
  SECTION("a negative q length: upstream's message") {
    MlaPlanInput in = mla_input({1, 1, 1}, {10, 10, 10}, 16, false);
    in.qo_indptr = {0, 5, 3, 6};
    try {
      flashinfer_mla_plan(in);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitRefused);
      CHECK(std::string(e.bare_message()) == "qo_indptr[2]3 - qo_indptr[1]5 should be non-negative");
    }
  }
  SECTION("merge_cta_counter > num_sm: only when the total KV is undercounted (before #1533)") {
    // 8 SMs, 16 heads, qo [8, 128], kv [1000, 0], causal: Σ 2176 / 2 = 1088 -> cluster_size 2,
    // 4 clusters, ctq 128. Request 1: 16 tiles of 8 tokens; tile t < 15 needs
    // −128 + ceil((t+1)·128/16) = 8t − 120.
    // Clamped: those are 0; total 1000, 250 per cluster -> 256; request 0 splits into
    // 2000/256 = 7 q chunks of ceil(128/7) = 19 rows: 7 merge CTAs <= 8
    const auto clamped = mla_input({8, 128}, {1000, 0}, 16, true, 8);
    const MlaPlan p = flashinfer_mla_plan(clamped);
    CHECK(p.kv_len_limit == 256);
    CHECK(p.merge_cta_counter == 7);
    CHECK(p.total_num_works == 4 + 16);
    CHECK(mla_check_plan(clamped, p).empty());
    // Unclamped: Σ_{t<15} (8t − 120) = −960, total 40, ceil(40/4) = 10 -> 64; 2000/64 = 31 q
    // chunks of ceil(128/31) = 5 rows: 26 merge CTAs > 8
    const auto unclamped = mla_input({8, 128}, {1000, 0}, 16, true, 8, false);
    try {
      flashinfer_mla_plan(unclamped);
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitRefused);
      CHECK(std::string(e.bare_message()) == kMlaMergeCounterError);
    }
  }
  SECTION("what upstream does not guard is refused as invalid input") {
    auto expect_invalid = [](const MlaPlanInput& in, const std::string& fragment) {
      try {
        flashinfer_mla_plan(in);
        FAIL("no error");
      } catch (const Error& e) {
        CHECK(e.exit_code() == kExitInvalidInput);
        CHECK_THAT(std::string(e.what()), Catch::Contains(fragment));
      }
    };
    expect_invalid(mla_input({}, {}, 16, false), "empty batch");
    // 1 SM, clusters of 2: upstream divides by zero clusters, a failure of the stack (exit 5)
    try {
      flashinfer_mla_plan(mla_input({1}, {10}, 128, false, 1));
      FAIL("no error");
    } catch (const Error& e) {
      CHECK(e.exit_code() == kExitRefused);
      CHECK_THAT(std::string(e.what()), Catch::Contains("no cluster"));
    }
    expect_invalid(mla_input({1}, {-1}, 16, false), "kv_len[0]");
    expect_invalid(mla_input({1}, {1 << 30}, 16, false), "kv_len[0]");
    expect_invalid(mla_input({1}, {10}, 0, false), "num_heads");
    MlaPlanInput short_indptr = mla_input({1, 1}, {10, 10}, 16, false);
    short_indptr.kv_indptr.pop_back();
    expect_invalid(short_indptr, "batch_size + 1");
  }
}

TEST_CASE("flashinfer mla: the heap matches std::push_heap / std::pop_heap", "[sglang][flashinfer_mla]") {
  using Element = FlashinferMlaMinHeap::Element;
  auto compare = [](const Element& a, const Element& b) { return a.second > b.second; };
  std::mt19937 rng(20260521);
  int ops = 0;
  for (int round = 0; round < 400; ++round) {
    const int capacity = 1 + static_cast<int>(rng() % 140);
    // few distinct costs, so most comparisons tie
    const int cost_levels = 1 + static_cast<int>(rng() % 6);
    FlashinferMlaMinHeap mine(capacity);
    std::vector<Element> ref(static_cast<size_t>(capacity));
    for (int i = 0; i < capacity; ++i) ref[i] = {i, 0.f};
    for (int step = 0; step < 600; ++step, ++ops) {
      const uint32_t r = rng();
      if (ref.empty() || r % 3 == 0) {
        const Element e{static_cast<int>(rng() % 1000), static_cast<float>(rng() % cost_levels) * 0.5f};
        mine.insert(e);
        ref.push_back(e);
        std::push_heap(ref.begin(), ref.end(), compare);
      } else if (r % 3 == 1) {
        const Element got = mine.pop();
        std::pop_heap(ref.begin(), ref.end(), compare);
        const Element want = ref.back();
        ref.pop_back();
        REQUIRE(got == want);
      } else {
        // the planner's step: pop the cheapest, put it back dearer
        const Element got = mine.pop();
        std::pop_heap(ref.begin(), ref.end(), compare);
        const Element want = ref.back();
        ref.pop_back();
        REQUIRE(got == want);
        const Element back{got.first, got.second + static_cast<float>(rng() % cost_levels)};
        mine.insert(back);
        ref.push_back(back);
        std::push_heap(ref.begin(), ref.end(), compare);
      }
      REQUIRE(mine.elements() == ref);
    }
  }
  CHECK(ops == 400 * 600);
}

TEST_CASE("flashinfer mla sweep: up to 3 requests around the tile and limit edges", "[sglang][flashinfer_mla][exhaustive]") {
  const std::vector<int32_t> kv_lens = {0, 1, 31, 32, 33, 63, 64, 65, 127, 128, 129, 191, 192, 193, 255, 256, 257};
  const std::vector<int32_t> qo_lens = {1, 2, 4};
  int64_t plans = 0, unclamped_plans = 0, unclamped_errors = 0;
  std::vector<int32_t> q, kv;
  std::function<void(size_t)> rec = [&](size_t n) {
    if (q.size() == n) {
      bool short_kv = false;  // a request with qo_len > kv_len + 1 can get a negative causal end
      for (size_t i = 0; i < n; ++i) short_kv = short_kv || q[i] > kv[i] + 1;
      for (int heads : {16, 128})
        for (bool causal : {false, true}) {
          const auto in = mla_input(q, kv, heads, causal);
          if (!mla_plan_and_check(in)) FAIL(mla_describe(in) << ": the merge error with the clamp");
          ++plans;
          if (causal && short_kv) {
            const auto old = mla_input(q, kv, heads, causal, kMlaDefaultNumSm, false);
            if (!mla_plan_and_check(old)) ++unclamped_errors;
            ++unclamped_plans;
          }
        }
      return;
    }
    for (int32_t k : kv_lens)
      for (int32_t ql : qo_lens) {
        q.push_back(ql);
        kv.push_back(k);
        rec(n);
        q.pop_back();
        kv.pop_back();
      }
  };
  for (size_t n = 1; n <= 3; ++n) rec(n);
  const int64_t batches = 51 + 51 * 51 + 51 * 51 * 51;
  CHECK(plans == batches * 4);
  CHECK(unclamped_plans > 0);
  CHECK(unclamped_errors == 0);
}

TEST_CASE("flashinfer mla sweep: 4 to 6 decode requests", "[sglang][flashinfer_mla][exhaustive]") {
  const std::vector<int32_t> kv_lens = {0, 1, 32, 64, 128, 192, 256};
  int64_t plans = 0;
  std::vector<int32_t> kv;
  std::function<void(size_t)> rec = [&](size_t n) {
    if (kv.size() == n) {
      const std::vector<int32_t> q(n, 1);
      for (int heads : {16, 128})
        for (bool causal : {false, true}) {
          const auto in = mla_input(q, kv, heads, causal);
          if (!mla_plan_and_check(in)) FAIL(mla_describe(in) << ": the merge error with the clamp");
          ++plans;
        }
      return;
    }
    for (int32_t k : kv_lens) {
      kv.push_back(k);
      rec(n);
      kv.pop_back();
    }
  };
  for (size_t n = 4; n <= 6; ++n) rec(n);
  CHECK(plans == (7 * 7 * 7 * 7 + 7 * 7 * 7 * 7 * 7 + 7 * 7 * 7 * 7 * 7 * 7) * 4);
}
