// The strict readers of batch fields (docs/design.md §2) that core/batch.cpp and every
// stack's own section (core/stack.hpp parse_section) use: each error names the field's
// JSON pointer and exits 3, and unknown keys are errors.
#pragma once
#include <cstdint>
#include <initializer_list>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/types.hpp"

namespace mlactl::json_fields {

using nlohmann::json;

// ptr + "/" + key, RFC 6901-escaped; ptr + "/" + i.
std::string child(const std::string& ptr, const std::string& key);
std::string child(const std::string& ptr, size_t i);
// A user string echoed in a message, quoted, and cut so a 10 MB value still gives
// a readable line: "abc" or "abcd..." (10485760 bytes).
std::string shown(const std::string& s);
const char* type_name(const json& v);  // "an object", "an integer", ...
void require_object(const json& v, const std::string& ptr);
void check_keys(const json& obj, const std::string& ptr, std::initializer_list<const char*> allowed);
void check_keys(const json& obj, const std::string& ptr, const std::vector<std::string>& allowed);
int64_t get_int(const json& v, const std::string& ptr, int64_t lo, int64_t hi);
double get_number(const json& v, const std::string& ptr);
bool get_bool(const json& v, const std::string& ptr);
std::string get_string(const json& v, const std::string& ptr);
std::string get_enum(const json& v, const std::string& ptr, std::initializer_list<const char*> choices);
std::string get_enum(const json& v, const std::string& ptr, const std::vector<std::string>& choices);
// The member `key` of an object, or nullptr.
const json* find(const json& obj, const char* key);

}  // namespace mlactl::json_fields
