#include "core/position_audit.hpp"

#include <algorithm>
#include <unordered_map>

#include "core/inputs.hpp"
#include "core/planners/expectations.hpp"

namespace mlactl {

std::string summarize_positions(const std::vector<int64_t>& v, size_t max_ranges) {
  std::string s;
  size_t ranges = 0;
  for (size_t i = 0; i < v.size();) {
    size_t j = i;
    while (j + 1 < v.size() && v[j + 1] == v[j] + 1) ++j;
    if (ranges == max_ranges) {
      s += ", ...";
      break;
    }
    s += (s.empty() ? "" : ", ");
    s += (j == i) ? std::to_string(v[i]) : "[" + std::to_string(v[i]) + ", " + std::to_string(v[j] + 1) + ")";
    ++ranges;
    i = j + 1;
  }
  return s;
}

namespace {
struct Interval {
  int64_t begin, end;
};
}  // namespace

PositionAudit audit_positions(const Batch& b, const std::vector<RowWindow>& rows, const RoutePlan& plan, int64_t max_listed) {
  PositionAudit a;
  const KernelView& v = plan.kernel_view;
  const WorkList& w = plan.work;
  const int64_t num_idx = (int64_t)plan.kv_indices.size();

  // slot -> (request, position), from the batch's placement alone (never the metadata):
  // the oracle's kv_slot_of, not the builder's token_slot (docs/design.md §3)
  const int64_t num_slots = b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size;
  std::vector<int32_t> slot_req((size_t)num_slots, -1);
  std::vector<int32_t> slot_pos((size_t)num_slots, -1);
  for (size_t r = 0; r < b.requests.size(); ++r) {
    if (b.requests[r].padding) continue;
    const int64_t s = b.requests[r].seq_len();
    for (int64_t p = 0; p < s; ++p) {
      const int64_t slot = kv_slot_of(b, (int)r, p);
      if (slot >= 0 && slot < num_slots) {
        slot_req[slot] = (int32_t)r;
        slot_pos[slot] = (int32_t)p;
      }
    }
  }

  // coverage per kernel q row, with the AITER causal rule (docs/stacks/vllm-rocm-aiter.md §A7.1)
  const int64_t k = std::max(1, v.fold_ratio);
  const int64_t L = std::max<int64_t>(1, plan.uniform_qlen);
  int64_t view_rows = (int64_t)rows.size() * k;
  std::vector<std::vector<Interval>> cover((size_t)view_rows);
  for (size_t wi = 0; wi < w.work_info.size(); ++wi) {
    const WorkInfo& x = w.work_info[wi];
    const int64_t qn = (int64_t)x.qo_end - x.qo_start;
    for (int64_t i = 0; i < qn; ++i) {
      const int64_t q = x.qo_start + i;
      int64_t end = x.kv_end;
      if (v.causal) end -= std::max<int64_t>(0, (qn - 1 - i) - x.kv_offset);
      if (end <= x.kv_start) continue;
      if (q < 0 || q >= view_rows) {
        a.stray_q_rows++;
        continue;
      }
      cover[(size_t)q].push_back({x.kv_start, end});
    }
  }

  // kernel q row of (oracle row i, head group g)
  auto view_row_of = [&](size_t i, int64_t g) -> int64_t {
    return view_q_row(v.q_layout, (int)k, L, (int64_t)i, rows[i].request, rows[i].token, (int)g);
  };
  std::vector<uint8_t> seen;
  std::vector<int64_t> extra_pos, missing_pos;
  for (size_t i = 0; i < rows.size(); ++i) {
    const RowWindow& rw = rows[i];
    if (rw.kind == MaskKind::padding) continue;
    a.rows_checked++;
    const bool sparse = has_position_set(rw.kind);
    const int64_t wlen = sparse ? (int64_t)rw.sparse_positions.size() : rw.length();
    AuditRow bad;
    bool row_bad = false;
    for (int64_t g = 0; g < k; ++g) {
      const int64_t vr = view_row_of(i, g);
      seen.assign((size_t)wlen, 0);
      extra_pos.clear();
      int64_t extra = 0, other_request = 0, dup = 0;
      if (vr >= 0 && vr < view_rows) {
        for (const Interval& iv : cover[(size_t)vr]) {
          for (int64_t e = iv.begin; e < iv.end; ++e) {
            if (e < 0 || e >= num_idx) {
              a.errors.push_back("work reads index-list entry " + std::to_string(e) + " outside [0, " + std::to_string(num_idx) + ")");
              ++extra;
              continue;
            }
            const int64_t slot = plan.kv_indices[(size_t)e];
            const int32_t req = (slot >= 0 && slot < num_slots) ? slot_req[slot] : -1;
            const int64_t pos = (slot >= 0 && slot < num_slots) ? slot_pos[slot] : -1;
            if (req != rw.request) {
              ++extra;
              ++other_request;
              continue;
            }
            int64_t idx = -1;
            if (sparse) {
              auto it = std::lower_bound(rw.sparse_positions.begin(), rw.sparse_positions.end(), pos);
              if (it != rw.sparse_positions.end() && *it == pos) idx = it - rw.sparse_positions.begin();
            } else if (pos >= rw.begin && pos < rw.end) {
              idx = pos - rw.begin;
            }
            if (idx < 0) {
              ++extra;
              extra_pos.push_back(pos);
            } else if (seen[(size_t)idx]) {
              ++extra;
              ++dup;
            } else {
              seen[(size_t)idx] = 1;
            }
          }
        }
      }
      missing_pos.clear();
      for (int64_t j = 0; j < wlen; ++j)
        if (!seen[(size_t)j]) missing_pos.push_back(sparse ? rw.sparse_positions[(size_t)j] : rw.begin + j);
      if (extra == 0 && missing_pos.empty()) continue;
      row_bad = true;
      bad.extra += extra;
      bad.missing += (int64_t)missing_pos.size();
      // raw heads served by this group
      for (int h = 0; h < plan.heads.num_heads; ++h) {
        const int p = plan.heads.unpad.empty() ? h : plan.heads.unpad[h];
        if (k == 1 || p / std::max(1, v.heads) == g) bad.heads.push_back(h);
      }
      if (bad.detail.empty()) {
        std::sort(extra_pos.begin(), extra_pos.end());
        std::string d;
        const std::string win = sparse ? "its " + std::to_string(wlen) + (rw.kind == MaskKind::tree ? " allowed positions (tree)" : " sparse positions")
                                       : "its window [" + std::to_string(rw.begin) + ", " + std::to_string(rw.end) + ")";
        if (!extra_pos.empty()) d += "reads positions " + summarize_positions(extra_pos) + " outside " + win;
        if (other_request) d += std::string(d.empty() ? "" : "; ") + "reads " + std::to_string(other_request) + " slots of other requests or unused slots";
        if (dup) d += std::string(d.empty() ? "" : "; ") + "reads " + std::to_string(dup) + " positions twice";
        if (!missing_pos.empty())
          d += std::string(d.empty() ? "" : "; ") + (missing_pos.size() == (size_t)wlen ? "never written (no work covers it): misses all of " + win
                                                                                          : "misses positions " + summarize_positions(missing_pos) + " of " + win);
        bad.detail = d;
      }
    }
    if (row_bad) {
      a.bad_rows++;
      if ((int64_t)a.bad.size() < max_listed) {
        bad.row = rw.row;
        bad.request = rw.request;
        bad.token = rw.token;
        a.bad.push_back(std::move(bad));
      }
    }
  }
  if (a.errors.size() > 10) a.errors.resize(10);
  a.ok = a.bad_rows == 0 && a.stray_q_rows == 0 && a.errors.empty();
  return a;
}

}  // namespace mlactl
