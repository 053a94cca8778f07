// JSON Schema (draft 2020-12) of the batch file and the canonical serialisation.
#include <cmath>

#include "core/batch.hpp"
#include "core/batch_parse.hpp"
#include "core/defects.hpp"
#include "core/json_schema.hpp"
#include "core/stacks/registry.hpp"

namespace mlactl {

using ojson = nlohmann::ordered_json;

namespace {
ojson obj(std::initializer_list<std::pair<const char*, ojson>> props, std::initializer_list<const char*> required = {}) {
  json_schema::Props p;
  for (auto& kv : props) p.emplace_back(kv.first, kv.second);
  return json_schema::object(p, std::vector<std::string>(required.begin(), required.end()));
}
ojson en(std::initializer_list<const char*> vals, const char* def, const char* desc) {
  ojson o;
  o["enum"] = ojson::array();
  for (auto* v : vals) o["enum"].push_back(v);
  if (def) o["default"] = def;
  o["description"] = desc;
  return o;
}
ojson integer(int64_t mn, const char* desc, ojson def = nullptr) {
  ojson o{{"type", "integer"}, {"minimum", mn}, {"description", desc}};
  if (!def.is_null()) o["default"] = def;
  return o;
}
ojson boolean(bool def, const char* desc) { return ojson{{"type", "boolean"}, {"default", def}, {"description", desc}}; }
ojson str(const char* desc) { return ojson{{"type", "string"}, {"description", desc}}; }
// the defect ids come from the one catalog (core/defects)
ojson defect_enum() {
  ojson o;
  o["enum"] = ojson::array();
  for (const auto& d : defect_catalog()) o["enum"].push_back(d.id);
  o["description"] = "defect id (docs/design.md §7; `mlactl defects`)";
  return o;
}
}  // namespace

ojson batch_json_schema() {
  ojson s;
  s["$schema"] = "https://json-schema.org/draft/2020-12/schema";
  s["$id"] = "https://mlactl.dev/schema/batch-1.json";
  s["title"] = "mlactl batch file, schema 1";
  ojson request = ojson{{"oneOf", ojson::array({
      obj({{"context_len", integer(0, "KV committed before this step")}, {"query_len", integer(1, "tokens scheduled this step")}}, {"context_len", "query_len"}),
      obj({{"seq_len", integer(0, "context_len + query_len")}, {"query_len", integer(1, "tokens scheduled this step")}}, {"seq_len", "query_len"}),
      obj({{"padding", ojson{{"const", true}, {"description", "a cudagraph padding slot: seq_len 0, query_len 0"}}}}, {"padding"}),
  })}};
  ojson top = obj({
      {"schema", ojson{{"const", 1}}},
      {"name", str("case id")},
      {"description", str("free text")},
      {"platform", obj({{"stack", en({"vllm", "sglang"}, "vllm", "the serving stack the batch comes from; with arch it picks the modelled stack")},
                        {"arch", en({"gfx942", "gfx950", "sm90"}, "gfx950",
                                    "the hardware: gfx942 (MI300X/MI325X), gfx950 (MI355X), sm90 (H100/H200/H800)")},
                        {"num_cu", integer(1, "CUs (SMs on sm90) the planners plan for [304 on gfx942, 256 on gfx950, 132 on sm90]")},
                        {"aiter", en({"2026.08", "2026.08+4899"}, "2026.08+4899",
                                      "AITER rule set: 2026.08 (commit e4048607), 2026.08+4899 (with #4899's adaptive split count, 7975419d89)")},
                        {"vllm", en({"R1", "R1+57642"}, "R1",
                                     "vLLM ROCm AITER rule set: R1 (baae27c5), R1+57642 (with #57642's guard: gfx942 bf16 q_len > 4 non-persistent)")},
                        {"aiter_has_causal_arg", boolean(true, "mla_decode_fwd takes causal=")}})},
      {"model", obj({{"num_heads", integer(1, "query heads per rank (1..128, or a multiple of 16)")},
                     {"kv_lora_rank", ojson{{"const", 512}, {"default", 512}}},
                     {"qk_rope_head_dim", ojson{{"const", 64}, {"default", 64}}},
                     {"dtype", en({"bf16", "fp16"}, "bf16", "q and output dtype")},
                     {"softmax_scale", ojson{{"type", "number"}, {"exclusiveMinimum", 0}, {"description", "[1/sqrt(192)]"}}}},
                    {"num_heads"})},
      {"kv_cache", obj({{"dtype", en({"auto", "bf16", "fp16", "fp8"}, "auto", "fp8 flavour follows the arch")},
                        {"scale", ojson{{"type", "number"}, {"exclusiveMinimum", 0}, {"default", 1.0}}},
                        {"block_size", integer(1, "vLLM kernel block size Kb [1; 64 on sm90]", 1)},
                        {"layout", en({"sequential", "shuffled"}, "shuffled", "block placement when no block_table is given")},
                        {"block_table", ojson{{"type", "array"}, {"items", ojson{{"type", "array"}, {"items", ojson{{"type", "integer"}, {"minimum", 0}}}}}}},
                        {"num_blocks", integer(1, "blocks allocated per layer")}})},
      {"decode", obj({{"causal", boolean(true, "false = non-causal draft block")},
                      {"small_head_mode", en({"auto", "gluon", "asm"}, "auto", "VLLM_ROCM_AITER_MLA_ASM_PADDING")},
                      {"mtp_qlen", integer(1, "K, the reorder threshold [max query_len]")},
                      {"q_dtype", en({"fp8", "model"}, nullptr, "[fp8 when the KV cache is fp8, else model]")},
                      {"num_decode_tokens", integer(0, "tokens of the (cudagraph-padded) step")},
                      {"max_num_seqs", integer(1, "sizes the AITER buffers")},
                      {"attention_backend", en({"FLASH_ATTN_MLA", "FLASHMLA", "TRITON_MLA", "FLASHMLA_SPARSE", "FLASHINFER_MLA", "CUTLASS_MLA"}, nullptr,
                                               "sm90 only: force vLLM's attention backend (--attention-backend); unset = vLLM's priority list")},
                      {"max_num_splits", integer(0, "sm90 FLASH_ATTN_MLA: num_splits vLLM passes to FA3 (flash_attn_max_num_splits_for_cuda_graph under full cudagraph; 0 = eager, FA3's heuristic) [0]")}})},
      {"requests", ojson{{"type", "array"}, {"items", request}}},
      {"sparse", obj({{"topk", integer(1, "top-k KV positions per token")},
                      {"geometry", en({"rope", "rope_free"}, "rope", "rope_free: head_size 512")},
                      {"indices", ojson{{"oneOf", ojson::array({ojson{{"const", "random"}},
                                                                 ojson{{"type", "array"}, {"items", ojson{{"type", "array"}, {"items", ojson{{"type", "integer"}, {"minimum", -1}}}}}}})}}}},
                     {"topk"})},
      {"data", obj({{"seed", integer(0, "seed for q, KV, placement and sparse indices", 0)}})},
      {"inject", ojson{{"type", "array"}, {"items", defect_enum()}}},
      {"captured", ojson{{"type", "object"}, {"description", "arrays captured from a real run (AITER/vLLM names)"}}},
      {"expect",
       ojson{{"type", "object"},
             {"description", "expectations for `mlactl check` (docs/design.md §6)"},
             {"properties",
              ojson{{"route", ojson{{"type", "string"}, {"description", "the route id"}}},
                    {"error", ojson{{"type", "string"}, {"description", "a substring of the refusal or input error"}}},
                    {"findings", ojson{{"type", "array"}, {"items", ojson{{"type", "string"}}}}},
                    {"known_faults", ojson{{"type", "array"}, {"items", ojson{{"type", "string"}}},
                                           {"description", "ids of docs/known_faults.md the route lands on, exactly (aiter-5679, ...)"}}},
                    {"stack_findings", ojson{{"type", "array"}, {"items", ojson{{"type", "string"}}},
                                             {"description", "findings in the modelled stack the route's plan makes, exactly (aiter-tile-trim, ...)"}}},
                    {"windows", ojson{{"type", "array"}, {"items", ojson{{"type", "integer"}}}, {"description", "KV entries per row the kernel's metadata gives"}}},
                    {"metadata", ojson{{"type", "object"}, {"description", "a subset of `metadata --format json`"}}},
                    {"schedule", ojson{{"type", "object"}, {"description", "a subset of one plan of `schedule --format json`"}}},
                    {"invariants", ojson{{"enum", {"ok", "broken"}}}},
                    {"captured", ojson{{"description", "\"matches\", or {\"field\": F, \"index\": I}: the first difference"}}},
                    {"run",
                     ojson{{"description", "what `run` concludes; an incorrect run names its cause"},
                           {"oneOf", ojson::array({ojson{{"enum", {"passed", "incorrect", "refused"}}},
                                                   ojson{{"type", "object"},
                                                         {"required", {"status"}},
                                                         {"properties", ojson{{"status", ojson{{"enum", {"passed", "incorrect", "refused"}}}},
                                                                              {"reason", ojson{{"enum", {"captured plan", "position audit", "non-finite", "numeric", "cross check"}}}}}}}})}}},
                    {"stage1",
                     ojson{{"type", "object"},
                           {"description",
                            "the stage-1 kernel the GPU executor must report for `run` (any of kernel, schedule, precision, by the names "
                            "`run --format json` prints under stage1; check validates them); not checked after the CPU executor"},
                           {"properties", ojson{{"kernel", ojson{{"type", "string"}}}, {"schedule", ojson{{"type", "string"}}}, {"precision", ojson{{"type", "string"}}}}},
                           {"additionalProperties", false}}},
                    {"tolerance", ojson{{"type", "object"}, {"description", "atol, rtol, cos_tol overrides for `run`"}}}}}}},
  }, {"schema", "model", "requests"});
  // each stack's own section, and which stacks read the fields kept outside any section
  for (const Stack* st : all_stacks())
    if (const auto key = st->section_key()) top["properties"][*key] = st->section_schema();
  for (const StackOwnedFieldInfo& f : stack_owned_fields()) {
    ojson* node = &top;
    std::string rest = f.pointer.substr(1);
    while (!rest.empty() && node) {
      const size_t slash = rest.find('/');
      const std::string key = rest.substr(0, slash);
      rest = slash == std::string::npos ? "" : rest.substr(slash + 1);
      node = node->contains("properties") && (*node)["properties"].contains(key) ? &(*node)["properties"][key] : nullptr;
    }
    if (node) (*node)["x-read-by"] = f.read_by;  // a field another stack's batch may not give
  }
  for (auto it = top.begin(); it != top.end(); ++it) s[it.key()] = it.value();
  return s;
}

ojson batch_to_json(const Batch& b) {
  ojson o;
  o["schema"] = 1;
  if (!b.name.empty()) o["name"] = b.name;
  if (!b.description.empty()) o["description"] = b.description;
  // only the fields the batch's stack reads, so the document parses back to this batch
  const Stack& stack = stack_for(b);
  o["platform"] = {{"stack", to_string(b.platform.stack)}, {"arch", to_string(b.platform.arch)}, {"num_cu", b.platform.num_cu}};
  if (stack.reads_field("/platform/aiter")) o["platform"]["aiter"] = to_string(b.platform.aiter);
  if (stack.reads_field("/platform/vllm")) o["platform"]["vllm"] = to_string(b.platform.vllm);
  if (stack.reads_field("/platform/aiter_has_causal_arg")) o["platform"]["aiter_has_causal_arg"] = b.platform.aiter_has_causal_arg;
  o["model"] = {{"num_heads", b.model.num_heads}, {"kv_lora_rank", b.model.kv_lora_rank}, {"qk_rope_head_dim", b.model.qk_rope_head_dim},
                {"dtype", to_string(b.model.dtype)}, {"softmax_scale", b.model.softmax_scale}};
  o["kv_cache"] = {{"dtype", b.kv_cache.dtype_auto ? "auto" : to_string(b.kv_cache.dtype)}, {"scale", b.kv_cache.scale},
                   {"block_size", b.kv_cache.block_size}, {"block_table", b.kv_cache.block_table}, {"num_blocks", b.kv_cache.num_blocks}};
  o["decode"] = {{"q_dtype", b.decode.q_dtype_is_model ? "model" : "fp8"}};
  auto put = [&](const char* key, const ojson& v) {
    if (stack.reads_field(std::string("/decode/") + key)) o["decode"][key] = v;
  };
  put("causal", b.decode.causal);
  put("small_head_mode", to_string(b.decode.small_head_mode));
  put("mtp_qlen", b.decode.mtp_qlen);
  put("num_decode_tokens", b.decode.num_decode_tokens);
  put("max_num_seqs", b.decode.max_num_seqs);
  if (b.decode.attention_backend) put("attention_backend", to_string(*b.decode.attention_backend));
  if (b.decode.max_num_splits > 0) put("max_num_splits", b.decode.max_num_splits);
  ojson reqs = ojson::array();
  for (const auto& r : b.requests) {
    if (r.padding) reqs.push_back({{"padding", true}});
    else reqs.push_back({{"context_len", r.context_len}, {"query_len", r.query_len}});
  }
  o["requests"] = reqs;
  if (b.sparse) {
    ojson sp = {{"topk", b.sparse->topk}, {"geometry", b.sparse->geometry == SparseGeometry::rope ? "rope" : "rope_free"}};
    if (b.sparse->random_indices) sp["indices"] = "random";
    else sp["indices"] = b.sparse->indices;
    o["sparse"] = sp;
  }
  o["data"] = {{"seed", b.seed}};
  if (!b.inject.empty()) o["inject"] = b.inject;
  if (const auto key = stack.section_key(); key && !b.stack_section_doc.is_null()) o[*key] = b.stack_section_doc;
  if (!b.captured.is_null()) o["captured"] = b.captured;
  if (!b.expect.is_null()) o["expect"] = b.expect;
  return o;
}

}  // namespace mlactl
