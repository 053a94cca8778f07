#include "core/budget.hpp"

#include <atomic>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "core/types.hpp"

namespace mlactl {

namespace {
std::atomic<int64_t> g_budget{kDefaultMemoryBudget};
}

void set_memory_budget(int64_t bytes) { g_budget = bytes; }
int64_t memory_budget() { return g_budget; }

std::string format_bytes(int64_t bytes) {
  char buf[64];
  const double b = (double)bytes;
  if (b >= (1ll << 30)) std::snprintf(buf, sizeof buf, "%.1f GiB", b / (1ll << 30));
  else if (b >= (1ll << 20)) std::snprintf(buf, sizeof buf, "%.1f MiB", b / (1ll << 20));
  else std::snprintf(buf, sizeof buf, "%lld bytes", (long long)bytes);
  return buf;
}

int64_t parse_bytes(const std::string& text) {
  const char* s = text.c_str();
  char* end = nullptr;
  const double v = std::strtod(s, &end);
  if (end == s || !std::isfinite(v) || v <= 0) throw Error(kExitUsage, "", "--max-memory: \"" + text + "\" is not a positive size (e.g. 8G, 512M)");
  std::string unit(end);
  for (auto& c : unit) c = (char)std::tolower((unsigned char)c);
  double mult = 1;
  if (unit.empty() || unit == "b") mult = 1;
  else if (unit == "k" || unit == "kb" || unit == "kib") mult = 1024.0;
  else if (unit == "m" || unit == "mb" || unit == "mib") mult = 1024.0 * 1024;
  else if (unit == "g" || unit == "gb" || unit == "gib") mult = 1024.0 * 1024 * 1024;
  else if (unit == "t" || unit == "tb" || unit == "tib") mult = 1024.0 * 1024 * 1024 * 1024;
  else throw Error(kExitUsage, "", "--max-memory: unknown unit \"" + std::string(end) + "\" (use K, M, G or T)");
  const double bytes = v * mult;
  if (bytes > 9.0e18) throw Error(kExitUsage, "", "--max-memory: \"" + text + "\" is too large");
  return (int64_t)bytes;
}

void require_within_budget(int64_t bytes, const std::string& where, const std::string& what) {
  if (bytes <= memory_budget()) return;
  throw Error(kExitInvalidInput, where,
              "the batch needs about " + format_bytes(bytes) + " for " + what + ", more than the memory budget of " + format_bytes(memory_budget()) +
                  " (raise it with --max-memory if the machine has the memory)");
}

}  // namespace mlactl
