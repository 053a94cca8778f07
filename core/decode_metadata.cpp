#include "core/decode_metadata.hpp"

namespace mlactl {

int64_t token_slot(const Batch& b, int request, int64_t position) {
  const int64_t Kb = b.kv_cache.block_size;
  return (int64_t)b.kv_cache.block_table[request][position / Kb] * Kb + position % Kb;
}

}  // namespace mlactl
