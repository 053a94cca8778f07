// AITER ASM MLA decode kernel selection at the modelled rule set (aiter 2026.08,
// commit e4048607): the mla.py head->batch fold (docs/stacks/vllm-rocm-aiter.md
// §A5.1) and the kernel-config key plus manifest lookup of asm_mla.cu (§A5.2).
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "core/route.hpp"
#include "core/types.hpp"

namespace mlactl {

// AITER kernel lookup (docs/stacks/vllm-rocm-aiter.md §A5.2) as data.
struct AiterKernelQuery {
  Arch arch = Arch::gfx950;
  DType q_dtype = DType::bf16;
  DType kv_dtype = DType::bf16;
  int heads = 16;       // gqa after the §A5.1 fold
  int q_len = 1;
  bool persistent = true;
  bool causal = true;
  bool lse = false;
};
struct AiterKernelLookup {
  bool found = false;
  std::string kernel;   // .co name
  std::string error;    // "cannot get heuristic kernel!" when not found
  std::string key;      // the manifest key searched (or why none was built), for the chain
};
AiterKernelLookup lookup_aiter_kernel(const AiterKernelQuery& q);


// What aiter/mla.py does to the head count before launching the persistent
// kernel (§A5.1). `ok` is false where mla.py asserts (a head count that is neither
// native nor a multiple of 16).
struct MlaPyFold {
  bool ok = true;
  bool native = true;
  int ratio = 1;       // head->batch fold ratio
  int gqa = 16;        // heads per q row the kernel sees
  std::string why;     // which §A5.1 clause decided
};
MlaPyFold mla_py_head_fold(Arch arch, int heads, int q_len, bool q_fp8, bool kv_fp8);

// One manifest key of hsa/<arch>/mla/mla_asm.csv (§A5.2); prefill is always 0
// for decode and cprr is not modelled (vLLM R1 dense decode without DCP).
struct AiterKernelKey {
  Arch arch = Arch::gfx950;
  DType q = DType::bf16;   // bf16 or fp8 (fp16 has no rows)
  DType kv = DType::bf16;
  int gqa = 16;
  bool ps = true;
  bool causal = true;
  int q_seqlen = 1;
  bool lse = false;
};
std::string to_string(const AiterKernelKey& k);

// get_heuristic_kernel_mla's key construction (§A5.2 "How the lookup key is
// built", per-gqa rules then the gfx950 persistent overrides). nullopt where
// AITER errors before the table is searched; `why` says which rule fired.
std::optional<AiterKernelKey> aiter_kernel_key(const AiterKernelQuery& q, std::string* why = nullptr);

// A manifest row: its key and the .co kernel (name without the ".co" suffix).
struct AiterKernelRow {
  AiterKernelKey key;
  const char* kernel;
};
// The per-arch persistent and non-persistent decode rows (§A5.2), as data.
const std::vector<AiterKernelRow>& aiter_kernel_table();

// get_mla_metadata_v1's head fold and q tiling (docs/stacks/vllm-rocm-aiter.md §A2, §A5.1,
// §A5.3): the planner plans with it and the kernel view is built from it.
struct AiterFold {
  bool native = true;
  int ratio = 1;         // head->batch fold
  int heads = 16;        // heads per q row after the fold
  int wg = 128;          // kPackedQoLenPerWg
  bool qo_splits = false;
};
AiterFold aiter_fold(Arch arch, int num_heads, int max_seqlen_qo, bool q_fp8, bool kv_fp8, bool experimental);
// q tokens per tile of the folded metadata: all max_seqlen_qo tokens unless the planner
// splits q, then one token when two head groups overflow a workgroup's packed rows, else
// kPackedQoLenPerWg / heads (§A5.1).
int aiter_q_tokens_per_tile(const AiterFold& f, int64_t max_seqlen_qo);

// Faults reported upstream inside the kernel a batch routes onto (docs/known_faults.md): the
// metadata is right, the kernel is not, so no model of the planner can see them. The table is
// data (known_fault_table); each row that matches the batch's kernel is one warning.
enum class KnownFaultId { aiter_5679, aiter_2720, aiter_3095, aiter_5040 };
enum class KernelEntry { any, persistent, nonpersistent };
struct KnownFaultEntry {
  KnownFaultId id = KnownFaultId::aiter_5679;
  const char* name = "";    // "aiter-5679": the row of docs/known_faults.md
  const char* report = "";  // "ROCm/aiter #5679"
  const char* link = "";    // the upstream thread
  const char* state = "";   // "open", "closed", as the thread stood when read
  std::optional<AiterRules> fixed_in;  // the first rule set holding the fix: none warns from it on
  std::optional<Arch> arch;            // nullopt: any arch
  KernelEntry entry = KernelEntry::any;
  bool bf16_only = false;              // q and KV both bf16
  const char* kernel_prefix = "";      // the kernel's name starts with it ("" any)
  int heads = 0;                       // heads mla_decode_fwd is given (0 any)
  int q_len_min = 1, q_len_max = 1 << 30;
  bool q_len_not_pow2 = false;         // max_seqlen_q is not a power of 2
  bool page_size_over_1 = false;
  const char* fault = "";              // what goes wrong, as the thread reports it
};
const std::vector<KnownFaultEntry>& known_fault_table();

struct KnownFaultQuery {
  Arch arch = Arch::gfx950;
  std::string kernel;  // the manifest kernel the route runs (AiterKernelLookup::kernel)
  bool persistent = true;
  int q_len = 1;       // max_seqlen_q the kernel is launched with
  int heads = 16;      // heads given to mla_decode_fwd (after vLLM's padding)
  int page_size = 1;   // vLLM's AITER backend views the cache as page size 1
  DType q_dtype = DType::bf16, kv_dtype = DType::bf16;
  AiterRules rules = AiterRules::r2026_08;
};
struct KnownFaultHit {
  KnownFaultId id;
  std::string name;     // "aiter-5679"
  std::string warning;  // "gfx942 mla_a16w16_qh16_m32x4 at q_len 8: wrong output reported upstream, ROCm/aiter #5679"
  std::string link;
  std::string state;
};
std::vector<KnownFaultHit> known_kernel_faults(const KnownFaultQuery& q);
// The hits as the route decision carries them (core/route.hpp): what every stack's router
// that launches an AITER kernel adds to its RouteDecision.
std::vector<KnownFaultWarning> known_fault_warnings(const KnownFaultQuery& q);
// The same over another table (tests hold the fixed-in rule to a row of their own).
std::vector<KnownFaultHit> known_kernel_faults(const KnownFaultQuery& q, const std::vector<KnownFaultEntry>& table);

// The text AITER raises when no manifest row matches.
inline constexpr const char* kNoHeuristicKernel = "cannot get heuristic kernel!";

}  // namespace mlactl
