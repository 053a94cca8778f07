// What this binary is: version, git commit and the executors it was built with
// (`mlactl --version`, the JSON envelope's `tool`; docs/design.md §6). The source is
// generated at build time by cmake/build_info.cmake.
#pragma once

namespace mlactl::cli {

struct BuildInfo {
  const char* version;   // the project version (CMakeLists.txt)
  const char* commit;    // git rev-parse --short=12 HEAD, "-dirty" with local changes; "unknown" outside git
  const char* backends;  // "cpu", then e.g. "cuda sm_90a" or "hip gfx90a;gfx942"
};
const BuildInfo& build_info();

}  // namespace mlactl::cli
