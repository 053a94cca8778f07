#include "core/compare.hpp"

#include <cmath>
#include <stdexcept>

#include "core/dtype.hpp"
#include "core/text.hpp"

namespace mlactl {

namespace {

// NaN, +inf and -inf are classes whose positions must match exactly (docs/design.md §6).
int value_class(double x) {
  if (std::isnan(x)) return 1;
  if (std::isinf(x)) return x > 0 ? 2 : 3;
  return 0;
}

std::string fmt(double x) { return fmt_double(x, 4); }

}  // namespace

Tolerance default_tolerance(DType out_dtype, DType kv_dtype, DType q_dtype) {
  // One e4m3 ulp (1/8) dominates whenever q or KV is fp8 (docs/design.md §10).
  if (kv_dtype == DType::fp8 || q_dtype == DType::fp8) return {1e-2, 1.0 / 8, 3e-2, "fp8 KV"};
  if (out_dtype == DType::fp16) return {1e-3, 2.0 / 1024, 5e-6, "fp16 out"};
  return {8e-4, 2.0 / 128, 5e-6, "bf16 out"};
}

Tolerance with_p_rounding(Tolerance tol, DType p_type, double max_abs_v) {
  const double u = p_type == DType::fp16 ? std::ldexp(1.0, -11) : std::ldexp(1.0, -8);
  const double extra = u * max_abs_v;
  tol.atol += extra;
  char buf[160];
  std::snprintf(buf, sizeof buf, "; P rounded once to %s by the executor: atol + 2^%d x max|V| %.4g = %.4g", to_string(p_type),
                p_type == DType::fp16 ? -11 : -8, max_abs_v, extra);
  tol.source += buf;
  return tol;
}

LseTolerance default_lse_tolerance(DType kv_dtype, DType q_dtype) {
  if (kv_dtype == DType::fp8 && q_dtype == DType::fp8) return {2e-3, 2e-4};  // fp8 MMA accumulation
  return {1e-5, 8.0 / 65536};
}

CompareReport compare_outputs(const std::vector<RowWindow>& rows, const ReferenceOutput& ref, const float* out,
                              const float* lse, const CompareOptions& opt) {
  if ((int64_t)rows.size() != ref.num_rows)
    throw std::invalid_argument("compare: " + std::to_string(rows.size()) + " oracle rows but the reference has " +
                                std::to_string(ref.num_rows));
  CompareReport rep;
  rep.tol = opt.tol;
  rep.lse_tol = opt.lse_tol;
  const int H = ref.num_heads;
  const int V = ref.v_dim;
  double sum_xy = 0, sum_xx = 0, sum_yy = 0, sum_dd = 0;
  std::vector<uint16_t> rounded_bits((size_t)V);  // fp8 codes use the low bytes
  std::vector<float> rounded((size_t)V);
  // the running maxima in locals (rep.* written back at the end): the element loop
  // then keeps them in registers
  double max_abs = rep.max_abs_err, max_rel = rep.max_rel_err;
  bool have_abs = rep.max_abs_at.row >= 0, have_rel = rep.max_rel_at.row >= 0;
  const double atol = opt.tol.atol, rtol = opt.tol.rtol;
  auto locate = [&](int64_t row, int head, int dim, double r, double g) {
    return ElementLocation{row, rows[row].request, rows[row].token, head, dim, r, g};
  };
  auto row_head = [&](int64_t row, int head, int64_t failing) {
    return RowHead{row, rows[row].request, rows[row].token, head, failing};
  };
  for (int64_t i = 0; i < ref.num_rows; ++i) {
    if (rows[i].kind == MaskKind::padding) {
      ++rep.skipped_padding_rows;
      continue;
    }
    if (!ref.computed[i]) {
      ++rep.skipped_empty_rows;
      continue;
    }
    ++rep.compared_rows;
    for (int h = 0; h < H; ++h) {
      const float* got = out + (i * H + h) * V;
      const float* want = ref.out.data() + (i * H + h) * V;
      rep.compared_elements += V;
      bool all_nan = true;
      for (int d = 0; d < V && all_nan; ++d) all_nan = std::isnan(got[d]);
      if (all_nan) {  // the NaN poison is still there: no work wrote this (row, head)
        rep.failing_elements += V;
        rep.nonfinite_mismatches += V;
        if ((int64_t)rep.unwritten.size() < opt.max_rows_listed) rep.unwritten.push_back(row_head(i, h, V));
        ++rep.unwritten_row_heads;
        continue;
      }
      // the reference rounded to out_dtype a (row, head) at a time: encode + decode
      // is round_to_dtype element by element, without a call per element
      const float* wanted = want;
      if (opt.round_reference) {
        encode_elements(opt.out_dtype, Fp8Flavor::e4m3fn, want, V, rounded_bits.data(), 0);
        decode_elements(opt.out_dtype, Fp8Flavor::e4m3fn, rounded_bits.data(), 0, V, 1.0f, rounded.data());
        wanted = rounded.data();
      }
      int64_t failing_here = 0;
      for (int d = 0; d < V; ++d) {
        const double r = wanted[d];
        const double g = got[d];
        const int cr = value_class(r), cg = value_class(g);
        if (cr != cg) {
          ++rep.nonfinite_mismatches;
          ++failing_here;
          continue;
        }
        if (cr != 0) continue;  // same non-finite class: matches
        const double diff = std::fabs(g - r);
        if (diff > max_abs || !have_abs) {
          max_abs = std::max(max_abs, diff);
          rep.max_abs_at = locate(i, h, d, r, g);
          have_abs = true;
        }
        const double rel = r != 0 ? diff / std::fabs(r) : 0.0;
        if (r != 0 && (rel > max_rel || !have_rel)) {
          max_rel = std::max(max_rel, rel);
          rep.max_rel_at = locate(i, h, d, r, g);
          have_rel = true;
        }
        const bool ok = diff <= atol || (r != 0 && rel <= rtol);
        if (!ok) ++failing_here;
        sum_xy += g * r;
        sum_xx += g * g;
        sum_yy += r * r;
        sum_dd += (g - r) * (g - r);
      }
      if (failing_here) {
        rep.failing_elements += failing_here;
        if ((int64_t)rep.failing.size() < opt.max_rows_listed) rep.failing.push_back(row_head(i, h, failing_here));
        ++rep.failing_row_heads;
      }
    }
    if (lse) {
      rep.lse_compared = true;
      for (int h = 0; h < H; ++h) {
        const double r = ref.lse[i * H + h];
        const double g = lse[i * H + h];
        bool ok;
        if (value_class(r) != 0 || value_class(g) != 0) {
          ok = value_class(r) == value_class(g);
        } else {
          const double diff = std::fabs(g - r);
          if (diff > rep.lse_max_abs_err || rep.lse_max_abs_at.row < 0) {
            rep.lse_max_abs_err = std::max(rep.lse_max_abs_err, diff);
            rep.lse_max_abs_at = locate(i, h, -1, r, g);
          }
          ok = diff <= opt.lse_tol.atol || (r != 0 && diff / std::fabs(r) <= opt.lse_tol.rtol);
        }
        if (!ok) {
          ++rep.lse_failing;
          if ((int64_t)rep.lse_failing_rows.size() < opt.max_rows_listed) rep.lse_failing_rows.push_back(row_head(i, h, 1));
        }
      }
    }
  }
  rep.max_abs_err = max_abs;
  rep.max_rel_err = max_rel;
  rep.cos_diff = (sum_xx + sum_yy) > 0 ? 1.0 - 2.0 * sum_xy / (sum_xx + sum_yy) : 0.0;
  rep.nmse = sum_yy > 0 ? sum_dd / sum_yy : (sum_dd > 0 ? INFINITY : 0.0);
  rep.lse_passed = rep.lse_failing == 0;

  if (rep.unwritten_row_heads)
    rep.reasons.push_back(std::to_string(rep.unwritten_row_heads) + " (row, head) unwritten (output still NaN poison)");
  const int64_t written_nonfinite = rep.nonfinite_mismatches - rep.unwritten_row_heads * V;
  if (written_nonfinite > 0)
    rep.reasons.push_back(std::to_string(written_nonfinite) + " elements with NaN/inf where the reference differs");
  const int64_t tol_failures = rep.failing_elements - rep.nonfinite_mismatches;
  if (tol_failures > 0)
    rep.reasons.push_back(std::to_string(tol_failures) + " of " + std::to_string(rep.compared_elements) +
                          " elements outside atol " + fmt(opt.tol.atol) + " / rtol " + fmt(opt.tol.rtol) +
                          " (max abs " + fmt(rep.max_abs_err) + ", max rel " + fmt(rep.max_rel_err) + ")");
  if (!(rep.cos_diff <= opt.tol.cos_tol))
    rep.reasons.push_back("cos diff " + fmt(rep.cos_diff) + " > " + fmt(opt.tol.cos_tol));
  if (!rep.lse_passed)
    rep.reasons.push_back(std::to_string(rep.lse_failing) + " LSE values outside atol " + fmt(opt.lse_tol.atol) +
                          " / rtol " + fmt(opt.lse_tol.rtol) + " (max abs " + fmt(rep.lse_max_abs_err) + ")");
  rep.passed = rep.reasons.empty();
  return rep;
}

}  // namespace mlactl
