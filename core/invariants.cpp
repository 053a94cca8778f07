// Invariant checker over any work list (docs/design.md §4 "Invariants"). Coverage is interval
// arithmetic per q row (sorted intervals), never per-KV-position bitmaps: rows can be
// 100k+ tokens and batches 16k requests.
#include "core/invariants.hpp"

#include <algorithm>
#include <optional>
#include <cstdint>
#include <sstream>
#include <string>
#include <unordered_map>
#include <vector>

namespace mlactl {

const char* to_string(InvariantRule r) {
  switch (r) {
    case InvariantRule::kv_read_once: return "every KV entry of a row's window read exactly once";
    case InvariantRule::kv_inside_window: return "no KV entry outside a row's window";
    case InvariantRule::partial_one_writer: return "every partial row written by exactly one work";
    case InvariantRule::partial_merged_once: return "every partial row merged exactly once";
    case InvariantRule::output_one_writer: return "every output row written exactly once (by a work or a merge)";
    case InvariantRule::reduce_maps: return "reduce maps consistent with the works";
    case InvariantRule::buffers: return "inside the stack's buffers";
    case InvariantRule::structure: return "a well-formed work list";
  }
  return "?";
}

namespace {

InvariantRule default_rule(const std::string& kind) {
  if (kind == "uncovered" || kind == "covered_twice") return InvariantRule::kv_read_once;
  if (kind == "extra") return InvariantRule::kv_inside_window;
  if (kind == "partial_overlap") return InvariantRule::partial_one_writer;
  if (kind == "reduce_map") return InvariantRule::reduce_maps;
  if (kind == "buffer") return InvariantRule::buffers;
  return InvariantRule::structure;
}

struct Reporter {
  InvariantReport& rep;
  int64_t cap;
  std::optional<InvariantRule> pending;  // the next add's rule, when not its kind's default
  Reporter& rule(InvariantRule x) {
    pending = x;
    return *this;
  }
  void add(const char* kind, int64_t q_row, int64_t kv_begin, int64_t kv_end, int64_t work, const std::string& msg) {
    const InvariantRule rl = pending ? *pending : default_rule(kind);
    pending.reset();
    rep.ok = false;
    ++rep.total_violations;
    if (static_cast<int64_t>(rep.violations.size()) >= cap) return;
    Violation v;
    v.rule = rl;
    v.kind = kind;
    v.q_row = q_row;
    v.kv_begin = kv_begin;
    v.kv_end = kv_end;
    v.work = work;
    v.message = msg;
    rep.violations.push_back(std::move(v));
  }
};

std::string range(int64_t a, int64_t b) {
  std::ostringstream os;
  os << "[" << a << ", " << b << ")";
  return os.str();
}

// One q row's visible KV entries inside one work.
struct RowInterval {
  int64_t row, begin, end, work;
};

// The AITER causal rule (docs/stacks/vllm-rocm-aiter.md §A7.1): q row i of Qn sees KV entries
// < kv_end - max(0, (Qn-1-i) - kv_offset). kv_offset and the trim count tokens; with
// page_size > 1 the trim drops only whole index entries (pages).
int64_t visible_end(const WorkInfo& w, int64_t i, const KernelView& view) {
  if (!view.causal) return w.kv_end;
  const int64_t qn = int64_t(w.qo_end) - w.qo_start;
  const int64_t trim_tokens = std::max<int64_t>(0, (qn - 1 - i) - w.kv_offset);
  const int64_t trim_entries = view.page_size > 1 ? trim_tokens / view.page_size : trim_tokens;
  return int64_t(w.kv_end) - trim_entries;
}

int64_t ceil16(int64_t x) { return x <= 0 ? 0 : (x + 15) / 16; }

}  // namespace

InvariantReport check_invariants(const WorkList& wl, const KernelView& view, const std::vector<RowExpectation>& rows,
                                 const InvariantOptions& opt) {
  InvariantReport rep;
  Reporter r{rep, std::max<int64_t>(0, opt.max_violations_listed), std::nullopt};
  const int64_t num_works = static_cast<int64_t>(wl.work_info.size());

  // ---- structure: work_indptr ----
  const int64_t groups = wl.num_workgroups;
  if (static_cast<int64_t>(wl.work_indptr.size()) != groups + 1) {
    r.add("structure", -1, -1, -1, -1,
          "work_indptr has " + std::to_string(wl.work_indptr.size()) + " entries, expected num_workgroups + 1 = " +
              std::to_string(groups + 1));
  }
  std::vector<int64_t> group_of_work(static_cast<size_t>(num_works), -1);
  if (!wl.work_indptr.empty()) {
    if (wl.work_indptr[0] != 0)
      r.add("structure", -1, -1, -1, -1, "work_indptr[0] = " + std::to_string(wl.work_indptr[0]) + ", expected 0");
    for (size_t g = 0; g + 1 < wl.work_indptr.size(); ++g) {
      const int64_t a = wl.work_indptr[g], b = wl.work_indptr[g + 1];
      if (b < a) {
        r.add("structure", -1, -1, -1, -1,
              "work_indptr decreases at workgroup " + std::to_string(g) + ": " + std::to_string(a) + " -> " +
                  std::to_string(b));
        continue;
      }
      if (a < 0 || b > num_works) {
        r.add("structure", -1, -1, -1, -1,
              "workgroup " + std::to_string(g) + " runs works " + range(a, b) + ", outside the " +
                  std::to_string(num_works) + " works");
        continue;
      }
      for (int64_t w = a; w < b; ++w) group_of_work[w] = static_cast<int64_t>(g);
    }
    const int64_t last = wl.work_indptr.back();
    if (last != num_works)
      r.add("structure", -1, -1, -1, -1,
            "work_indptr ends at " + std::to_string(last) + " but there are " + std::to_string(num_works) +
                " works; works from " + std::to_string(std::min(last, num_works)) + " run on no workgroup");
  }

  // ---- structure of each work, and the per-row visible intervals ----
  std::vector<RowInterval> intervals;
  intervals.reserve(static_cast<size_t>(num_works) * std::max(1, view.q_tokens_per_tile));
  for (int64_t w = 0; w < num_works; ++w) {
    const WorkInfo& wi = wl.work_info[w];
    if (wi.qo_end <= wi.qo_start || wi.qo_start < 0 || (wl.num_q_rows > 0 && wi.qo_end > wl.num_q_rows)) {
      r.add("structure", wi.qo_start, wi.kv_start, wi.kv_end, w,
            "work " + std::to_string(w) + " has q rows " + range(wi.qo_start, wi.qo_end) + ", not a non-empty range "
            "inside the " + std::to_string(wl.num_q_rows) + " q rows");
      continue;
    }
    if (wi.partial_qo_loc < -1)
      r.add("structure", wi.qo_start, wi.kv_start, wi.kv_end, w,
            "work " + std::to_string(w) + " has partial_qo_loc " + std::to_string(wi.partial_qo_loc));
    if (group_of_work[w] < 0) continue;  // already reported: no workgroup runs it
    // A negative-length KV range reads nothing (AITER emits these for zero-length KV under q
    // tiling, reported by its planner as a note); it counts as empty here.
    for (int64_t q = wi.qo_start; q < wi.qo_end; ++q) {
      const int64_t e = visible_end(wi, q - wi.qo_start, view);
      if (e > wi.kv_start) intervals.push_back({q, wi.kv_start, e, w});
    }
  }

  // ---- coverage: every required (row, KV entry) exactly once, nothing outside ----
  std::vector<RowExpectation> exp = rows;
  auto by_row = [](const RowExpectation& a, const RowExpectation& b) { return a.q_row < b.q_row; };
  if (!std::is_sorted(exp.begin(), exp.end(), by_row)) std::stable_sort(exp.begin(), exp.end(), by_row);
  // a row may expect several disjoint ranges (a tree-verify row: its prefix and its drafts'
  // entries, core/draft_tree.hpp); overlapping ones are a planner's bug
  auto by_row_kv = [](const RowExpectation& a, const RowExpectation& b) {
    return a.q_row != b.q_row ? a.q_row < b.q_row : a.kv_begin < b.kv_begin;
  };
  if (!std::is_sorted(exp.begin(), exp.end(), by_row_kv)) std::stable_sort(exp.begin(), exp.end(), by_row_kv);
  for (size_t i = 1; i < exp.size(); ++i)
    if (exp[i].q_row == exp[i - 1].q_row && exp[i].kv_begin < exp[i - 1].kv_end)
      r.add("structure", exp[i].q_row, exp[i].kv_begin, exp[i].kv_end, -1,
            "q row " + std::to_string(exp[i].q_row) + " has two overlapping expectations");
  auto by_row_begin = [](const RowInterval& a, const RowInterval& b) {
    return a.row != b.row ? a.row < b.row : (a.begin != b.begin ? a.begin < b.begin : a.work < b.work);
  };
  // Planners emit works in q order, so the intervals are often sorted already.
  if (!std::is_sorted(intervals.begin(), intervals.end(), by_row_begin))
    std::sort(intervals.begin(), intervals.end(), by_row_begin);
  size_t ei = 0, ii = 0;
  // one range: the row's window; several: the parts of its window (sorted, disjoint)
  auto check_row = [&](const RowExpectation* xs, size_t nx, size_t from, size_t to) {
    if (!xs[0].required) return;  // padding rows: discarded by the stack, anything goes
    const RowExpectation& first = xs[0];
    const RowExpectation& last = xs[nx - 1];
    for (size_t k = from; k < to; ++k) {
      const RowInterval& iv = intervals[k];
      if (nx == 1) {
        if (iv.begin < first.kv_begin)
          r.add("extra", first.q_row, iv.begin, std::min(iv.end, first.kv_begin), iv.work,
                "q row " + std::to_string(first.q_row) + " sees KV " + range(iv.begin, std::min(iv.end, first.kv_begin)) +
                    " in work " + std::to_string(iv.work) + ", before its window " + range(first.kv_begin, first.kv_end));
        if (iv.end > first.kv_end)
          r.add("extra", first.q_row, std::max(iv.begin, first.kv_end), iv.end, iv.work,
                "q row " + std::to_string(first.q_row) + " sees KV " + range(std::max(iv.begin, first.kv_end), iv.end) +
                    " in work " + std::to_string(iv.work) + ", past its window " + range(first.kv_begin, first.kv_end));
        continue;
      }
      int64_t pos = iv.begin;  // the parts of iv outside every range
      for (size_t j = 0; j < nx && pos < iv.end; ++j) {
        if (pos < xs[j].kv_begin)
          r.add("extra", first.q_row, pos, std::min(iv.end, xs[j].kv_begin), iv.work,
                "q row " + std::to_string(first.q_row) + " sees KV " + range(pos, std::min(iv.end, xs[j].kv_begin)) + " in work " +
                    std::to_string(iv.work) + ", outside the " + std::to_string(nx) + " parts of its window " +
                    range(first.kv_begin, last.kv_end));
        pos = std::max(pos, xs[j].kv_end);
      }
      if (pos < iv.end)
        r.add("extra", first.q_row, pos, iv.end, iv.work,
              "q row " + std::to_string(first.q_row) + " sees KV " + range(pos, iv.end) + " in work " + std::to_string(iv.work) +
                  ", outside the " + std::to_string(nx) + " parts of its window " + range(first.kv_begin, last.kv_end));
    }
    for (size_t j = 0; j < nx; ++j) {
      const RowExpectation& x = xs[j];
      int64_t cursor = x.kv_begin;  // everything in [kv_begin, cursor) is covered once
      for (size_t k = from; k < to; ++k) {
        const RowInterval& iv = intervals[k];
        const int64_t b = std::max(iv.begin, x.kv_begin), e = std::min(iv.end, x.kv_end);
        if (b >= e) continue;
        if (b > cursor)
          r.add("uncovered", x.q_row, cursor, b, -1,
                "q row " + std::to_string(x.q_row) + ": KV " + range(cursor, b) + " is covered by no work (next work " +
                    std::to_string(iv.work) + " starts at " + std::to_string(b) + ")");
        if (b < cursor)
          r.add("covered_twice", x.q_row, b, std::min(cursor, e), iv.work,
                "q row " + std::to_string(x.q_row) + ": KV " + range(b, std::min(cursor, e)) + " is covered again by work " +
                    std::to_string(iv.work));
        cursor = std::max(cursor, e);
      }
      if (cursor < x.kv_end)
        r.add("uncovered", x.q_row, cursor, x.kv_end, -1,
              "q row " + std::to_string(x.q_row) + ": KV " + range(cursor, x.kv_end) + " is covered by no work");
    }
  };
  while (ei < exp.size() || ii < intervals.size()) {
    const int64_t row_e = ei < exp.size() ? exp[ei].q_row : INT64_MAX;
    const int64_t row_i = ii < intervals.size() ? intervals[ii].row : INT64_MAX;
    const int64_t row = std::min(row_e, row_i);
    size_t to = ii;
    while (to < intervals.size() && intervals[to].row == row) ++to;
    if (row_e == row) {
      size_t ej = ei;
      while (ej < exp.size() && exp[ej].q_row == row) ++ej;
      check_row(&exp[ei], ej - ei, ii, to);
      ei = ej;
    } else {
      for (size_t k = ii; k < to; ++k)
        r.add("extra", row, intervals[k].begin, intervals[k].end, intervals[k].work,
              "q row " + std::to_string(row) + " has no window but work " + std::to_string(intervals[k].work) +
                  " gives it KV " + range(intervals[k].begin, intervals[k].end));
    }
    ii = to;
  }

  // ---- partial rows: disjoint, inside num_partial_rows ----
  struct PartialUse { int64_t begin, end, work; };
  std::vector<PartialUse> partials;
  std::unordered_map<int64_t, int64_t> work_of_ploc;
  for (int64_t w = 0; w < num_works; ++w) {
    const WorkInfo& wi = wl.work_info[w];
    if (wi.partial_qo_loc < 0 || wi.qo_end <= wi.qo_start) continue;
    partials.push_back({wi.partial_qo_loc, int64_t(wi.partial_qo_loc) + (wi.qo_end - wi.qo_start), w});
    work_of_ploc.emplace(wi.partial_qo_loc, w);
    if (partials.back().end > wl.num_partial_rows)
      r.rule(InvariantRule::buffers).add("partial_overlap", wi.qo_start, wi.kv_start, wi.kv_end, w,
            "work " + std::to_string(w) + " writes partial rows " + range(partials.back().begin, partials.back().end) +
                " past num_partial_rows = " + std::to_string(wl.num_partial_rows));
  }
  std::sort(partials.begin(), partials.end(), [](const PartialUse& a, const PartialUse& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.work < b.work;
  });
  size_t reach = 0;  // the earlier use reaching furthest, so chains of overlaps are all reported
  for (size_t k = 1; k < partials.size(); ++k) {
    if (partials[k - 1].end > partials[reach].end) reach = k - 1;
    const PartialUse& p = partials[reach];
    if (partials[k].begin < p.end)
      r.add("partial_overlap", -1, -1, -1, partials[k].work,
            "works " + std::to_string(p.work) + " and " + std::to_string(partials[k].work) + " both write partial rows " +
                range(partials[k].begin, std::min(p.end, partials[k].end)));
  }

  // ---- reduce maps vs works ----
  const int64_t tiles = wl.reduce_indptr.empty() ? 0 : static_cast<int64_t>(wl.reduce_indptr.size()) - 1;
  const int64_t rpm_size = static_cast<int64_t>(wl.reduce_partial_map.size());
  if (wl.reduce_indptr.empty()) r.add("reduce_map", -1, -1, -1, -1, "reduce_indptr is empty (needs tiles + 1 entries)");
  else if (wl.reduce_indptr[0] != 0)
    r.add("reduce_map", -1, -1, -1, -1, "reduce_indptr[0] = " + std::to_string(wl.reduce_indptr[0]) + ", expected 0");
  if (static_cast<int64_t>(wl.reduce_final_map.size()) < tiles)
    r.add("reduce_map", -1, -1, -1, -1,
          "reduce_final_map has " + std::to_string(wl.reduce_final_map.size()) + " rows for " + std::to_string(tiles) +
              " q tiles");
  std::vector<int64_t> reduced_by(static_cast<size_t>(num_works), -1);  // reduce tile listing each partial work
  // Who writes each output row: a final work (ploc -1) or a reduce tile. Exactly one writer per row.
  struct Writer { int64_t begin, end; bool is_tile; int64_t id; };
  std::vector<Writer> writers;
  for (int64_t t = 0; t < tiles; ++t) {
    const int64_t s = wl.reduce_indptr[t], e = wl.reduce_indptr[t + 1];
    if (e < s || s < 0 || e > rpm_size) {
      r.add("reduce_map", -1, -1, -1, -1,
            "reduce_indptr of tile " + std::to_string(t) + " is " + range(s, e) + ", not inside the " +
                std::to_string(rpm_size) + " reduce_partial_map entries");
      continue;
    }
    if (e - s == 0) continue;  // an unsplit tile: its single work writes the output itself
    const bool has_map = t < static_cast<int64_t>(wl.reduce_final_map.size());
    const int64_t q0 = has_map ? wl.reduce_final_map[t][0] : -1, q1 = has_map ? wl.reduce_final_map[t][1] : -1;
    if (e - s == 1)
      r.rule(InvariantRule::partial_merged_once).add("reduce_map", q0, -1, -1, -1,
            "reduce tile " + std::to_string(t) + " lists one partial (row " + std::to_string(wl.reduce_partial_map[s]) +
                "); mla_reduce_v1 skips tiles with <= 1 entries, so it is never written out");
    if (q1 <= q0) {
      r.add("reduce_map", q0, -1, -1, -1,
            "reduce tile " + std::to_string(t) + " is split but its reduce_final_map entry " + range(q0, q1) +
                " is empty");
      continue;
    }
    writers.push_back({q0, q1, true, t});
    for (int64_t k = s; k < e; ++k) {
      const int64_t ploc = wl.reduce_partial_map[k];
      auto it = work_of_ploc.find(ploc);
      if (it == work_of_ploc.end()) {
        r.add("reduce_map", q0, -1, -1, -1,
              "reduce tile " + std::to_string(t) + " merges partial row " + std::to_string(ploc) +
                  ", which no work's partial_qo_loc starts");
        continue;
      }
      const int64_t w = it->second;
      const WorkInfo& wi = wl.work_info[w];
      if (wi.qo_start != q0 || wi.qo_end != q1)
        r.add("reduce_map", wi.qo_start, wi.kv_start, wi.kv_end, w,
              "reduce tile " + std::to_string(t) + " writes q rows " + range(q0, q1) + " but its fragment work " +
                  std::to_string(w) + " (partial row " + std::to_string(ploc) + ") computes q rows " +
                  range(wi.qo_start, wi.qo_end));
      if (reduced_by[w] >= 0)
        r.rule(InvariantRule::partial_merged_once).add("reduce_map", wi.qo_start, wi.kv_start, wi.kv_end, w,
              "work " + std::to_string(w) + "'s partial rows are merged twice (tiles " + std::to_string(reduced_by[w]) +
                  " and " + std::to_string(t) + ")");
      else
        reduced_by[w] = t;
    }
  }
  for (int64_t w = 0; w < num_works; ++w) {
    const WorkInfo& wi = wl.work_info[w];
    if (wi.qo_end <= wi.qo_start) continue;
    if (wi.partial_qo_loc < 0) {
      writers.push_back({wi.qo_start, wi.qo_end, false, w});
    } else if (reduced_by[w] < 0) {
      r.rule(InvariantRule::partial_merged_once).add("reduce_map", wi.qo_start, wi.kv_start, wi.kv_end, w,
            "work " + std::to_string(w) + " writes partial rows from " + std::to_string(wi.partial_qo_loc) +
                " that no reduce tile merges (an unsplit tile's work must have partial_qo_loc -1)");
    }
  }
  std::sort(writers.begin(), writers.end(), [](const Writer& a, const Writer& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.id < b.id;
  });
  for (size_t k = 1; k < writers.size(); ++k) {
    const Writer& a = writers[k - 1];
    const Writer& b = writers[k];
    if (b.begin < a.end) {
      auto name = [](const Writer& x) {
        return (x.is_tile ? std::string("reduce tile ") : std::string("work ")) + std::to_string(x.id);
      };
      r.rule(InvariantRule::output_one_writer).add("reduce_map", b.begin, -1, -1, b.is_tile ? -1 : b.id,
            "output q rows " + range(b.begin, std::min(a.end, b.end)) + " are written by " + name(a) + " and by " +
                name(b));
    }
  }

  // ---- buffer sizes (get_mla_metadata_info_v1) ----
  if (opt.capacity) {
    const MetadataInfo& c = *opt.capacity;
    auto over = [&](const char* what, int64_t used, int64_t cap) {
      if (used > cap)
        r.add("buffer", -1, -1, -1, -1,
              std::string(what) + " needs " + std::to_string(used) + " entries, get_mla_metadata_info_v1 allocates " +
                  std::to_string(cap));
    };
    over("work_indptr", static_cast<int64_t>(wl.work_indptr.size()), c.work_indptr);
    over("work_info_set", num_works, c.work_info_set);
    over("reduce_indptr", tiles + 1, c.reduce_indptr);
    over("reduce_final_map", tiles, c.reduce_final_map);
    over("reduce_partial_map", wl.reduce_indptr.empty() ? 0 : wl.reduce_indptr.back(), c.reduce_partial_map);
  }
  if (opt.partial_row_capacity >= 0 && wl.num_partial_rows > opt.partial_row_capacity)
    r.add("buffer", -1, -1, -1, -1,
          "the works write " + std::to_string(wl.num_partial_rows) + " fp32 partial rows, the buffer holds " +
              std::to_string(opt.partial_row_capacity));

  // ---- balance under the planner's cost model: ceil(kv_len / 16) blocks + overhead per work ----
  BalanceStats& bal = rep.balance;
  bal.workgroups = wl.num_workgroups;
  bal.works = num_works;
  for (int64_t t = 0; t < tiles; ++t)
    if (wl.reduce_indptr[t + 1] - wl.reduce_indptr[t] >= 2) ++bal.split_tiles;
  std::vector<double> load(static_cast<size_t>(std::max(0, wl.num_workgroups)), 0.0);
  for (int64_t w = 0; w < num_works; ++w) {
    const int64_t g = group_of_work[w];
    if (g < 0 || g >= static_cast<int64_t>(load.size())) continue;
    const WorkInfo& wi = wl.work_info[w];
    load[g] += static_cast<double>(ceil16(int64_t(wi.kv_end) - wi.kv_start) + opt.per_work_overhead);
  }
  double sum = 0;
  for (double l : load) {
    sum += l;
    bal.max_load = std::max(bal.max_load, l);
  }
  bal.mean_load = load.empty() ? 0.0 : sum / static_cast<double>(load.size());
  bal.efficiency = bal.max_load > 0 ? bal.mean_load / bal.max_load : 1.0;
  return rep;
}

}  // namespace mlactl
