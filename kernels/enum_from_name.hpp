// The one name <-> enum lookup of the kernels' option enums (CombineMode,
// WgmmaSchedule, Fp8QkMma, Fp8PvMma, Fp8Copy): each enum has its list of values and
// a list of names in the same order; to_string and *_from_name look them up here,
// and the CLI parses through *_from_name (cli/common.hpp enum_names).
#pragma once
#include <cstddef>
#include <optional>
#include <string>

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

}  // namespace mla
