// SGLang's attention-backend choice for MLA models and each backend's refusals
// (docs/stacks/sglang.md §S1, §S2), as a predicate chain like the other stacks' routers.
#pragma once
#include <optional>

#include "core/batch.hpp"
#include "core/route.hpp"
#include "core/stacks/sglang/section.hpp"

namespace mlactl::sglang {

// The route of the batch's backend (named, or SGLang's default), or SGLang's refusal.
// `forced` is --kernel: a route id this stack answers with, standing for the backend that
// runs it.
RouteDecision route_sglang(const Batch& b, std::optional<Route> forced);

// The kernel route a backend runs for the batch's forward mode (nullopt: refused before).
std::optional<Route> backend_route(Backend backend, const Batch& b);

// AITER's MLA flags as aiter_backend.py sets them (§S8): the persistent (planned) kernel
// or the non-persistent one, the padded heads.
struct AiterFlags {
  int padded_heads = 16;
  bool persistent = true;   // _use_mla_ps_kernel
  bool fast_mode = false;
  bool intra_batch_mode = true;
};
AiterFlags aiter_flags(const Batch& b);

}  // namespace mlactl::sglang
