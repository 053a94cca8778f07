// Building blocks of the JSON Schemas mlactl prints: the batch file's (core/batch_schema.cpp)
// and the verbs' output (cli/output_schema.cpp), so both close their objects the same way.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace mlactl::json_schema {

using Props = std::vector<std::pair<std::string, nlohmann::ordered_json>>;

// A closed object (additionalProperties false) whose `required` members every instance has.
inline nlohmann::ordered_json object(const Props& props, const std::vector<std::string>& required) {
  nlohmann::ordered_json o;
  o["type"] = "object";
  o["additionalProperties"] = false;
  nlohmann::ordered_json p = nlohmann::ordered_json::object();
  for (const auto& [k, v] : props) p[k] = v;
  o["properties"] = p;
  if (!required.empty()) o["required"] = required;
  return o;
}

}  // namespace mlactl::json_schema
