// Findings in the modelled stack: places where the upstream code mlactl models itself plans
// reads outside a row's causal window (or skips part of it). A run that fails on one is the
// stack's finding, not an executor fault (issue 38 item 5, docs/findings.md "Findings in the
// modelled stack"). One table: the name a fixture expects, the rule, the upstream lines.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mlactl {

enum class StackFindingId {
  aiter_tile_trim,              // causal trim counts q tiles, not tokens
  aiter_fold_trim,              // the trim under a head fold is non-zero
  aiter_negative_kv_range,      // the trim exceeds a request's KV: kv_end < kv_start
  vllm_sparse_dtypes_omitted,   // vLLM's sparse builder plans bf16/bf16 over fp8
  sglang_aiter_noncausal_plan,  // SGLang plans is_causal False, the kernel masks causally
};

struct StackFindingInfo {
  StackFindingId id;
  const char* name;      // "aiter-tile-trim": what a fixture's expect.stack_findings names
  const char* rule;      // the rule in words
  const char* upstream;  // repo/path@commit and lines
  const char* doc;       // where mlactl writes it up
};
const std::vector<StackFindingInfo>& stack_finding_table();
const StackFindingInfo& stack_finding_info(StackFindingId id);
std::optional<StackFindingId> stack_finding_from_name(const std::string& name);
// "finding in the modelled stack: aiter-tile-trim: RULE (UPSTREAM)": the line every verb prints.
std::string stack_finding_text(StackFindingId id);

}  // namespace mlactl
