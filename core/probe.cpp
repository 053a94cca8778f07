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
};

// The edges of one row, in priority order, deduplicated by position.
std::vector<Edge> row_edges(const Batch& b, const RowWindow& w, const std::vector<int64_t>& splits) {
  std::vector<Edge> e;
  const int64_t s = request_len(b, w.request), Kb = b.kv_cache.block_size;
  auto add = [&](int64_t p, ProbeEdge k, bool inside) {
    if (p < 0 || p >= s) return;
    for (const Edge& x : e)
      if (x.position == p) return;
    e.push_back({p, k, inside});
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

}  // namespace

ProbeSpec plan_probe(const Batch& b, const std::vector<RowWindow>& rows, const RoutePlan* plan) {
  ProbeSpec spec;
  const int H = b.model.num_heads;
  const std::vector<std::vector<int64_t>> splits = plan ? split_points(b, rows, *plan) : std::vector<std::vector<int64_t>>(rows.size());
  std::vector<std::map<int64_t, int>> codes(b.requests.size());
  int64_t next_code = 0;
  for (const RowWindow& w : rows) {
    if (w.kind == MaskKind::padding) continue;
    std::vector<Edge> edges = row_edges(b, w, splits[w.row]);
    if (edges.empty()) continue;
    std::vector<std::pair<Edge, int>> coded;
    auto& rc = codes[w.request];
    for (const Edge& e : edges) {
      if ((int)coded.size() == H) break;
      auto it = rc.find(e.position);
      if (it == rc.end()) {
        if ((int)rc.size() >= kProbeCodeDims) continue;
        // codes run on across requests (rows are request-major, so one request's codes are a
        // contiguous run mod kProbeCodeDims, hence distinct): a row that reads another
        // request's partials or KV then shows the other request's codes, not its own
        it = rc.emplace(e.position, next_code++ % kProbeCodeDims).first;
      }
      coded.push_back({e, it->second});
    }
    spec.edges_not_probed += (int64_t)edges.size() - (int64_t)coded.size();
    if (coded.empty()) continue;
    for (int h = 0; h < H; ++h) {
      const auto& [e, code] = coded[h % coded.size()];
      const int64_t n = has_position_set(w.kind) ? (int64_t)w.sparse_positions.size() : w.length();
      spec.targets.push_back({w.row, w.request, w.token, h, e.position, e.edge, e.inside, code, n});
    }
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
  for (const ProbeTarget& t : spec.targets)
    std::memcpy(in.kv.bytes.data() + (size_t)(kv_slot_of(b, t.request, t.position) * D + t.code) * kb, a_bits.data(), kb);
  // ---- q: B·e_code per (row, head), 0 elsewhere; L = scale·A·B ≈ 24
  const double want = 24.0 / (b.model.softmax_scale * A);
  int ex = 0;
  const double mant = std::frexp(want, &ex);
  double B = std::ldexp(std::round(mant * 8) / 8, ex);  // 3 significant bits: exact in every q dtype
  if (b.model.dtype == DType::fp16) B = std::min(B, 32768.0);
  const int qb = dtype_bytes(in.q.dtype);
  std::fill(in.q.bytes.begin(), in.q.bytes.end(), 0);
  std::vector<uint8_t> b_bits(qb);
  if (in.q.dtype == DType::fp8) {
    in.q.scale = float(B / fp8_max(fl));  // per-tensor quantisation: amax = B (docs/design.md §10)
    b_bits[0] = float_to_fp8_bits(fp8_max(fl), fl);
    B = double(fp8_bits_to_float(b_bits[0], fl)) * in.q.scale;
  } else {
    const uint16_t x = in.q.dtype == DType::fp16 ? float_to_fp16_bits(float(B)) : float_to_bf16_bits(float(B));
    B = in.q.dtype == DType::fp16 ? fp16_bits_to_float(x) : bf16_bits_to_float(x);
    std::memcpy(b_bits.data(), &x, 2);
  }
  for (const ProbeTarget& t : spec.targets)
    std::memcpy(in.q.bytes.data() + (size_t)((t.row * H + t.head) * D + t.code) * qb, b_bits.data(), qb);
  spec.logit = b.model.softmax_scale * A * B;
  (void)rows;
}

ProbeReport evaluate_probe(const ProbeSpec& spec, const std::vector<float>& out, const float* lse, int num_heads, int v_dim,
                           int64_t max_listed) {
  ProbeReport rep;
  rep.edges_not_probed = spec.edges_not_probed;
  std::set<int64_t> rows_seen, bad;
  for (const ProbeTarget& t : spec.targets) {
    rows_seen.insert(t.row);
    ++rep.heads_probed;
    const double w = out[(size_t)((t.row * num_heads + t.head) * v_dim + t.code)] / spec.code_value;
    // read when the position carries most of the softmax weight; NaN: the head read poison
    const bool read = std::isnan(w) ? !t.inside : w > 0.5;
    ProbeFinding f{t, t.inside ? ProbeFindingKind::missed : ProbeFindingKind::read, w, 0};
    bool found = read != t.inside || std::isnan(w);
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
    if (!found) continue;
    ++rep.findings;
    bad.insert(t.row);
    if ((int64_t)rep.listed.size() < max_listed) rep.listed.push_back(f);
  }
  rep.rows_probed = (int64_t)rows_seen.size();
  rep.bad_rows = (int64_t)bad.size();
  rep.bad_row_ids.assign(bad.begin(), bad.end());
  rep.ok = rep.findings == 0;
  return rep;
}

}  // namespace mlactl
