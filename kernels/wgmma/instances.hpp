// The warpgroup launches as the dispatch table (kernels/wgmma/dispatch.hip) sees them:
// declarations only, so the table's translation unit compiles no kernel. Each is
// defined in kernels/wgmma/launch.cuh and instantiated in one of
// kernels/wgmma/instances/*.hip, one file a dtype path, so a parallel build spreads them.
#pragma once
#include <string>

#include "kernels/mla_decode.hpp"

namespace mla {
namespace wg {

using Launch = bool (*)(const Stage1Params&, Stage1Ran*, std::string*);

// The row-major kernel: operands fp16 (F16) or bf16, head_dim HD, P rounded once (P1).
template <bool F16, int HD, bool P1>
bool launch_rows(const Stage1Params& p, Stage1Ran* ran, std::string* error);
// The transposed kernel: F16 operands, HD, fp8 KV (KV8), Q·Kᵀ on e4m3 (E4M3), P·V on
// e4m3 (PV8), K converted in registers (KREG), P rounded once (P1).
template <bool F16, int HD, bool KV8, bool E4M3, bool PV8, bool KREG, bool P1>
bool launch_transposed(const Stage1Params& p, Stage1Ran* ran, std::string* error);

}  // namespace wg
}  // namespace mla
