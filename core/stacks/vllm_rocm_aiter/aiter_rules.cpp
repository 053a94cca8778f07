// AITER ASM MLA decode kernel selection as data (docs/stacks/vllm-rocm-aiter.md
// §A5.1, §A5.2; rule set aiter 2026.08 = commit e4048607).
#include "core/stacks/vllm_rocm_aiter/aiter_rules.hpp"

#include <algorithm>
#include <sstream>

namespace mlactl {

namespace {

bool is_fp8(DType d) { return d == DType::fp8; }

}  // namespace

MlaPyFold mla_py_head_fold(Arch arch, int heads, int q_len, bool q_fp8, bool kv_fp8) {
  MlaPyFold f;
  f.gqa = heads;
  const bool fp8_fp8 = q_fp8 && kv_fp8;
  const bool bf16_bf16 = !q_fp8 && !kv_fp8;
  const bool g942 = arch == Arch::gfx942;
  const bool g950 = arch == Arch::gfx950;
  // The native (no fold) clauses of mla.py's persistent path, §A5.1 in order.
  // The experimental HK clauses are left out: AITER_ENABLE_EXPERIMENTAL is off.
  const char* native_why = nullptr;
  if (heads == 16) native_why = "H == 16";
  else if (g942 && fp8_fp8 && heads == 128) native_why = "gfx942 fp8/fp8 H == 128";
  else if (g950 && fp8_fp8 && (heads == 32 || heads == 64 || heads == 128)) native_why = "gfx950 fp8/fp8 H in {32,64,128}";
  else if (g942 && fp8_fp8 && heads == 64 && q_len == 1) native_why = "gfx942 fp8/fp8 H == 64, L == 1";
  else if (g950 && fp8_fp8 && heads == 8 && q_len == 4) native_why = "gfx950 fp8/fp8 H == 8, L == 4";
  else if (g942 && bf16_bf16 && heads == 8 && q_len == 2) native_why = "gfx942 bf16/bf16 H == 8, L == 2";
  else if (g950 && bf16_bf16) native_why = "gfx950 bf16/bf16 never folds (#3063)";
  if (native_why) {
    f.why = std::string("native: ") + native_why;
    return f;
  }
  if (heads >= 32 && heads <= 128 && heads % 16 == 0) {
    f.native = false;
    f.ratio = heads / 16;
    f.gqa = 16;
    f.why = "folded " + std::to_string(heads) + " -> 16 heads (ratio " + std::to_string(f.ratio) + ")";
    return f;
  }
  // "Otherwise ... any other H asserts" (§A5.1).
  f.ok = false;
  f.native = false;
  f.why = "mla.py has no fold for " + std::to_string(heads) + " heads (" + std::string(to_string(arch)) +
          (q_fp8 ? " fp8" : " bf16") + "/" + (kv_fp8 ? "fp8" : "bf16") + ", L " + std::to_string(q_len) + ")";
  return f;
}

std::string to_string(const AiterKernelKey& k) {
  std::ostringstream os;
  os << "(" << to_string(k.arch) << ", q " << to_string(k.q) << ", kv " << to_string(k.kv) << ", Gqa " << k.gqa
     << ", ps " << (k.ps ? 1 : 0) << ", prefill 0, causal " << (k.causal ? 1 : 0) << ", qSeqLen " << k.q_seqlen
     << ", lse " << (k.lse ? 1 : 0) << ")";
  return os.str();
}

const std::vector<KnownFaultEntry>& known_fault_table() {
  // docs/known_faults.md, one row each; no rule set of mlactl's holds a fix for any of them
  // (fixed_in nullopt), so every rule set warns.
  static const std::vector<KnownFaultEntry> table = [] {
    std::vector<KnownFaultEntry> t;
    auto row = [](KnownFaultId id, const char* name, const char* report, const char* link, const char* state,
                  std::optional<Arch> arch) {
      KnownFaultEntry r;
      r.id = id;
      r.name = name;
      r.report = report;
      r.link = link;
      r.state = state;
      r.arch = arch;
      return r;
    };
    KnownFaultEntry e;
    // ROCm/aiter#5679 (open): gfx942 non-persistent bf16 gqa 16, max_seqlen_q 8 (vLLM
    // spec_decode_medium) dispatches mla_a16w16_qh16_m32x4, max diff 0.11-0.16 against SDPA;
    // q_len 2 passes. The kernel serves every q_len > 4 (§A5.2 key); 5-7 were not reported.
    e = row(KnownFaultId::aiter_5679, "aiter-5679", "ROCm/aiter #5679", "https://github.com/ROCm/aiter/issues/5679", "open", Arch::gfx942);
    e.entry = KernelEntry::nonpersistent;
    e.bf16_only = true;
    e.kernel_prefix = "mla_a16w16_qh16_m32x4";
    e.fault = "wrong output reported upstream";
    t.push_back(e);
    // ROCm/aiter#2720 (open): the stage-1 ASM (the non-persistent entry) gives every q position
    // the same output when max_seqlen_q is not a power of 2.
    e = row(KnownFaultId::aiter_2720, "aiter-2720", "ROCm/aiter #2720", "https://github.com/ROCm/aiter/issues/2720", "open", std::nullopt);
    e.entry = KernelEntry::nonpersistent;
    e.q_len_min = 2;
    e.q_len_not_pow2 = true;
    e.fault = "every q position gets the same output when max_seqlen_q is not a power of 2, reported upstream";
    t.push_back(e);
    // ROCm/aiter#3095 (closed "we don't support and have no plan to support page_size>1"): every
    // gfx950 bf16 persistent decode kernel is silently wrong at page_size > 1. Not fixed.
    e = row(KnownFaultId::aiter_3095, "aiter-3095", "ROCm/aiter #3095", "https://github.com/ROCm/aiter/issues/3095",
         "closed, not fixed", Arch::gfx950);
    e.entry = KernelEntry::persistent;
    e.bf16_only = true;
    e.page_size_over_1 = true;
    e.fault = "silently wrong output at page_size > 1, reported upstream";
    t.push_back(e);
    // ROCm/aiter#5040 (closed; the closing commit not read): aiter/mla.py@e9e1278b claims gfx942
    // 8 heads bf16 max_seqlen_q 2 native, only ..._qh8_qseqlen1_... is built: a GPU memory fault.
    e = row(KnownFaultId::aiter_5040, "aiter-5040", "ROCm/aiter #5040", "https://github.com/ROCm/aiter/issues/5040", "closed", Arch::gfx942);
    e.bf16_only = true;
    e.heads = 8;
    e.q_len_min = e.q_len_max = 2;
    e.fault = "GPU memory fault (claimed native, no kernel built), reported upstream";
    t.push_back(e);
    return t;
  }();
  return table;
}

std::vector<KnownFaultHit> known_kernel_faults(const KnownFaultQuery& q) { return known_kernel_faults(q, known_fault_table()); }

std::vector<KnownFaultWarning> known_fault_warnings(const KnownFaultQuery& q) {
  std::vector<KnownFaultWarning> w;
  for (const KnownFaultHit& h : known_kernel_faults(q)) w.push_back({h.name, h.warning, h.link, h.state});
  return w;
}

std::vector<KnownFaultHit> known_kernel_faults(const KnownFaultQuery& q, const std::vector<KnownFaultEntry>& table) {
  std::vector<KnownFaultHit> hits;
  const bool bf16_bf16 = q.q_dtype == DType::bf16 && q.kv_dtype == DType::bf16;
  const bool pow2 = q.q_len > 0 && (q.q_len & (q.q_len - 1)) == 0;
  for (const KnownFaultEntry& e : table) {
    if (e.fixed_in && static_cast<int>(q.rules) >= static_cast<int>(*e.fixed_in)) continue;  // rule sets are in upstream order
    if (e.arch && *e.arch != q.arch) continue;
    if (e.entry == KernelEntry::persistent && !q.persistent) continue;
    if (e.entry == KernelEntry::nonpersistent && q.persistent) continue;
    if (e.bf16_only && !bf16_bf16) continue;
    if (q.kernel.rfind(e.kernel_prefix, 0) != 0) continue;
    if (e.heads && e.heads != q.heads) continue;
    if (q.q_len < e.q_len_min || q.q_len > e.q_len_max) continue;
    if (e.q_len_not_pow2 && pow2) continue;
    if (e.page_size_over_1 && q.page_size <= 1) continue;
    std::string where = std::string(to_string(q.arch)) + " " + (*e.kernel_prefix ? e.kernel_prefix : q.kernel) + " at q_len " +
                        std::to_string(q.q_len);
    if (e.heads) where += ", " + std::to_string(q.heads) + " heads";
    if (e.page_size_over_1) where += ", page size " + std::to_string(q.page_size);
    hits.push_back({e.id, e.name, where + ": " + e.fault + ", " + e.report, e.link, e.state});
  }
  return hits;
}

std::optional<AiterKernelKey> aiter_kernel_key(const AiterKernelQuery& q, std::string* why) {
  auto fail = [&](const std::string& w) -> std::optional<AiterKernelKey> {
    if (why) *why = w;
    return std::nullopt;
  };
  const int L = q.q_len;
  const int g0 = q.heads;
  const bool q8 = is_fp8(q.q_dtype);
  const bool k8 = is_fp8(q.kv_dtype);
  const bool bf16_bf16 = !q8 && !k8;
  const bool fp8_fp8 = q8 && k8;

  AiterKernelKey k;
  k.arch = q.arch;
  k.q = q8 ? DType::fp8 : DType::bf16;
  k.kv = k8 ? DType::fp8 : DType::bf16;
  k.gqa = g0;
  k.ps = q.persistent;
  k.causal = q.causal || L == 1;  // "causal is forced to 1 when L==1"
  k.q_seqlen = L;
  k.lse = q.lse;
  std::string rule = "qSeqLen = L";

  // Per-gqa rules (§A5.2 "How the lookup key is built").
  switch (g0) {
    case 128:
      k.q_seqlen = 0;
      rule = "gqa 128: qSeqLen 0";
      if (!q8 && q.arch == Arch::gfx942) {
        k.ps = false;
        rule += ", bf16 on gfx942 forces ps 0";
      }
      break;
    case 16:
      if (bf16_bf16) {
        if (q.persistent) {
          if (L <= 4) { k.q_seqlen = 4; rule = "gqa 16 bf16/bf16 ps: L <= 4 -> 4"; }
        } else {
          k.q_seqlen = L == 1 ? 1 : (L <= 4 ? 4 : 8);
          rule = "gqa 16 bf16/bf16 non-persistent: L 1 -> 1, <= 4 -> 4, else 8";
        }
      } else if (!q8) {
        if (q.persistent && L <= 4) { k.q_seqlen = 4; rule = "gqa 16 bf16/fp8 ps: L <= 4 -> 4"; }
      } else if (L == 1 || L == 2) {
        rule = "gqa 16 fp8 q: L 1 -> 1, 2 -> 2";
      } else if (L <= 4) {
        k.q_seqlen = 4;
        rule = "gqa 16 fp8 q: L 3..4 -> 4";
      } else if (q.persistent && q.arch == Arch::gfx950) {
        k.gqa = 32;
        k.q_seqlen = 4;
        rule = "gqa 16 fp8 q, L > 4, ps, gfx950 -> (32, 4)";
      } else {
        return fail("gqa 16 fp8 q with L " + std::to_string(L) + " > 4 has a kernel only persistent on gfx950");
      }
      break;
    case 32:
      if (!q8) {
        if (!q.persistent) { k.q_seqlen = 0; rule = "gqa 32 bf16 non-persistent -> 0"; }
      } else if (!q.persistent) {
        if (L != 1) return fail("gqa 32 fp8 non-persistent has a key only for L 1");
        rule = "gqa 32 fp8 non-persistent: L 1 -> 1";
      } else if (L == 1 || L == 2) {
        rule = "gqa 32 fp8 ps: L 1 -> 1, 2 -> 2";
      } else if (q.arch == Arch::gfx950) {
        k.q_seqlen = 4;
        rule = "gqa 32 fp8 ps: L >= 3 on gfx950 -> 4";
      } else {
        return fail("gqa 32 fp8 ps with L " + std::to_string(L) + " >= 3 has a key only on gfx950");
      }
      break;
    case 64:
      if (!q8) {
        if (!q.persistent) { k.q_seqlen = L == 1 ? 1 : 0; rule = "gqa 64 bf16 non-persistent: L 1 -> 1, else 0"; }
      } else if (q.persistent) {
        k.q_seqlen = L == 1 ? 1 : 4;
        rule = "gqa 64 fp8 ps: L 1 -> 1, else 4";
      } else {
        return fail("gqa 64 fp8 non-persistent has no key");
      }
      break;
    default:
      break;  // gqa 8 and everything else: qSeqLen = L, the rows decide
  }

  // gfx950 persistent overrides, first match wins; they test the gqa and L the
  // kernel was asked for, not the key built above (§A5.2).
  if (q.arch == Arch::gfx950 && q.persistent) {
    if (bf16_bf16 && (g0 * L >= 128 || g0 > 64) && g0 != 48) {
      k.gqa = 32; k.q_seqlen = 4; rule += "; gfx950 override 1 (bf16, gqa*L >= 128 or gqa > 64) -> (32, 4)";
    } else if (bf16_bf16 && (g0 * L >= 64 || g0 >= 16)) {
      k.gqa = 64; k.q_seqlen = 1; rule += "; gfx950 override 2 (bf16, gqa*L >= 64 or gqa >= 16) -> (64, 1)";
    } else if (fp8_fp8 && ((g0 == 32 && L >= 4) || (g0 == 64 && L >= 2) || g0 == 128)) {
      k.gqa = 32; k.q_seqlen = 4; rule += "; gfx950 override 3 (fp8) -> (32, 4)";
    } else if (fp8_fp8 && ((g0 == 16 && (L == 3 || L == 4)) || (g0 == 32 && (L == 2 || L == 3)) ||
                           (g0 == 64 && L == 1))) {
      k.gqa = 16; k.q_seqlen = 4; rule += "; gfx950 override 4 (fp8) -> (16, 4)";
    }
  }
  if (why) *why = rule;
  return k;
}

const std::vector<AiterKernelRow>& aiter_kernel_table() {
  // Rows of hsa/<arch>/mla/mla_asm.csv at e4048607 as summarised in reference
  // §A5.2 (decode rows only, prefill = 0, cprr = 0). Base names are the
  // reference's; where it elides a name (`..qh16_qseqlen1_..ps`) the full name
  // follows the same family's gfx942 row. The reference marks `_lse` (return_lse)
  // and `msk0` (causal = 0) variants without spelling their names; they are
  // spelled here as AITER spells its lse rows (`_lse` before `_v3`/`_ps`) with
  // `_msk0` in the same place.
  using A = Arch;
  using D = DType;
  constexpr bool PS = true, NP = false, C1 = true, C0 = false, LSE = true, NOLSE = false;
  auto row = [](A a, D q, D kv, int gqa, bool ps, bool causal, int qs, bool lse, const char* name) {
    return AiterKernelRow{AiterKernelKey{a, q, kv, gqa, ps, causal, qs, lse}, name};
  };
  static const std::vector<AiterKernelRow> table = {
      // ---- gfx942, persistent ------------------------------------------------
      row(A::gfx942, D::bf16, D::bf16, 16, PS, C1, 4, NOLSE, "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1_ps"),
      row(A::gfx942, D::bf16, D::bf16, 8, PS, C1, 2, NOLSE, "mla_dec_stage1_bf16_a16w16_subQ16_mqa16_ps"),
      row(A::gfx942, D::bf16, D::fp8, 16, PS, C1, 4, NOLSE, "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps"),
      row(A::gfx942, D::fp8, D::fp8, 16, PS, C1, 1, NOLSE, "mla_a8w8_qh16_qseqlen1_gqaratio16_ps"),
      row(A::gfx942, D::fp8, D::fp8, 16, PS, C1, 2, NOLSE, "mla_a8w8_qh16_qseqlen2_gqaratio16_ps"),
      row(A::gfx942, D::fp8, D::fp8, 16, PS, C1, 4, NOLSE, "mla_a8w8_qh64_qseqlen4_gqaratio16_ps"),
      row(A::gfx942, D::fp8, D::fp8, 64, PS, C1, 1, NOLSE, "mla_a8w8_qh64_qseqlen1_gqaratio64_v3_ps"),
      row(A::gfx942, D::fp8, D::fp8, 64, PS, C1, 1, LSE, "mla_a8w8_qh64_qseqlen1_gqaratio64_lse_v3_ps"),
      // a msk0 kernel whose CSV row says causal = 1 (§A5.2)
      row(A::gfx942, D::fp8, D::fp8, 128, PS, C1, 0, NOLSE, "mla_a8w8_qh128_m32x4_n16x2_msk0_ps"),
      // ---- gfx942, non-persistent ---------------------------------------------
      row(A::gfx942, D::bf16, D::bf16, 128, NP, C1, 0, NOLSE, "mla_dec_stage1_bf16_a16w16_subQ128_mqa128"),
      row(A::gfx942, D::bf16, D::bf16, 16, NP, C1, 1, NOLSE, "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"),
      row(A::gfx942, D::bf16, D::bf16, 16, NP, C1, 4, NOLSE, "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1"),
      row(A::gfx942, D::bf16, D::bf16, 16, NP, C1, 8, NOLSE, "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1"),
      row(A::gfx942, D::bf16, D::bf16, 32, NP, C1, 0, NOLSE, "MLA_A16W16_1TG_4W_32mx1_16nx1_Coex0_Msk1_QH16"),
      row(A::gfx942, D::bf16, D::bf16, 64, NP, C1, 0, NOLSE, "MLA_A16W16_1TG_4W_64mx1_16nx1_Coex0_Msk1_QH16"),
      row(A::gfx942, D::bf16, D::bf16, 8, NP, C1, 1, NOLSE, "mla_a16w16_qh8_qseqlen1_gqaratio8_v3"),
      row(A::gfx942, D::fp8, D::fp8, 16, NP, C1, 1, NOLSE, "mla_a8w8_qh16_qseqlen1_gqaratio16"),
      row(A::gfx942, D::fp8, D::fp8, 16, NP, C1, 2, NOLSE, "mla_a8w8_qh16_qseqlen2_gqaratio16"),
      row(A::gfx942, D::fp8, D::fp8, 16, NP, C1, 4, NOLSE, "mla_a8w8_qh64_qseqlen4_gqaratio16"),
      row(A::gfx942, D::fp8, D::fp8, 128, NP, C1, 0, NOLSE, "mla_a8w8_qh128_m32x4_n16x2_msk1"),
      row(A::gfx942, D::fp8, D::fp8, 8, NP, C1, 1, NOLSE, "mla_a8w8_qh8_qseqlen1_gqaratio8_v1"),
      // ---- gfx950, persistent ------------------------------------------------
      // bf16/bf16: every shape reaches one of two keys through overrides 1 and 2
      row(A::gfx950, D::bf16, D::bf16, 32, PS, C1, 4, NOLSE, "mla_a16w16_qh32_qseqlen4_gqaratio32_ps"),
      row(A::gfx950, D::bf16, D::bf16, 32, PS, C1, 4, LSE, "mla_a16w16_qh32_qseqlen4_gqaratio32_lse_ps"),
      row(A::gfx950, D::bf16, D::bf16, 32, PS, C0, 4, NOLSE, "mla_a16w16_qh32_qseqlen4_gqaratio32_msk0_ps"),
      row(A::gfx950, D::bf16, D::bf16, 64, PS, C1, 1, NOLSE, "mla_a16w16_qh64_qseqlen1_gqaratio64_v3_ps"),
      row(A::gfx950, D::bf16, D::bf16, 64, PS, C1, 1, LSE, "mla_a16w16_qh64_qseqlen1_gqaratio64_lse_v3_ps"),
      row(A::gfx950, D::bf16, D::bf16, 64, PS, C0, 1, NOLSE, "mla_a16w16_qh64_qseqlen1_gqaratio64_msk0_v3_ps"),
      row(A::gfx950, D::bf16, D::fp8, 16, PS, C1, 4, NOLSE, "mla_a16w8_qh16_m16x4_n16x1_coex0_mask1_ps"),
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C1, 1, NOLSE, "mla_a8w8_qh16_qseqlen1_gqaratio16_ps"),
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C1, 1, LSE, "mla_a8w8_qh16_qseqlen1_gqaratio16_lse_ps"),
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C0, 1, NOLSE, "mla_a8w8_qh16_qseqlen1_gqaratio16_msk0_ps"),
      // 16 x 2 has no msk0 row: the seed 001 / §A5.2 gap for non-causal fp8 2-token blocks
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C1, 2, NOLSE, "mla_a8w8_qh16_qseqlen2_gqaratio16_ps"),
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C1, 4, NOLSE, "mla_a8w8_qh16_qseqlen4_gqaratio16_v3_ps"),
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C1, 4, LSE, "mla_a8w8_qh16_qseqlen4_gqaratio16_lse_v3_ps"),
      row(A::gfx950, D::fp8, D::fp8, 16, PS, C0, 4, NOLSE, "mla_a8w8_qh16_qseqlen4_gqaratio16_msk0_v3_ps"),
      row(A::gfx950, D::fp8, D::fp8, 32, PS, C1, 1, NOLSE, "mla_a8w8_qh32_qseqlen1_gqaratio32_ps"),
      row(A::gfx950, D::fp8, D::fp8, 32, PS, C1, 1, LSE, "mla_a8w8_qh32_qseqlen1_gqaratio32_lse_ps"),
      row(A::gfx950, D::fp8, D::fp8, 32, PS, C1, 4, NOLSE, "mla_a8w8_qh32_qseqlen4_gqaratio32_ps"),
      row(A::gfx950, D::fp8, D::fp8, 32, PS, C1, 4, LSE, "mla_a8w8_qh32_qseqlen4_gqaratio32_lse_ps"),
      row(A::gfx950, D::fp8, D::fp8, 32, PS, C0, 4, NOLSE, "mla_a8w8_qh32_qseqlen4_gqaratio32_msk0_ps"),
      row(A::gfx950, D::fp8, D::fp8, 8, PS, C1, 4, NOLSE, "mla_a8w8_qh32_qseqlen4_gqaratio8_ps"),
      row(A::gfx950, D::fp8, D::fp8, 8, PS, C1, 4, LSE, "mla_a8w8_qh32_qseqlen4_gqaratio8_lse_ps"),
      row(A::gfx950, D::fp8, D::fp8, 8, PS, C0, 4, NOLSE, "mla_a8w8_qh32_qseqlen4_gqaratio8_msk0_ps"),
      // ---- gfx950, non-persistent: gfx942's shapes plus bf16 64x1, 8x2 and fp8 msk0 ----
      row(A::gfx950, D::bf16, D::bf16, 128, NP, C1, 0, NOLSE, "mla_dec_stage1_bf16_a16w16_subQ128_mqa128"),
      row(A::gfx950, D::bf16, D::bf16, 16, NP, C1, 1, NOLSE, "mla_dec_stage1_bf16_a16w16_subQ16_mqa16"),
      row(A::gfx950, D::bf16, D::bf16, 16, NP, C1, 4, NOLSE, "mla_a16w16_qh16_m16x4_n16x1_coex0_mask1"),
      row(A::gfx950, D::bf16, D::bf16, 16, NP, C1, 8, NOLSE, "mla_a16w16_qh16_m32x4_n16x1_coex0_mask1"),
      row(A::gfx950, D::bf16, D::bf16, 32, NP, C1, 0, NOLSE, "MLA_A16W16_1TG_4W_16mx4_32nx1_Coex0_Msk1_QH16"),
      row(A::gfx950, D::bf16, D::bf16, 64, NP, C1, 0, NOLSE, "MLA_A16W16_1TG_4W_64mx1_16nx1_Coex0_Msk1_QH16"),
      row(A::gfx950, D::bf16, D::bf16, 64, NP, C1, 1, NOLSE, "mla_a16w16_qh64_qseqlen1_gqaratio64_v3"),
      row(A::gfx950, D::bf16, D::bf16, 64, NP, C1, 1, LSE, "mla_a16w16_qh64_qseqlen1_gqaratio64_lse_v3"),
      row(A::gfx950, D::bf16, D::bf16, 8, NP, C1, 1, NOLSE, "mla_a16w16_qh8_qseqlen1_gqaratio8_v3"),
      // The manifest has two rows with this key (the other is ..._gqaratio8_causal);
      // AITER's pick depends on unordered_map order (§A5.2). The first is kept.
      row(A::gfx950, D::bf16, D::bf16, 8, NP, C1, 2, NOLSE, "mla_a16w16_qh8_qseqlen2_gqaratio8"),
      row(A::gfx950, D::fp8, D::fp8, 16, NP, C1, 1, NOLSE, "mla_a8w8_qh16_qseqlen1_gqaratio16"),
      row(A::gfx950, D::fp8, D::fp8, 16, NP, C0, 1, NOLSE, "mla_a8w8_qh16_qseqlen1_gqaratio16_msk0"),
      row(A::gfx950, D::fp8, D::fp8, 16, NP, C1, 2, NOLSE, "mla_a8w8_qh16_qseqlen2_gqaratio16"),
      row(A::gfx950, D::fp8, D::fp8, 16, NP, C1, 4, NOLSE, "mla_a8w8_qh64_qseqlen4_gqaratio16"),
      row(A::gfx950, D::fp8, D::fp8, 16, NP, C0, 4, NOLSE, "mla_a8w8_qh64_qseqlen4_gqaratio16_msk0"),
      row(A::gfx950, D::fp8, D::fp8, 128, NP, C1, 0, NOLSE, "mla_a8w8_qh128_m32x4_n16x2_msk1"),
      row(A::gfx950, D::fp8, D::fp8, 128, NP, C0, 0, NOLSE, "mla_a8w8_qh128_m32x4_n16x2_msk0"),
      row(A::gfx950, D::fp8, D::fp8, 8, NP, C1, 1, NOLSE, "mla_a8w8_qh8_qseqlen1_gqaratio8_v3"),
  };
  return table;
}

AiterKernelLookup lookup_aiter_kernel(const AiterKernelQuery& query) {
  AiterKernelLookup out;
  AiterKernelQuery q = query;
  // fp16 has no manifest rows. vLLM guards only the non-causal fp16 case, where
  // AITER aborts with "unsupport Q dtype:fp16" (seed 001 review); the causal
  // fp16 path is modelled on the 16-bit (bf16) rows.
  if (q.q_dtype == DType::fp16 || q.kv_dtype == DType::fp16) {
    if (!q.causal && q.q_len > 1 && q.q_dtype == DType::fp16) {
      out.error = "unsupport Q dtype:fp16";
      out.key = "fp16 q with causal 0: no kernel family takes fp16 q";
      return out;
    }
    if (q.q_dtype == DType::fp16) q.q_dtype = DType::bf16;
    if (q.kv_dtype == DType::fp16) q.kv_dtype = DType::bf16;
  }
  std::string rule;
  const auto key = aiter_kernel_key(q, &rule);
  if (!key) {
    out.error = kNoHeuristicKernel;
    out.key = rule;
    return out;
  }
  out.key = to_string(*key) + " via " + rule;
  for (const auto& r : aiter_kernel_table()) {
    const auto& k = r.key;
    if (k.arch == key->arch && k.q == key->q && k.kv == key->kv && k.gqa == key->gqa && k.ps == key->ps &&
        k.causal == key->causal && k.q_seqlen == key->q_seqlen && k.lse == key->lse) {
      out.found = true;
      out.kernel = r.kernel;
      return out;
    }
  }
  out.error = kNoHeuristicKernel;
  return out;
}

int aiter_q_tokens_per_tile(const AiterFold& f, int64_t max_seqlen_qo) {
  if (!f.qo_splits) return (int)max_seqlen_qo;
  return f.heads * 2 > f.wg ? 1 : (int)std::max<int64_t>(1, f.wg / f.heads);
}

AiterFold aiter_fold(Arch arch, int num_heads, int max_seqlen_qo, bool q_fp8, bool kv_fp8, bool experimental) {
  const int H = num_heads, L = max_seqlen_qo;
  const bool both_fp8 = q_fp8 && kv_fp8;
  const bool neither_fp8 = !q_fp8 && !kv_fp8;
  const bool gfx950 = arch == Arch::gfx950, gfx942 = arch == Arch::gfx942;
  // hk_mtp_experimental (§A2): both arches modelled here have the HK kernels.
  const bool hk_mtp = both_fp8 && H * L == 128 && (H == 16 || H == 32 || H == 64 || H == 128) && experimental;
  AiterFold f;
  f.native = H == 16 || (H == 64 && both_fp8 && L == 1) || (gfx950 && neither_fp8) ||
             (gfx942 && H == 128 && both_fp8) || (gfx950 && both_fp8 && (H == 32 || H == 64 || H == 128)) || hk_mtp;
  f.ratio = 1;
  f.heads = H;
  if (!f.native && H % 16 == 0 && H > 0) {  // head->batch fold (§A5.1)
    f.ratio = H / 16;
    f.heads = 16;
  }
  // kPackedQoLenPerWg (§A2): uses the head count after the fold.
  const int h = f.heads;
  f.wg = 128;
  if (gfx950 && neither_fp8 && h * L >= 64 && h <= 64 && (h * L < 128 || h == 48))
    f.wg = 64;
  else if (gfx950 && both_fp8 && h == 32 && L == 3)
    f.wg = 64;
  // MLA_METADATA_DISPATCHER: q tiling unless 0 < max_seqlen_qo * ORIGINAL heads <= Wg.
  const int64_t packed = static_cast<int64_t>(L) * H;
  f.qo_splits = !(packed > 0 && packed <= f.wg);
  return f;
}

}  // namespace mlactl
