#include "core/captured.hpp"

#include "core/vllm_common.hpp"

#include <algorithm>
#include <limits>

namespace mlactl {

using nlohmann::json;

bool CapturedMetadata::empty() const {
  return !qo_indptr && !paged_kv_indptr && !paged_kv_indices && !paged_kv_last_page_len && !min_kv_seq_len && !work_indptr &&
         !work_info_set && !reduce_indptr && !reduce_final_map && !reduce_partial_map && stack_arrays.empty();
}

namespace {

int64_t int_at(const json& v, const std::string& ptr) {
  if (!v.is_number_integer()) throw invalid_input(ptr, std::string("must be an integer, got ") + v.type_name());
  const int64_t x = v.get<int64_t>();
  if (x < std::numeric_limits<int32_t>::min() || x > std::numeric_limits<int32_t>::max()) throw invalid_input(ptr, "must fit int32 (AITER's index type)");
  return x;
}

std::vector<int64_t> int_array(const json& v, const std::string& ptr) {
  if (!v.is_array()) throw invalid_input(ptr, std::string("must be an array of integers, got ") + v.type_name());
  std::vector<int64_t> out;
  out.reserve(v.size());
  for (size_t i = 0; i < v.size(); ++i) out.push_back(int_at(v[i], ptr + "/" + std::to_string(i)));
  return out;
}

// rows of N ints, given as nested arrays or as one flat array
template <size_t N>
std::vector<std::array<int64_t, N>> row_array(const json& v, const std::string& ptr) {
  if (!v.is_array()) throw invalid_input(ptr, std::string("must be an array, got ") + v.type_name());
  std::vector<std::array<int64_t, N>> out;
  if (!v.empty() && v[0].is_array()) {
    for (size_t i = 0; i < v.size(); ++i) {
      const std::string rp = ptr + "/" + std::to_string(i);
      if (!v[i].is_array() || v[i].size() != N) throw invalid_input(rp, "must be an array of " + std::to_string(N) + " integers");
      std::array<int64_t, N> row{};
      for (size_t j = 0; j < N; ++j) row[j] = int_at(v[i][j], rp + "/" + std::to_string(j));
      out.push_back(row);
    }
  } else {
    std::vector<int64_t> flat = int_array(v, ptr);
    if (flat.size() % N) throw invalid_input(ptr, "a flat array must hold a multiple of " + std::to_string(N) + " integers, got " + std::to_string(flat.size()));
    for (size_t i = 0; i < flat.size(); i += N) {
      std::array<int64_t, N> row{};
      for (size_t j = 0; j < N; ++j) row[j] = flat[i + j];
      out.push_back(row);
    }
  }
  return out;
}

void require_exact_len(const std::vector<int64_t>& v, int64_t n, const std::string& ptr, const std::string& what) {
  if ((int64_t)v.size() == n) return;
  throw invalid_input(ptr, "has " + std::to_string(v.size()) + " entries, " + ((int64_t)v.size() < n ? "fewer" : "more") + " than the " + std::to_string(n) + " " + what);
}

// An index pointer: starts at 0 and never decreases (entry i + 1 ends `unit` i).
void require_indptr(const std::vector<int64_t>& v, const std::string& ptr, const std::string& unit) {
  if (!v.empty() && v[0] != 0) throw invalid_input(ptr + "/0", "must be 0 (an index pointer starts at 0), got " + std::to_string(v[0]));
  for (size_t i = 1; i < v.size(); ++i)
    if (v[i] < v[i - 1])
      throw invalid_input(ptr + "/" + std::to_string(i), "decreases (" + std::to_string(v[i - 1]) + " -> " + std::to_string(v[i]) + "): " + unit + " " +
                                                        std::to_string(i - 1) + " would get a negative length");
}

std::string row_name(const RowWindow& w) {
  return "row " + std::to_string(w.row) + " (request " + std::to_string(w.request) + ", token " + std::to_string(w.token) + ")";
}

}  // namespace

CapturedMetadata parse_captured(const Batch& b, const json& c, int64_t oracle_rows) {
  CapturedMetadata cap;
  if (c.is_null()) return cap;
  const int64_t R = (int64_t)b.requests.size();
  const std::string p = "/captured";
  if (c.contains("qo_indptr")) {
    cap.qo_indptr = int_array(c["qo_indptr"], p + "/qo_indptr");
    require_exact_len(*cap.qo_indptr, R + 1, p + "/qo_indptr", "a batch of " + std::to_string(R) + " requests has");
    require_indptr(*cap.qo_indptr, p + "/qo_indptr", "request");
    if ((*cap.qo_indptr)[R] != oracle_rows)
      throw invalid_input(p + "/qo_indptr/" + std::to_string(R), "is " + std::to_string((*cap.qo_indptr)[R]) + ", but the batch has " + std::to_string(oracle_rows) +
                                                                   " query rows (padding rows included)");
  }
  if (c.contains("paged_kv_indptr")) {
    cap.paged_kv_indptr = int_array(c["paged_kv_indptr"], p + "/paged_kv_indptr");
    // one entry per query row: the R0 flatten's per-row seq_info (seed 000)
    cap.flattened_rows = oracle_rows != R && (int64_t)cap.paged_kv_indptr->size() == oracle_rows + 1;
    if (!cap.flattened_rows)
      require_exact_len(*cap.paged_kv_indptr, R + 1, p + "/paged_kv_indptr",
                        "a batch of " + std::to_string(R) + " requests has" +
                            (oracle_rows != R ? " (or " + std::to_string(oracle_rows + 1) + ", one per query row + 1, for the R0 flatten's per-row table)" : std::string()));
    require_indptr(*cap.paged_kv_indptr, p + "/paged_kv_indptr", cap.flattened_rows ? "query row" : "request");
  }
  if (c.contains("paged_kv_indices")) {
    cap.paged_kv_indices = int_array(c["paged_kv_indices"], p + "/paged_kv_indices");
    if (cap.paged_kv_indptr) {
      const auto& ip = *cap.paged_kv_indptr;
      const int64_t used = ip[cap.flattened_rows ? oracle_rows : R];
      require_exact_len(*cap.paged_kv_indices, used, p + "/paged_kv_indices", "entries paged_kv_indptr addresses: captured arrays are the used prefix (paged_kv_indices[:paged_kv_indptr[-1]]); it has");
    }
    const int64_t slots = b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size;
    const size_t used = cap.paged_kv_indptr ? (size_t)(*cap.paged_kv_indptr)[cap.flattened_rows ? oracle_rows : R] : cap.paged_kv_indices->size();
    for (size_t i = 0; i < used && i < cap.paged_kv_indices->size(); ++i) {
      const int64_t s = (*cap.paged_kv_indices)[i];
      if (s < 0 || s >= slots)
        throw invalid_input(p + "/paged_kv_indices/" + std::to_string(i), "token slot " + std::to_string(s) + " is outside the KV cache [0, " + std::to_string(slots) + ")");
    }
  }
  if (c.contains("paged_kv_last_page_len")) {
    cap.paged_kv_last_page_len = int_array(c["paged_kv_last_page_len"], p + "/paged_kv_last_page_len");
    require_exact_len(*cap.paged_kv_last_page_len, R, p + "/paged_kv_last_page_len", "a batch of " + std::to_string(R) + " requests has");
    for (int64_t r = 0; r < R; ++r)
      if ((*cap.paged_kv_last_page_len)[(size_t)r] < 0)
        throw invalid_input(p + "/paged_kv_last_page_len/" + std::to_string(r), "must be >= 0 (request " + std::to_string(r) + ")");
  }
  if (c.contains("min_kv_seq_len")) {
    cap.min_kv_seq_len = int_at(c["min_kv_seq_len"], p + "/min_kv_seq_len");
    if (*cap.min_kv_seq_len < 0) throw invalid_input(p + "/min_kv_seq_len", "must be >= 0 (a KV length), got " + std::to_string(*cap.min_kv_seq_len));
  }
  if (c.contains("work_indptr")) cap.work_indptr = int_array(c["work_indptr"], p + "/work_indptr");
  if (c.contains("work_info_set")) cap.work_info_set = row_array<8>(c["work_info_set"], p + "/work_info_set");
  if (c.contains("reduce_indptr")) cap.reduce_indptr = int_array(c["reduce_indptr"], p + "/reduce_indptr");
  if (c.contains("reduce_final_map")) cap.reduce_final_map = row_array<2>(c["reduce_final_map"], p + "/reduce_final_map");
  if (c.contains("reduce_partial_map")) cap.reduce_partial_map = int_array(c["reduce_partial_map"], p + "/reduce_partial_map");
  // vllm-cuda's FlashMLA arrays (docs/stacks/vllm-cuda.md §C4): rows of 8 or a flat list
  for (const char* name : {"tile_scheduler_metadata", "num_splits", "seq_lens"}) {
    if (!c.contains(name)) continue;
    const std::string ap = p + "/" + name;
    // which stack reads it was checked by the parser (core/batch_parse.cpp kStackOwnedFields)
    std::vector<int64_t> flat;
    if (std::string(name) == "tile_scheduler_metadata" && c[name].is_array() && !c[name].empty() && c[name][0].is_array()) {
      for (const auto& row : row_array<8>(c[name], ap))
        flat.insert(flat.end(), row.begin(), row.end());
    } else {
      flat = int_array(c[name], ap);
    }
    if (std::string(name) == "tile_scheduler_metadata" && flat.size() % 8 != 0)
      throw invalid_input(ap, "has " + std::to_string(flat.size()) + " values, not rows of 8");
    cap.stack_arrays.emplace_back(name, std::move(flat));
  }
  if ((cap.work_indptr != std::nullopt) != (cap.work_info_set != std::nullopt))
    throw invalid_input(p + (cap.work_indptr ? "/work_info_set" : "/work_indptr"), "a captured work list needs both work_indptr and work_info_set");
  if (cap.work_indptr) {
    const auto& wi = *cap.work_indptr;
    if (wi.size() < 2) throw invalid_input(p + "/work_indptr", "has " + std::to_string(wi.size()) + " entries; a work list has at least one workgroup (2 entries)");
    require_indptr(wi, p + "/work_indptr", "workgroup");
    if (wi.back() > (int64_t)cap.work_info_set->size())
      throw invalid_input(p + "/work_info_set", "has " + std::to_string(cap.work_info_set->size()) + " rows but work_indptr addresses " + std::to_string(wi.back()));
  }
  // a captured work list is executed as captured or not at all: without its reduce maps,
  // mlactl's own would merge partial rows the capture may lay out differently (issue 39)
  if (cap.work_indptr && !cap.reduce_indptr)
    throw invalid_input(p + "/reduce_indptr", "is missing: a captured work list (work_indptr, work_info_set) needs its reduce maps (reduce_indptr, "
                                              "reduce_final_map, reduce_partial_map); mlactl does not complete a capture with its own");
  if ((cap.reduce_indptr || cap.reduce_final_map || cap.reduce_partial_map) && !cap.work_indptr)
    throw invalid_input(p + (cap.reduce_indptr ? "/reduce_indptr" : cap.reduce_final_map ? "/reduce_final_map" : "/reduce_partial_map"),
                        "reduce maps need the captured work list (work_indptr and work_info_set) they reduce");
  if (cap.reduce_indptr) {
    const auto& ri = *cap.reduce_indptr;
    if (ri.empty()) throw invalid_input(p + "/reduce_indptr", "must not be empty");
    require_indptr(ri, p + "/reduce_indptr", "q tile");
    const size_t tiles = ri.size() - 1;
    if (cap.reduce_final_map && cap.reduce_final_map->size() < tiles)
      throw invalid_input(p + "/reduce_final_map", "has " + std::to_string(cap.reduce_final_map->size()) + " entries, fewer than the " + std::to_string(tiles) +
                                                       " q tiles reduce_indptr has");
    if (!cap.reduce_final_map && tiles > 0)
      throw invalid_input(p + "/reduce_final_map", "is missing: reduce_indptr has " + std::to_string(tiles) + " q tiles to reduce");
    const int64_t entries = ri.back();
    if (!cap.reduce_partial_map && entries > 0)
      throw invalid_input(p + "/reduce_partial_map", "is missing: reduce_indptr addresses " + std::to_string(entries) + " partial entries");
    if (cap.reduce_partial_map && (int64_t)cap.reduce_partial_map->size() < entries)
      throw invalid_input(p + "/reduce_partial_map", "has " + std::to_string(cap.reduce_partial_map->size()) + " entries, fewer than the " + std::to_string(entries) +
                                                         " reduce_indptr addresses");
  } else if (cap.reduce_final_map || cap.reduce_partial_map) {
    throw invalid_input(p + "/reduce_indptr", "is missing: reduce_final_map and reduce_partial_map are read through it");
  }
  return cap;
}

std::vector<int64_t> captured_row_lengths(const Batch& b, const std::vector<RowWindow>& rows, const CapturedMetadata& cap) {
  std::vector<int64_t> len;
  if (!cap.paged_kv_indptr) return len;
  const auto& ip = *cap.paged_kv_indptr;
  len.assign(rows.size(), 0);
  if (cap.flattened_rows) {
    for (size_t i = 0; i < rows.size(); ++i) len[i] = ip[i + 1] - ip[i];
    return len;
  }
  // per request, with the kernel's causal diagonal over the request's q rows
  std::vector<int64_t> qn(b.requests.size(), 0);
  for (const auto& w : rows) qn[w.request]++;
  const bool causal = b.decode.causal || b.has_defect("causal-flag-dropped");
  for (size_t i = 0; i < rows.size(); ++i) {
    const int64_t s = ip[rows[i].request + 1] - ip[rows[i].request];
    len[i] = causal ? vllm::causal_prefix_length(s, qn[rows[i].request], rows[i].token) : s;
  }
  return len;
}

std::optional<Route> captured_array_reader(const std::string& name) {
  // vllm-cuda's FlashMLA arrays (docs/stacks/vllm-cuda.md §C4); seq_lens is every builder's
  if (name == "tile_scheduler_metadata" || name == "num_splits") return Route::flashmla;
  return std::nullopt;
}

CapturedDiff diff_captured(const Batch& b, const DecodeMetadata& md, const std::vector<RowWindow>& rows, const CapturedMetadata& cap,
                           const RoutePlan* plan) {
  CapturedDiff d;
  const int64_t R = md.num_requests;
  auto differ = [&](const std::string& field, int64_t index, int64_t want, int64_t got, std::vector<int64_t> affected, std::string msg) {
    if (!d.same) return;
    d.same = false;
    d.field = field;
    d.index = index;
    d.expected = std::to_string(want);
    d.got = std::to_string(got);
    d.rows = std::move(affected);
    d.message = std::move(msg);
  };
  auto rows_of_request = [&](int64_t r) {
    std::vector<int64_t> v;
    for (const auto& w : rows)
      if (w.request == r) v.push_back(w.row);
    return v;
  };

  if (cap.qo_indptr) {
    d.compared.push_back("qo_indptr");
    for (int64_t i = 0; i <= R && d.same; ++i)
      if ((*cap.qo_indptr)[i] != md.qo_indptr[i])
        differ("qo_indptr", i, md.qo_indptr[i], (*cap.qo_indptr)[i], rows_of_request(std::max<int64_t>(0, i - 1)),
               "qo_indptr[" + std::to_string(i) + "]: mlactl builds " + std::to_string(md.qo_indptr[i]) + ", captured " + std::to_string((*cap.qo_indptr)[i]));
  }
  // expected per-row (flattened) or per-request index pointers and index lists
  std::vector<int64_t> want_ip;
  std::vector<int64_t> want_idx;
  if (cap.flattened_rows) {
    // the causal flatten, from the oracle: row i gets its window, a prefix of its request's slots
    want_ip.push_back(0);
    for (const auto& w : rows) {
      const int64_t n = w.kind == MaskKind::padding ? 0 : w.length();
      want_ip.push_back(want_ip.back() + n);
      const int32_t* src = md.paged_kv_indices.data() + md.paged_kv_indptr[w.request];
      want_idx.insert(want_idx.end(), src, src + n);
    }
  } else {
    want_ip.assign(md.paged_kv_indptr.begin(), md.paged_kv_indptr.end());
    want_idx.assign(md.paged_kv_indices.begin(), md.paged_kv_indices.end());
  }
  if (cap.paged_kv_indptr) {
    d.compared.push_back("paged_kv_indptr");
    const auto& ip = *cap.paged_kv_indptr;
    for (size_t i = 1; i < want_ip.size() && d.same; ++i) {
      const int64_t got_len = ip[i] - ip[i - 1], want_len = want_ip[i] - want_ip[i - 1];
      if (ip[i] == want_ip[i] && got_len == want_len) continue;
      if (cap.flattened_rows) {
        const RowWindow& w = rows[i - 1];
        const int64_t excess = got_len - want_len;
        differ("paged_kv_indptr", (int64_t)i, want_ip[i], ip[i], {w.row},
               "paged_kv_indptr[" + std::to_string(i) + "]: " + row_name(w) + " gets " + std::to_string(got_len) + " KV entries, its " +
                   (w.kind == MaskKind::padding ? std::string("padding row has none") : std::string(to_string(w.kind)) + " window [" + std::to_string(w.begin) + ", " + std::to_string(w.end) + ") has " + std::to_string(want_len)) +
                   " (" + (excess > 0 ? "+" : "") + std::to_string(excess) + (excess > 0 ? " excess" : "") + ")");
      } else {
        const int64_t r = (int64_t)i - 1;
        differ("paged_kv_indptr", (int64_t)i, want_ip[i], ip[i], rows_of_request(r),
               "paged_kv_indptr[" + std::to_string(i) + "]: request " + std::to_string(r) + " gets " + std::to_string(got_len) +
                   " KV entries, mlactl builds " + std::to_string(want_len) + " (seq_len " + std::to_string(md.seq_k[r]) + ")");
      }
    }
  }
  if (cap.paged_kv_indices && d.same) {
    d.compared.push_back("paged_kv_indices");
    const auto& idx = *cap.paged_kv_indices;
    for (size_t e = 0; e < want_idx.size() && e < idx.size() && d.same; ++e) {
      if (idx[e] == want_idx[e]) continue;
      // the row (or request) owning entry e
      auto it = std::upper_bound(want_ip.begin(), want_ip.end(), (int64_t)e);
      const int64_t owner = (int64_t)(it - want_ip.begin()) - 1;
      std::vector<int64_t> affected = cap.flattened_rows ? std::vector<int64_t>{rows[owner].row} : rows_of_request(owner);
      const int64_t pos = (int64_t)e - want_ip[owner];
      differ("paged_kv_indices", (int64_t)e, want_idx[e], idx[e], affected,
             "paged_kv_indices[" + std::to_string(e) + "]: " + (cap.flattened_rows ? row_name(rows[owner]) : "request " + std::to_string(owner)) +
                 ", KV position " + std::to_string(pos) + ": captured slot " + std::to_string(idx[e]) + ", the block table gives " + std::to_string(want_idx[e]));
    }
  }
  if (cap.paged_kv_last_page_len && d.same) {
    d.compared.push_back("paged_kv_last_page_len");
    for (int64_t r = 0; r < R && d.same; ++r)
      if ((*cap.paged_kv_last_page_len)[r] != md.paged_kv_last_page_len[r])
        differ("paged_kv_last_page_len", r, md.paged_kv_last_page_len[r], (*cap.paged_kv_last_page_len)[r], rows_of_request(r),
               "paged_kv_last_page_len[" + std::to_string(r) + "]: AITER is called with page size 1, so every entry is 1");
  }
  if (cap.min_kv_seq_len && d.same) {
    d.compared.push_back("min_kv_seq_len");
    const int64_t want = cap.flattened_rows ? md.min_kv_seq_len_r0 : md.min_kv_seq_len_r1;
    if (*cap.min_kv_seq_len != want)
      differ("min_kv_seq_len", 0, want, *cap.min_kv_seq_len, {},
             std::string("min_kv_seq_len: mlactl builds ") + std::to_string(want) + (cap.flattened_rows ? " (R0: shortest causal row)" : " (R1: shortest active request)") +
                 ", captured " + std::to_string(*cap.min_kv_seq_len));
  }
  if (plan && cap.work_indptr && d.same) {
    const WorkList& w = plan->work;
    d.compared.push_back("work_indptr");
    const auto& wi = *cap.work_indptr;
    for (size_t i = 0; i < w.work_indptr.size() && i < wi.size() && d.same; ++i)
      if (wi[i] != w.work_indptr[i])
        differ("work_indptr", (int64_t)i, w.work_indptr[i], wi[i], {},
               "work_indptr[" + std::to_string(i) + "]: the " + to_string(plan->planner) + " planner gives workgroup " + std::to_string(i ? i - 1 : 0) + " a different work count");
    if (d.same && wi.size() < w.work_indptr.size())
      differ("work_indptr", (int64_t)wi.size(), w.work_indptr[wi.size()], -1, {}, "work_indptr: captured array is shorter than the plan's");
    if (d.same) {
      d.compared.push_back("work_info_set");
      const auto& ws = *cap.work_info_set;
      for (size_t i = 0; i < w.work_info.size() && d.same; ++i) {
        const auto a = w.work_info[i].as_array();
        for (int f = 0; f < 8 && d.same; ++f)
          if (i >= ws.size() || ws[i][f] != a[f]) {
            static const char* names[8] = {"batch_idx", "partial_qo_loc", "qo_start", "qo_end", "kv_start", "kv_end", "kv_offset", "pad"};
            differ("work_info_set", (int64_t)i, a[f], i < ws.size() ? ws[i][f] : -1, {},
                   "work_info_set[" + std::to_string(i) + "]." + names[f] + ": the " + to_string(plan->planner) + " planner gives " + std::to_string(a[f]) + ", captured " +
                       (i < ws.size() ? std::to_string(ws[i][f]) : std::string("nothing")));
          }
      }
    }
    if (d.same && cap.reduce_indptr) {
      d.compared.push_back("reduce_indptr");
      for (size_t i = 0; i < w.reduce_indptr.size() && i < cap.reduce_indptr->size() && d.same; ++i)
        if ((*cap.reduce_indptr)[i] != w.reduce_indptr[i])
          differ("reduce_indptr", (int64_t)i, w.reduce_indptr[i], (*cap.reduce_indptr)[i], {}, "reduce_indptr[" + std::to_string(i) + "] differs");
    }
    if (d.same && cap.reduce_final_map) {
      d.compared.push_back("reduce_final_map");
      for (size_t i = 0; i < w.reduce_final_map.size() && i < cap.reduce_final_map->size() && d.same; ++i) {
        if (w.reduce_final_map[i][0] < 0) continue;  // v1.2 leaves unsplit tiles unwritten
        for (int f = 0; f < 2; ++f)
          if ((*cap.reduce_final_map)[i][f] != w.reduce_final_map[i][f])
            differ("reduce_final_map", (int64_t)i, w.reduce_final_map[i][f], (*cap.reduce_final_map)[i][f], {}, "reduce_final_map[" + std::to_string(i) + "] differs");
      }
    }
    if (d.same && cap.reduce_partial_map) {
      d.compared.push_back("reduce_partial_map");
      for (size_t i = 0; i < w.reduce_partial_map.size() && i < cap.reduce_partial_map->size() && d.same; ++i)
        if ((*cap.reduce_partial_map)[i] != w.reduce_partial_map[i])
          differ("reduce_partial_map", (int64_t)i, w.reduce_partial_map[i], (*cap.reduce_partial_map)[i], {}, "reduce_partial_map[" + std::to_string(i) + "] differs");
    }
  }
  // a stack's own arrays: the used prefix (mlactl's length) of each, element by element.
  // One the routed kernel does not read is still compared, with the plan of the kernel that
  // reads it, and a difference says so (issue 39: it was skipped and "matches" was said).
  std::optional<RoutePlan> reader_plan;
  for (const auto& [name, got] : cap.stack_arrays) {
    if (!d.same) break;
    std::vector<int64_t> want;
    int width = 0;
    const std::optional<Route> reader = captured_array_reader(name);
    const bool unread = reader && (!plan || plan->route != *reader);
    std::string unread_note;
    if (name == "seq_lens") {
      want = md.seq_k;
    } else {
      const RoutePlan* from = unread ? nullptr : plan;
      if (unread) {
        if (!reader_plan) {
          try {
            const RoutedBatch rr = route_batch(b, *reader);
            if (!rr.refused()) reader_plan = plan_batch(b, rr, rows);
          } catch (const Error&) {
          }
        }
        from = reader_plan ? &*reader_plan : nullptr;
        unread_note = std::string("; the routed kernel") + (plan ? " (" + std::string(to_string(plan->route)) + ")" : std::string()) + " does not read it";
        if (!from) {
          differ(name, -1, 0, 0, {}, "captured `" + name + "` cannot be compared: " + to_string(*reader) + " does not plan this batch" + unread_note);
          break;
        }
      }
      for (const auto& a : from->stack_arrays)
        if (a.name == name) {
          want = a.values;
          width = a.row_width;
        }
    }
    if (want.empty() && name != "seq_lens") {
      differ(name, -1, 0, 0, {}, "captured `" + name + "` cannot be compared: the plan has no such array" + unread_note);
      break;
    }
    d.compared.push_back(name);
    // C++17 lambdas cannot capture a structured binding: the array's name by reference
    const std::string& array_name = name;
    auto differ_unread = [&](const std::string& field, int64_t index, int64_t w, int64_t g, std::vector<int64_t> affected, std::string msg) {
      differ(field, index, w, g, std::move(affected), unread ? "captured `" + array_name + "` differs" + unread_note + ": " + msg : std::move(msg));
    };
    for (size_t i = 0; i < want.size() && d.same; ++i) {
      const std::string at = width > 0 ? "[" + std::to_string(i / width) + "][" + std::to_string(i % width) + "]" : "[" + std::to_string(i) + "]";
      if (i >= got.size())
        differ_unread(name, (int64_t)(width > 0 ? i / width : i), want[i], -1, {}, name + ": captured array is shorter than mlactl's (" + std::to_string(got.size()) + " < " + std::to_string(want.size()) + " values)");
      else if (got[i] != want[i])
        differ_unread(name, (int64_t)(width > 0 ? i / width : i), want[i], got[i],
               name == "seq_lens" && (int64_t)i < R ? rows_of_request((int64_t)i) : std::vector<int64_t>{},
               name + at + ": mlactl builds " + std::to_string(want[i]) + ", captured " + std::to_string(got[i]) +
                   (width == 8 ? " (SM part " + std::to_string(i / 8) + ")" : ""));
    }
  }
  // "matches" is said of compared fields only (issue 39: "matches (0 fields compared)")
  if (d.same)
    d.message = d.compared.empty() ? std::string("no captured array could be compared (none of them is read by this route's plan)")
                                   : "captured metadata matches what mlactl builds (" + std::to_string(d.compared.size()) + " fields compared)";
  return d;
}

DecodeMetadata metadata_with_captured(const DecodeMetadata& md, const CapturedMetadata& cap) {
  DecodeMetadata m = md;
  const int64_t R = md.num_requests;
  auto to32 = [](const std::vector<int64_t>& v, size_t n) {
    std::vector<int32_t> o(v.begin(), v.begin() + (ptrdiff_t)std::min(n, v.size()));
    return o;
  };
  if (cap.qo_indptr) m.qo_indptr = to32(*cap.qo_indptr, (size_t)R + 1);
  if (cap.paged_kv_indptr) {
    if (cap.flattened_rows) {
      m.flat_indptr = to32(*cap.paged_kv_indptr, cap.paged_kv_indptr->size());
      if (cap.paged_kv_indices) m.flat_indices = to32(*cap.paged_kv_indices, (size_t)m.flat_indptr.back());
    } else {
      m.paged_kv_indptr = to32(*cap.paged_kv_indptr, (size_t)R + 1);
      for (int64_t r = 0; r < R; ++r) m.seq_k[r] = m.paged_kv_indptr[r + 1] - m.paged_kv_indptr[r];
      if (cap.paged_kv_indices) m.paged_kv_indices = to32(*cap.paged_kv_indices, (size_t)m.paged_kv_indptr[R]);
    }
  } else if (cap.paged_kv_indices) {
    const size_t n = std::min(cap.paged_kv_indices->size(), m.paged_kv_indices.size());
    for (size_t i = 0; i < n; ++i) m.paged_kv_indices[i] = (int32_t)(*cap.paged_kv_indices)[i];
  }
  if (cap.paged_kv_last_page_len) m.paged_kv_last_page_len = to32(*cap.paged_kv_last_page_len, (size_t)R);
  for (const auto& [name, values] : cap.stack_arrays) m.captured_arrays.push_back({name, name == "tile_scheduler_metadata" ? 8 : 0, false, values});
  return m;
}

void apply_captured_work(RoutePlan& plan, const CapturedMetadata& cap, int64_t partial_buffer_rows) {
  if (!cap.work_indptr) return;
  WorkList& w = plan.work;
  const auto& wi = *cap.work_indptr;
  // the persistent buffer may carry a stale tail: use the plan's workgroup count when it fits
  const int ngroups = (w.num_workgroups > 0 && (size_t)w.num_workgroups + 1 <= wi.size()) ? w.num_workgroups : (int)wi.size() - 1;
  w.num_workgroups = ngroups;
  w.work_indptr.assign(wi.begin(), wi.begin() + ngroups + 1);
  for (auto& x : w.work_indptr) x = std::max(0, x);
  w.work_info.clear();
  for (int64_t i = 0; i < w.work_indptr.back(); ++i) {
    const auto& r = (*cap.work_info_set)[(size_t)i];
    WorkInfo x;
    x.batch_idx = (int32_t)r[0];
    x.partial_qo_loc = (int32_t)r[1];
    x.qo_start = (int32_t)r[2];
    x.qo_end = (int32_t)r[3];
    x.kv_start = (int32_t)r[4];
    x.kv_end = (int32_t)r[5];
    x.kv_offset = (int32_t)r[6];
    x.pad = (int32_t)r[7];
    w.work_info.push_back(x);
  }
  // the captured reduce maps only (parse_captured refuses a work list without them): never
  // the planner's, which reduce the planner's works
  w.reduce_indptr.clear();
  w.reduce_final_map.clear();
  w.reduce_partial_map.clear();
  if (cap.reduce_indptr) w.reduce_indptr.assign(cap.reduce_indptr->begin(), cap.reduce_indptr->end());
  if (cap.reduce_final_map)
    for (const auto& r : *cap.reduce_final_map) w.reduce_final_map.push_back({(int32_t)r[0], (int32_t)r[1]});
  if (cap.reduce_partial_map) w.reduce_partial_map.assign(cap.reduce_partial_map->begin(), cap.reduce_partial_map->end());
  int64_t partial_rows = 0;
  for (const auto& x : w.work_info)
    if (x.partial_qo_loc >= 0) partial_rows = std::max<int64_t>(partial_rows, (int64_t)x.partial_qo_loc + std::max(0, x.qo_end - x.qo_start));
  w.num_partial_rows = std::max(partial_rows, partial_buffer_rows);
  w.planner = "captured";
  plan.planner = PlannerId::captured;
  plan.notes.push_back("executing the captured work list (run --own-metadata runs mlactl's plan instead)");
}

int64_t validate_captured_work(const CapturedMetadata& cap, const RoutePlan& replay, int64_t max_qo_len) {
  if (!cap.work_indptr) return 0;
  const std::string p = "/captured";
  const WorkList& w = replay.work;
  const auto& wi = *cap.work_indptr;
  const auto& ws = *cap.work_info_set;
  const std::optional<MetadataInfo>& capa = replay.capacity;
  // persistent buffers may be longer than what this step used, never longer than the buffer
  auto no_longer_than = [&](size_t n, int64_t cap_n, const std::string& field, const std::string& what) {
    if ((int64_t)n > cap_n)
      throw invalid_input(p + "/" + field, "has " + std::to_string(n) + " entries, more than the " + std::to_string(cap_n) + " " + what);
  };
  const int64_t grid = w.num_workgroups > 0 ? w.num_workgroups : (int64_t)wi.size() - 1;
  if (capa) no_longer_than(wi.size(), capa->work_indptr, "work_indptr", "of the work_indptr buffer get_mla_metadata_info_v1 sizes for this batch");
  else no_longer_than(wi.size(), grid + 1, "work_indptr", "a grid of " + std::to_string(grid) + " workgroups has");
  // workgroups past the kernel's grid never run: a capture that gives them works lost them
  for (size_t k = (size_t)grid + 1; k < wi.size(); ++k)
    if (wi[k] != wi[(size_t)grid])
      throw invalid_input(p + "/work_indptr/" + std::to_string(k), "workgroup " + std::to_string(k - 1) + " has works, but the kernel launches " +
                                                                     std::to_string(grid) + " workgroups");
  const int64_t used_groups = std::min<int64_t>(grid, (int64_t)wi.size() - 1);
  const int64_t used = wi[(size_t)used_groups];
  if (capa) no_longer_than(ws.size(), capa->work_info_set, "work_info_set", "rows of the work_info_set buffer");
  else if ((int64_t)ws.size() > used)
    throw invalid_input(p + "/work_info_set", "has " + std::to_string(ws.size()) + " rows, more than the " + std::to_string(used) + " works work_indptr schedules");

  const int64_t q_rows = w.num_q_rows;
  const int64_t kv_entries = (int64_t)replay.kv_indices.size();
  int64_t max_rows = 1;
  for (int64_t i = 0; i < used; ++i) max_rows = std::max<int64_t>(max_rows, ws[(size_t)i][3] - ws[(size_t)i][2]);
  // fp32 partial rows, as the route's planner lays them out: mla.py's buffer (reduce_partial_map
  // x q_len) when the stack sizes it; FA3's out_accum is split-major (split j of q row r at
  // j * total_q + r, flash_fwd_combine; core/stacks/vllm_cuda/planners/fa3.cpp), so its bound is
  // the most-split tile's splits x the q rows; else at most one split fragment per work
  int64_t partial_rows = used * max_rows;
  if (capa) {
    partial_rows = capa->reduce_partial_map * std::max<int64_t>(1, max_qo_len);
  } else if (replay.planner == PlannerId::fa3) {
    int64_t splits = 1;
    if (cap.reduce_indptr)
      for (size_t t = 0; t + 1 < cap.reduce_indptr->size(); ++t) splits = std::max(splits, (*cap.reduce_indptr)[t + 1] - (*cap.reduce_indptr)[t]);
    partial_rows = std::max(w.num_partial_rows, splits * q_rows);
  }
  size_t group = 0;
  for (int64_t i = 0; i < used; ++i) {
    while (group + 1 < wi.size() && wi[group + 1] <= i) ++group;
    const auto& x = ws[(size_t)i];
    const std::string at = p + "/work_info_set/" + std::to_string(i);
    const std::string who = " (work " + std::to_string(i) + " of workgroup " + std::to_string(group) + ", batch " + std::to_string(x[0]) + ", q rows [" +
                            std::to_string(x[2]) + ", " + std::to_string(x[3]) + "))";
    if (x[0] < 0 || (q_rows > 0 && x[0] >= q_rows))
      throw invalid_input(at + "/0", "batch_idx " + std::to_string(x[0]) + " is not a batch of this plan (its view has " + std::to_string(q_rows) + " q rows)" + who);
    if (x[2] < 0 || x[3] <= x[2] || x[3] > q_rows)
      throw invalid_input(at + "/" + (x[2] < 0 ? "2" : "3"), "q rows [" + std::to_string(x[2]) + ", " + std::to_string(x[3]) + ") are not a non-empty range of the view's " +
                                                               std::to_string(q_rows) + " q rows" + who);
    if (x[4] < 0 || x[5] < x[4] || x[5] > kv_entries)
      throw invalid_input(at + "/" + (x[4] < 0 ? "4" : "5"), "KV range [" + std::to_string(x[4]) + ", " + std::to_string(x[5]) + ") is not inside the " +
                                                               std::to_string(kv_entries) + " KV index entries of this batch" + who);
    if (x[6] < 0 || x[6] > kv_entries)
      throw invalid_input(at + "/6", "kv_offset " + std::to_string(x[6]) + " is not a KV token count of this batch (0.." + std::to_string(kv_entries) + ")" + who);
    if (x[1] < -1 || (x[1] >= 0 && x[1] + (x[3] - x[2]) > partial_rows))
      throw invalid_input(at + "/1", "partial_qo_loc " + std::to_string(x[1]) + " is neither -1 (final output) nor a partial row range inside the " +
                                         std::to_string(partial_rows) + " fp32 partial rows" + who);
  }
  if (cap.reduce_indptr) {
    const auto& ri = *cap.reduce_indptr;
    if (capa) no_longer_than(ri.size(), capa->reduce_indptr, "reduce_indptr", "of the reduce_indptr buffer");
    if (capa && cap.reduce_final_map) no_longer_than(cap.reduce_final_map->size(), capa->reduce_final_map, "reduce_final_map", "rows of the reduce_final_map buffer");
    if (capa && cap.reduce_partial_map) no_longer_than(cap.reduce_partial_map->size(), capa->reduce_partial_map, "reduce_partial_map", "entries of the reduce_partial_map buffer");
    for (size_t t = 0; t + 1 < ri.size(); ++t) {
      if (ri[t + 1] - ri[t] <= 1) continue;  // unsplit: the reduce skips it
      const auto& fm = (*cap.reduce_final_map)[t];
      const std::string at = p + "/reduce_final_map/" + std::to_string(t);
      if (fm[0] == -1 && fm[1] == -1) continue;
      if (fm[0] < 0 || fm[1] <= fm[0] || fm[1] > q_rows)
        throw invalid_input(at, "output rows [" + std::to_string(fm[0]) + ", " + std::to_string(fm[1]) + ") of split q tile " + std::to_string(t) +
                                    " are neither {-1, -1} nor a range of the view's " + std::to_string(q_rows) + " q rows");
      for (int64_t k = ri[t]; k < ri[t + 1]; ++k) {
        const int64_t pr = (*cap.reduce_partial_map)[(size_t)k];
        if (pr < 0 || pr + (fm[1] - fm[0]) > partial_rows)
          throw invalid_input(p + "/reduce_partial_map/" + std::to_string(k), "partial row " + std::to_string(pr) + " of q tile " + std::to_string(t) +
                                                                                 " is outside the " + std::to_string(partial_rows) + " fp32 partial rows");
      }
    }
  }
  return partial_rows;
}

RoutePlan plan_captured(const Batch& b, const RoutedBatch& rb, const std::vector<RowWindow>& rows, const CapturedMetadata& cap,
                        std::optional<PlannerId> planner) {
  RoutedBatch replay = rb;
  replay.metadata = metadata_with_captured(rb.metadata, cap);
  RoutePlan plan = plan_batch(b, replay, rows, planner);
  const int64_t partial_buffer_rows = validate_captured_work(cap, plan, rb.metadata.max_qo_len);
  apply_captured_work(plan, cap, partial_buffer_rows);
  return plan;
}

}  // namespace mlactl
