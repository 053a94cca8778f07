// `windows --format svg`: each query row's oracle KV window against the window the routed
// kernel's metadata gives it (docs/design.md §6). Plain SVG written here: one lane per
// query row, the oracle window a grey bar over its KV positions [begin, end), the
// metadata's window a thinner bar over it, green where they agree and red (svg::kAlarm)
// where they differ; padding rows are labelled, not drawn.
#pragma once
#include <string>
#include <vector>

#include "core/kernel_windows.hpp"
#include "core/semantics.hpp"

namespace mlactl::cli {

// Rows drawn at most; a larger batch draws its first rows and says how many it left out
// (the JSON and CSV have every row).
constexpr size_t kWindowsSvgMaxRows = 512;

struct WindowsPicture {
  std::string case_name;
  std::string route;          // the route id the metadata is for
  std::string metadata_path;  // MetadataWindows::path
  const std::vector<RowWindow>* rows = nullptr;
  const MetadataWindows* metadata = nullptr;
  const std::vector<bool>* mismatch = nullptr;  // per row, as `windows` flags it
  int64_t mismatched_rows = 0;
};

std::string windows_svg(const WindowsPicture& p);

}  // namespace mlactl::cli
