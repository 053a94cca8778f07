#include "core/stacks/sglang/section.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>

#include "core/draft_tree.hpp"
#include "core/json_fields.hpp"

namespace mlactl::sglang {

using namespace json_fields;

namespace {

constexpr Backend kBackends[] = {Backend::fa3,         Backend::flashmla,   Backend::flashinfer,    Backend::triton,
                                 Backend::aiter,       Backend::cutlass_mla, Backend::trtllm_mla, Backend::tokenspeed_mla};

// The request's query_len field, for messages.
std::string query_len_ptr(size_t i) { return "/requests/" + std::to_string(i) + "/query_len"; }

}  // namespace

const char* to_string(Backend b) {
  switch (b) {
    case Backend::fa3: return "fa3";
    case Backend::flashmla: return "flashmla";
    case Backend::flashinfer: return "flashinfer";
    case Backend::triton: return "triton";
    case Backend::aiter: return "aiter";
    case Backend::cutlass_mla: return "cutlass_mla";
    case Backend::trtllm_mla: return "trtllm_mla";
    case Backend::tokenspeed_mla: return "tokenspeed_mla";
  }
  return "?";
}

std::optional<Backend> backend_from_string(const std::string& s) {
  for (Backend b : kBackends)
    if (s == to_string(b)) return b;
  return std::nullopt;
}

const std::vector<std::string>& backend_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> n;
    for (Backend b : kBackends) n.push_back(to_string(b));
    return n;
  }();
  return names;
}

const char* to_string(ForwardMode m) {
  switch (m) {
    case ForwardMode::decode: return "decode";
    case ForwardMode::target_verify: return "target_verify";
    case ForwardMode::draft_extend: return "draft_extend";
  }
  return "?";
}

const Section& section_of(const Batch& b) {
  const auto* s = dynamic_cast<const Section*>(b.stack_section.get());
  if (!s) throw std::logic_error("an SGLang batch without its parsed sglang section");
  return *s;
}

Backend default_backend(const Batch& b, const Section& s) {
  // is_hopper_with_cuda_12_3 -> fa3; is_hip -> aiter for 16 or 128 kv heads per rank, else triton
  if (b.platform.arch == Arch::sm90) return Backend::fa3;
  return s.kv_heads_per_rank == 16 || s.kv_heads_per_rank == 128 ? Backend::aiter : Backend::triton;
}

int64_t seq_len_fill_value(Backend backend, const Section& s) {
  // aiter_backend.py get_cuda_graph_seq_len_fill_value: the draft count when speculating
  if (backend == Backend::aiter && s.num_draft_tokens) return *s.num_draft_tokens;
  return 1;
}

void parse_section(const nlohmann::json* doc, bool block_size_given, Batch& b) {
  auto s = std::make_shared<Section>();
  const std::string p = "/sglang";
  if (doc) {
    require_object(*doc, p);
    check_keys(*doc, p, {"attention_backend", "forward_mode", "num_draft_tokens", "speculative_topk", "kv_heads_per_rank", "cuda_graph",
                         "deterministic", "max_context_len", "draft_trees"});
    if (const json* v = find(*doc, "attention_backend"))
      s->attention_backend = backend_from_string(get_enum(*v, p + "/attention_backend", backend_names()));
    if (const json* v = find(*doc, "forward_mode")) {
      const std::string m = get_enum(*v, p + "/forward_mode", {"decode", "target_verify", "draft_extend"});
      s->forward_mode = m == "decode" ? ForwardMode::decode : m == "target_verify" ? ForwardMode::target_verify : ForwardMode::draft_extend;
    }
    if (const json* v = find(*doc, "num_draft_tokens")) s->num_draft_tokens = get_int(*v, p + "/num_draft_tokens", 1, 1024);
    if (const json* v = find(*doc, "speculative_topk")) s->speculative_topk = get_int(*v, p + "/speculative_topk", 1, 1024);
    if (const json* v = find(*doc, "kv_heads_per_rank")) s->kv_heads_per_rank = get_int(*v, p + "/kv_heads_per_rank", 1, 1024);
    if (const json* v = find(*doc, "cuda_graph")) s->cuda_graph = get_bool(*v, p + "/cuda_graph");
    if (const json* v = find(*doc, "deterministic")) s->deterministic = get_bool(*v, p + "/deterministic");
    if (const json* v = find(*doc, "max_context_len")) s->max_context_len = get_int(*v, p + "/max_context_len", 1, std::numeric_limits<int32_t>::max());
  }
  // get_num_kv_heads(tp) of a DeepSeek-style config equals the q heads per rank (§S1)
  if (s->kv_heads_per_rank == 0) s->kv_heads_per_rank = b.model.num_heads;
  const bool has_padding = b.num_padding() > 0;
  if (has_padding && doc && doc->contains("cuda_graph") && !s->cuda_graph)
    throw invalid_input(p + "/cuda_graph", "is false but the batch has padding slots: SGLang pads only a CUDA-graph replay (cuda_graph_runner.py)");
  if (has_padding) s->cuda_graph = true;

  // The forward mode fixes the query tokens per request (§S3).
  int64_t max_q = 0;
  for (size_t i = 0; i < b.requests.size(); ++i)
    if (!b.requests[i].padding) max_q = std::max(max_q, b.requests[i].query_len);
  switch (s->forward_mode) {
    case ForwardMode::decode:
      for (size_t i = 0; i < b.requests.size(); ++i)
        if (!b.requests[i].padding && b.requests[i].query_len != 1)
          throw invalid_input(query_len_ptr(i), "is " + std::to_string(b.requests[i].query_len) +
                                                    "; a decode step schedules one token per request (sglang.forward_mode target_verify or draft_extend take more)");
      break;
    case ForwardMode::target_verify: {
      // every request verifies the same D drafts (EagleVerifyInput.draft_token_num)
      const int64_t d = s->num_draft_tokens.value_or(max_q);
      for (size_t i = 0; i < b.requests.size(); ++i)
        if (!b.requests[i].padding && b.requests[i].query_len != d)
          throw invalid_input(query_len_ptr(i), "is " + std::to_string(b.requests[i].query_len) + "; target_verify runs " + std::to_string(d) +
                                                    " draft tokens per request (sglang.num_draft_tokens" + (s->num_draft_tokens ? "" : ", here the largest query_len") + ")");
      s->num_draft_tokens = d;
      break;
    }
    case ForwardMode::draft_extend: {
      // num_accept_tokens = num_correct_drafts + 1, at most steps + 1 = D (eagle_info.py)
      const int64_t d = s->num_draft_tokens.value_or(max_q);
      for (size_t i = 0; i < b.requests.size(); ++i)
        if (!b.requests[i].padding && b.requests[i].query_len > d)
          throw invalid_input(query_len_ptr(i), "is " + std::to_string(b.requests[i].query_len) + ", more than sglang.num_draft_tokens " +
                                                    std::to_string(d) + " (accepted tokens are at most the drafts)");
      s->num_draft_tokens = d;
      break;
    }
  }
  if (s->speculative_topk > 1 && s->forward_mode != ForwardMode::target_verify)
    throw invalid_input(p + "/speculative_topk", "is " + std::to_string(s->speculative_topk) +
                                                     "; a draft tree is verified in target_verify (sglang.forward_mode), the other modes run topk 1 rows");
  // topk > 1: each request's draft tree (parent indices, docs/stacks/sglang.md §S10), one
  // list per request in order (null for a padding slot)
  const json* trees = doc ? find(*doc, "draft_trees") : nullptr;
  if (trees && s->speculative_topk == 1)
    throw invalid_input(p + "/draft_trees", "is a topk > 1 tree verify's; sglang.speculative_topk is 1 (the drafts are a chain)");
  if (s->speculative_topk > 1) {
    if (!trees) throw invalid_input(p + "/draft_trees", "is required for speculative_topk > 1: one {\"parents\": [...]} per request (token 0 the root, -1)");
    if (!trees->is_array() || trees->size() != b.requests.size())
      throw invalid_input(p + "/draft_trees", "must be an array with one {\"parents\": [...]} per request (" + std::to_string(b.requests.size()) + ")");
    for (size_t i = 0; i < b.requests.size(); ++i) {
      const std::string tp = p + "/draft_trees/" + std::to_string(i);
      const json& t = (*trees)[i];
      if (b.requests[i].padding) {
        if (!t.is_null()) throw invalid_input(tp, "must be null: request " + std::to_string(i) + " is a padding slot");
        continue;
      }
      require_object(t, tp);
      check_keys(t, tp, {"parents"});
      const json* par = find(t, "parents");
      if (!par) throw invalid_input(tp + "/parents", "is required: the parent of each draft token (token 0 the root: -1)");
      if (!par->is_array()) throw invalid_input(tp + "/parents", std::string("must be an array of parent indices, got ") + type_name(*par));
      DraftTree tree;
      for (size_t j = 0; j < par->size(); ++j) tree.parents.push_back((int32_t)get_int((*par)[j], tp + "/parents/" + std::to_string(j), -1, 1 << 20));
      validate_draft_tree(tree, b.requests[i].query_len, tp);
      b.requests[i].draft_parents = tree.parents;
    }
  }

  // SGLang's rows are causal in every mode, aligned to the end of the KV (§S9); a decode
  // row of one token sees its whole request either way.
  b.decode.causal = true;

  // The backend the router will take, for what the server arguments rewrite (§S2 R1/R2)
  // and the padding fill (§S11).
  const Backend backend = s->attention_backend.value_or(default_backend(b, *s));
  int64_t forced_page = 0;
  if (backend == Backend::flashmla) forced_page = 64;     // R1
  if (backend == Backend::cutlass_mla) forced_page = 128;  // R2
  if (forced_page && b.kv_cache.block_size != forced_page) {
    if (block_size_given)
      s->rewrites.push_back(std::string(backend == Backend::flashmla ? "FlashMLA only supports a page_size of 64, change page_size to 64."
                                                                     : "Cutlass MLA only supports a page_size of 128, change page_size to 128.") +
                            " (kv_cache.block_size " + std::to_string(b.kv_cache.block_size) + " -> " + std::to_string(forced_page) + ")");
    if (b.kv_cache.explicit_block_table)
      throw invalid_input("/kv_cache/block_table", "is laid out in blocks of " + std::to_string(b.kv_cache.block_size) + " but SGLang's " +
                                                       to_string(backend) + " runs page_size " + std::to_string(forced_page) + " (server_args.py)");
    b.kv_cache.block_size = (int)forced_page;
  }
  s->page_size = b.kv_cache.block_size;

  // A padding slot (§S11): seq_lens filled with the backend's fill value; its query rows
  // are the mode's (1, D drafts, steps + 1 accepted); verify adds the drafts to the KV.
  const int64_t fill = seq_len_fill_value(backend, *s);
  Batch::PaddingShape pad;
  pad.query_len = s->forward_mode == ForwardMode::decode ? 1 : *s->num_draft_tokens;
  pad.kv_len = s->forward_mode == ForwardMode::target_verify ? fill + *s->num_draft_tokens : fill;
  b.padding_shape = pad;
  b.stack_section = s;
}

nlohmann::ordered_json section_schema() {
  nlohmann::ordered_json backends = nlohmann::ordered_json::array();
  for (const auto& n : backend_names()) backends.push_back(n);
  return {
      {"type", "object"},
      {"description", "SGLang's own fields (platform.stack \"sglang\" only), docs/stacks/sglang.md"},
      {"additionalProperties", false},
      {"properties",
       {{"attention_backend", {{"enum", backends}, {"description", "--attention-backend; default: fa3 on sm90, aiter (16 or 128 kv heads per rank) or triton on ROCm"}}},
        {"forward_mode", {{"enum", {"decode", "target_verify", "draft_extend"}}, {"default", "decode"}}},
        {"num_draft_tokens", {{"type", "integer"}, {"minimum", 1}, {"description", "speculative_num_draft_tokens D (default: the largest query_len)"}}},
        {"speculative_topk", {{"type", "integer"}, {"minimum", 1}, {"default", 1}}},
        {"kv_heads_per_rank", {{"type", "integer"}, {"minimum", 1}, {"description", "get_num_kv_heads(tp); default model.num_heads"}}},
        {"cuda_graph", {{"type", "boolean"}, {"description", "a CUDA-graph replay (default: true when the batch has padding slots)"}}},
        {"deterministic", {{"type", "boolean"}, {"default", false}}},
        {"draft_trees", {{"type", "array"}, {"description", "speculative_topk > 1: per request {\"parents\": [...]}, the parent of each draft token (token 0 the root: -1); null for a padding slot"}}},
        {"max_context_len", {{"type", "integer"}, {"minimum", 1}, {"default", 163840}, {"description", "model_config.context_len (the Triton backend's split cap)"}}}}}};
}

}  // namespace mlactl::sglang
