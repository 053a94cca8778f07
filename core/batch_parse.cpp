// Strict parser of the batch file (docs/design.md §2). Every error names the JSON pointer
// of the field and exits 3; unknown keys are errors. The batch's stack (platform.stack on
// platform.arch, core/stacks/registry.hpp) decides its own fields and section.
#include "core/batch_parse.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <sstream>

#include "core/budget.hpp"
#include "core/defects.hpp"
#include "core/json_fields.hpp"
#include "core/rng.hpp"
#include "core/stacks/registry.hpp"

namespace mlactl {

using nlohmann::json;
using namespace json_fields;

namespace {

// Hard bounds that keep every later array within int32 (AITER's index type) and
// reject absurd inputs up front (docs/design.md §9). The memory budget proper lives in the CLI.
constexpr int64_t kMaxRequests = kMaxBatchRequests;
constexpr int64_t kMaxLen = std::numeric_limits<int32_t>::max();
// vLLM's uniform decode query length K (decode.mtp_qlen) and a request's query_len share
// one bound: mtp_qlen defaults to the longest query_len (issue 39: query_len took up to
// 2^31 - 1, mtp_qlen 1024)
constexpr int64_t kMaxQueryLen = 1024;
constexpr int kMaxHeads = 1024;
constexpr int kMaxBlockSize = 1 << 16;
constexpr double kMaxSoftmaxScale = 1e4;

DType parse_dtype(const json& v, const std::string& ptr) {
  std::string s = get_enum(v, ptr, {"bf16", "fp16"});
  return s == "bf16" ? DType::bf16 : DType::fp16;
}

// Fields outside any stack section that only some stacks read (vLLM's knobs, kept where
// batch files have always had them, docs/design.md §2): a batch whose stack does not read
// one is refused naming it, never silently ignored. `what` opens the message.
struct StackOwnedField {
  const char* pointer;
  const char* what;
};
constexpr StackOwnedField kStackOwnedFields[] = {
    {"/platform/aiter", "is the AITER rules version"},
    {"/platform/aiter_has_causal_arg", "is whether vLLM passes AITER's causal argument"},
    {"/decode/causal", "is vLLM's causal flag (a non-causal draft block)"},
    {"/decode/small_head_mode", "is VLLM_ROCM_AITER_MLA_ASM_PADDING"},
    {"/decode/mtp_qlen", "is vLLM's uniform decode query length K"},
    {"/decode/num_decode_tokens", "is vLLM's num_decode_tokens"},
    {"/decode/max_num_seqs", "is vLLM's max_num_seqs"},
    {"/decode/attention_backend", "names a vLLM CUDA backend"},
    {"/decode/max_num_splits", "is FA3's num_splits (FLASH_ATTN_MLA)"},
    {"/sparse", "is a vLLM sparse (FLASHMLA_SPARSE / AITER sparse) batch"},
    {"/captured/tile_scheduler_metadata", "is a vLLM CUDA (FlashMLA) array"},
    {"/captured/num_splits", "is a vLLM CUDA (FlashMLA) array"},
    {"/captured/seq_lens", "is a vLLM CUDA (FlashMLA) array"},
};

// "vllm on sm90": the modelled stacks that read `pointer`.
std::string readers_of(const std::string& pointer) {
  std::string out;
  for (const Stack* st : all_stacks()) {
    if (!st->reads_field(pointer)) continue;
    std::string arches;
    for (Arch a : st->arches()) arches += std::string(arches.empty() ? "" : "/") + to_string(a);
    out += std::string(out.empty() ? "" : " and ") + to_string(st->serving()) + " on " + arches;
  }
  return out.empty() ? "no modelled stack" : out;
}

void check_stack_owned_fields(const json& doc, const Batch& b, const Stack& stack) {
  for (const StackOwnedField& f : kStackOwnedFields) {
    if (!doc.contains(json::json_pointer(f.pointer)) || stack.reads_field(f.pointer)) continue;
    throw invalid_input(f.pointer, std::string(f.what) + "; only " + readers_of(f.pointer) + " reads it (this batch is " +
                                       to_string(b.platform.stack) + " on " + to_string(b.platform.arch) + ")");
  }
}

}  // namespace

std::vector<StackOwnedFieldInfo> stack_owned_fields() {
  std::vector<StackOwnedFieldInfo> out;
  for (const StackOwnedField& f : kStackOwnedFields) out.push_back({f.pointer, readers_of(f.pointer)});
  return out;
}

namespace {

// The cache's size, once num_blocks is known and before anything is sized by it: a token
// slot (block id × block_size + offset) must fit the int32 slot indices the stacks use
// (issue 39: a slot past int32 became a negative paged_kv_indices entry), and the explicit
// table's per-block maps (8 bytes a block, below) must fit the budget (2^31 - 1 blocks
// took 16 GiB before it was looked at). The per-slot maps of run, check and bench are
// counted where they are made (core/pipeline.cpp). The field named is the one the user gave.
void check_cache_size(const Batch::KvCache& kv, const std::string& ptr, bool num_blocks_given) {
  const std::string field = child(ptr, num_blocks_given ? "num_blocks" : "block_size");
  const int64_t slots = kv.num_blocks * (int64_t)kv.block_size;
  if (slots > kMaxLen)
    throw invalid_input(field, "num_blocks × block_size = " + std::to_string(kv.num_blocks) + " × " + std::to_string(kv.block_size) + " = " +
                                   std::to_string(slots) + " KV token slots, more than the int32 slot indices of the stacks hold (2147483647)");
  if (kv.explicit_block_table)
    require_within_budget(kv.num_blocks * 8, field, "the per-block maps of its " + std::to_string(kv.num_blocks) + " KV blocks");
}

void materialise_block_table(Batch& b, const std::string& ptr) {
  auto& kv = b.kv_cache;
  const bool num_blocks_given = kv.num_blocks != 0;
  const int64_t Kb = kv.block_size;
  const int64_t pad_rows = b.padding_kv_len();
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
    check_cache_size(kv, ptr, num_blocks_given);
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
    check_cache_size(kv, ptr, num_blocks_given);
    return;
  }
  // shuffled: a seeded permutation of the blocks (data.seed, placement stream)
  int64_t total = 0;
  for (const auto& r : b.requests) total += needed_blocks(r);
  if (total > kMaxLen) throw invalid_input(child(ptr, "layout"), "the batch needs " + std::to_string(total) + " blocks, more than int32 block ids hold");
  if (kv.num_blocks == 0) kv.num_blocks = total;
  else if (kv.num_blocks < total)
    throw invalid_input(child(ptr, "num_blocks"), "is " + std::to_string(kv.num_blocks) + " but the batch needs " + std::to_string(total) + " blocks");
  check_cache_size(kv, ptr, num_blocks_given);
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
  std::vector<std::string> top_keys = {"schema", "name", "description", "platform", "model", "kv_cache", "decode",
                                       "requests", "sparse", "data", "inject", "captured", "expect"};
  for (const Stack* st : all_stacks())
    if (auto k = st->section_key(); k && std::find(top_keys.begin(), top_keys.end(), *k) == top_keys.end()) top_keys.push_back(*k);
  check_keys(doc, "", top_keys);
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
    check_keys(*p, "/platform", {"stack", "arch", "num_cu", "aiter", "vllm", "aiter_has_causal_arg"});
    if (const json* v = find(*p, "stack"))
      b.platform.stack = get_enum(*v, "/platform/stack", {"vllm", "sglang"}) == "vllm" ? ServingStack::vllm : ServingStack::sglang;
    if (const json* v = find(*p, "arch")) {
      const std::string a = get_enum(*v, "/platform/arch", {"gfx942", "gfx950", "sm90"});
      b.platform.arch = a == "gfx942" ? Arch::gfx942 : a == "sm90" ? Arch::sm90 : Arch::gfx950;
    }
    if (const json* v = find(*p, "num_cu")) {
      b.platform.num_cu = (int)get_int(*v, "/platform/num_cu", 1, 4096);
      num_cu_given = true;
    }
    if (const json* v = find(*p, "aiter")) {
      // Rule sets known only from their pull requests' descriptions: refused, never guessed
      // (docs/stacks/vllm-rocm-aiter.md §A5.5).
      if (v->is_string()) {
        const std::string name = v->get<std::string>();
        if (name == "2026.08+4899+5212")
          throw invalid_input("/platform/aiter",
                              "rule set 2026.08+4899+5212 is read about, not read: ROCm/aiter#5212 (merged) replaces #4899's "
                              "split count with one scaled by the machine width (its description: e = sqrt(W * num_clusters)); "
                              "its merged code was not available here, so mlactl does not model it");
        if (name == "2026.08+4899+5212+5582")
          throw invalid_input("/platform/aiter",
                              "rule set 2026.08+4899+5212+5582 is read about, not read: ROCm/aiter#5582 (merged) adds a gfx950 "
                              "bf16 qh96 persistent kernel with planner changes for 48/80/96/128 heads; its merged code was not "
                              "available here, so mlactl does not model it");
      }
      const std::string r = get_enum(*v, "/platform/aiter", {"2026.08", "2026.08+4899"});
      b.platform.aiter = r == "2026.08" ? AiterRules::r2026_08 : AiterRules::r2026_08_pr4899;
    }
    if (const json* v = find(*p, "vllm"))
      b.platform.vllm = get_enum(*v, "/platform/vllm", {"R1", "R1+57642"}) == "R1" ? VllmRules::r1 : VllmRules::r1_pr57642;
    if (const json* v = find(*p, "aiter_has_causal_arg")) b.platform.aiter_has_causal_arg = get_bool(*v, "/platform/aiter_has_causal_arg");
  }
  // CUs of MI300X/MI325X (gfx942), MI355X (gfx950); SMs of H100/H200/H800 (sm90)
  if (!num_cu_given) b.platform.num_cu = b.platform.arch == Arch::gfx942 ? 304 : b.platform.arch == Arch::sm90 ? 132 : 256;
  // the modelled stack: the serving stack on this hardware (core/stacks/registry.hpp)
  const Stack& stack = stack_for_platform(b.platform.stack, b.platform.arch);
  check_stack_owned_fields(doc, b, stack);
  for (const Stack* st : all_stacks()) {
    const auto key = st->section_key();
    if (key && *key != stack.section_key().value_or("") && doc.contains(*key))
      throw invalid_input("/" + *key, std::string("is the ") + to_string(st->serving()) + " stack's section; this batch is " +
                                          to_string(b.platform.stack) + " on " + to_string(b.platform.arch) + " (set platform.stack)");
  }

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
      // each stack's own rule: vLLM ROCm AITER's head counts, any positive count elsewhere
      // (docs/stacks/vllm-cuda.md §C3, docs/stacks/sglang.md §S2 R7 is a route's refusal)
      if (auto e = stack.num_heads_error(n)) throw invalid_input("/model/num_heads", *e);
      if (n < 1) throw invalid_input("/model/num_heads", "must be >= 1");
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
      q.query_len = get_int(*ql, child(rp, "query_len"), 0, kMaxQueryLen);
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
      // the kernels and the reference take it as fp32 (as softmax_scale): 1e39 was inf, every
      // KV value NaN, and the executor blamed for it (issue 39)
      if (b.kv_cache.scale > (double)std::numeric_limits<float>::max() || b.kv_cache.scale < (double)std::numeric_limits<float>::min())
        throw invalid_input("/kv_cache/scale", "must be within fp32's normal range (1.2e-38 to 3.4e38): the kernels take it as fp32");
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

  // the stack's default page size (vLLM CUDA: 64, docs/stacks/vllm-cuda.md §C2; SGLang:
  // 1, docs/stacks/sglang.md §S2)
  if (!block_size_given) b.kv_cache.block_size = stack.default_block_size();

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
      b.decode.attention_backend = attention_backend_from_string(s);
    }
    if (const json* v = find(*d, "max_num_splits")) {
      // FA3's mha_fwd: "num_splits > 256 not supported"
      b.decode.max_num_splits = get_int(*v, "/decode/max_num_splits", 0, 256);
    }
    if (const json* v = find(*d, "causal")) b.decode.causal = get_bool(*v, "/decode/causal");
    if (const json* v = find(*d, "small_head_mode")) {
      std::string s = get_enum(*v, "/decode/small_head_mode", {"auto", "gluon", "asm"});
      b.decode.small_head_mode = s == "auto" ? SmallHeadMode::auto_mode : s == "gluon" ? SmallHeadMode::gluon : SmallHeadMode::asm_mode;
    }
    if (const json* v = find(*d, "mtp_qlen")) b.decode.mtp_qlen = get_int(*v, "/decode/mtp_qlen", 1, kMaxQueryLen);
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
      if (!is_known_defect(id)) throw invalid_input(child("/inject", i), "unknown defect id " + shown(id) + defect_suggestion(id) + " (see `mlactl defects`)");
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
    check_keys(*v, "/expect", {"route", "error", "windows", "metadata", "schedule", "invariants", "run", "stage1", "tolerance", "findings", "known_faults",
                                 "stack_findings", "captured"});
    b.expect = *v;
  }

  // the stack's section last but for the block table: it may set the page size its
  // backend forces (SGLang's FlashMLA: 64, docs/stacks/sglang.md §S2 R1)
  if (const auto key = stack.section_key()) {
    const json* section = find(doc, key->c_str());
    stack.parse_section(section, block_size_given, b);
    if (section) b.stack_section_doc = *section;
  }
  materialise_block_table(b, "/kv_cache");
  return b;
}


Batch parse_batch_text(const std::string& text, const std::string& source) { return parse_batch(parse_json_document(text, source)); }

Batch load_batch_file(const std::string& path) { return parse_batch(load_json_document(path)); }

RetargetedDocument retarget_batch_document(nlohmann::json doc, const std::string& item) {
  std::string arch = "gfx950";
  if (doc.contains("platform") && doc["platform"].is_object() && doc["platform"].contains("arch") && doc["platform"]["arch"].is_string())
    arch = doc["platform"]["arch"].get<std::string>();
  std::string serving = item, want_arch;
  if (const size_t at = item.find('@'); at != std::string::npos) {
    serving = item.substr(0, at);
    want_arch = item.substr(at + 1);
  }
  const Stack* target = nullptr;
  for (const Stack* st : all_stacks()) {
    if (to_string(st->id()) == serving && want_arch.empty()) {
      // a modelled stack's id: its serving stack, on the batch's arch if it models it
      target = st;
      serving = to_string(st->serving());
      bool has = false;
      for (Arch a : st->arches()) has = has || arch == to_string(a);
      want_arch = has ? arch : to_string(st->arches().front());
    }
  }
  if (want_arch.empty()) want_arch = arch;
  if (serving != "vllm" && serving != "sglang")
    throw Error(kExitUsage, "", "--stack " + item + ": not a serving stack (vllm, sglang), stack@arch, or a modelled stack's id");
  doc["platform"]["stack"] = serving;
  doc["platform"]["arch"] = want_arch;
  if (!target)
    for (const Stack* st : all_stacks())
      if (serving == to_string(st->serving()))
        for (Arch a : st->arches())
          if (want_arch == to_string(a)) target = st;  // none: parse_batch names /platform/stack
  if (target) {
    for (const StackOwnedFieldInfo& f : stack_owned_fields()) {
      const nlohmann::json::json_pointer ptr(f.pointer);
      if (!target->reads_field(f.pointer) && doc.contains(ptr)) doc[ptr.parent_pointer()].erase(ptr.back());
    }
    for (const Stack* st : all_stacks())
      if (const auto key = st->section_key(); key && key != target->section_key()) doc.erase(*key);
  }
  return {std::move(doc), want_arch};
}

}  // namespace mlactl
