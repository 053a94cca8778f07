// The one name <-> enum lookup of the kernels' enums (kernels/stage1_kernel.hpp): each
// enum has its list of values and a list of names in the same order; to_string and
// *_from_name look them up here (MLA_ENUM_NAMES writes both), and the CLI parses
// through *_from_name (cli/common.hpp enum_names).
#pragma once
#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace mla {

// names[i] for values[i] == v ("unknown" for a value outside the list).
template <class E, size_t N>
constexpr const char* enum_name(const E (&values)[N], const char* const (&names)[N], E v) {
  for (size_t i = 0; i < N; ++i)
    if (values[i] == v) return names[i];
  return "unknown";
}

// The value among `values` whose to_string is `name`; nullopt for other names.
template <class E, size_t N>
std::optional<E> enum_from_name(const E (&values)[N], const std::string& name) {
  for (E v : values)
    if (name == to_string(v)) return v;
  return std::nullopt;
}

// The names of `values` in order, but `skip` (e.g. a request-only value such as automatic,
// which nothing reports as having run): schema enums and expectation checks.
template <class E, size_t N>
std::vector<std::string> names_of(const char* const (&names)[N], const E (&values)[N],
                                  std::optional<E> skip = std::nullopt) {
  std::vector<std::string> v;
  for (size_t i = 0; i < N; ++i)
    if (!skip || values[i] != *skip) v.push_back(names[i]);
  return v;
}

}  // namespace mla

// to_string(E) and FROM_NAME(name) of enum E over its VALUES and NAMES arrays.
#define MLA_ENUM_NAMES(E, VALUES, NAMES, FROM_NAME)                                      \
  inline const char* to_string(E v) { return ::mla::enum_name(VALUES, NAMES, v); }      \
  inline std::optional<E> FROM_NAME(const std::string& name) { return ::mla::enum_from_name(VALUES, name); }
