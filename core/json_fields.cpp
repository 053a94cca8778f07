#include "core/json_fields.hpp"

#include <cmath>
#include <limits>

namespace mlactl::json_fields {

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

namespace {
constexpr size_t kMaxShown = 64;  // longest user string echoed whole
}  // namespace

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
  check_keys(obj, ptr, std::vector<std::string>(allowed.begin(), allowed.end()));
}

void check_keys(const json& obj, const std::string& ptr, const std::vector<std::string>& allowed) {
  for (auto it = obj.begin(); it != obj.end(); ++it) {
    bool ok = false;
    for (const std::string& a : allowed)
      if (it.key() == a) ok = true;
    if (!ok) {
      std::string list;
      for (const std::string& a : allowed) list += std::string(list.empty() ? "" : ", ") + a;
      throw invalid_input(child(ptr, it.key().size() <= kMaxShown ? it.key() : it.key().substr(0, kMaxShown) + "..."), "unknown key (allowed here: " + list + ")");
    }
  }
}

namespace {
// A bound as a person reads it: a power of two says so, "2147483647 (2^31 - 1)" (issue 39);
// small bounds as they are.
std::string limit_text(int64_t x) {
  if (x == std::numeric_limits<int64_t>::max()) return std::to_string(x) + " (2^63 - 1)";
  if (x == std::numeric_limits<int64_t>::min()) return std::to_string(x) + " (-2^63)";
  for (int k = 31; k <= 62; ++k) {
    const int64_t p = int64_t(1) << k;
    if (x == p - 1) return std::to_string(x) + " (2^" + std::to_string(k) + " - 1)";
    if (x == p) return std::to_string(x) + " (2^" + std::to_string(k) + ")";
    if (x == -p) return std::to_string(x) + " (-2^" + std::to_string(k) + ")";
  }
  return std::to_string(x);
}
}  // namespace

int64_t get_int(const json& v, const std::string& ptr, int64_t lo, int64_t hi) {
  int64_t x = 0;
  // unsigned first: is_number_integer() is also true for unsigned values, and 2^63
  // read as int64_t wraps to a negative number
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u > (uint64_t)std::numeric_limits<int64_t>::max()) throw invalid_input(ptr, "must be <= " + limit_text(hi));
    x = (int64_t)u;
  } else if (v.is_number_integer()) {
    x = v.get<int64_t>();
  } else if (v.is_number_float()) {
    double d = v.get<double>();
    if (!std::isfinite(d) || d != std::floor(d)) throw invalid_input(ptr, "must be an integer, got " + v.dump());
    if (d < (double)lo) throw invalid_input(ptr, "must be >= " + limit_text(lo));
    if (d > (double)hi) throw invalid_input(ptr, "must be <= " + limit_text(hi));
    x = (int64_t)d;
  } else {
    throw invalid_input(ptr, std::string("must be an integer, got ") + type_name(v));
  }
  if (x < lo) throw invalid_input(ptr, "must be >= " + limit_text(lo));
  if (x > hi) throw invalid_input(ptr, "must be <= " + limit_text(hi));
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
  return get_enum(v, ptr, std::vector<std::string>(choices.begin(), choices.end()));
}

std::string get_enum(const json& v, const std::string& ptr, const std::vector<std::string>& choices) {
  std::string s = get_string(v, ptr);
  std::string list;
  for (const std::string& c : choices) {
    if (s == c) return s;
    list += std::string(list.empty() ? "" : ", ") + c;
  }
  throw invalid_input(ptr, "must be one of " + list + ", got " + shown(s));
}

const json* find(const json& obj, const char* key) {
  auto it = obj.find(key);
  return it == obj.end() ? nullptr : &*it;
}

}  // namespace mlactl::json_fields
