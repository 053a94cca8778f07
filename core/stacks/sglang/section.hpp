// The batch's `sglang` section (docs/stacks/sglang.md §S1-§S11): what SGLang's server
// arguments and ForwardBatch say about a decode step that the generic batch does not —
// the attention backend, the forward mode, the speculative draft shape, the heads per
// rank the router reads and CUDA-graph padding. Parsed by the SGLang stack only.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/batch.hpp"

namespace mlactl::sglang {

// SGLang's --attention-backend names for MLA models (server_args.py ATTENTION_BACKEND_CHOICES,
// docs/stacks/sglang.md §S2); the last three are named only to be refused on sm90 / ROCm.
enum class Backend { fa3, flashmla, flashinfer, triton, aiter, cutlass_mla, trtllm_mla, tokenspeed_mla };
const char* to_string(Backend b);  // SGLang's spelling: "fa3", "flashmla", ...
std::optional<Backend> backend_from_string(const std::string& s);
const std::vector<std::string>& backend_names();

// ForwardMode of the step (forward_batch_info.py): a decode step, EAGLE's target verify
// of the drafts, or the draft model's extend over the accepted tokens.
enum class ForwardMode { decode, target_verify, draft_extend };
const char* to_string(ForwardMode m);  // "decode", "target_verify", "draft_extend"

struct Section : StackSection {
  std::optional<Backend> attention_backend;  // --attention-backend; unset: SGLang's default (§S1)
  ForwardMode forward_mode = ForwardMode::decode;
  // speculative_num_draft_tokens D: query tokens per request in target_verify; the most
  // accepted tokens in draft_extend (steps + 1). Unset when the step is not speculative.
  std::optional<int64_t> num_draft_tokens;
  int64_t speculative_topk = 1;              // speculative_eagle_topk
  int64_t kv_heads_per_rank = 0;             // get_num_kv_heads(tp): resolved, default model.num_heads (§S1)
  bool cuda_graph = false;                   // replayed under a CUDA graph (resolved: true when the batch has padding slots)
  bool deterministic = false;                // --enable-deterministic-inference (FA3 num_splits 1)
  int64_t page_size = 1;                     // kv_cache.block_size as SGLang's --page-size (resolved after R1)
  // model_config.context_len: the Triton backend's split cap reads it (§S13); DeepSeek-V3's
  // max_position_embeddings by default
  int64_t max_context_len = 163840;
  std::vector<std::string> rewrites;         // server_args' rewrites applied (R1: page_size -> 64), in words
};

// The parsed section of a batch whose platform.stack is sglang (always set by parse).
const Section& section_of(const Batch& b);

// Reads `/sglang` (null: every default), checks the requests against the forward mode and
// sets the generic fields SGLang derives: decode.causal, the padding slots' shape (§S11)
// and the page size FlashMLA forces (§S2 R1).
void parse_section(const nlohmann::json* section, bool block_size_given, Batch& b);
nlohmann::ordered_json section_schema();

// ServerArgs._get_default_attn_backend's MLA branch (§S1).
Backend default_backend(const Batch& b, const Section& s);

// get_cuda_graph_seq_len_fill_value() of the backend (§S11): 1, or D for aiter when speculating.
int64_t seq_len_fill_value(Backend backend, const Section& s);

}  // namespace mlactl::sglang
