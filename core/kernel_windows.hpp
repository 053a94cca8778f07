// The KV window each query row gets from the metadata a route's kernel consumes —
// the other side of `windows`' comparison with the oracle (core/semantics.hpp). Each
// stack computes it for its routes (Stack::metadata_windows).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mlactl {

struct MetadataWindows {
  std::string path;                  // which metadata the kernel reads, in words
  bool available = false;            // false when the route is refused
  std::vector<int64_t> begin, end;   // per oracle row: KV positions [begin, end) of its request
};

}  // namespace mlactl
