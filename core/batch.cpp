// Strict parser of the batch file (docs/design.md §2). Every error names the JSON pointer
// of the field and exits 3; unknown keys are errors.
#include "core/batch.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>
#include <sstream>

#include "core/defects.hpp"
#include "core/budget.hpp"
#include "core/vllm_common.hpp"
#include "core/rng.hpp"

namespace mlactl {

using nlohmann::json;

namespace {

// Hard bounds that keep every later array within int32 (AITER's index type) and
// reject absurd inputs up front (docs/design.md §9). The memory budget proper lives in the CLI.
constexpr int64_t kMaxRequests = kMaxBatchRequests;
constexpr int64_t kMaxLen = std::numeric_limits<int32_t>::max();
constexpr int kMaxHeads = 1024;
constexpr int kMaxBlockSize = 1 << 16;
constexpr double kMaxSoftmaxScale = 1e4;
constexpr size_t kMaxJsonDepth = 64;  // a batch document needs 5 levels; expect/captured a few more

std::string child(const std::string& ptr, const std::string& key) {
  // RFC 6901 escaping
  std::string k;
  for (char c : key) {
    if (c == '~') k += "~0";
    else if (c == '/') k += "~1";
    else k += c;
  }
  return ptr + "/" + k;
}
std::string child(const std::string& ptr, size_t i) { return ptr + "/" + std::to_string(i); }

// A user string echoed in a message, quoted, and cut so a 10 MB value still gives
// a readable line: "abc" or "abcd..." (10485760 bytes).
constexpr size_t kMaxShown = 64;
std::string shown(const std::string& s) {
  if (s.size() <= kMaxShown) return "\"" + s + "\"";
  return "\"" + s.substr(0, kMaxShown) + "...\" (" + std::to_string(s.size()) + " bytes)";
}

const char* type_name(const json& v) {
  switch (v.type()) {
    case json::value_t::null: return "null";
    case json::value_t::object: return "an object";
    case json::value_t::array: return "an array";
    case json::value_t::string: return "a string";
    case json::value_t::boolean: return "a boolean";
    case json::value_t::number_integer:
    case json::value_t::number_unsigned: return "an integer";
    case json::value_t::number_float: return "a number";
    default: return "an unsupported value";
  }
}

void require_object(const json& v, const std::string& ptr) {
  if (!v.is_object()) throw invalid_input(ptr.empty() ? "/" : ptr, std::string("must be an object, got ") + type_name(v));
}

void check_keys(const json& obj, const std::string& ptr, std::initializer_list<const char*> allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const char* a : allowed)
      if (it.key() == a) ok = true;
    if (!ok) {
      std::string list;
      for (const char* a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      throw invalid_input(child(ptr, it.key().size() <= kMaxShown ? it.key() : it.key().substr(0, kMaxShown) + "..."), "unknown key (allowed here: " + list + ")");
    }
  }
}

int64_t get_int(const json& v, const std::string& ptr, int64_t lo, int64_t hi) {
  int64_t x = 0;
  // unsigned first: is_number_integer() is also true for unsigned values, and 2^63
  // read as int64_t wraps to a negative number
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > (uint64_t)std::numeric_limits<int64_t>::max()) throw invalid_input(ptr, "must be <= " + std::to_string(hi));
    x = (int64_t)u;
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) throw invalid_input(ptr, "must be an integer, got " + v.dump());
    if (d < (double)lo) throw invalid_input(ptr, "must be >= " + std::to_string(lo));
    if (d > (double)hi) throw invalid_input(ptr, "must be <= " + std::to_string(hi));
    x = (int64_t)d;
  } else {
    throw invalid_input(ptr, std::string("must be an integer, got ") + type_name(v));
  }
  if (x < lo) throw invalid_input(ptr, "must be >= " + std::to_string(lo));
  if (x > hi) throw invalid_input(ptr, "must be <= " + std::to_string(hi));
  return x;
}

double get_number(const json& v, const std::string& ptr) {
  if (!v.is_number()) throw invalid_input(ptr, std::string("must be a number, got ") + type_name(v));
  double d = v.get<double>();
  if (!std::isfinite(d)) throw invalid_input(ptr, "must be finite");
  return d;
}

bool get_bool(const json& v, const std::string& ptr) {
  if (!v.is_boolean()) throw invalid_input(ptr, std::string("must be true or false, got ") + type_name(v));
  return v.get<bool>();
}

std::string get_string(const json& v, const std::string& ptr) {
  if (!v.is_string()) throw invalid_input(ptr, std::string("must be a string, got ") + type_name(v));
  return v.get<std::string>();
}

std::string get_enum(const json& v, const std::string& ptr, std::initializer_list<const char*> choices) {
  std::string s = get_string(v, ptr);
  std::string list;
  for (const char* c : choices) {
    if (s == c) return s;
    list += std::string(list.empty() ? "" : ", ") + c;
  }
  throw invalid_input(ptr, "must be one of " + list + ", got " + shown(s));
}

const json* find(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

DType parse_dtype(const json& v, const std::string& ptr) {
  std::string s = get_enum(v, ptr, {"bf16", "fp16"});
  return s == "bf16" ? DType::bf16 : DType::fp16;
}

}  // namespace


const char* to_string(AttentionBackend a) {
  switch (a) {
    case AttentionBackend::flash_attn_mla: return "FLASH_ATTN_MLA";
    case AttentionBackend::flashmla: return "FLASHMLA";
    case AttentionBackend::flashinfer_mla: return "FLASHINFER_MLA";
    case AttentionBackend::triton_mla: return "TRITON_MLA";
    case AttentionBackend::flashmla_sparse: return "FLASHMLA_SPARSE";
    case AttentionBackend::cutlass_mla: return "CUTLASS_MLA";
  }
  return "?";
}

std::optional<AttentionBackend> attention_backend_from_string(const std::string& s) {
  for (AttentionBackend a : {AttentionBackend::flash_attn_mla, AttentionBackend::flashmla, AttentionBackend::flashinfer_mla,
                             AttentionBackend::triton_mla, AttentionBackend::flashmla_sparse, AttentionBackend::cutlass_mla})
    if (s == to_string(a)) return a;
  return std::nullopt;
}

// vLLM's uniform-MTP padding decides how many rows (and R1 KV entries) a padding slot
// gets (core/vllm_common.hpp); the placement, the oracle and the builder all ask here.
int64_t Batch::rows_per_padding_request() const {
  std::vector<int64_t> qo;
  qo.reserve(requests.size());
  for (const auto& r : requests) qo.push_back(r.query_len);
  return vllm::uniform_padded_mtp_qo_len(qo, max_query_len(), decode.num_decode_tokens);
}

int64_t Batch::max_seq_len() const {
  int64_t m = 0;
  for (const auto& r : requests) m = std::max(m, r.seq_len());
  return m;
}
int64_t Batch::max_query_len() const {
  int64_t m = 0;
  for (const auto& r : requests) m = std::max(m, r.query_len);
  return m;
}
int64_t Batch::total_query_tokens() const {
  int64_t s = 0;
  for (const auto& r : requests) s += r.query_len;
  return s;
}
int Batch::num_padding() const {
  int n = 0;
  for (const auto& r : requests) n += r.padding ? 1 : 0;
  return n;
}
int64_t Batch::kv_cache_bytes() const {
  return kv_cache.num_blocks * (int64_t)kv_cache.block_size * head_dim() * dtype_bytes(kv_cache.dtype);
}

std::string vllm_kv_cache_dtype(const Batch& b) {
  if (b.kv_cache.dtype_auto) return "auto";
  switch (b.kv_cache.dtype) {
    case DType::bf16: return "bfloat16";
    case DType::fp16: return "float16";
    case DType::fp8: return "fp8";
  }
  return "auto";
}

namespace {

void materialise_block_table(Batch& b, const std::string& ptr) {
  auto& kv = b.kv_cache;
  const int64_t Kb = kv.block_size;
  const int64_t pad_rows = b.rows_per_padding_request();
  auto needed_blocks = [&](const Request& r) {
    int64_t len = r.padding ? pad_rows : r.seq_len();
    return (len + Kb - 1) / Kb;
  };
  if (!kv.explicit_block_table) {
    // the table and, downstream, the token-slot indices: refuse before allocating (docs/design.md §9)
    int64_t blocks = 0, tokens = 0;
    for (const auto& r : b.requests) {
      blocks += kv.layout == KvLayout::sequential ? 0 : needed_blocks(r);
      tokens += r.padding ? pad_rows : r.seq_len();
    }
    if (kv.layout == KvLayout::sequential) {
      int64_t stride = 0;
      for (const auto& r : b.requests) stride = std::max(stride, needed_blocks(r));
      blocks = stride * (int64_t)b.requests.size();
    }
    require_within_budget(blocks * 4 + (int64_t)b.requests.size() * 24 + tokens * 4, "/requests",
                          "its block table and " + std::to_string(tokens) + " KV token slots");
  }
  if (kv.explicit_block_table) {
    if (kv.block_table.size() != b.requests.size())
      throw invalid_input(child(ptr, "block_table"), "must have one list per request (" +
                                                         std::to_string(b.requests.size()) + "), got " +
                                                         std::to_string(kv.block_table.size()));
    int64_t max_id = -1;
    for (size_t r = 0; r < b.requests.size(); ++r) {
      const int64_t need = needed_blocks(b.requests[r]);
      if ((int64_t)kv.block_table[r].size() < need)
        throw invalid_input(child(child(ptr, "block_table"), r),
                            "has " + std::to_string(kv.block_table[r].size()) + " blocks but request " +
                                std::to_string(r) + " needs " + std::to_string(need) + " (" +
                                std::to_string(b.requests[r].padding ? pad_rows : b.requests[r].seq_len()) +
                                " KV entries / block_size " + std::to_string(Kb) + ")");
      for (int32_t id : kv.block_table[r]) max_id = std::max<int64_t>(max_id, id);
    }
    if (kv.num_blocks == 0) kv.num_blocks = max_id + 1;
    for (size_t r = 0; r < b.requests.size(); ++r)
      for (size_t j = 0; j < kv.block_table[r].size(); ++j)
        if (kv.block_table[r][j] >= kv.num_blocks)
          throw invalid_input(child(child(child(ptr, "block_table"), r), j),
                              "block id " + std::to_string(kv.block_table[r][j]) + " is out of range [0, " +
                                  std::to_string(kv.num_blocks) + ") (kv_cache.num_blocks)");
    // A block used twice by one request puts two KV positions in one slot: no cache does
    // that (blocks shared *between* requests are prefix caching, and fine). Only the blocks
    // the request reads count; one stamp per block id, so linear in the table.
    std::vector<int32_t> owner((size_t)kv.num_blocks, -1);
    std::vector<int32_t> first((size_t)kv.num_blocks, 0);
    for (size_t r = 0; r < b.requests.size(); ++r) {
      const int64_t need = needed_blocks(b.requests[r]);
      for (int64_t j = 0; j < need; ++j) {
        const int32_t id = kv.block_table[r][(size_t)j];
        if (owner[(size_t)id] == (int32_t)r)
          throw invalid_input(child(child(child(ptr, "block_table"), r), (size_t)j),
                              "block id " + std::to_string(id) + " repeats entry " + std::to_string(first[(size_t)id]) + " of request " + std::to_string(r) +
                                  ": two KV positions of one request would share a slot");
        owner[(size_t)id] = (int32_t)r;
        first[(size_t)id] = (int32_t)j;
      }
    }
    return;
  }
  kv.block_table.assign(b.requests.size(), {});
  if (kv.layout == KvLayout::sequential) {
    // docs/stacks/vllm-rocm-aiter.md §V5.1: request r's blocks start at r·ceil(max len / Kb).
    int64_t stride = 0;
    for (const auto& r : b.requests) stride = std::max(stride, needed_blocks(r));
    const int64_t total = stride * (int64_t)b.requests.size();
    if (total > kMaxLen) throw invalid_input(child(ptr, "layout"), "sequential layout needs " + std::to_string(total) + " blocks, more than int32 block ids hold");
    for (size_t r = 0; r < b.requests.size(); ++r) {
      const int64_t need = needed_blocks(b.requests[r]);
      kv.block_table[r].resize(need);
      for (int64_t j = 0; j < need; ++j) kv.block_table[r][j] = (int32_t)(r * stride + j);
    }
    const int64_t min_blocks = total;
    if (kv.num_blocks == 0) kv.num_blocks = min_blocks;
    else if (kv.num_blocks < min_blocks)
      throw invalid_input(child(ptr, "num_blocks"), "is " + std::to_string(kv.num_blocks) + " but the sequential layout needs " + std::to_string(min_blocks));
    return;
  }
  // shuffled: a seeded permutation of the blocks (data.seed, placement stream)
  int64_t total = 0;
  for (const auto& r : b.requests) total += needed_blocks(r);
  if (total > kMaxLen) throw invalid_input(child(ptr, "layout"), "the batch needs " + std::to_string(total) + " blocks, more than int32 block ids hold");
  if (kv.num_blocks == 0) kv.num_blocks = total;
  else if (kv.num_blocks < total)
    throw invalid_input(child(ptr, "num_blocks"), "is " + std::to_string(kv.num_blocks) + " but the batch needs " + std::to_string(total) + " blocks");
  // A seeded affine permutation i -> (a·i + c) mod N with gcd(a, N) = 1: O(1) per
  // block, so placing tens of millions of page-size-1 blocks stays cheap, and
  // neighbouring positions land far apart.
  const uint64_t N = (uint64_t)kv.num_blocks;
  if (N == 0) {  // no request needs a block (an empty batch): nothing to place (c % N below)
    for (size_t r = 0; r < b.requests.size(); ++r) kv.block_table[r].clear();
    return;
  }
  Rng rng(b.seed, kStreamPlacement);
  auto gcd = [](uint64_t x, uint64_t y) { while (y) { uint64_t t = x % y; x = y; y = t; } return x; };
  uint64_t a = 1;
  if (N > 2) {
    do a = 2 + rng.below(N - 2); while (gcd(a, N) != 1);
  }
  const uint64_t c = rng.below(N);
  uint64_t id = c % N;  // running value of (a·i + c) mod N
  const uint64_t a_mod = a % N;
  for (size_t r = 0; r < b.requests.size(); ++r) {
    const int64_t need = needed_blocks(b.requests[r]);
    auto& row = kv.block_table[r];
    row.resize(need);
    for (int64_t j = 0; j < need; ++j) {
      row[j] = (int32_t)id;
      id += a_mod;
      if (id >= N) id -= N;
    }
  }
}

void parse_sparse(Batch& b, const json& s, const std::string& ptr) {
  require_object(s, ptr);
  check_keys(s, ptr, {"topk", "geometry", "indices"});
  SparseSpec sp;
  const json* topk = find(s, "topk");
  if (!topk) throw invalid_input(child(ptr, "topk"), "is required");
  sp.topk = get_int(*topk, child(ptr, "topk"), 1, kMaxLen);
  if (const json* g = find(s, "geometry"))
    sp.geometry = get_enum(*g, child(ptr, "geometry"), {"rope", "rope_free"}) == "rope" ? SparseGeometry::rope : SparseGeometry::rope_free;
  if (const json* ind = find(s, "indices")) {
    const std::string ip = child(ptr, "indices");
    if (ind->is_string()) {
      get_enum(*ind, ip, {"random"});
    } else if (ind->is_array()) {
      sp.random_indices = false;
      // one list per query token, requests in order (padding requests have none)
      std::vector<std::pair<int, int64_t>> tokens;  // (request, t)
      for (size_t r = 0; r < b.requests.size(); ++r)
        if (!b.requests[r].padding)
          for (int64_t t = 0; t < b.requests[r].query_len; ++t) tokens.push_back({(int)r, t});
      if (ind->size() != tokens.size())
        throw invalid_input(ip, "must have one list per query token (" + std::to_string(tokens.size()) + "), got " + std::to_string(ind->size()));
      for (size_t i = 0; i < ind->size(); ++i) {
        const json& lst = (*ind)[i];
        const std::string lp = child(ip, i);
        if (!lst.is_array()) throw invalid_input(lp, std::string("must be an array, got ") + type_name(lst));
        const Request& rq = b.requests[tokens[i].first];
        const int64_t visible = rq.context_len + tokens[i].second + 1;
        std::vector<int64_t> row;
        std::set<int64_t> seen;
        for (size_t j = 0; j < lst.size(); ++j) {
          const int64_t x = get_int(lst[j], child(lp, j), -1, kMaxLen);
          if (x == -1) continue;  // padding entries are dropped
          if (x >= visible)
            throw invalid_input(child(lp, j), "index " + std::to_string(x) + " is outside [0, " + std::to_string(visible) +
                                                  ") (request " + std::to_string(tokens[i].first) + " token " +
                                                  std::to_string(tokens[i].second) + " sees positions < context_len + t + 1)");
          if (!seen.insert(x).second) throw invalid_input(child(lp, j), "index " + std::to_string(x) + " appears twice");
          row.push_back(x);
        }
        if ((int64_t)row.size() > sp.topk)
          throw invalid_input(lp, "has " + std::to_string(row.size()) + " valid indices, more than topk " + std::to_string(sp.topk));
        sp.indices.push_back(std::move(row));
      }
    } else {
      throw invalid_input(ip, std::string("must be \"random\" or an array of index lists, got ") + type_name(*ind));
    }
  }
  b.sparse = std::move(sp);
}

}  // namespace

Batch parse_batch(const json& doc) {
  require_object(doc, "");
  check_keys(doc, "", {"schema", "name", "description", "platform", "model", "kv_cache", "decode", "requests", "sparse", "data", "inject", "captured", "expect"});
  Batch b;
  const json* schema = find(doc, "schema");
  if (!schema) throw invalid_input("/schema", "is required (use 1)");
  b.schema = (int)get_int(*schema, "/schema", 1, 1);
  if (const json* v = find(doc, "name")) b.name = get_string(*v, "/name");
  if (const json* v = find(doc, "description")) b.description = get_string(*v, "/description");

  // data first: the seed drives placement
  if (const json* d = find(doc, "data")) {
    require_object(*d, "/data");
    check_keys(*d, "/data", {"seed"});
    if (const json* s = find(*d, "seed")) b.seed = (uint64_t)get_int(*s, "/data/seed", 0, std::numeric_limits<int64_t>::max());
  }

  // platform
  bool num_cu_given = false;
  if (const json* p = find(doc, "platform")) {
    require_object(*p, "/platform");
    check_keys(*p, "/platform", {"arch", "num_cu", "aiter", "aiter_has_causal_arg"});
    if (const json* v = find(*p, "arch")) {
      const std::string a = get_enum(*v, "/platform/arch", {"gfx942", "gfx950", "sm90"});
      b.platform.arch = a == "gfx942" ? Arch::gfx942 : a == "sm90" ? Arch::sm90 : Arch::gfx950;
    }
    if (const json* v = find(*p, "num_cu")) {
      b.platform.num_cu = (int)get_int(*v, "/platform/num_cu", 1, 4096);
      num_cu_given = true;
    }
    if (const json* v = find(*p, "aiter")) b.platform.aiter = get_enum(*v, "/platform/aiter", {"2026.08"});
    if (const json* v = find(*p, "aiter_has_causal_arg")) b.platform.aiter_has_causal_arg = get_bool(*v, "/platform/aiter_has_causal_arg");
  }
  // CUs of MI300X/MI325X (gfx942), MI355X (gfx950); SMs of H100/H200/H800 (sm90)
  if (!num_cu_given) b.platform.num_cu = b.platform.arch == Arch::gfx942 ? 304 : b.platform.arch == Arch::sm90 ? 132 : 256;

  // model
  if (const json* m = find(doc, "model")) {
    require_object(*m, "/model");
    check_keys(*m, "/model", {"num_heads", "kv_lora_rank", "qk_rope_head_dim", "dtype", "softmax_scale"});
    if (const json* v = find(*m, "num_heads")) {
      // the limit a message states is mlactl's own (1024), not int32's: a huge count is
      // refused as "more than 1024" before vLLM's rule would see it
      if (v->is_number() && v->get<double>() > kMaxHeads) throw invalid_input("/model/num_heads", "must be <= " + std::to_string(kMaxHeads));
      if (v->is_number() && v->get<double>() < -kMaxHeads) throw invalid_input("/model/num_heads", "must be > 0");
      const int64_t n = get_int(*v, "/model/num_heads", -kMaxHeads, kMaxHeads);
      // the head-count rule is the ROCm AITER backend's; vLLM's CUDA MLA backends take any
      // positive count (docs/stacks/vllm-cuda.md §C3)
      if (b.platform.arch == Arch::sm90 ? n < 1 : !vllm::num_heads_valid(n))
        throw invalid_input("/model/num_heads", b.platform.arch == Arch::sm90 ? "must be >= 1" : vllm::num_heads_error(n));
      b.model.num_heads = (int)n;
    } else {
      throw invalid_input("/model/num_heads", "is required");
    }
    if (const json* v = find(*m, "kv_lora_rank")) b.model.kv_lora_rank = (int)get_int(*v, "/model/kv_lora_rank", 512, 512);
    if (const json* v = find(*m, "qk_rope_head_dim")) b.model.qk_rope_head_dim = (int)get_int(*v, "/model/qk_rope_head_dim", 64, 64);
    if (const json* v = find(*m, "dtype")) b.model.dtype = parse_dtype(*v, "/model/dtype");
    if (const json* v = find(*m, "softmax_scale")) {
      b.model.softmax_scale = get_number(*v, "/model/softmax_scale");
      if (b.model.softmax_scale <= 0) throw invalid_input("/model/softmax_scale", "must be > 0");
      // the kernels take the scale as fp32 and multiply q·k by it: 1e308 became inf and every
      // row NaN ("unwritten"). 1e4 keeps scale·|q·k| finite in fp32 for every input mlactl
      // generates (|q·k| <= 448·448·576 with fp8 q and KV: 1.2e12 at 1e4); vLLM's is 1/sqrt(192)
      if (b.model.softmax_scale > kMaxSoftmaxScale)
        throw invalid_input("/model/softmax_scale", "must be <= 10000 (vLLM uses 1/sqrt(qk head dim), about 0.072), got " + v->dump());
    }
  } else {
    throw invalid_input("/model", "is required (at least model.num_heads)");
  }
  if (b.model.softmax_scale == 0) b.model.softmax_scale = 1.0 / std::sqrt(192.0);

  // requests (before kv_cache/decode: their defaults depend on them)
  const json* reqs = find(doc, "requests");
  if (!reqs) throw invalid_input("/requests", "is required");
  if (!reqs->is_array()) throw invalid_input("/requests", std::string("must be an array, got ") + type_name(*reqs));
  if ((int64_t)reqs->size() > kMaxRequests) throw invalid_input("/requests", "has " + std::to_string(reqs->size()) + " requests, more than " + std::to_string(kMaxRequests));
  int64_t total_kv = 0;
  b.requests.reserve(reqs->size());
  for (size_t i = 0; i < reqs->size(); ++i) {
    const json& r = (*reqs)[i];
    const std::string rp = child("/requests", i);
    require_object(r, rp);
    check_keys(r, rp, {"context_len", "seq_len", "query_len", "padding"});
    Request q;
    if (const json* p = find(r, "padding")) {
      q.padding = get_bool(*p, child(rp, "padding"));
      if (q.padding && r.size() != 1)
        throw invalid_input(rp, "a padding slot is just {\"padding\": true} (seq_len 0, query_len 0)");
    }
    if (!q.padding) {
      const json* c = find(r, "context_len");
      const json* s = find(r, "seq_len");
      const json* ql = find(r, "query_len");
      if (!ql) throw invalid_input(child(rp, "query_len"), "is required");
      q.query_len = get_int(*ql, child(rp, "query_len"), 0, kMaxLen);
      if (q.query_len < 1)
        throw invalid_input(child(rp, "query_len"), "must be >= 1 (a decode request schedules at least one token; use {\"padding\": true} for an empty cudagraph slot)");
      if (c && s) throw invalid_input(rp, "give either context_len or seq_len, not both");
      if (!c && !s) throw invalid_input(child(rp, "context_len"), "is required (or seq_len)");
      if (c) {
        q.context_len = get_int(*c, child(rp, "context_len"), 0, kMaxLen);
      } else {
        const int64_t sl = get_int(*s, child(rp, "seq_len"), 0, kMaxLen);
        if (sl < q.query_len)
          throw invalid_input(child(rp, "seq_len"), "must be >= query_len (" + std::to_string(q.query_len) + "): seq_len = context_len + query_len");
        q.context_len = sl - q.query_len;
      }
      if (q.seq_len() > kMaxLen) throw invalid_input(rp, "seq_len " + std::to_string(q.seq_len()) + " exceeds int32");
      total_kv += q.seq_len();
      if (total_kv > kMaxLen)
        throw invalid_input(rp, "the batch's total KV length exceeds 2^31-1 entries (AITER indices are int32)");
    }
    b.requests.push_back(q);
  }
  // A step with no real request has nothing to attend, verify or compare: every verb
  // would end in an executor or invariant error about nothing (docs/design.md §9).
  if (std::none_of(b.requests.begin(), b.requests.end(), [](const Request& r) { return !r.padding; }))
    throw invalid_input("/requests", b.requests.empty() ? "must hold at least one request" : "holds only padding slots; a decode step needs at least one real request");

  // kv_cache
  bool kv_fp8 = false;
  bool block_size_given = false;
  b.kv_cache.dtype = b.model.dtype;
  if (const json* k = find(doc, "kv_cache")) {
    require_object(*k, "/kv_cache");
    check_keys(*k, "/kv_cache", {"dtype", "scale", "block_size", "layout", "block_table", "num_blocks"});
    if (const json* v = find(*k, "dtype")) {
      std::string s = get_enum(*v, "/kv_cache/dtype", {"auto", "bf16", "fp16", "fp8"});
      b.kv_cache.dtype_auto = s == "auto";
      if (s == "bf16") b.kv_cache.dtype = DType::bf16;
      if (s == "fp16") b.kv_cache.dtype = DType::fp16;
      if (s == "fp8") { b.kv_cache.dtype = DType::fp8; kv_fp8 = true; }
    }
    if (const json* v = find(*k, "scale")) {
      b.kv_cache.scale = get_number(*v, "/kv_cache/scale");
      if (b.kv_cache.scale <= 0) throw invalid_input("/kv_cache/scale", "must be > 0");
    }
    if (const json* v = find(*k, "block_size")) {
      b.kv_cache.block_size = (int)get_int(*v, "/kv_cache/block_size", 1, kMaxBlockSize);
      block_size_given = true;
    }
    if (const json* v = find(*k, "layout")) b.kv_cache.layout = get_enum(*v, "/kv_cache/layout", {"sequential", "shuffled"}) == "sequential" ? KvLayout::sequential : KvLayout::shuffled;
    if (const json* v = find(*k, "num_blocks")) b.kv_cache.num_blocks = get_int(*v, "/kv_cache/num_blocks", 1, kMaxLen);
    if (const json* v = find(*k, "block_table")) {
      const std::string bp = "/kv_cache/block_table";
      if (!v->is_array()) throw invalid_input(bp, std::string("must be an array of lists, got ") + type_name(*v));
      b.kv_cache.explicit_block_table = true;
      for (size_t r = 0; r < v->size(); ++r) {
        const json& row = (*v)[r];
        if (!row.is_array()) throw invalid_input(child(bp, r), std::string("must be an array of block ids, got ") + type_name(row));
        std::vector<int32_t> ids;
        ids.reserve(row.size());
        for (size_t j = 0; j < row.size(); ++j) ids.push_back((int32_t)get_int(row[j], child(child(bp, r), j), 0, kMaxLen - 1));
        b.kv_cache.block_table.push_back(std::move(ids));
      }
    }
  }

  // sm90: vLLM's CUDA platform runs MLA with kernel block size 64 unless told otherwise
  // (FlashMLA accepts only 64; FA3 MLA any multiple of 16), docs/stacks/vllm-cuda.md §C2.
  if (!block_size_given && b.platform.arch == Arch::sm90) b.kv_cache.block_size = 64;

  // decode
  const int64_t maxq = b.max_query_len();
  b.decode.mtp_qlen = std::max<int64_t>(1, maxq);
  bool q_dtype_given = false;
  std::string q_dtype_str;
  bool ndt_given = false, mns_given = false;
  if (const json* d = find(doc, "decode")) {
    require_object(*d, "/decode");
    check_keys(*d, "/decode", {"causal", "small_head_mode", "mtp_qlen", "q_dtype", "num_decode_tokens", "max_num_seqs", "attention_backend", "max_num_splits"});
    if (const json* v = find(*d, "attention_backend")) {
      const std::string s = get_enum(*v, "/decode/attention_backend",
                                     {"FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA", "FLASHMLA_SPARSE", "FLASHINFER_MLA", "CUTLASS_MLA"});
      if (b.platform.arch != Arch::sm90)
        throw invalid_input("/decode/attention_backend", "names a vLLM CUDA backend; it applies to platform.arch \"sm90\" only (this batch is " +
                                                            std::string(to_string(b.platform.arch)) + ")");
      b.decode.attention_backend = attention_backend_from_string(s);
    }
    if (const json* v = find(*d, "max_num_splits")) {
      // FA3's mha_fwd: "num_splits > 256 not supported"
      b.decode.max_num_splits = get_int(*v, "/decode/max_num_splits", 0, 256);
      if (b.platform.arch != Arch::sm90)
        throw invalid_input("/decode/max_num_splits", "is FA3's num_splits (FLASH_ATTN_MLA); it applies to platform.arch \"sm90\" only (this batch is " +
                                                         std::string(to_string(b.platform.arch)) + ")");
    }
    if (const json* v = find(*d, "causal")) b.decode.causal = get_bool(*v, "/decode/causal");
    if (const json* v = find(*d, "small_head_mode")) {
      std::string s = get_enum(*v, "/decode/small_head_mode", {"auto", "gluon", "asm"});
      b.decode.small_head_mode = s == "auto" ? SmallHeadMode::auto_mode : s == "gluon" ? SmallHeadMode::gluon : SmallHeadMode::asm_mode;
    }
    if (const json* v = find(*d, "mtp_qlen")) b.decode.mtp_qlen = get_int(*v, "/decode/mtp_qlen", 1, 1024);
    if (const json* v = find(*d, "q_dtype")) {
      q_dtype_str = get_enum(*v, "/decode/q_dtype", {"fp8", "model"});
      q_dtype_given = true;
    }
    if (const json* v = find(*d, "num_decode_tokens")) {
      b.decode.num_decode_tokens = get_int(*v, "/decode/num_decode_tokens", 0, kMaxLen);
      ndt_given = true;
    }
    if (const json* v = find(*d, "max_num_seqs")) {
      b.decode.max_num_seqs = get_int(*v, "/decode/max_num_seqs", 1, kMaxRequests);
      mns_given = true;
    }
  }
  // a request with query_len > K is a prefill (vLLM's decode/prefill split)
  const json* sparse_doc = find(doc, "sparse");
  for (size_t i = 0; i < b.requests.size(); ++i)
    if (b.requests[i].query_len > b.decode.mtp_qlen && !sparse_doc)
      throw invalid_input(child(child("/requests", i), "query_len"),
                          "is " + std::to_string(b.requests[i].query_len) + ", more than decode.mtp_qlen " +
                              std::to_string(b.decode.mtp_qlen) +
                              ": that request is a prefill, which mlactl models only for sparse batches");
  if (q_dtype_given && q_dtype_str == "fp8" && !kv_fp8)
    throw invalid_input("/decode/q_dtype", "fp8 q needs an fp8 KV cache (vLLM quantizes decode q only when the KV cache is fp8)");
  const bool q_fp8 = q_dtype_given ? q_dtype_str == "fp8" : kv_fp8;
  b.decode.q_dtype = q_fp8 ? DType::fp8 : b.model.dtype;
  b.decode.q_dtype_is_model = !q_fp8;
  if (!ndt_given) b.decode.num_decode_tokens = b.total_query_tokens() + b.decode.mtp_qlen * b.num_padding();
  if (!mns_given) b.decode.max_num_seqs = std::max<int64_t>(1, (int64_t)b.requests.size());
  else if (b.decode.max_num_seqs < (int64_t)b.requests.size())
    throw invalid_input("/decode/max_num_seqs", "is " + std::to_string(b.decode.max_num_seqs) + ", fewer than the batch's " + std::to_string(b.requests.size()) + " requests");
  if (b.decode.num_decode_tokens < b.total_query_tokens())
    throw invalid_input("/decode/num_decode_tokens", "is " + std::to_string(b.decode.num_decode_tokens) + ", fewer than the batch's " + std::to_string(b.total_query_tokens()) + " query tokens");

  if (sparse_doc) parse_sparse(b, *sparse_doc, "/sparse");

  // inject
  if (const json* v = find(doc, "inject")) {
    if (!v->is_array()) throw invalid_input("/inject", std::string("must be an array of defect ids, got ") + type_name(*v));
    for (size_t i = 0; i < v->size(); ++i) {
      std::string id = get_string((*v)[i], child("/inject", i));
      if (!is_known_defect(id)) throw invalid_input(child("/inject", i), "unknown defect id " + shown(id) + " (see `mlactl defects`)");
      if (!b.has_defect(id)) b.inject.push_back(id);
    }
  }
  if (const json* v = find(doc, "captured")) {
    require_object(*v, "/captured");
    check_keys(*v, "/captured", {"qo_indptr", "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len", "min_kv_seq_len", "work_indptr",
                                 "work_info_set", "reduce_indptr", "reduce_final_map", "reduce_partial_map", "tile_scheduler_metadata",
                                 "num_splits", "seq_lens"});
    // captured tensors: an integer, a list of integers, or (work_info_set) a list of rows
    for (auto it = v->begin(); it != v->end(); ++it) {
      const std::string cp = child("/captured", it.key());
      auto check_int = [](const json& x, const std::string& ptr) {
        (void)get_int(x, ptr, std::numeric_limits<int64_t>::min(), std::numeric_limits<int64_t>::max());
      };
      if (!it->is_array()) {
        check_int(*it, cp);
        continue;
      }
      for (size_t i = 0; i < it->size(); ++i) {
        const json& e = (*it)[i];
        if (e.is_array()) {
          for (size_t j = 0; j < e.size(); ++j) {
            if (e[j].is_array()) throw invalid_input(child(child(cp, i), j), "must be an integer, got an array (at most [rows][columns])");
            check_int(e[j], child(child(cp, i), j));
          }
        } else {
          check_int(e, child(cp, i));
        }
      }
    }
    b.captured = *v;
  }
  if (const json* v = find(doc, "expect")) {
    require_object(*v, "/expect");
    check_keys(*v, "/expect", {"route", "error", "windows", "metadata", "schedule", "invariants", "run", "stage1", "tolerance", "findings", "captured"});
    b.expect = *v;
  }

  materialise_block_table(b, "/kv_cache");
  return b;
}

namespace {

// The batch parser's DOM builder: nlohmann's SAX interface, with the depth bound and the
// duplicate-key check done as the tree is built. Why not json::parse with a callback:
// nlohmann's callback DOM parser scans the parent container for a discarded value after
// every object or array it closes (json_sax_dom_callback_parser::end_object/end_array), so
// an array of N request objects cost O(N^2): 10^5 requests took 21 s, 10^6 more than a
// minute. Here every event is O(1) (a key check is O(log keys)), so parsing is linear.
// And copying a parsed value is recursive: a 10 MB file of nested brackets under
// /captured overflowed the stack in parse_batch, hence the depth bound while parsing.
class DomBuilder : public nlohmann::json_sax<json> {
 public:
  explicit DomBuilder(const std::string& source) : source_(source) {}
  json root;

  bool null() override { return add(json(nullptr)); }
  bool boolean(bool v) override { return add(json(v)); }
  bool number_integer(number_integer_t v) override { return add(json(v)); }
  bool number_unsigned(number_unsigned_t v) override { return add(json(v)); }
  bool number_float(number_float_t v, const string_t&) override { return add(json(v)); }
  bool string(string_t& v) override { return add(json(std::move(v))); }
  bool binary(binary_t& v) override { return add(json::binary(std::move(v))); }
  bool start_object(std::size_t) override { return open(json::object(), true); }
  bool start_array(std::size_t) override { return open(json::array(), false); }
  bool end_object() override { return close(); }
  bool end_array() override { return close(); }
  bool key(string_t& k) override {
    Frame& f = stack_.back();
    if (f.ref->contains(k)) {
      f.key = std::move(k);
      throw invalid_input(pointer(stack_.size()), "duplicate key (each key may appear once)");
    }
    f.key = std::move(k);
    return true;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    if (e.id == 406) {
      // a number beyond double's range (1e309): the value being parsed is the next element
      // of the innermost container
      std::string at;
      if (!stack_.empty()) {
        if (!stack_.back().object) ++stack_.back().index;
        at = pointer(stack_.size());
      }
      throw Error(kExitInvalidInput, at.empty() ? "/" : at, strip(e.what()) + " (not a finite number)");
    }
    throw Error(kExitInvalidInput, "", source_ + ": malformed JSON: " + strip(e.what()));
  }

 private:
  struct Frame {
    json* ref = nullptr;
    bool object = false;
    int64_t index = -1;  // arrays: the element last added
    std::string key;     // objects: the current key
  };
  static std::string strip(const std::string& what) {
    // nlohmann's message carries the line and column; strip its "[json.exception...] " prefix
    const auto p = what.find("] ");
    return p == std::string::npos ? what : what.substr(p + 2);
  }
  std::string pointer(size_t levels) const {
    std::string ptr;
    for (size_t i = 0; i < levels && i < stack_.size(); ++i)
      ptr = stack_[i].object ? child(ptr, stack_[i].key) : child(ptr, (size_t)stack_[i].index);
    return ptr;
  }
  json* place(json&& v) {
    if (stack_.empty()) {
      root = std::move(v);
      return &root;
    }
    Frame& f = stack_.back();
    if (f.object) {
      json& slot = (*f.ref)[f.key];
      slot = std::move(v);
      return &slot;
    }
    auto& arr = f.ref->get_ref<json::array_t&>();
    arr.push_back(std::move(v));
    ++f.index;
    return &arr.back();
  }
  bool add(json&& v) {
    place(std::move(v));
    return true;
  }
  bool open(json&& v, bool object) {
    if (stack_.size() >= kMaxJsonDepth) {
      if (!stack_.empty() && !stack_.back().object) ++stack_.back().index;
      std::string at = pointer(8);
      if (stack_.size() > 8) at += "/...";
      throw Error(kExitInvalidInput, "", source_ + ": malformed JSON: nested deeper than " + std::to_string(kMaxJsonDepth) + " levels (at " +
                                             (at.empty() ? "/" : at) + ")");
    }
    json* ref = place(std::move(v));
    stack_.push_back(Frame{ref, object, -1, {}});
    return true;
  }
  bool close() {
    stack_.pop_back();
    return true;
  }
  const std::string& source_;
  std::vector<Frame> stack_;
};

}  // namespace

json parse_json_document(const std::string& text, const std::string& source) {
  DomBuilder dom(source);
  json::sax_parse(text, &dom);
  return std::move(dom.root);
}

Batch parse_batch_text(const std::string& text, const std::string& source) { return parse_batch(parse_json_document(text, source)); }

int64_t max_document_bytes() { return memory_budget() / kDomBytesPerTextByte; }

json load_json_document(const std::string& path) {
  // Bounded before read (docs/design.md §9): `validate /dev/zero` read without end. The
  // text and its DOM must fit the budget, so the file may be at most budget / the DOM's
  // measured bytes per text byte; reading stops one byte past that.
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(kExitInvalidInput, "", path + ": cannot open batch file");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw Error(kExitInvalidInput, "", path + ": is a directory, not a batch file");
  const int64_t limit = max_document_bytes();
  std::string text;
  std::vector<char> buf(1 << 16);
  while (in) {
    in.read(buf.data(), (std::streamsize)buf.size());
    text.append(buf.data(), (size_t)in.gcount());
    if ((int64_t)text.size() > limit)
      throw Error(kExitInvalidInput, "", path + ": the file is larger than " + format_bytes(limit) + ", the most a memory budget of " +
                                             format_bytes(memory_budget()) + " parses (its JSON tree takes about " + std::to_string(kDomBytesPerTextByte) +
                                             " bytes per byte of text; raise it with --max-memory if the machine has the memory)");
  }
  return parse_json_document(text, path);
}

Batch load_batch_file(const std::string& path) { return parse_batch(load_json_document(path)); }

void apply_set(json& doc, const std::string& assignment) {
  const auto eq = assignment.find('=');
  if (eq == std::string::npos || eq == 0)
    throw Error(kExitUsage, "", "--set expects key.path=value, got \"" + assignment + "\"");
  const std::string path = assignment.substr(0, eq);
  const std::string text = assignment.substr(eq + 1);
  json value;
  try {
    value = json::parse(text);
  } catch (const json::parse_error&) {
    value = text;  // a bare word is a string: --set platform.arch=gfx942
  }
  json* cur = &doc;
  std::stringstream ss(path);
  std::string part;
  std::vector<std::string> parts;
  while (std::getline(ss, part, '.')) parts.push_back(part);
  for (size_t i = 0; i < parts.size(); ++i) {
    const std::string& k = parts[i];
    if (k.empty()) throw Error(kExitUsage, "", "--set: empty path component in \"" + path + "\"");
    const bool last = i + 1 == parts.size();
    if (cur->is_array()) {
      char* end = nullptr;
      long idx = std::strtol(k.c_str(), &end, 10);
      if (*end != 0 || idx < 0 || (size_t)idx >= cur->size())
        throw Error(kExitUsage, "", "--set: \"" + k + "\" is not an index of the array at " + path);
      cur = &(*cur)[(size_t)idx];
    } else {
      if (cur->is_null()) *cur = json::object();
      if (!cur->is_object()) throw Error(kExitUsage, "", "--set: cannot descend into a non-object at \"" + k + "\" of " + path);
      cur = &(*cur)[k];
    }
    if (last) *cur = value;
  }
}

}  // namespace mlactl
