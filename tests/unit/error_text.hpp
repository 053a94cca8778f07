// The message of the mlactl::Error an input-checking call throws (Catch2 checks it is exit
// 3, invalid input), or "(no error)": for tests that compare error texts.
#pragma once
#include <catch2/catch.hpp>

#include <functional>
#include <string>

#include "core/types.hpp"

inline std::string invalid_input_text(const std::function<void()>& f) {
  try {
    f();
  } catch (const mlactl::Error& e) {
    CHECK(e.exit_code() == mlactl::kExitInvalidInput);
    return e.what();
  }
  return "(no error)";
}
