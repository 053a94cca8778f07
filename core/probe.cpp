#include "core/probe.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <set>
#include <unordered_map>

#include "core/dtype.hpp"

namespace mlactl {

const char* to_string(ProbeKind k) {
  switch (k) {
    case ProbeKind::windows: return "windows";
  }
  return "?";
}

std::optional<ProbeKind> probe_kind_from_string(const std::string& s) {
  if (s == "windows") return ProbeKind::windows;
  return std::nullopt;
}

const char* to_string(ProbeFindingKind k) {
  switch (k) {
    case ProbeFindingKind::read: return "read";
    case ProbeFindingKind::missed: return "missed";
    case ProbeFindingKind::read_twice: return "read twice";
    case ProbeFindingKind::lse_off: return "lse off";
    case ProbeFindingKind::control_off: return "control off";
  }
  return "?";
}

const char* to_string(ProbeEdge e) {
  switch (e) {
    case ProbeEdge::last_allowed: return "last allowed";
    case ProbeEdge::first_forbidden: return "first forbidden";
    case ProbeEdge::first_allowed: return "first allowed";
    case ProbeEdge::split_first: return "split first";
    case ProbeEdge::split_last: return "split last";
    case ProbeEdge::page_first: return "page first";
    case ProbeEdge::page_last: return "page last";
    case ProbeEdge::page_first_forbidden: return "next page first";
    case ProbeEdge::sparse_unselected: return "unselected";
    case ProbeEdge::past_end_page_slot: return "past end: next slot of the page";
    case ProbeEdge::past_end_next_page: return "past end: next page's first slot";
    case ProbeEdge::past_end_other_key: return "past end: another request's key";
    case ProbeEdge::past_end_own_key: return "past end: its own key";
    case ProbeEdge::control: return "control";
  }
  return "?";
}

namespace {

int64_t request_len(const Batch& b, int r) { return b.requests[r].padding ? 0 : b.requests[r].seq_len(); }

// Split points per oracle row from the plan: positions where a work other than the row's
// first starts. Entries map to positions through the batch's placement (the oracle side,
// docs/design.md §3), never through the metadata.
std::vector<std::vector<int64_t>> split_points(const Batch& b, const std::vector<RowWindow>& rows, const RoutePlan& plan) {
  std::vector<std::vector<int64_t>> pts(rows.size());
  if (plan.kernel_view.fold_ratio != 1 || plan.work.num_q_rows != (int64_t)rows.size()) return pts;
  std::unordered_map<int64_t, std::pair<int, int64_t>> pos_of;
  for (int r = 0; r < (int)b.requests.size(); ++r)
    for (int64_t j = 0, s = request_len(b, r); j < s; ++j) pos_of[kv_slot_of(b, r, j)] = {r, j};
  for (const WorkInfo& w : plan.work.work_info) {
    if (w.kv_end <= w.kv_start || w.kv_start < 0 || w.kv_start >= (int64_t)plan.kv_indices.size()) continue;
    auto it = pos_of.find(plan.kv_indices[w.kv_start]);
    if (it == pos_of.end() || it->second.second == 0) continue;
    for (int64_t q = std::max(0, w.qo_start); q < std::min<int64_t>(w.qo_end, rows.size()); ++q)
      if (rows[q].request == it->second.first) pts[q].push_back(it->second.second);
  }
  for (auto& p : pts) {
    std::sort(p.begin(), p.end());
    p.erase(std::unique(p.begin(), p.end()), p.end());
  }
  return pts;
}

struct Edge {
  int64_t position;
  ProbeEdge edge;
  bool inside;
  int64_t slot;
};

// The window's own edges (its ends, what lies past them): every head group probes them.
// The rest (split points, page boundaries inside) are interior and alternate between groups.
bool window_edge(ProbeEdge e) {
  switch (e) {
    case ProbeEdge::split_first:
    case ProbeEdge::split_last:
    case ProbeEdge::page_first:
    case ProbeEdge::page_last:
    case ProbeEdge::control: return false;
    default: return true;
  }
}

// The edges of one row, in priority order, deduplicated by position. `owner[slot]`: the
// request whose KV the slot holds (-1: none, or a padding request's).
std::vector<Edge> row_edges(const Batch& b, const RowWindow& w, const std::vector<int64_t>& splits, const std::vector<int32_t>& owner) {
  std::vector<Edge> e;
  const int64_t s = request_len(b, w.request), Kb = b.kv_cache.block_size;
  auto add = [&](int64_t p, ProbeEdge k, bool inside) {
    if (p < 0 || p >= s) return;
    for (const Edge& x : e)
      if (x.position == p) return;
    e.push_back({p, k, inside, kv_slot_of(b, w.request, p)});
  };
  if (has_position_set(w.kind)) {
    const auto& sp = w.sparse_positions;
    if (sp.empty()) return e;
    add(sp.back(), ProbeEdge::last_allowed, true);
    add(sp.front(), ProbeEdge::first_allowed, true);
    const int64_t limit = w.position + 1;
    for (int64_t p = 0; p < limit; ++p)
      if (!std::binary_search(sp.begin(), sp.end(), p)) {
        add(p, ProbeEdge::sparse_unselected, false);
        break;
      }
    for (int64_t p = limit - 1; p >= 0; --p)
      if (!std::binary_search(sp.begin(), sp.end(), p)) {
        add(p, ProbeEdge::sparse_unselected, false);
        break;
      }
    return e;
  }
  const int64_t lo = w.begin, hi = w.end;
  if (hi <= lo) return e;
  add(hi - 1, ProbeEdge::last_allowed, true);
  add(hi, ProbeEdge::first_forbidden, false);
  if (hi == s) {
    // the window ends at the request's end, so first_forbidden does not exist: probe the slot
    // a kernel reading one entry too many reaches instead, the slot after the last one
    const int64_t x = kv_slot_of(b, w.request, s - 1) + 1;
    if (x < (int64_t)owner.size() && owner[(size_t)x] != w.request) {
      const ProbeEdge k = s % Kb != 0 ? ProbeEdge::past_end_page_slot
                          : owner[(size_t)x] >= 0 ? ProbeEdge::past_end_other_key
                                                  : ProbeEdge::past_end_next_page;
      e.push_back({s, k, false, x});
    } else if (x < (int64_t)owner.size()) {
      // the request's own key (its blocks are shuffled): probed as that position, read once
      const auto& table = b.kv_cache.block_table[(size_t)w.request];
      for (size_t j = 0; j < table.size(); ++j)
        if (table[j] == x / Kb) {
          add((int64_t)j * Kb + x % Kb, ProbeEdge::past_end_own_key, true);
          break;
        }
    }
  }
  add(lo, ProbeEdge::first_allowed, true);
  // split points nearest the window's ends first: that is where an off-by-one split lands
  std::vector<int64_t> inner;
  for (int64_t p : splits)
    if (p > lo && p < hi) inner.push_back(p);
  std::vector<int64_t> order;
  for (size_t i = 0, j = inner.size(); i < j;) {
    order.push_back(inner[--j]);
    if (i < j) order.push_back(inner[i++]);
  }
  for (size_t i = 0; i < order.size() && i < 4; ++i) {
    add(order[i], ProbeEdge::split_first, true);
    add(order[i] - 1, ProbeEdge::split_last, true);
  }
  if (Kb > 1) {
    const int64_t page = (hi - 1) / Kb * Kb;
    if (page > lo) {
      add(page, ProbeEdge::page_first, true);
      add(page - 1, ProbeEdge::page_last, true);
    }
    const int64_t next = (hi + Kb - 1) / Kb * Kb;
    if (next > hi) add(next, ProbeEdge::page_first_forbidden, false);
  }
  for (size_t i = 4; i < order.size(); ++i) {
    add(order[i], ProbeEdge::split_first, true);
    add(order[i] - 1, ProbeEdge::split_last, true);
  }
  return e;
}

// A control's two positions: inside the window, away from its ends and from every probed
// edge, nearest the middle. None for windows shorter than 5 or sparse rows.
std::optional<std::pair<int64_t, int64_t>> control_positions(const RowWindow& w, const std::vector<Edge>& edges) {
  if (has_position_set(w.kind) || w.length() < 5) return std::nullopt;
  std::vector<int64_t> got;
  const int64_t mid = w.begin + w.length() / 2;
  for (int64_t d = 0; d < 64 && got.size() < 2; ++d) {
    const int64_t p = d % 2 == 0 ? mid + d / 2 : mid - (d + 1) / 2;
    if (p <= w.begin || p >= w.end - 1) continue;
    bool edge = false;
    for (const Edge& x : edges) edge = edge || x.position == p;
    if (!edge) got.push_back(p);
  }
  if (got.size() < 2) return std::nullopt;
  return std::make_pair(got[0], got[1]);
}

}  // namespace

int probe_head_groups(int num_heads) { return num_heads >= 4 ? 2 : 1; }

ProbeSpec plan_probe(const Batch& b, const std::vector<RowWindow>& rows, const RoutePlan* plan) {
  ProbeSpec spec;
  const int H = b.model.num_heads;
  const int G = probe_head_groups(H);
  spec.head_groups = G;
  const std::vector<std::vector<int64_t>> splits = plan ? split_points(b, rows, *plan) : std::vector<std::vector<int64_t>>(rows.size());
  std::vector<int32_t> owner((size_t)(b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size), -1);
  for (int r = 0; r < (int)b.requests.size(); ++r)
    for (int64_t j = 0, s = request_len(b, r); j < s; ++j) {
      const int64_t x = kv_slot_of(b, r, j);
      if (x >= 0 && x < (int64_t)owner.size()) owner[(size_t)x] = r;
    }
  std::vector<std::map<int64_t, int>> codes(b.requests.size());
  int64_t next_code = 0;
  // codes run on across requests (rows are request-major, so one request's codes are a
  // contiguous run mod kProbeCodeDims, hence distinct): a row that reads another request's
  // partials or KV then shows the other request's codes, not its own
  auto code_of = [&](int request, int64_t position) -> std::optional<int> {
    auto& rc = codes[request];
    auto it = rc.find(position);
    if (it == rc.end()) {
      if ((int)rc.size() >= kProbeCodeDims) return std::nullopt;
      it = rc.emplace(position, int(next_code++ % kProbeCodeDims)).first;
    }
    return it->second;
  };
  struct Item {
    size_t edge = 0;      // index into the row's edges (unused for the control)
    bool control = false;
    int code = 0, code2 = 0;
  };
  for (const RowWindow& w : rows) {
    if (w.kind == MaskKind::padding) continue;
    const std::vector<Edge> edges = row_edges(b, w, splits[w.row], owner);
    if (edges.empty()) continue;
    const auto ctl = control_positions(w, edges);
    const int64_t n = has_position_set(w.kind) ? (int64_t)w.sparse_positions.size() : w.length();
    std::vector<bool> covered(edges.size(), false);
    for (int g = 0; g < G; ++g) {
      const int g0 = g * H / G, m = (g + 1) * H / G - g0;
      std::vector<Item> items;
      if (ctl && m >= 4) {
        const auto c1 = code_of(w.request, ctl->first), c2 = code_of(w.request, ctl->second);
        if (c1 && c2) items.push_back({0, true, *c1, *c2});
      }
      // the window's edges in every group; interior edge k in group (k + row) mod G, so the
      // next row puts it on the other group
      int64_t interior = 0;
      for (size_t i = 0; i < edges.size() && (int)items.size() < m; ++i) {
        if (!window_edge(edges[i].edge) && (interior++ + w.row) % G != g) continue;
        if (const auto c = code_of(w.request, edges[i].position)) {
          items.push_back({i, false, *c, 0});
          covered[i] = true;
        }
      }
      if (items.empty()) continue;
      // item j on head g0 + (j + row) mod m: the heads an edge lands on move from row to row
      for (int j = 0; j < m; ++j) {
        const Item& it = items[(size_t)j % items.size()];
        ProbeTarget t;
        t.row = w.row;
        t.request = w.request;
        t.token = w.token;
        t.head = g0 + int((j + w.row) % m);
        t.window_len = n;
        if (it.control) {
          t.edge = ProbeEdge::control;
          t.position = ctl->first;
          t.position2 = ctl->second;
          t.code = it.code;
          t.code2 = it.code2;
          t.inside = true;
          t.slot = kv_slot_of(b, w.request, ctl->first);
        } else {
          const Edge& e = edges[it.edge];
          t.edge = e.edge;
          t.position = e.position;
          t.inside = e.inside;
          t.code = it.code;
          t.slot = e.slot;
        }
        spec.targets.push_back(t);
      }
    }
    for (bool c : covered) spec.edges_not_probed += c ? 0 : 1;
  }
  if (next_code > kProbeCodeDims) {
    // codes wrapped: a past-end slot holding another request's key must not carry a code
    // that request uses itself (its heads would see two keys at logit L); such targets go
    std::vector<std::set<int>> used(b.requests.size());
    for (int r = 0; r < (int)b.requests.size(); ++r)
      for (const auto& [pos, c] : codes[r])
        if (pos < request_len(b, r)) used[r].insert(c);
    std::vector<ProbeTarget> kept;
    for (const ProbeTarget& t : spec.targets) {
      const int o = t.edge == ProbeEdge::past_end_other_key ? owner[(size_t)t.slot] : -1;
      if (o >= 0 && used[o].count(t.code)) {
        ++spec.edges_not_probed;
        continue;
      }
      kept.push_back(t);
    }
    spec.targets = std::move(kept);
  }
  return spec;
}

void apply_probe_inputs(const Batch& b, const std::vector<RowWindow>& rows, ProbeSpec& spec, Inputs& in) {
  const int64_t D = in.head_dim, H = in.num_heads;
  const Fp8Flavor fl = b.fp8_flavor();
  const int C = std::min<int>(kProbeCodeDims, in.v_dim);
  // ---- KV: code dims 0 for every used slot, A at a probed position's own code
  const int kb = dtype_bytes(in.kv.dtype);
  const float kv_scale = in.kv.dtype == DType::fp8 ? in.kv.scale : 1.0f;
  std::vector<uint8_t> a_bits(kb);
  float A = 1.0f;
  if (in.kv.dtype == DType::fp8) {
    a_bits[0] = float_to_fp8_bits(1.0f / kv_scale, fl);
    A = fp8_bits_to_float(a_bits[0], fl) * kv_scale;
  } else {
    const uint16_t x = in.kv.dtype == DType::fp16 ? float_to_fp16_bits(1.0f) : float_to_bf16_bits(1.0f);
    std::memcpy(a_bits.data(), &x, 2);
  }
  spec.code_value = A;
  for (int r = 0; r < (int)b.requests.size(); ++r)
    for (int64_t j = 0, s = request_len(b, r); j < s; ++j)
      std::memset(in.kv.bytes.data() + (size_t)(kv_slot_of(b, r, j) * D) * kb, 0, (size_t)C * kb);
  // a past-end slot no request reads holds NaN poison: all zeros but its code instead, so a
  // read shows as that head's weight (and names the slot) rather than as NaN in the whole row
  for (const ProbeTarget& t : spec.targets)
    if (t.edge == ProbeEdge::past_end_page_slot || t.edge == ProbeEdge::past_end_next_page)
      std::memset(in.kv.bytes.data() + (size_t)(t.slot * D) * kb, 0, (size_t)D * kb);
  for (const ProbeTarget& t : spec.targets) {
    std::memcpy(in.kv.bytes.data() + (size_t)(t.slot * D + t.code) * kb, a_bits.data(), kb);
    if (t.edge == ProbeEdge::control)
      std::memcpy(in.kv.bytes.data() + (size_t)(kv_slot_of(b, t.request, t.position2) * D + t.code2) * kb, a_bits.data(), kb);
  }
  // ---- q: B·e_code per (row, head), 0 elsewhere; L = scale·A·B ≈ 24. Controls add
  // B2·e_code2 with B2 ≈ 7/8·B as the q dtype rounds it: L2 = scale·A·B2 ≈ L − 3
  const double want = 24.0 / (b.model.softmax_scale * A);
  int ex = 0;
  const double mant = std::frexp(want, &ex);
  double B = std::ldexp(std::round(mant * 8) / 8, ex);  // 3 significant bits: exact in every q dtype
  if (b.model.dtype == DType::fp16) B = std::min(B, 32768.0);
  const int qb = dtype_bytes(in.q.dtype);
  std::fill(in.q.bytes.begin(), in.q.bytes.end(), 0);
  std::vector<uint8_t> b_bits(qb), b2_bits(qb);
  double B2 = 0;
  if (in.q.dtype == DType::fp8) {
    in.q.scale = float(B / fp8_max(fl));  // per-tensor quantisation: amax = B (docs/design.md §10)
    b_bits[0] = float_to_fp8_bits(fp8_max(fl), fl);
    b2_bits[0] = float_to_fp8_bits(fp8_max(fl) * 0.875f, fl);
    B = double(fp8_bits_to_float(b_bits[0], fl)) * in.q.scale;
    B2 = double(fp8_bits_to_float(b2_bits[0], fl)) * in.q.scale;
  } else {
    const bool f16 = in.q.dtype == DType::fp16;
    const uint16_t x = f16 ? float_to_fp16_bits(float(B)) : float_to_bf16_bits(float(B));
    const uint16_t x2 = f16 ? float_to_fp16_bits(float(B * 0.875)) : float_to_bf16_bits(float(B * 0.875));
    B = f16 ? fp16_bits_to_float(x) : bf16_bits_to_float(x);
    B2 = f16 ? fp16_bits_to_float(x2) : bf16_bits_to_float(x2);
    std::memcpy(b_bits.data(), &x, 2);
    std::memcpy(b2_bits.data(), &x2, 2);
  }
  for (const ProbeTarget& t : spec.targets) {
    std::memcpy(in.q.bytes.data() + (size_t)((t.row * H + t.head) * D + t.code) * qb, b_bits.data(), qb);
    if (t.edge == ProbeEdge::control) std::memcpy(in.q.bytes.data() + (size_t)((t.row * H + t.head) * D + t.code2) * qb, b2_bits.data(), qb);
  }
  spec.logit = b.model.softmax_scale * A * B;
  spec.logit2 = b.model.softmax_scale * A * B2;
  (void)rows;
}

ProbeReport evaluate_probe(const ProbeSpec& spec, const std::vector<float>& out, const float* lse, int num_heads, int v_dim,
                           int64_t max_listed) {
  ProbeReport rep;
  rep.edges_not_probed = spec.edges_not_probed;
  std::set<int64_t> rows_seen, bad, bad_heads;
  std::set<int64_t> off_heads;
  std::vector<ProbeFinding> found_controls;
  auto value = [&](const ProbeTarget& t, int code) { return out[(size_t)((t.row * num_heads + t.head) * v_dim + code)] / spec.code_value; };
  // ---- controls first (their answer depends on no edge)
  for (const ProbeTarget& t : spec.targets) {
    if (t.edge != ProbeEdge::control) continue;
    const double w1 = value(t, t.code), w2 = value(t, t.code2);
    // exactly 0: a position was not read (a position fault, a dropped split: the edges say
    // which); NaN: a poison read (position evidence too). Neither is a numeric verdict.
    if (std::isnan(w1) || std::isnan(w2) || w1 == 0 || w2 == 0) continue;
    ++rep.controls;
    const double n = double(t.window_len);
    const double sum = std::exp(spec.logit) + std::exp(spec.logit2) + (n - 2);
    // 0.03: bf16 output rounding (2^-9 near 1) and a kernel's bf16 P·V are ~10x below it; a
    // softmax scale 0.6x off moves w1 by ~0.1
    bool off = std::fabs(w1 - std::exp(spec.logit) / sum) > 0.03 || std::fabs(w2 - std::exp(spec.logit2) / sum) > 0.03;
    ProbeFinding f{t, ProbeFindingKind::control_off, w1, 0};
    if (lse) {
      f.lse_diff = double(lse[(size_t)(t.row * num_heads + t.head)]) - std::log(sum);
      off = off || !(std::fabs(f.lse_diff) <= 0.05);
    }
    if (!off) continue;
    ++rep.controls_off;
    off_heads.insert(t.head);
    found_controls.push_back(f);
  }
  rep.control_off_heads.assign(off_heads.begin(), off_heads.end());
  rep.global_fault = rep.controls_off > 0 && 2 * rep.controls_off >= rep.controls;
  // ---- the edges (and, on few heads, the off controls): named only when the fault is not global
  for (const ProbeTarget& t : spec.targets) {
    rows_seen.insert(t.row);
    ++rep.heads_probed;
  }
  if (!rep.global_fault) {
    size_t next_control = 0;
    for (const ProbeTarget& t : spec.targets) {
      ProbeFinding f{t, t.inside ? ProbeFindingKind::missed : ProbeFindingKind::read, 0, 0};
      bool found = false;
      if (t.edge == ProbeEdge::control) {
        if (next_control < found_controls.size() && found_controls[next_control].target.row == t.row &&
            found_controls[next_control].target.head == t.head) {
          f = found_controls[next_control++];
          found = true;
        }
      } else {
        const double w = value(t, t.code);
        f.weight = w;
        // read when the position carries most of the softmax weight; NaN: the head read poison
        const bool read = std::isnan(w) ? !t.inside : w > 0.5;
        found = read != t.inside || std::isnan(w);
        if (!found && lse) {
          // 0.05 is ~5000x the LSE tolerance of docs/design.md §6 and far below ln 2
          const double n = double(t.window_len);
          const double want = t.inside ? std::log(std::exp(spec.logit) + (n - 1)) : std::log(n);
          f.lse_diff = double(lse[(size_t)(t.row * num_heads + t.head)]) - want;
          if (!(std::fabs(f.lse_diff) <= 0.05)) {
            found = true;
            f.kind = t.inside && std::fabs(f.lse_diff - std::log(2.0)) < 0.05 ? ProbeFindingKind::read_twice : ProbeFindingKind::lse_off;
          }
        }
      }
      if (!found) continue;
      ++rep.findings;
      bad.insert(t.row);
      bad_heads.insert(t.head);
      if ((int64_t)rep.listed.size() < max_listed) rep.listed.push_back(f);
    }
  }
  rep.rows_probed = (int64_t)rows_seen.size();
  rep.bad_rows = (int64_t)bad.size();
  rep.bad_row_ids.assign(bad.begin(), bad.end());
  rep.bad_head_ids.assign(bad_heads.begin(), bad_heads.end());
  rep.ok = rep.findings == 0 && !rep.global_fault;
  return rep;
}

}  // namespace mlactl
