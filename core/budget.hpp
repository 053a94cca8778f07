// Memory budget (docs/design.md §9): batches whose metadata, inputs or reference would need
// more than the budget are refused up front (exit 3) with what they would need —
// never an out-of-memory kill or a multi-minute hang.
#pragma once
#include <cstdint>
#include <string>

namespace mlactl {

constexpr int64_t kDefaultMemoryBudget = 4ll << 30;  // 4 GiB: sensible on a laptop

void set_memory_budget(int64_t bytes);
int64_t memory_budget();

// "1.5 GiB"
std::string format_bytes(int64_t bytes);
// Parses "4G", "512M", "64k", "1.5GiB" or plain bytes; throws Error(kExitUsage).
int64_t parse_bytes(const std::string& text);

// Throws Error(kExitInvalidInput, where, ...) when `bytes` exceed the budget.
void require_within_budget(int64_t bytes, const std::string& where, const std::string& what);

}  // namespace mlactl
