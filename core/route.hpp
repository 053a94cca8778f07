// A routing decision, whichever stack made it: the route id, the predicate chain
// that led there, or the exact error the modelled stack raises (docs/design.md §4).
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace mlactl {

// Route ids of every modelled stack (a stack routes to its own subset; triton_mla is
// shared where the semantics agree).
enum class Route {
  gluon_decode,
  gluon_verify,
  asm_persistent,
  asm_nonpersistent,
  triton_mla,
  sparse_triton,
  aiter_sparse,
  // vLLM CUDA (sm90), docs/stacks/vllm-cuda.md
  flash_attn_mla,
  flashmla,
  flashmla_sparse,
  // SGLang (docs/stacks/sglang.md): FlashInfer's MLA kernel (BatchMLAPagedAttentionWrapper)
  // and SGLang's Triton extend kernel (verify / draft_extend over prefix + extend part)
  flashinfer_mla,
  triton_extend,
  refused,
};
const char* to_string(Route r);
std::optional<Route> route_from_string(const std::string& s);

struct Predicate {
  std::string name;   // e.g. "use_gluon_decode"
  std::string value;  // "true", "false", a number, a string
  std::string why;    // short reason
};

// A fault reported upstream inside the kernel the route runs (docs/known_faults.md): a
// warning, not a finding of the modelled stack.
struct KnownFaultWarning {
  std::string id;       // "aiter-5679"
  std::string warning;  // "gfx942 mla_a16w16_qh16_m32x4 at q_len 8: wrong output reported upstream, ROCm/aiter #5679"
  std::string link;     // the upstream thread
  std::string state;    // "open", "closed", ...
};
// "known kernel fault: WARNING (LINK)": the one line every verb and format prints.
std::string known_fault_text(const KnownFaultWarning& w);

struct RouteDecision {
  Route route = Route::refused;
  bool persistent_schedule = false;
  int padded_heads = 0;           // heads the kernel sees (after padding), 0 when refused early
  std::string aiter_rules = "2026.08";
  std::string aiter_kernel;       // AITER .co kernel name the shape would run on, or ""
  std::string error;              // exact error text when refused (and for kernel lookup failures)
  std::string error_type;         // "ValueError", "RuntimeError", "AssertionError", ...
  std::vector<Predicate> chain;   // predicates with values, in evaluation order
  std::vector<std::string> findings;  // e.g. "silent fallback"
  std::vector<KnownFaultWarning> known_faults;  // upstream kernel faults the batch lands on
  std::string backend;            // vLLM CUDA: the attention backend's name (FLASHMLA, ...), "" elsewhere
};

// "ErrorType: error" of a refused decision ("" otherwise): the one text every verb shows.
std::string refusal_text(const RouteDecision& d);

}  // namespace mlactl
