// The batch file's parser and schema (docs/design.md §2): each field checked as the
// batch's stack reads it (platform.stack on platform.arch, core/stacks/registry.hpp).
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/batch.hpp"

namespace mlactl {

// Parse a batch document. Throws mlactl::Error (exit 3) naming the JSON pointer of the
// offending field.
Batch parse_batch(const nlohmann::json& doc);
// parse_json_document / load_json_document, then parse_batch; `source` names the text in messages.
Batch parse_batch_text(const std::string& text, const std::string& source);
Batch load_batch_file(const std::string& path);

// The fields outside any stack section that only some stacks read (vLLM's knobs where
// batch files have always had them): the JSON pointer and "vllm on sm90"-style readers.
struct StackOwnedFieldInfo {
  std::string pointer;
  std::string read_by;
};
std::vector<StackOwnedFieldInfo> stack_owned_fields();

// A batch document re-aimed at another stack (`schedule --stack A,B`, docs/design.md §1.3):
// `item` is a serving stack ("vllm", "sglang": on the batch's arch), "stack@arch", or a
// modelled stack's id (its serving stack, on the batch's arch when it models it, else its
// first). Fields the target stack does not read and other stacks' sections are dropped, so
// the stack plans the batch with its own defaults. Throws Error (exit 2) for an unknown item.
struct RetargetedDocument {
  nlohmann::json doc;
  std::string arch;  // the arch the document now names
};
RetargetedDocument retarget_batch_document(nlohmann::json doc, const std::string& item);

// The JSON Schema of the batch file (for `mlactl schema`), every stack's section included.
nlohmann::ordered_json batch_json_schema();

}  // namespace mlactl
