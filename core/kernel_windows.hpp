// The KV window each query row gets from the metadata a route's kernel consumes —
// the other side of `windows`' comparison with the oracle (core/semantics.hpp).
#pragma once
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/builder.hpp"
#include "core/router.hpp"
#include "core/semantics.hpp"

namespace mlactl {

struct MetadataWindows {
  std::string path;                  // which metadata the kernel reads, in words
  bool available = false;            // false when the route is refused
  std::vector<int64_t> begin, end;   // per oracle row: KV positions [begin, end) of its request
};

// `rows` is oracle_windows(b). Sparse rows get [0, n) with n = the ragged list length.
MetadataWindows metadata_windows(const Batch& b, const DecodeMetadata& md, Route route, const std::vector<RowWindow>& rows);

// Whether the R0 flatten is needed for this route (it is large: only build it then).
inline bool route_needs_flatten(Route r) { return r == Route::gluon_verify; }

}  // namespace mlactl
