// The one name -> enum lookup of the kernels' option enums (CombineMode,
// WgmmaSchedule, Fp8QkMma): each enum has its list of values and its to_string;
// the CLI parses through the enum's own *_from_name (cli/common.hpp enum_names).
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace mla {

// The value among `values` whose to_string is `name`; nullopt for other names.
template <class E, size_t N>
std::optional<E> enum_from_name(const E (&values)[N], const std::string& name) {
  for (E v : values)
    if (name == to_string(v)) return v;
  return std::nullopt;
}

}  // namespace mla
