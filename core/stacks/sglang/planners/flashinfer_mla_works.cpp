#include "core/stacks/sglang/planners/flashinfer_mla_works.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>
#include <tuple>

#include "core/planners/planner_util.hpp"

namespace mlactl::sglang {

WorkList flashinfer_mla_work_list(const MlaPlan& plan, const FlashinferMlaWorkInput& in) {
  using planner_util::ceil_div;
  WorkList wl;
  wl.planner = "flashinfer_mla";
  const int64_t H = in.num_heads, tile = plan.cluster_tile_q;
  const bool aligned = tile % H == 0;  // every tile starts and ends on a token
  if (!aligned)
    wl.notes.push_back("MLAPlan's tiles of " + std::to_string(tile) + " packed rows cut tokens of " + std::to_string(H) +
                       " heads: mlactl gives every head of a token the work of the tile holding its first head");
  // a split tile's chunks, in work order, for its reduce entry: (request, q_start) ->
  // (token range, partial rows)
  struct SplitTile {
    int32_t q_begin = 0, q_end = 0;
    std::vector<int32_t> plocs;
  };
  std::map<std::pair<int32_t, int32_t>, SplitTile> split_tiles;
  std::vector<std::pair<int32_t, int32_t>> split_order;
  int64_t next_partial = 0;  // mlactl's own partial numbering (unaligned tiles)
  int64_t max_tokens = 1;
  wl.num_workgroups = plan.num_clusters;
  wl.work_indptr.assign(1, 0);
  for (int c = 0; c < plan.num_clusters; ++c) {
    for (int32_t w = plan.work_indptr[(size_t)c]; w < plan.work_indptr[(size_t)c + 1]; ++w) {
      const int32_t r = plan.work_request[(size_t)w];
      const int64_t L = plan.q_len[(size_t)w], packed = L * H;
      const int64_t q_start = plan.q_start[(size_t)w];
      const int64_t row_tile = std::min<int64_t>(tile, packed - q_start);
      // tokens whose first head lies in [q_start, q_start + row_tile)
      const int64_t ta = std::min(L, ceil_div(q_start, H)), tb = std::min(L, ceil_div(q_start + row_tile, H));
      if (tb <= ta) continue;  // only later heads of a token: folded into its owner's work
      const int64_t q0 = in.qo_indptr[(size_t)r];
      const int64_t ks = plan.kv_start[(size_t)w], ke = plan.kv_end[(size_t)w], kv_len = plan.kv_len[(size_t)w];
      WorkInfo x;
      x.batch_idx = r;
      x.qo_start = (int32_t)(q0 + ta);
      x.qo_end = (int32_t)(q0 + tb);
      x.kv_start = (int32_t)(in.kv_list_indptr[(size_t)r] + ks);
      x.kv_end = (int32_t)(in.kv_list_indptr[(size_t)r] + ke);
      // mla.cuh: row q_idx masks kv_idx + qo_len > kv_len + q_idx; the work list counts its
      // causal trim from the last row, kv_offset = (kv_len - L + tb) - ke (negative: the
      // chunk ends past that row's window)
      x.kv_offset = (int32_t)((in.causal ? kv_len - L + tb : kv_len) - ke);
      const int32_t pi = plan.partial_indptr[(size_t)w];
      if (pi >= 0) {
        if (aligned) {
          x.partial_qo_loc = (int32_t)(pi / H);
        } else {
          x.partial_qo_loc = (int32_t)next_partial;
          next_partial += tb - ta;
        }
        const auto key = std::make_pair(r, (int32_t)q_start);
        auto it = split_tiles.find(key);
        if (it == split_tiles.end()) {
          it = split_tiles.emplace(key, SplitTile{x.qo_start, x.qo_end, {}}).first;
          split_order.push_back(key);
        }
        it->second.plocs.push_back(x.partial_qo_loc);
      }
      max_tokens = std::max(max_tokens, tb - ta);
      wl.work_info.push_back(x);
    }
    wl.work_indptr.push_back((int32_t)wl.work_info.size());
  }
  // one reduce tile per split tile (its merge CTAs split the rows between them; the merged
  // result is the same), then one unsplit entry per tile written directly
  int64_t partial_rows = aligned ? 0 : next_partial;
  for (const auto& key : split_order) {
    const SplitTile& t = split_tiles[key];
    planner_util::add_reduce_tile(wl, t.q_begin, t.q_end, t.plocs);
    for (int32_t p : t.plocs) partial_rows = std::max<int64_t>(partial_rows, p + (t.q_end - t.q_begin));
  }
  if (wl.reduce_indptr.empty()) wl.reduce_indptr.push_back(0);
  wl.num_partial_rows = partial_rows;
  wl.num_q_rows = in.qo_indptr.empty() ? 0 : in.qo_indptr.back();
  wl.planned_view.heads = in.num_heads;
  wl.planned_view.q_layout = QLayout::per_request;
  wl.planned_view.q_tokens_per_tile = (int)max_tokens;
  wl.planned_view.causal = in.causal;
  if (plan.overflows_work_arrays)
    wl.notes.push_back("MLAPlan made " + std::to_string(plan.total_num_works) + " works, more than the " + std::to_string(kMlaMaxTotalNumWorks) +
                       " entries its work arrays hold: upstream writes past them into the next array (flashinfer open PR #5170)");
  return wl;
}

std::vector<std::string> flashinfer_mla_words(const MlaPlan& plan, int num_heads) {
  std::vector<std::string> out;
  const int64_t H = num_heads;
  for (int c = 0; c < plan.num_clusters; ++c)
    for (int32_t w = plan.work_indptr[(size_t)c]; w < plan.work_indptr[(size_t)c + 1]; ++w) {
      const int64_t qs = plan.q_start[(size_t)w], packed = (int64_t)plan.q_len[(size_t)w] * H;
      const int64_t qe = std::min<int64_t>(qs + plan.cluster_tile_q, packed);
      std::string s = "cluster " + std::to_string(c) + ": request " + std::to_string(plan.work_request[(size_t)w]) + " packed rows [" +
                      std::to_string(qs) + ", " + std::to_string(qe) + ") (tokens [" + std::to_string(qs / H) + ", " +
                      std::to_string((qe + H - 1) / H) + ")), KV [" + std::to_string(plan.kv_start[(size_t)w]) + ", " +
                      std::to_string(plan.kv_end[(size_t)w]) + ") of " + std::to_string(plan.kv_len[(size_t)w]);
      if (plan.partial_indptr[(size_t)w] >= 0)
        s += ", partial rows [" + std::to_string(plan.partial_indptr[(size_t)w]) + ", " + std::to_string(plan.partial_indptr[(size_t)w] + (qe - qs)) + ")";
      out.push_back(s);
    }
  return out;
}

}  // namespace mlactl::sglang
