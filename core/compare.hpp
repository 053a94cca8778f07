// Numeric comparison of a kernel's output with the reference (docs/design.md §6 tolerances,
// docs/design.md §6, tolerances), on the user-visible layout
// [rows, num_heads, v_dim] (raw heads, after un-padding / un-folding).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/reference.hpp"
#include "core/semantics.hpp"
#include "core/types.hpp"

namespace mlactl {

struct Tolerance {
  double atol = 8e-4;
  double rtol = 2.0 / 128;
  double cos_tol = 5e-6;
  std::string source = "default";  // which table row or override supplied it (echoed in output)
};

struct LseTolerance {
  double atol = 1e-5;
  double rtol = 8.0 / 65536;
};

// docs/design.md §6 defaults: bf16 out 8e-4 / 2/128 / 5e-6; fp16 out 1e-3 / 2/1024 / 5e-6;
// fp8 KV (or fp8 q) 1e-2 / 1/8 / 3e-2.
Tolerance default_tolerance(DType out_dtype, DType kv_dtype, DType q_dtype);
// A kernel whose P·V takes P rounded once to `p_type` (FlashMLA's and vLLM's Triton decode
// do, docs/executor-protocol.md "p_rounding"): each P element moves by at most the type's
// unit roundoff u times itself (bf16 2^-8, fp16 2^-11), so an output moves by at most
// u·max|V| (Σ p|v| / Σ p); atol grows by that, and the source says so.
Tolerance with_p_rounding(Tolerance tol, DType p_type, double max_abs_v);
// LSE (fp32, natural log): atol 1e-5, rtol 8/65536 (FlashMLA's rtol). Kernel and
// reference see identical decoded inputs (bf16, fp16 or fp8), so the difference is
// fp32 summation order only: measured <= 1e-6 (about one fp32 ulp of an LSE ~10)
// over 64 x 16 heads x 8192 keys, and <= 2e-5 in the unit cases. The rtol covers
// large LSEs; the atol covers LSEs near 0 (one or few keys with small logits),
// where a relative bound is meaningless. FlashMLA's 1e-6 atol would sit right at
// the measured rounding, hence 10x.
// fp8 q with fp8 KV: atol 2e-3, rtol 2e-4. Such kernels may multiply the codes on
// fp8 tensor cores, whose accumulation keeps ~14 bits (DeepSeek-V3 technical report,
// arXiv:2412.19437 §3.3.2; mlactl's own e4m3 wgmma path measured <= 3.8e-4 on the
// H200, docs/bench_notes.md), so fp32 reordering's bound does not apply.
LseTolerance default_lse_tolerance(DType kv_dtype = DType::bf16, DType q_dtype = DType::bf16);

struct ElementLocation {
  int64_t row = -1;  // row of oracle_windows
  int request = -1;
  int64_t token = -1;
  int head = -1;
  int dim = -1;      // -1 for LSE
  double reference = 0, actual = 0;
};

struct RowHead {
  int64_t row = -1;
  int request = -1;
  int64_t token = -1;
  int head = -1;
  int64_t failing_elements = 0;  // of this (row, head)
};

struct CompareOptions {
  Tolerance tol;
  LseTolerance lse_tol = default_lse_tolerance();
  DType out_dtype = DType::bf16;
  bool round_reference = true;  // round the reference to out_dtype first (style anchors)
  int64_t max_rows_listed = 20;
};

struct CompareReport {
  bool passed = true;
  Tolerance tol;
  LseTolerance lse_tol;
  int64_t compared_rows = 0;       // (row) count, non-padding with a reference value
  int64_t skipped_padding_rows = 0;
  int64_t skipped_empty_rows = 0;  // reference undefined (empty window)
  int64_t compared_elements = 0;
  int64_t failing_elements = 0;    // incl. NaN/inf mismatches and unwritten elements
  int64_t nonfinite_mismatches = 0;// NaN/+inf/-inf class differs
  double max_abs_err = 0;
  ElementLocation max_abs_at;
  double max_rel_err = 0;          // |d| / |ref| over ref != 0
  ElementLocation max_rel_at;
  double cos_diff = 0;             // 1 - 2Σxy/(Σx²+Σy²) (FlashMLA), over finite pairs
  double nmse = 0;                 // Σ(x-y)² / Σ ref²
  int64_t failing_row_heads = 0;   // (row, head) pairs with a failing element, unwritten excluded
  std::vector<RowHead> failing;    // first max_rows_listed of them
  int64_t unwritten_row_heads = 0; // output still NaN poison where the reference has a value
  std::vector<RowHead> unwritten;  // first max_rows_listed
  // LSE
  bool lse_compared = false;
  bool lse_passed = true;
  int64_t lse_failing = 0;
  double lse_max_abs_err = 0;
  ElementLocation lse_max_abs_at;
  std::vector<RowHead> lse_failing_rows;  // first max_rows_listed
  std::vector<std::string> reasons;      // why it failed, one line each
};

// `out` is [rows, ref.num_heads, ref.v_dim] floats (the kernel's output decoded),
// `lse` [rows, ref.num_heads] or null when the route's kernel produces none.
// An element passes if |d| <= atol or |d|/|ref| <= rtol; NaN/inf positions must
// match exactly; the global cos diff must be <= cos_tol; unwritten (row, head)s fail.
// Throws std::invalid_argument when rows and ref disagree on the row count.
CompareReport compare_outputs(const std::vector<RowWindow>& rows, const ReferenceOutput& ref, const float* out,
                              const float* lse, const CompareOptions& opt);

}  // namespace mlactl
