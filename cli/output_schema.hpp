// JSON Schemas (draft 2020-12) of what the verbs print with --format json (and check's
// --format jsonl lines): `mlactl schema --output VERB` (docs/design.md §6). One shape per
// concept: the route object, a plan, a compare report, a captured diff and the error
// document are each defined once under $defs and referenced by every verb that prints
// them. tests/cli/check_output_schemas.py validates every verb's JSON against these.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlactl::cli {

// The names `schema --output` takes: the verbs that write JSON, then "check-jsonl" (one
// line of `check --format jsonl`) and "error" (the error document of every verb).
const std::vector<std::string>& output_schema_names();

// The schema of one name above; std::nullopt for any other name.
std::optional<nlohmann::ordered_json> output_json_schema(const std::string& name);

// Vocabularies the schemas list, defined next to their enums (cli/cmd_check.cpp,
// cli/cmd_bench.cpp).
std::vector<std::string> case_status_names();
std::vector<std::string> bench_status_names();

}  // namespace mlactl::cli
