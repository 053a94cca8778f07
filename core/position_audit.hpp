// Position audit (docs/design.md §5): from the work list under the kernel's view, the exact
// KV positions each non-padding (request, token, head) reads, compared with the
// oracle window. Numeric tolerances cannot see a window one token too long; this can.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/batch.hpp"
#include "core/plan.hpp"
#include "core/semantics.hpp"

namespace mlactl {

struct AuditRow {
  int64_t row = -1;        // oracle row
  int request = -1;
  int64_t token = -1;
  std::vector<int> heads;  // raw heads affected
  int64_t extra = 0;       // entries read outside the window (or twice, or of another request)
  int64_t missing = 0;     // window positions never read
  std::string detail;      // e.g. "reads positions [1, 8) past its window [0, 1)"
};

struct PositionAudit {
  bool ok = true;
  int64_t rows_checked = 0;
  int64_t bad_rows = 0;               // oracle rows with any bad head
  std::vector<AuditRow> bad;          // first `max_listed`
  int64_t stray_q_rows = 0;           // kernel q rows written that map to no oracle row
  std::vector<std::string> errors;    // structural problems (index out of range, ...)
};

PositionAudit audit_positions(const Batch& b, const std::vector<RowWindow>& rows, const RoutePlan& plan, int64_t max_listed = 20);

// "[1, 8), 12" style summary of sorted positions.
std::string summarize_positions(const std::vector<int64_t>& sorted, size_t max_ranges = 6);

}  // namespace mlactl
