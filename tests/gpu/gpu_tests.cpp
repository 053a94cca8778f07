// GPU executor tests (docs/design.md §5): hand-made work lists with random inputs, run by
// GpuExecutor and compared with an independent float64 host implementation of the
// kernel contract (docs/stacks/vllm-rocm-aiter.md §A7.1) and with CpuExecutor (same
// contract, fp32, other summation order), plus bit-exact probes of the
// device's dtype decoders and output rounding against core/dtype.hpp.
//
// Exit 0: all passed; 1: a check failed; 77: no GPU (ctest SKIP_RETURN_CODE).
// `gpu_tests --bench` also times an M1-like case (docs/design.md §8) with a simple split;
// `gpu_tests --split-reduce` runs only the split-reduce cases (split_reduce_cases).
#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/dtype.hpp"
#include "core/rng.hpp"
#include "core/types.hpp"
#include "core/worklist.hpp"
#include "tests/common/work_items.hpp"
#include "kernels/cpu_executor.hpp"
#include "kernels/executor.hpp"
#include "kernels/gpu_executor.hpp"
#include "kernels/select_stage1.hpp"

using namespace mlactl;

namespace {

using testing::make_work;

int g_checks = 0, g_failures = 0;

void expect(bool ok, const std::string& what) {
  ++g_checks;
  if (!ok) {
    ++g_failures;
    std::printf("    FAIL: %s\n", what.c_str());
  }
}

std::string lower(std::string s) {
  for (char& ch : s) ch = (char)std::tolower((unsigned char)ch);
  return s;
}

const float kNaN = std::numeric_limits<float>::quiet_NaN();
const float kInf = std::numeric_limits<float>::infinity();

// ---- a problem: view, work list, encoded inputs --------------------------------
struct Problem {
  std::string name;
  KernelView view;
  WorkList work;
  int64_t num_q_rows = 0;
  int64_t num_slots = 0;
  int kv_row_stride = 576;
  std::vector<int32_t> kv_indices;
  std::vector<uint8_t> q, kv;  // storage bits
  float q_scale = 1.0f, kv_scale = 1.0f, softmax_scale = 0.0721688f;  // 1/sqrt(192)
  Fp8Flavor flavor = Fp8Flavor::e4m3fn;
  DType out_dtype = DType::bf16;
  std::vector<std::vector<WorkInfo>> per_workgroup;
  std::string expect_error;  // non-empty: the run must fail with this text
  bool poison_unused_slots = true;
  // q[0] = 1e-30 (bf16 q): no power-of-two scale makes q exact in fp16, so fp8 KV
  // runs the wgmma kernel's bf16-operand variant (Stage1Params::q_f16_exact false).
  bool q_not_fp16 = false;
};

void add_work(Problem& p, int workgroup, WorkInfo w) {
  if ((int)p.per_workgroup.size() <= workgroup) p.per_workgroup.resize(workgroup + 1);
  p.per_workgroup[workgroup].push_back(w);
}
void add_reduce_tile(Problem& p, int q0, int q1, const std::vector<int32_t>& partial_rows) {
  WorkList& w = p.work;
  if (w.reduce_indptr.empty()) w.reduce_indptr.push_back(0);
  for (int32_t r : partial_rows) w.reduce_partial_map.push_back(r);
  w.reduce_indptr.push_back((int32_t)w.reduce_partial_map.size());
  w.reduce_final_map.push_back({q0, q1});
}
void finish_work_list(Problem& p) {
  WorkList& w = p.work;
  w.planner = "test";
  w.num_workgroups = (int)p.per_workgroup.size();
  w.work_indptr = {0};
  w.work_info.clear();
  w.num_partial_rows = 0;
  for (const auto& works : p.per_workgroup) {
    for (const WorkInfo& wi : works) {
      w.work_info.push_back(wi);
      if (wi.partial_qo_loc >= 0)
        w.num_partial_rows = std::max<int64_t>(w.num_partial_rows, wi.partial_qo_loc + wi.qo_end - wi.qo_start);
    }
    w.work_indptr.push_back((int32_t)w.work_info.size());
  }
  w.num_q_rows = p.num_q_rows;
  w.planned_view = p.view;
}

// Random q and KV in the view's dtypes; slots not named by kv_indices hold NaN.
void fill_inputs(Problem& p, uint64_t seed) {
  Rng rq(seed, kStreamQ), rk(seed, kStreamKv);
  const KernelView& v = p.view;
  const int64_t q_elems = p.num_q_rows * v.heads * v.head_dim;
  std::vector<float> qf(q_elems);
  for (auto& x : qf) x = 3.0f * rq.uniform_pm1() / (v.q_dtype == DType::fp8 ? p.q_scale : 1.0f);
  if (p.q_not_fp16) qf[0] = 1.2345e-30f;
  p.q.assign(q_elems * dtype_bytes(v.q_dtype), 0);
  encode_elements(v.q_dtype, p.flavor, qf.data(), q_elems, p.q.data(), 0);

  const int64_t kv_elems = p.num_slots * p.kv_row_stride;
  std::vector<float> kf(kv_elems, kNaN);
  std::vector<char> used(p.num_slots, 0);
  for (int32_t s : p.kv_indices)
    if (s >= 0 && s < p.num_slots) used[s] = 1;
  if (!p.poison_unused_slots) std::fill(used.begin(), used.end(), 1);
  for (int64_t s = 0; s < p.num_slots; ++s)
    if (used[s])
      for (int d = 0; d < p.kv_row_stride; ++d)
        kf[s * p.kv_row_stride + d] = rk.uniform_pm1() / (v.kv_dtype == DType::fp8 ? p.kv_scale : 1.0f);
  p.kv.assign(kv_elems * dtype_bytes(v.kv_dtype), 0);
  encode_elements(v.kv_dtype, p.flavor, kf.data(), kv_elems, p.kv.data(), 0);
}

// A random permutation of `count` slots out of `num_slots`.
std::vector<int32_t> random_slots(Rng& r, int64_t count, int64_t num_slots) {
  std::vector<int32_t> all(num_slots);
  for (int64_t i = 0; i < num_slots; ++i) all[i] = (int32_t)i;
  for (int64_t i = num_slots - 1; i > 0; --i) std::swap(all[i], all[r.below(i + 1)]);
  all.resize(count);
  return all;
}

// ---- float64 implementation of the contract -----------------------------------
struct Outputs {
  std::vector<double> out, lse, partial, partial_lse;
  std::vector<char> written;  // per (q row, head): some work or the reduce wrote it
};

Outputs reference(const Problem& p) {
  const KernelView& v = p.view;
  const int H = v.heads, D = v.head_dim, V = v.v_dim;
  Outputs o;
  o.out.assign(p.num_q_rows * H * V, 0);
  o.lse.assign(p.num_q_rows * H, 0);
  o.partial.assign(p.work.num_partial_rows * H * V, 0);
  o.partial_lse.assign(p.work.num_partial_rows * H, 0);
  o.written.assign(p.num_q_rows * H, 0);
  std::vector<float> qf(p.q.size() / dtype_bytes(v.q_dtype)), kvf(p.kv.size() / dtype_bytes(v.kv_dtype));
  decode_elements(v.q_dtype, p.flavor, p.q.data(), 0, (int64_t)qf.size(), v.q_dtype == DType::fp8 ? p.q_scale : 1.0f, qf.data());
  decode_elements(v.kv_dtype, p.flavor, p.kv.data(), 0, (int64_t)kvf.size(), v.kv_dtype == DType::fp8 ? p.kv_scale : 1.0f,
                  kvf.data());
  std::vector<double> q(D), s, acc(V);
  for (const WorkInfo& w : p.work.work_info) {
    const int qn = w.qo_end - w.qo_start;
    for (int i = 0; i < qn; ++i) {
      int end = w.kv_end;
      if (v.causal) end -= std::max(0, (qn - 1 - i) - w.kv_offset);
      end = std::max(end, w.kv_start);
      for (int h = 0; h < H; ++h) {
        const int64_t qrow = (int64_t)(w.qo_start + i) * H + h;
        for (int d = 0; d < D; ++d) q[d] = qf[qrow * D + d];
        s.clear();
        double m = -INFINITY;
        for (int j = w.kv_start; j < end; ++j) {
          const int64_t base = (int64_t)p.kv_indices[j] * D;  // the kernel's own stride
          double dot = 0;
          for (int d = 0; d < D; ++d) dot += q[d] * kvf[base + d];
          s.push_back(dot * p.softmax_scale);
          m = std::max(m, s.back());
        }
        std::fill(acc.begin(), acc.end(), 0.0);
        double l = 0;
        for (int j = w.kv_start; j < end; ++j) {
          const double e = std::exp(s[j - w.kv_start] - m);
          l += e;
          const int64_t base = (int64_t)p.kv_indices[j] * D;
          for (int c = 0; c < V; ++c) acc[c] += e * kvf[base + c];
        }
        const double lse = l == 0 ? -INFINITY : m + std::log(l);
        double* dst;
        if (w.partial_qo_loc < 0) {
          dst = &o.out[qrow * V];
          o.lse[qrow] = lse;
          o.written[qrow] = 1;
        } else {
          const int64_t prow = (int64_t)(w.partial_qo_loc + i) * H + h;
          dst = &o.partial[prow * V];
          o.partial_lse[prow] = lse;
        }
        for (int c = 0; c < V; ++c) dst[c] = l == 0 ? 0.0 : acc[c] / l;
      }
    }
  }
  const WorkList& wl = p.work;
  for (size_t t = 0; t + 1 < wl.reduce_indptr.size(); ++t) {
    const int s0 = wl.reduce_indptr[t], s1 = wl.reduce_indptr[t + 1];
    if (s1 - s0 <= 1) continue;
    const int q0 = wl.reduce_final_map[t][0], q1 = wl.reduce_final_map[t][1];
    for (int r = 0; r < q1 - q0; ++r)
      for (int h = 0; h < H; ++h) {
        double m = -INFINITY, sum = 0;
        for (int k = s0; k < s1; ++k) m = std::max(m, o.partial_lse[(int64_t)(wl.reduce_partial_map[k] + r) * H + h]);
        for (int k = s0; k < s1; ++k) sum += std::exp(o.partial_lse[(int64_t)(wl.reduce_partial_map[k] + r) * H + h] - m);
        const double lse = (sum == 0 || std::isnan(sum)) ? INFINITY : m + std::log(sum);
        const int64_t orow = (int64_t)(q0 + r) * H + h;
        o.lse[orow] = lse;
        o.written[orow] = 1;
        for (int c = 0; c < V; ++c) {
          double a = 0;
          for (int k = s0; k < s1; ++k) {
            const int64_t prow = (int64_t)(wl.reduce_partial_map[k] + r) * H + h;
            a += std::exp(o.partial_lse[prow] - lse) * o.partial[prow * V + c];
          }
          o.out[orow * V + c] = a;
        }
      }
  }
  return o;
}

// ---- running ---------------------------------------------------------------------
// Two runs' buffers equal bit for bit.
template <typename T>
bool same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(T)) == 0);
}

struct DeviceRun {
  ExecResult result;
  std::vector<uint16_t> out;
  std::vector<float> lse, partial, partial_lse;
};

// The executor arguments of p, with d's outputs poisoned (NaN) to receive them.
ExecArgs poisoned_args(const Problem& p, DeviceRun& d) {
  const KernelView& v = p.view;
  const uint16_t poison = nan_bits16(p.out_dtype);
  d.out.assign(p.num_q_rows * v.heads * v.v_dim, poison);
  d.lse.assign(p.num_q_rows * v.heads, kNaN);
  d.partial.assign(p.work.num_partial_rows * v.heads * v.v_dim, kNaN);
  d.partial_lse.assign(p.work.num_partial_rows * v.heads, kNaN);
  ExecArgs a;
  a.work = &p.work;
  a.view = v;
  a.kv_indices = p.kv_indices.data();
  a.num_kv_indices = (int64_t)p.kv_indices.size();
  a.q = p.q.data();
  a.num_q_rows = p.num_q_rows;
  a.q_scale = p.q_scale;
  a.kv = p.kv.data();
  a.num_slots = p.num_slots;
  a.kv_row_stride = p.kv_row_stride;
  a.kv_scale = p.kv_scale;
  a.fp8_flavor = p.flavor;
  a.softmax_scale = p.softmax_scale;
  a.out_dtype = p.out_dtype;
  a.out = d.out.data();
  a.lse = d.lse.data();
  a.partial_out = d.partial.data();
  a.partial_lse = d.partial_lse.data();
  return a;
}

DeviceRun run_executor(Executor& exec, const Problem& p) {
  DeviceRun d;
  const ExecArgs a = poisoned_args(p, d);
  d.result = exec.run(a);
  return d;
}

float out_value(const Problem& p, uint16_t bits) {
  return p.out_dtype == DType::fp16 ? fp16_bits_to_float(bits) : bf16_bits_to_float(bits);
}

// fp8_mma: Q·Kᵀ ran on e4m3 wgmma (the transposed kernel's e4m3 path), whose
// tensor-core accumulation keeps ~14 bits, not fp32's 24 (DeepSeek-V3 technical
// report, arXiv:2412.19437 §3.3.2, measured on H800): scores are off by up to
// ~2^-13 of Σ|q_i k_i|, so lse and partials get kFp8MmaTol (5x the largest error
// measured on the H200, docs/bench_notes.md) instead of fp32 reordering's
// 1e-4. Outputs keep their tolerance (within one bf16/fp16 ulp even so). P·V on
// e4m3 wgmma (mla::Fp8PvMma::e4m3, the default on that path) adds P's two-part
// rounding (~2^-8 relative) and the same accumulation per tile: ~2e-4 on the CPU
// emulation of docs/bench_notes.md, inside the same bound.
constexpr double kFp8MmaTol = 2e-3;
// P once in fp16 (Fp8Convert::registers: kernels/stage1_wgmma.cuh, KREG): each weight
// rounded to 2^-11 relative, so a partial is off by at most 2^-11 · max |V| (the
// weights sum to l, computed from the unrounded ones); fill_inputs draws |V| <= 1
// (times kv_scale, divided out again), so partials get twice that bound. The scores
// are exact (fp32 accumulation): lse keeps fp32 reordering's tolerance.
constexpr double kP16Tol = 1e-3;
// P once in the operand type on 16-bit KV (mla::PvPrecision::once): the same
// bound with bf16's 2^-9 (fp16: 2^-12), twice 2^-9 · max |V| = 3.9e-3; on outputs too
// (compare's 1e-3 absolute is below that bound). Scores exact, lse as fp32.
constexpr double kPOnceTol = 4e-3;

// What a run's arithmetic allows beyond fp32 reordering: the tolerances of compare
// and compare_with_cpu.
enum class Arith { fp32, p_fp16, p_once, fp8_mma };

// Compare a run with the float64 reference: outputs within output rounding plus
// fp32 reordering, lse within 1e-4, rows no work writes left poisoned.
void compare(const Problem& p, const DeviceRun& d, const Outputs& ref, Arith arith = Arith::fp32) {
  const bool fp8_mma = arith == Arith::fp8_mma;
  const double lse_tol = fp8_mma ? kFp8MmaTol : 1e-4;
  const double partial_atol = fp8_mma                  ? kFp8MmaTol
                              : arith == Arith::p_fp16   ? kP16Tol
                              : arith == Arith::p_once   ? kPOnceTol
                                                         : 2e-5;
  const double out_atol = arith == Arith::p_once ? kPOnceTol : 1e-3;
  const int H = p.view.heads, V = p.view.v_dim;
  const double out_rel = p.out_dtype == DType::fp16 ? 1.0 / 1024 : 1.0 / 128;
  double max_out_err = 0, max_lse_err = 0, max_partial_err = 0;
  int64_t bad_out = 0, bad_lse = 0, bad_poison = 0, bad_partial = 0;
  for (int64_t row = 0; row < p.num_q_rows * H; ++row) {
    if (!ref.written[row]) {
      bool still_poisoned = std::isnan(d.lse[row]);
      for (int c = 0; c < V; ++c) still_poisoned &= std::isnan(out_value(p, d.out[row * V + c]));
      bad_poison += !still_poisoned;
      continue;
    }
    for (int c = 0; c < V; ++c) {
      const double r = ref.out[row * V + c], g = out_value(p, d.out[row * V + c]);
      const double err = std::fabs(g - r);
      max_out_err = std::max(max_out_err, err);
      if (!(err <= out_atol + out_rel * std::fabs(r))) ++bad_out;
    }
    const double rl = ref.lse[row], gl = d.lse[row];
    if (std::isinf(rl)) {
      bad_lse += !(gl == rl);
    } else {
      const double err = std::fabs(gl - rl);
      max_lse_err = std::max(max_lse_err, err);
      if (!(err <= lse_tol * std::max(1.0, std::fabs(rl)))) ++bad_lse;
    }
  }
  for (int64_t i = 0; i < (int64_t)ref.partial_lse.size(); ++i) {
    bool used = false;  // partial rows some work wrote
    for (const WorkInfo& w : p.work.work_info)
      if (w.partial_qo_loc >= 0 && i / H >= w.partial_qo_loc && i / H < w.partial_qo_loc + w.qo_end - w.qo_start) used = true;
    if (!used) continue;
    const double rl = ref.partial_lse[i];
    if (std::isinf(rl) ? d.partial_lse[i] != rl : !(std::fabs(d.partial_lse[i] - rl) <= lse_tol * std::max(1.0, std::fabs(rl))))
      ++bad_partial;
    for (int c = 0; c < V; ++c) {
      const double r = ref.partial[i * V + c], err = std::fabs(d.partial[i * V + c] - r);
      max_partial_err = std::max(max_partial_err, err);
      if (!(err <= partial_atol + 1e-4 * std::fabs(r))) ++bad_partial;
    }
  }
  char line[256];
  std::snprintf(line, sizeof line, "max |out err| %.3g, max |lse err| %.3g, max |partial err| %.3g, stage1 %.3f ms, reduce %.3f ms",
                max_out_err, max_lse_err, max_partial_err, d.result.stage1_ms, d.result.reduce_ms);
  std::printf("    %s\n", line);
  expect(bad_out == 0, p.name + ": " + std::to_string(bad_out) + " output elements outside tolerance");
  expect(bad_lse == 0, p.name + ": " + std::to_string(bad_lse) + " lse values outside tolerance");
  expect(bad_partial == 0, p.name + ": " + std::to_string(bad_partial) + " partial values outside tolerance");
  expect(bad_poison == 0, p.name + ": " + std::to_string(bad_poison) + " rows no work covers were written");
}

// GPU vs CpuExecutor: both accumulate in fp32, so outputs agree within one
// output ulp, lse within 1e-5 relative, NaN exactly where the CPU has NaN
// (fp8_mma: within kFp8MmaTol, as compare; p_fp16: partials within kP16Tol).
void compare_with_cpu(const Problem& p, const DeviceRun& g, const DeviceRun& c, Arith arith = Arith::fp32) {
  const double tol = arith == Arith::fp8_mma ? kFp8MmaTol : 1e-5;
  // P once in fp16 moves a partial by up to kP16Tol, and the output (its rounding) with it;
  // P once on 16-bit KV by up to kPOnceTol.
  const double partial_tol = arith == Arith::p_fp16 ? kP16Tol : arith == Arith::p_once ? kPOnceTol : tol;
  int64_t bad_out = 0, bad_lse = 0, bad_partial = 0;
  const double out_rel = p.out_dtype == DType::fp16 ? 1.0 / 1024 : 1.0 / 128;
  auto close = [](double x, double y, double abs_tol, double rel_tol) {
    if (std::isnan(x) || std::isnan(y)) return std::isnan(x) && std::isnan(y);
    if (std::isinf(x) || std::isinf(y)) return x == y;
    return std::fabs(x - y) <= abs_tol + rel_tol * std::fabs(y);
  };
  for (size_t i = 0; i < g.out.size(); ++i)
    bad_out += !close(out_value(p, g.out[i]), out_value(p, c.out[i]), partial_tol, out_rel);
  for (size_t i = 0; i < g.lse.size(); ++i) bad_lse += !close(g.lse[i], c.lse[i], tol, tol);
  // Tensor-core P·V uses P split into two 16-bit parts (~2^-16 relative): partials
  // agree to ~1e-5, not to the last fp32 bit.
  for (size_t i = 0; i < g.partial.size(); ++i) bad_partial += !close(g.partial[i], c.partial[i], partial_tol, 5e-5);
  for (size_t i = 0; i < g.partial_lse.size(); ++i) bad_partial += !close(g.partial_lse[i], c.partial_lse[i], tol, tol);
  expect(bad_out + bad_lse + bad_partial == 0, p.name + ": GPU vs CpuExecutor: " + std::to_string(bad_out) + " out, " +
                                                   std::to_string(bad_lse) + " lse, " + std::to_string(bad_partial) +
                                                   " partial values differ");
}

// ---- the legs: one executor per stage-1 kernel asked, and what the launch site reported ----
struct Leg {
  std::unique_ptr<Executor> exec;
  std::optional<mla::Stage1Kernel> asked;  // empty: CpuExecutor (--cpu-self-check)
  mla::Stage1Device device;                // what select_stage1 decides with here
  int ran[4] = {};                         // runs per stage-1 kernel that ran (by enum value)
  int refused = 0;                         // runs refused, as select_stage1 predicts (the asked kernel does not apply)
  std::map<std::string, int> forms;        // runs per "<schedule> <precision>" the launch sites reported
};

Leg make_leg(std::unique_ptr<Executor> exec, std::optional<mla::Stage1Kernel> asked, mla::Stage1Device device) {
  Leg leg;
  leg.exec = std::move(exec);
  leg.asked = asked;
  leg.device = device;
  return leg;
}

std::string leg_label(const Leg& leg) { return leg.asked ? mla::to_string(*leg.asked) : "cpu"; }

mla::ElemType elem_type(DType t) {
  return t == DType::fp16 ? mla::ElemType::fp16 : t == DType::fp8 ? mla::ElemType::fp8 : mla::ElemType::bf16;
}

// The precision modes a run asks for (kernels/stage1_kernel.hpp), on the executor and
// on the prediction alike.
struct Modes {
  mla::Fp8QkMma qk = mla::Fp8QkMma::automatic;
  mla::Fp8PvMma pv = mla::Fp8PvMma::automatic;
  mla::Fp8Convert convert = mla::Fp8Convert::automatic;
  mla::PvPrecision precision = mla::PvPrecision::automatic;
  void apply(GpuExecutor& ex) const {
    ex.set_fp8_qk(qk);
    ex.set_fp8_pv(pv);
    ex.set_fp8_convert(convert);
    ex.set_pv_precision(precision);
  }
};

// What select_stage1 reads of a launch, from the problem (independently of the
// executor's own parameter setup).
mla::Stage1Params stage1_shape(const Problem& p, mla::Stage1Kernel asked, const Modes& modes = {}) {
  mla::Stage1Params s;
  s.kernel = asked;
  s.fp8_qk = modes.qk;
  s.fp8_pv = modes.pv;
  s.fp8_convert = modes.convert;
  s.pv_precision = modes.precision;
  s.q_type = elem_type(p.view.q_dtype);
  s.kv_type = elem_type(p.view.kv_dtype);
  s.heads = p.view.heads;
  s.head_dim = p.view.head_dim;
  s.v_dim = p.view.v_dim;
  s.fp8_fnuz = p.flavor == Fp8Flavor::e4m3fnuz;
  float scale = 1.0f;  // as the executor decides it, from the same q bits
  s.q_f16_exact = s.kv_type == mla::ElemType::fp8 && q_exact_in_fp16(p.view.q_dtype, p.q.data(), p.q.size(), &scale);
  for (const WorkInfo& w : p.work.work_info)
    s.max_pairs = std::max<int64_t>(s.max_pairs, int64_t(w.qo_end - w.qo_start) * p.view.heads);
  return s;
}

// The schedule and precision a launch of `kernel` for `shape` must report.
std::pair<mla::Stage1Schedule, mla::Stage1Precision> expected_form(mla::Stage1Kernel kernel, const mla::Stage1Params& shape) {
  using S = mla::Stage1Schedule;
  using P = mla::Stage1Precision;
  if (kernel == mla::Stage1Kernel::cuda_core) return {S::cuda_core, P::fp32};
  if (kernel == mla::Stage1Kernel::mma) return {S::mma_m16, P::p_split};
  const S sched = mla::wgmma_runs_transposed(shape) ? S::wgmma_transposed : S::wgmma_rows;
  const bool pv8 = mla::wgmma_pv_e4m3(shape);
  if (mla::wgmma_qk_e4m3(shape)) return {sched, pv8 ? P::qk_e4m3_pv_e4m3 : P::qk_e4m3};
  if (mla::wgmma_k_registers(shape)) return {sched, pv8 ? P::k_registers_pv_e4m3 : P::k_registers};
  return {sched, mla::wgmma_p_once(shape) ? P::p_once : P::p_split};
}

// What a run's launch site reports must be what was asked, as select_stage1 and
// wgmma_key resolve it for `shape`: the kernel (a named kernel that does not apply is
// refused with select_stage1's reason, never substituted), its schedule and precision,
// and a launch shape. True when the run was refused as predicted.
bool check_ran(Leg& leg, const mla::Stage1Params& shape, const ExecResult& r, const std::string& name) {
  if (!leg.asked) {
    expect(!r.stage1, name + ": CpuExecutor reported a stage-1 kernel");
    return false;
  }
  const mla::Stage1Choice want = mla::select_stage1(shape, leg.device);
  if (want.refusal) {
    expect(!r.ok && !r.stage1 && r.error.find(*want.refusal) != std::string::npos,
           name + ": asked " + leg_label(leg) + ", which must be refused (" + *want.refusal + "); got ok=" +
               std::to_string(r.ok) + " '" + r.error + "'");
    ++leg.refused;
    return true;
  }
  if (!r.stage1) {
    expect(!r.ok, name + ": the run reports no stage-1 kernel");
    return false;
  }
  const mla::Stage1Ran& ran = *r.stage1;
  ++leg.ran[int(ran.kernel)];
  ++leg.forms[std::string(mla::to_string(ran.schedule)) + " " + mla::to_string(ran.precision)];
  const auto [schedule, precision] = expected_form(want.kernel, shape);
  expect(ran.kernel == want.kernel && ran.schedule == schedule && ran.precision == precision,
         name + ": asked " + leg_label(leg) + ", select_stage1 predicts " + mla::to_string(want.kernel) + " " +
             mla::to_string(schedule) + " " + mla::to_string(precision) + " (" + want.why + "), but the launch reported " +
             mla::to_string(ran.kernel) + " " + mla::to_string(ran.schedule) + " " + mla::to_string(ran.precision) +
             " (" + ran.instance + ")");
  expect(!ran.instance.empty() && ran.grid_blocks >= 1 && ran.block_threads >= 32 && ran.smem_bytes > 0,
         name + ": launch shape missing: '" + ran.instance + "' grid " + std::to_string(ran.grid_blocks));
  return false;
}

// The arithmetic a run's report says it did, for the tolerances (compare).
Arith arith_of(const ExecResult& r) {
  if (!r.stage1) return Arith::fp32;
  switch (r.stage1->precision) {
    case mla::Stage1Precision::qk_e4m3:
    case mla::Stage1Precision::qk_e4m3_pv_e4m3:
    case mla::Stage1Precision::k_registers_pv_e4m3: return Arith::fp8_mma;
    case mla::Stage1Precision::k_registers: return Arith::p_fp16;
    case mla::Stage1Precision::p_once: return Arith::p_once;
    default: return Arith::fp32;
  }
}

void run_case(Leg& leg, Problem& p, uint64_t seed) {
  std::printf("  %s\n", p.name.c_str());
  finish_work_list(p);
  fill_inputs(p, seed);
  const DeviceRun d = run_executor(*leg.exec, p);
  CpuExecutor cpu;
  const DeviceRun c = run_executor(cpu, p);
  if (check_ran(leg, stage1_shape(p, leg.asked.value_or(mla::Stage1Kernel::automatic)), d.result, p.name)) {
    std::printf("    refused: %s\n", d.result.error.c_str());
    return;
  }
  if (!p.expect_error.empty()) {
    expect(!d.result.ok && lower(d.result.error).find(p.expect_error) != std::string::npos,
           p.name + ": expected an error containing '" + p.expect_error + "', got ok=" + std::to_string(d.result.ok) +
               " '" + d.result.error + "'");
    expect(!c.result.ok, p.name + ": CpuExecutor accepted what the GPU refused");
    std::printf("    error: %s\n", d.result.error.c_str());
    return;
  }
  expect(d.result.ok, p.name + ": run failed: " + d.result.error);
  expect(c.result.ok, p.name + ": CpuExecutor failed: " + c.result.error);
  if (!d.result.ok) return;
  compare(p, d, reference(p), arith_of(d.result));
  if (c.result.ok) compare_with_cpu(p, d, c, arith_of(d.result));
  if (!d.result.stage1 || d.result.stage1->kernel != mla::Stage1Kernel::wgmma || leg.asked != mla::Stage1Kernel::wgmma)
    return;
  // The precision modes of the path that ran, each asked by name: the launch must
  // report the mode (check_ran) and the results stay within its tolerances; a mode the
  // path cannot run must be refused with select_stage1's reason.
  const mla::Stage1Params wshape = stage1_shape(p, mla::Stage1Kernel::wgmma);
  auto mode_run = [&](const char* option, const Modes& m) {
    GpuExecutor ex(mla::Stage1Kernel::wgmma);
    m.apply(ex);
    DeviceRun dv = run_executor(ex, p);
    const std::string label = p.name + ": " + option;
    if (check_ran(leg, stage1_shape(p, mla::Stage1Kernel::wgmma, m), dv.result, label)) {
      std::printf("    %s: refused (%s)\n", option, dv.result.error.c_str());
      return;
    }
    expect(dv.result.ok, label + " run failed: " + dv.result.error);
    if (!dv.result.ok) return;
    std::printf("    %s: %s\n", option, dv.result.stage1->instance.c_str());
    compare(p, dv, reference(p), arith_of(dv.result));
    if (c.result.ok) compare_with_cpu(p, dv, c, arith_of(dv.result));
  };
  using QK = mla::Fp8QkMma;
  using PV = mla::Fp8PvMma;
  using CV = mla::Fp8Convert;
  using PP = mla::PvPrecision;
  if (mla::wgmma_k_registers(wshape)) {
    mode_run("--fp8-convert staged", {QK::automatic, PV::automatic, CV::staged, PP::automatic});
    mode_run("--fp8-pv e4m3", {QK::automatic, PV::e4m3, CV::automatic, PP::automatic});
    mode_run("--pv-precision split (refused: P once in fp16 here)", {QK::automatic, PV::automatic, CV::automatic, PP::split});
  }
  if (mla::wgmma_qk_e4m3(wshape)) {
    mode_run("--fp8-qk fp16 (K in registers)", {QK::fp16, PV::automatic, CV::automatic, PP::automatic});
    mode_run("--fp8-qk fp16 --fp8-convert staged", {QK::fp16, PV::automatic, CV::staged, PP::automatic});
    mode_run("--fp8-pv fp16", {QK::automatic, PV::fp16, CV::automatic, PP::automatic});
    mode_run("--fp8-convert staged (refused: Q·Kᵀ on e4m3)", {QK::automatic, PV::automatic, CV::staged, PP::automatic});
  }
  if (p.view.kv_dtype != DType::fp8) {
    mode_run("--pv-precision once", {QK::automatic, PV::automatic, CV::automatic, PP::once});
    mode_run("--pv-precision split", {QK::automatic, PV::automatic, CV::automatic, PP::split});
    mode_run("--fp8-pv e4m3 (refused: 16-bit KV)", {QK::automatic, PV::e4m3, CV::automatic, PP::automatic});
  }
}

KernelView make_view(int heads, DType q = DType::bf16, DType kv = DType::bf16, bool causal = false, int head_dim = 576) {
  KernelView v;
  v.heads = heads;
  v.q_dtype = q;
  v.kv_dtype = kv;
  v.causal = causal;
  v.head_dim = head_dim;
  v.v_dim = 512;
  return v;
}

// The common setup of a case: its view, q rows, KV slots, and (tokens > 0) a
// random list of `tokens` distinct slots.
void setup(Problem& p, Rng& r, const KernelView& view, int64_t q_rows, int64_t slots, int64_t tokens) {
  p.view = view;
  p.num_q_rows = q_rows;
  p.num_slots = slots;
  if (tokens > 0) p.kv_indices = random_slots(r, tokens, slots);
}

// ---- the cases ---------------------------------------------------------------------
// Each builds its problem from the shared random stream (in table order, so every
// leg sees the same inputs) and runs with its own input seed.
struct Case {
  std::string name;
  uint64_t seed;
  std::function<void(Problem&, Rng&)> build;
};

std::vector<Case> contract_table() {
  using D = DType;
  std::vector<Case> t = {
      {"single work, 16 heads, 333 tokens, bf16", 1,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 1, 400, 333);
         add_work(p, 0, make_work(0, -1, 0, 1, 0, 333, 0));
       }},
      {"three partials + reduce", 2,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 1, 400, 333);
         add_work(p, 0, make_work(0, 0, 0, 1, 0, 100, 0));
         add_work(p, 1, make_work(0, 1, 0, 1, 100, 250, 0));
         add_work(p, 2, make_work(0, 2, 0, 1, 250, 333, 0));
         add_reduce_tile(p, 0, 1, {0, 1, 2});
       }},
      {"MTP causal q_len 4, split in two, kv_offset diagonal", 3,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16, D::bf16, D::bf16, true), 4, 600, 517);
         add_work(p, 0, make_work(0, 0, 0, 4, 0, 200, 317));
         add_work(p, 1, make_work(0, 4, 0, 4, 200, 517, 0));
         add_reduce_tile(p, 0, 4, {0, 4});
       }},
      {"causal final work with kv_offset 2 (rows 0..1 trimmed)", 4,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16, D::bf16, D::bf16, true), 4, 100, 77);
         add_work(p, 0, make_work(0, -1, 0, 4, 0, 77, -2));
       }},
      {"causal empty windows: final rows out 0 / lse -inf, and an empty split", 5,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16, D::bf16, D::bf16, true), 7, 40, 13);
         add_work(p, 0, make_work(0, -1, 0, 3, 0, 1, 0));   // rows 0,1 see nothing
         add_work(p, 0, make_work(0, 0, 3, 7, 1, 11, 3));   // KV [1,11) for rows 3..6
         add_work(p, 1, make_work(0, 4, 3, 7, 11, 13, 0));  // row 3 sees < 10: empty split
         add_reduce_tile(p, 3, 7, {0, 4});
       }},
      {"folded 128 heads -> 8 x 16-head rows, L=2, causal, some groups split", 6,
       [](Problem& p, Rng& r) {
         const int ratio = 8, L = 2, B = 2;
         const int lens[B] = {300, 190};
         setup(p, r, make_view(16, D::bf16, D::bf16, true), B * ratio * L, 600, lens[0] + lens[1]);
         p.view.fold_ratio = ratio;
         int ploc = 0, wg = 0;
         for (int b = 0; b < B; ++b) {
           const int ks = b == 0 ? 0 : lens[0], ke = ks + lens[b];
           for (int g = 0; g < ratio; ++g) {
             const int qs = (b * ratio + g) * L;
             if (g % 3 == 0) {  // split this group in two
               const int mid = ks + lens[b] / 2;
               add_work(p, wg++ % 5, make_work(b * ratio + g, ploc, qs, qs + L, ks, mid, ke - mid));
               add_work(p, wg++ % 5, make_work(b * ratio + g, ploc + L, qs, qs + L, mid, ke, 0));
               add_reduce_tile(p, qs, qs + L, {ploc, ploc + L});
               ploc += 2 * L;
             } else {
               add_work(p, wg++ % 5, make_work(b * ratio + g, -1, qs, qs + L, ks, ke, 0));
             }
           }
         }
       }},
      {"128 padded heads unfolded (16 chunks per work), causal q_len 2", 7,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(128, D::bf16, D::bf16, true), 2, 300, 250);
         add_work(p, 0, make_work(0, 0, 0, 2, 0, 130, 120));
         add_work(p, 1, make_work(0, 2, 0, 2, 130, 250, 0));
         add_reduce_tile(p, 0, 2, {0, 2});
       }},
  };
  for (Fp8Flavor f : {Fp8Flavor::e4m3fn, Fp8Flavor::e4m3fnuz})
    t.push_back({std::string("fp8 ") + to_string(f) + " KV (kv_scale 0.37), split + reduce", uint64_t(8 + (int)f),
                 [f](Problem& p, Rng& r) {
                   p.flavor = f;
                   p.kv_scale = 0.37f;
                   setup(p, r, make_view(16, D::bf16, D::fp8), 1, 700, 650);
                   add_work(p, 0, make_work(0, 0, 0, 1, 0, 333, 0));
                   add_work(p, 1, make_work(0, 1, 0, 1, 333, 650, 0));
                   add_reduce_tile(p, 0, 1, {0, 1});
                 }});
  for (Fp8Flavor f : {Fp8Flavor::e4m3fn, Fp8Flavor::e4m3fnuz})
    t.push_back({std::string("fp8 ") + to_string(f) + " KV, bf16 q not exact in fp16 (bf16 operands)",
                 uint64_t(30 + (int)f), [f](Problem& p, Rng& r) {
                   p.flavor = f;
                   p.kv_scale = 0.5f;
                   p.q_not_fp16 = true;
                   setup(p, r, make_view(16, D::bf16, D::fp8), 1, 300, 260);
                   add_work(p, 0, make_work(0, -1, 0, 1, 0, 260, 0));
                 }});
  // M2- and C1-like batches for the row-major wgmma kernel (more than 16 pairs a
  // work): several requests, each split in 256-token works (1 to 6 splits, ragged
  // ends, works of 1, 2 and many 32-token tiles, several works per workgroup, so
  // the KV ring and the qk_ahead schedule cross chunk and work boundaries).
  // (dtype, head_dim: q and KV's type and the KV row; 512 is rope-free.)
  auto split_batch = [](Problem& p, Rng& r, int heads, int q_len, std::vector<int> lens, int workgroups,
                        DType dtype = DType::bf16, int head_dim = 576) {
    const int B = int(lens.size());
    int total = 0;
    for (int n : lens) total += n;
    setup(p, r, make_view(heads, dtype, dtype, true, head_dim), int64_t(B) * q_len, total + 64, total);
    p.kv_row_stride = head_dim;
    int kv = 0, ploc = 0, wg = 0;
    for (int b = 0; b < B; ++b) {
      const int qs = b * q_len, qe = qs + q_len, ks = kv, ke = kv + lens[b];
      const int splits = (lens[b] + 255) / 256;
      if (splits == 1) {
        add_work(p, wg++ % workgroups, make_work(b, -1, qs, qe, ks, ke, 0));
      } else {
        std::vector<int32_t> rows;
        for (int k = 0; k < splits; ++k) {
          const int a = ks + 256 * k, e = std::min(ke, a + 256);
          add_work(p, wg++ % workgroups, make_work(b, ploc, qs, qe, a, e, ke - e));
          rows.push_back(ploc);
          ploc += q_len;
        }
        add_reduce_tile(p, qs, qe, rows);
      }
      kv = ke;
    }
  };
  t.push_back({"M2-like: 16 heads, causal q_len 4 (64 pairs), 6 requests in 1..6 splits over 5 workgroups", 40,
               [split_batch](Problem& p, Rng& r) { split_batch(p, r, 16, 4, {4, 33, 64, 517, 1300, 95}, 5); }});
  t.push_back({"M2-like, one workgroup: every work of the batch in one block", 41,
               [split_batch](Problem& p, Rng& r) { split_batch(p, r, 16, 4, {70, 300, 5}, 1); }});
  t.push_back({"C1-like: 128 heads, q_len 1 (2 chunks of 64 pairs), 5 requests in 1..4 splits over 3 workgroups", 42,
               [split_batch](Problem& p, Rng& r) { split_batch(p, r, 128, 1, {1, 95, 300, 1000, 32}, 3); }});
  // fp8 q with e4m3fn KV: the transposed wgmma kernel's e4m3 path (Q·Kᵀ on the codes,
  // V converted in registers): ragged splits, several works and tiles per workgroup
  // (the 4-stage raw ring wraps), causal rows, head_dim 512.
  t.push_back({"fp8 e4m3fn q (q_scale 0.05) and KV (kv_scale 0.37), 16 heads, ragged splits + reduce", 43,
               [](Problem& p, Rng& r) {
                 p.q_scale = 0.05f;
                 p.kv_scale = 0.37f;
                 setup(p, r, make_view(16, D::fp8, D::fp8), 2, 1500, 1400);
                 add_work(p, 0, make_work(0, 0, 0, 1, 0, 333, 0));
                 add_work(p, 1, make_work(0, 1, 0, 1, 333, 700, 0));
                 add_work(p, 0, make_work(1, -1, 1, 2, 700, 1400, 0));
                 add_work(p, 2, make_work(0, 2, 0, 1, 700, 701, 0));
                 add_reduce_tile(p, 0, 1, {0, 1, 2});
               }});
  t.push_back({"fp8 e4m3fn q and KV, 4 heads causal q_len 4 (16 pairs), head_dim 512, fp16 out", 44,
               [](Problem& p, Rng& r) {
                 p.q_scale = 0.5f;
                 p.kv_scale = 0.02f;
                 setup(p, r, make_view(4, D::fp8, D::fp8, true, 512), 8, 800, 700);
                 p.kv_row_stride = 512;
                 p.out_dtype = D::fp16;
                 add_work(p, 0, make_work(0, -1, 0, 4, 0, 97, 0));
                 add_work(p, 0, make_work(1, -1, 4, 8, 97, 700, 0));
               }});
  std::vector<Case> more = {
      {"fp8 e4m3fnuz q (q_scale 0.05) and KV, causal q_len 3", 10,
       [](Problem& p, Rng& r) {
         p.flavor = Fp8Flavor::e4m3fnuz;
         p.q_scale = 0.05f;
         p.kv_scale = 0.02f;
         setup(p, r, make_view(16, D::fp8, D::fp8, true), 3, 200, 150);
         add_work(p, 0, make_work(0, -1, 0, 3, 0, 150, 0));
       }},
      {"head_dim 512 rope-free, per-token ragged lists, fp16 out", 11,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16, D::bf16, D::bf16, false, 512), 4, 512, 0);
         p.view.q_layout = QLayout::per_token_sparse;
         p.kv_row_stride = 512;
         p.out_dtype = D::fp16;
         const int lens[4] = {64, 1, 200, 97};
         int start = 0;
         for (int t = 0; t < 4; ++t) {
           std::vector<int32_t> idx = random_slots(r, lens[t], p.num_slots);
           p.kv_indices.insert(p.kv_indices.end(), idx.begin(), idx.end());
           add_work(p, t % 2, make_work(0, -1, t, t + 1, start, start + lens[t], 0));
           start += lens[t];
         }
       }},
      {"head_dim 320, v_dim 256, 20 heads, causal q_len 2, split", 18,
       [](Problem& p, Rng& r) {
         KernelView v = make_view(20, D::bf16, D::bf16, true, 320);
         v.v_dim = 256;
         setup(p, r, v, 2, 300, 211);
         p.kv_row_stride = 320;
         add_work(p, 0, make_work(0, 0, 0, 2, 0, 100, 111));
         add_work(p, 1, make_work(0, 2, 0, 2, 100, 211, 0));
         add_reduce_tile(p, 0, 2, {0, 2});
       }},
      {"many splits: 3 requests split 40, 9 and 17 ways (every reduce layout)", 19,
       [](Problem& p, Rng& r) {
         const int splits[3] = {40, 9, 17}, chunk = 37;
         int total = 0;
         for (int n : splits) total += n * chunk;
         setup(p, r, make_view(16, D::bf16, D::bf16, true), 3, total + 50, total);
         int kv = 0, ploc = 0, wg = 0;
         for (int b = 0; b < 3; ++b) {
           std::vector<int32_t> rows;
           const int ke = kv + splits[b] * chunk;
           for (int k = 0; k < splits[b]; ++k) {
             add_work(p, wg++ % 13, make_work(b, ploc, b, b + 1, kv + k * chunk, kv + (k + 1) * chunk, ke - (kv + (k + 1) * chunk)));
             rows.push_back(ploc++);
           }
           add_reduce_tile(p, b, b + 1, rows);
           kv = ke;
         }
       }},
      {"fp16 q and KV, fp16 out", 12,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16, D::fp16, D::fp16), 2, 300, 260);
         p.out_dtype = D::fp16;
         add_work(p, 0, make_work(0, -1, 0, 1, 0, 130, 0));
         add_work(p, 0, make_work(0, -1, 1, 2, 130, 260, 0));
       }},
      {"rows no work covers stay poisoned", 13,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 3, 64, 40);
         add_work(p, 0, make_work(0, -1, 0, 1, 0, 20, 0));
         add_work(p, 1, make_work(0, -1, 2, 3, 20, 40, 0));
       }},
      {"head_dim 576 view over a 512-stride cache (seed 002) reads the kernel's stride", 14,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 1, 200, 0);
         p.kv_row_stride = 512;
         p.kv_indices = random_slots(r, 100, 170);  // slot * 576 stays inside 200 * 512
         p.poison_unused_slots = false;             // the 576-stride rows straddle 512-stride slots
         add_work(p, 0, make_work(0, -1, 0, 1, 0, 100, 0));
       }},
      {"slot past the cache end is a device error", 15,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 1, 200, 100);
         p.kv_row_stride = 512;
         p.kv_indices[57] = 199;  // 199 * 576 + 576 > 200 * 512
         add_work(p, 0, make_work(0, -1, 0, 1, 0, 100, 0));
         p.expect_error = "slot";
       }},
      {"work past the kv index list is a device error", 16,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 1, 64, 32);
         add_work(p, 0, make_work(0, -1, 0, 1, 0, 33, 0));
         p.expect_error = "kv range";
       }},
      {"random batch: 6 requests, q_len 1..4, 256-token splits over 8 workgroups", 17,
       [](Problem& p, Rng& r) {
         p.view = make_view(16, D::bf16, D::bf16, true);
         const int B = 6;
         int qo = 0, kv = 0, ploc = 0, next_wg = 0;
         std::vector<int> qlen(B), klen(B);
         for (int b = 0; b < B; ++b) {
           qlen[b] = 1 + (int)r.below(4);
           klen[b] = qlen[b] + (int)r.below(1500);
         }
         for (int b = 0; b < B; ++b) kv += klen[b];
         p.num_slots = kv + 100;
         p.kv_indices = random_slots(r, kv, p.num_slots);
         kv = 0;
         for (int b = 0; b < B; ++b) {
           const int qs = qo, qe = qo + qlen[b], ks = kv, ke = kv + klen[b];
           const int splits = (klen[b] + 255) / 256;
           if (splits == 1) {
             add_work(p, next_wg++ % 8, make_work(b, -1, qs, qe, ks, ke, 0));
           } else {
             std::vector<int32_t> rows;
             for (int s = 0; s < splits; ++s) {
               const int a = ks + s * 256, e = std::min(ke, a + 256);
               add_work(p, next_wg++ % 8, make_work(b, ploc, qs, qe, a, e, ke - e));
               rows.push_back(ploc);
               ploc += qlen[b];
             }
             add_reduce_tile(p, qs, qe, rows);
           }
           qo = qe;
           kv = ke;
         }
         p.num_q_rows = qo;
       }},
  };
  t.insert(t.end(), more.begin(), more.end());
  // The row-major kernel's other instantiations (every schedule's leg runs them): fp16
  // operands, and head_dim 512 (no rope block: the P buffers of Plan instead of the
  // stage's rope columns). Appended, so the cases above keep their random inputs.
  t.push_back({"row-major fp16 q and KV: 16 heads, causal q_len 4 (64 pairs), 4 requests in 1..5 splits, fp16 out",
               45, [split_batch](Problem& p, Rng& r) {
                 split_batch(p, r, 16, 4, {200, 1100, 70, 513}, 3, DType::fp16);
                 p.out_dtype = DType::fp16;
               }});
  t.push_back({"row-major head_dim 512: 16 heads, causal q_len 4 (64 pairs), 4 requests in 1..5 splits", 46,
               [split_batch](Problem& p, Rng& r) { split_batch(p, r, 16, 4, {130, 64, 1200, 333}, 4, DType::bf16, 512); }});
  // Chunks narrower than the transposed kernel's 16 pairs (1 head, q_len 3): a thread
  // whose later pair columns lie past the chunk still stores its earlier ones and
  // their LSE. Each fp8 path: the codes (fp8 q), K in registers (q exact in fp16),
  // the staged conversion (bf16 q not exact in fp16). Split in two + reduce, and final.
  struct Narrow {
    const char* what;
    DType q;
    bool q_not_fp16;
  };
  for (const Narrow& n : {Narrow{"fp8 q (e4m3 path)", D::fp8, false}, Narrow{"bf16 q exact in fp16", D::bf16, false},
                          Narrow{"bf16 q not exact in fp16", D::bf16, true}})
    t.push_back({std::string("narrow chunk: 1 head causal q_len 3 (3 pairs), e4m3fn KV, ") + n.what +
                     ", split in 2 + reduce and a final work",
                 48, [n](Problem& p, Rng& r) {
                   p.q_scale = 0.05f;
                   p.kv_scale = 0.37f;
                   p.q_not_fp16 = n.q_not_fp16;
                   setup(p, r, make_view(1, n.q, D::fp8, true), 6, 1200, 1000);
                   add_work(p, 0, make_work(0, 0, 0, 3, 0, 300, 300));
                   add_work(p, 1, make_work(0, 3, 0, 3, 300, 600, 0));
                   add_work(p, 1, make_work(1, -1, 3, 6, 600, 1000, 0));
                   add_reduce_tile(p, 0, 3, {0, 3});
                 }});
  return t;
}

void contract_cases(Leg& leg) {
  Rng r(20261129);
  for (const Case& c : contract_table()) {
    Problem p;
    p.name = c.name;
    c.build(p, r);
    run_case(leg, p, c.seed);
  }
}

// ---- bit-exact probes: device decode and output rounding vs core/dtype.hpp -------
// One KV token per work and q = 0: every score is 0, the softmax weight exactly 1,
// so a partial row is the decoded V row and a final row is it rounded to out dtype.
// q_dtype fp8 (zero codes) with e4m3fn KV takes the wgmma kernel's e4m3 path, whose V
// conversion is the consumers' own (kernels/stage1_wgmma.cuh, e4m3_v_frags).
void decode_probe(Leg& leg, DType kv_dtype, Fp8Flavor flavor, float kv_scale, DType out_dtype,
                  DType q_dtype = DType::bf16) {
  const int codes = kv_dtype == DType::fp8 ? 256 : 65536;
  std::string name = std::string("bit-exact decode of every ") + to_string(kv_dtype) +
                     (kv_dtype == DType::fp8 ? std::string(" ") + to_string(flavor) : std::string()) +
                     " code, scale " + std::to_string(kv_scale) + ", out " + to_string(out_dtype) +
                     (q_dtype == DType::bf16 ? std::string() : std::string(", q ") + to_string(q_dtype));
  std::printf("  %s\n", name.c_str());
  Problem p;
  p.view = make_view(1, q_dtype, kv_dtype);
  p.flavor = flavor;
  p.kv_scale = kv_scale;
  p.out_dtype = out_dtype;
  const int V = p.view.v_dim, D = p.view.head_dim;
  auto is_finite_code = [&](int code) {
    float x;
    if (kv_dtype == DType::fp8) {
      const uint8_t b = (uint8_t)code;
      decode_elements(kv_dtype, flavor, &b, 0, 1, 1.0f, &x);
    } else {
      const uint16_t h = (uint16_t)code;
      decode_elements(kv_dtype, flavor, &h, 0, 1, 1.0f, &x);
    }
    return std::isfinite(x);
  };
  std::vector<int> finite;
  for (int c = 0; c < codes; ++c)
    if (is_finite_code(c)) finite.push_back(c);
  const int tokens = (int)((finite.size() + V - 1) / V);
  p.num_slots = tokens;
  p.num_q_rows = tokens;
  p.kv_row_stride = D;
  p.kv.assign((size_t)tokens * D * dtype_bytes(kv_dtype), 0);
  for (int t = 0; t < tokens; ++t) {
    p.kv_indices.push_back(tokens - 1 - t);
    for (int c = 0; c < V; ++c) {
      const int code = finite[std::min<size_t>((size_t)t * V + c, finite.size() - 1)];
      const int64_t at = (int64_t)t * D + c;
      if (kv_dtype == DType::fp8) p.kv[at] = (uint8_t)code;
      else std::memcpy(&p.kv[at * 2], &code, 2);
    }
  }
  p.q.assign((size_t)tokens * D * dtype_bytes(q_dtype), 0);  // zeros in every dtype
  for (int t = 0; t < tokens; ++t) {
    add_work(p, t % 4, make_work(0, -1, t, t + 1, t, t + 1, 0));  // final: rounded
    add_work(p, t % 4, make_work(0, t, t, t + 1, t, t + 1, 0));   // partial: exact fp32
  }
  finish_work_list(p);
  const DeviceRun d = run_executor(*leg.exec, p);
  if (check_ran(leg, stage1_shape(p, leg.asked.value_or(mla::Stage1Kernel::automatic)), d.result, name)) return;
  expect(d.result.ok, name + ": run failed: " + d.result.error);
  if (!d.result.ok) return;
  int64_t bad_decode = 0, bad_round = 0;
  for (int t = 0; t < tokens; ++t) {
    const int slot = tokens - 1 - t;
    for (int c = 0; c < V; ++c) {
      float want;
      decode_elements(kv_dtype, flavor, p.kv.data(), (int64_t)slot * D + c, 1, kv_scale, &want);
      const float got = d.partial[(int64_t)t * V + c];
      // Exact values; the sign of an exact zero result is not part of the contract.
      bad_decode += want == 0.0f ? got != 0.0f : std::memcmp(&want, &got, 4) != 0;
      const uint16_t want_bits = out_dtype == DType::fp16 ? float_to_fp16_bits(want) : float_to_bf16_bits(want);
      const uint16_t got_bits = d.out[(int64_t)t * V + c];
      bad_round += want == 0.0f ? (got_bits & 0x7fffu) != 0 : got_bits != want_bits;
    }
  }
  expect(bad_decode == 0, name + ": " + std::to_string(bad_decode) + " decoded values differ from core/dtype");
  expect(bad_round == 0, name + ": " + std::to_string(bad_round) + " rounded outputs differ from core/dtype");
}

// ---- --bench: an M1-like case (docs/design.md §8: b 128, s_k 8192, 16 heads, q_len 1, bf16) --
void bench(Executor& gpu, int batch, int seq, int heads, int splits = 0) {
  Problem p;
  p.name = "bench";
  p.view = make_view(heads);
  p.num_q_rows = batch;
  p.num_slots = (int64_t)batch * seq;
  p.kv_indices.resize(p.num_slots);
  for (int64_t i = 0; i < p.num_slots; ++i) p.kv_indices[i] = (int32_t)i;
  // Split each request into `splits` chunks so batch * splits blocks fill the GPU.
  if (splits <= 0) splits = std::max(1, 528 / batch);
  int ploc = 0, wg = 0;
  for (int b = 0; b < batch; ++b) {
    std::vector<int32_t> rows;
    for (int s = 0; s < splits; ++s) {
      const int ks = b * seq + (int)((int64_t)seq * s / splits), ke = b * seq + (int)((int64_t)seq * (s + 1) / splits);
      add_work(p, wg++, make_work(b, splits == 1 ? -1 : ploc, b, b + 1, ks, ke, 0));
      rows.push_back(ploc++);
    }
    if (splits > 1) add_reduce_tile(p, b, b + 1, rows);
  }
  finish_work_list(p);
  // Inputs: random bits are enough for timing; keep them finite.
  Rng r(7);
  p.q.resize((size_t)p.num_q_rows * heads * 576 * 2);
  p.kv.resize((size_t)p.num_slots * 576 * 2);
  for (size_t i = 0; i < p.q.size(); i += 2) {
    const uint16_t b = float_to_bf16_bits(r.uniform_pm1());
    std::memcpy(&p.q[i], &b, 2);
  }
  for (size_t i = 0; i < p.kv.size(); i += 2) {
    const uint16_t b = float_to_bf16_bits(r.uniform_pm1());
    std::memcpy(&p.kv[i], &b, 2);
  }
  std::vector<double> s1, rd;
  for (int it = 0; it < 7; ++it) {
    const DeviceRun d = run_executor(gpu, p);
    if (!d.result.ok) {
      std::printf("  bench failed: %s\n", d.result.error.c_str());
      ++g_failures;
      return;
    }
    if (it > 0) {
      s1.push_back(d.result.stage1_ms);
      rd.push_back(d.result.reduce_ms);
    }
  }
  std::sort(s1.begin(), s1.end());
  std::sort(rd.begin(), rd.end());
  const double ms = s1[s1.size() / 2] + rd[rd.size() / 2];
  const double bytes = (double)batch * seq * 576 * 2 + (double)batch * heads * (576 + 512) * 2;
  const double flops = 2.0 * batch * heads * seq * (576 + 512);
  std::printf("  bench b=%d s_k=%d heads=%d splits=%d: stage1 %.1f us + reduce %.1f us = %.1f us, %.2f TB/s, %.1f TFLOP/s\n",
              batch, seq, heads, splits, s1[s1.size() / 2] * 1e3, rd[rd.size() / 2] * 1e3, ms * 1e3,
              bytes / (ms * 1e-3) / 1e12, flops / (ms * 1e-3) / 1e12);
}


// ---- split tiles and the reduce: what ran, and bench against run ----------------
// Plans of many and few splits (the few-split and the general reduce kernels), an
// empty split, fp8 KV and the e4m3 path, more workgroups than multiprocessors, and a
// row-major case, run with stage 1 automatic: each must match the float64 contract,
// report the reduce kernel its plan needs (ReduceKind: few_splits when every tile has
// at most kReduceFewSplits splits, else general), and GpuExecutor::bench must report
// the same stage-1 instance and reduce and leave the run's bits.
struct SplitCase {
  std::string name;
  uint64_t seed;
  std::function<void(Problem&, Rng&)> build;
};

// q_len-1 requests of `splits[b]` works each (one split: a direct-output work),
// `tokens` KV tokens per split (the last split of a request shorter by `short_by`),
// the works dealt round-robin to `workgroups` workgroups (so one workgroup
// completes splits of several tiles).
void split_requests(Problem& p, Rng& r, const KernelView& view, const std::vector<int>& splits, int tokens, int short_by,
                    int workgroups) {
  p.view = view;
  p.num_q_rows = int64_t(splits.size());
  int64_t total = 0;
  for (int n : splits) total += int64_t(n) * tokens - short_by;
  p.num_slots = total + 64;
  p.kv_indices = random_slots(r, total, p.num_slots);
  int kv = 0, ploc = 0, next = 0;
  for (int b = 0; b < int(splits.size()); ++b) {
    const int n = splits[size_t(b)], ke = kv + n * tokens - short_by;
    std::vector<int32_t> rows;
    for (int k = 0; k < n; ++k) {
      const int a = kv + k * tokens, e = std::min(ke, a + tokens);
      add_work(p, next++ % workgroups, make_work(b, n == 1 ? -1 : ploc, b, b + 1, a, e, 0));
      if (n > 1) rows.push_back(ploc++);
    }
    if (n > 1) add_reduce_tile(p, b, b + 1, rows);
    kv = ke;
  }
}

std::vector<SplitCase> split_table() {
  using D = DType;
  return {
      {"split: S1-like, 1 request x 12 heads, 132 splits of 64 tokens (the general reduce's order)", 31,
       [](Problem& p, Rng& r) { split_requests(p, r, make_view(12), {132}, 64, 0, 132); }},
      {"split: S1's AITER plan shape, 16 (padded) heads, 128 splits on 132 workgroups (4 idle)", 37,
       [](Problem& p, Rng& r) {
         split_requests(p, r, make_view(16), {128}, 64, 0, 128);
         p.per_workgroup.resize(132);  // the plan's 4 workgroups without works
       }},
      {"split: 6 requests x 16 heads, 1-5 splits (few-split order), several tiles per workgroup", 32,
       [](Problem& p, Rng& r) { split_requests(p, r, make_view(16), {3, 1, 5, 2, 4, 2}, 200, 37, 5); }},
      {"split: 3 requests, 40 + 2 + 7 splits on 9 workgroups (general order for every tile)", 33,
       [](Problem& p, Rng& r) { split_requests(p, r, make_view(16), {40, 2, 7}, 96, 11, 9); }},
      {"split: fp8 e4m3fn KV (scale 0.5), fp16 out, 4 requests x 16 heads, 3 splits", 34,
       [](Problem& p, Rng& r) {
         split_requests(p, r, make_view(16, D::bf16, D::fp8), {3, 3, 3, 3}, 150, 20, 6);
         p.kv_scale = 0.5f;
         p.out_dtype = D::fp16;
       }},
      {"split: a split with an empty kv range (lse -inf) in a 3-split tile", 35,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16), 1, 400, 300);
         add_work(p, 0, make_work(0, 0, 0, 1, 0, 150, 0));
         add_work(p, 1, make_work(0, 1, 0, 1, 150, 150, 0));
         add_work(p, 2, make_work(0, 2, 0, 1, 150, 300, 0));
         add_reduce_tile(p, 0, 1, {0, 1, 2});
       }},
      {"split: fp8 q (q_scale 0.05) and e4m3fn KV (scale 0.37), 40 + 3 splits (the e4m3 path)", 38,
       [](Problem& p, Rng& r) {
         split_requests(p, r, make_view(16, D::fp8, D::fp8), {40, 3}, 128, 5, 43);
         p.q_scale = 0.05f;
         p.kv_scale = 0.37f;
       }},
      {"split: 2 requests x 100 splits on 200 workgroups (more workgroups than multiprocessors)", 39,
       [](Problem& p, Rng& r) { split_requests(p, r, make_view(16), {100, 100}, 64, 3, 200); }},
      {"split: causal q_len 4 x 16 heads (64 pairs: the row-major wgmma kernel)", 36,
       [](Problem& p, Rng& r) {
         setup(p, r, make_view(16, D::bf16, D::bf16, true), 4, 600, 517);
         add_work(p, 0, make_work(0, 0, 0, 4, 0, 200, 317));
         add_work(p, 1, make_work(0, 4, 0, 4, 200, 517, 0));
         add_reduce_tile(p, 0, 4, {0, 4});
       }},
  };
}

// bench --block-times: the extra clocked launch leaves the outputs' bits alone; the
// wgmma kernels clock every block of the grid (at least one per workgroup), each
// ending after it starts, on an SM the device has; other kernels record nothing.
// (a: the case's separate-reduce run.)
void check_block_clock(const Problem& p, const DeviceRun& a) {
  GpuExecutor clocked(mla::Stage1Kernel::automatic);
  clocked.set_block_clock(true);
  DeviceRun cb;
  const BenchResult cr = clocked.bench(poisoned_args(p, cb), 1, 3, 2);
  expect(cr.ok && same_bits(a.out, cb.out) && same_bits(a.lse, cb.lse),
         p.name + ": block-clock bench failed or its outputs differ: " + cr.error);
  if (cr.ok && cr.stage1 && cr.stage1->kernel == mla::Stage1Kernel::wgmma) {
    const int sms = gpu_device_multiprocessors();
    // Every block of the grid: workgroups x pair_tiles (the row-major kernel's chunks,
    // adjacent: block b runs workgroup b / pair_tiles).
    const int pair_tiles = mla::wgmma_pair_tiles(stage1_shape(p, mla::Stage1Kernel::automatic));
    const int64_t groups = p.work.num_workgroups, most = groups * pair_tiles;
    bool ordered = true, on_device = true;
    int marked = 0;  // blocks with every consumer phase mark (the transposed kernel, a chunk run)
    for (const BenchResult::BlockClock& c : cr.block_clock) {
      ordered &= c.end_us >= c.start_us && c.start_us >= 0;
      on_device &= c.sm >= 0 && c.sm < sms && c.block >= 0 && c.block < most && c.workgroup == c.block / pair_tiles;
      // q staged <= first tile landed <= tiles done <= met <= combined <= outputs written
      // <= the block's end (marks 1..6; 0, the producer's, has its own thread)
      const auto& m = c.marks_us;
      constexpr int kLast = mla::kBlockClockMarks - 1;
      bool all = true;
      for (int i = 1; i <= kLast; ++i) all &= m[size_t(i)].has_value();
      if (all) {
        ++marked;
        for (int i = 2; i <= kLast; ++i) ordered &= *m[size_t(i - 1)] <= *m[size_t(i)];
        ordered &= *m[size_t(kLast)] <= c.end_us - c.start_us + 1e-3;
      }
    }
    if (mla::wgmma_runs_transposed(stage1_shape(p, mla::Stage1Kernel::automatic)))
      expect(marked > 0, p.name + ": block clock: no block of the transposed kernel marked its phases");
    expect(int64_t(cr.block_clock.size()) == most && ordered && on_device,
           p.name + ": block clock: " + std::to_string(cr.block_clock.size()) + " blocks for " +
               std::to_string(groups) + " workgroups, ordered " + std::to_string(ordered) + ", on the device " +
               std::to_string(on_device));
    std::printf("    block clock: %zu blocks\n", cr.block_clock.size());
  } else if (cr.ok) {
    expect(cr.block_clock.empty(), p.name + ": a non-wgmma stage 1 reported block clocks");
  }
}

void split_reduce_cases() {
  std::printf("split tiles and the reduce (stage 1 automatic)\n");
  GpuExecutor automatic;
  Rng r(20261130);
  for (const SplitCase& c : split_table()) {
    Problem p;
    p.name = c.name;
    c.build(p, r);
    std::printf("  %s\n", p.name.c_str());
    finish_work_list(p);
    fill_inputs(p, c.seed);
    const DeviceRun a = run_executor(automatic, p);
    expect(a.result.ok, p.name + ": run failed: " + a.result.error);
    if (!a.result.ok) continue;
    compare(p, a, reference(p), arith_of(a.result));
    // The reduce the plan needs, as its launch site reported it.
    int max_splits = 0;
    for (size_t t = 0; t + 1 < p.work.reduce_indptr.size(); ++t)
      if (p.work.reduce_final_map[t][0] >= 0) max_splits = std::max(max_splits, p.work.reduce_indptr[t + 1] - p.work.reduce_indptr[t]);
    const mla::ReduceKind want = max_splits <= 1                     ? mla::ReduceKind::none
                                 : max_splits <= mla::kReduceFewSplits ? mla::ReduceKind::few_splits
                                                                       : mla::ReduceKind::general;
    expect(a.result.stage1 && a.result.reduce && a.result.reduce->kind == want,
           p.name + ": reduce reported " + (a.result.reduce ? mla::to_string(a.result.reduce->kind) : "nothing") +
               ", the plan (" + std::to_string(max_splits) + " splits at most) needs " + mla::to_string(want));
    if (a.result.stage1) std::printf("    %s; reduce %s\n", a.result.stage1->instance.c_str(),
                                     a.result.reduce ? a.result.reduce->instance.c_str() : "?");
    check_block_clock(p, a);
    DeviceRun bb;
    const BenchResult br = automatic.bench(poisoned_args(p, bb), 1, 3, 2);
    expect(br.ok, p.name + ": bench failed: " + br.error);
    if (!br.ok) continue;
    expect(br.stage1 && a.result.stage1 && br.stage1->instance == a.result.stage1->instance &&
               a.result.reduce && br.reduce.instance == a.result.reduce->instance,
           p.name + ": bench and run report different kernels");
    expect(same_bits(a.out, bb.out) && same_bits(a.lse, bb.lse), p.name + ": after 7 bench launches out/lse differ");
  }
}

}  // namespace

// The decode probes, each on every leg.
struct Probe {
  DType kv;
  Fp8Flavor flavor;
  float kv_scale;
  DType out;
  DType q = DType::bf16;
};
const Probe kProbes[] = {
    {DType::bf16, Fp8Flavor::e4m3fn, 1.0f, DType::bf16},   {DType::bf16, Fp8Flavor::e4m3fn, 1.0f, DType::fp16},
    {DType::fp16, Fp8Flavor::e4m3fn, 1.0f, DType::bf16},   {DType::fp8, Fp8Flavor::e4m3fn, 1.0f, DType::bf16},
    {DType::fp8, Fp8Flavor::e4m3fnuz, 1.0f, DType::fp16},  {DType::fp8, Fp8Flavor::e4m3fn, 0.37f, DType::bf16},
    {DType::fp8, Fp8Flavor::e4m3fnuz, 0.37f, DType::bf16}, {DType::fp8, Fp8Flavor::e4m3fn, 1.0f, DType::bf16, DType::fp8},
    {DType::fp8, Fp8Flavor::e4m3fn, 0.37f, DType::fp16, DType::fp8},
};

// A leg's kernels, and the checks that it ran the kernel it asked for at least
// once where select_stage1 lets it (so a selector that never picks it fails here
// even though every run matches its prediction).
void summarize(const Leg& leg) {
  std::printf("  stage-1 kernels that ran:");
  for (mla::Stage1Kernel k : {mla::Stage1Kernel::wgmma, mla::Stage1Kernel::mma, mla::Stage1Kernel::cuda_core})
    std::printf(" %s %d", mla::to_string(k), leg.ran[int(k)]);
  std::printf("; refused as predicted: %d\n", leg.refused);
  for (const auto& [form, runs] : leg.forms) std::printf("    %s: %d\n", form.c_str(), runs);
  if (!leg.asked) return;
  const mla::Stage1Device& d = leg.device;
  const bool sm90 = d.vendor == mla::GpuVendor::nvidia && d.wgmma_built && d.compute_capability == 90;
  if (*leg.asked == mla::Stage1Kernel::wgmma && sm90) {
    // Every instantiated form of the family ran at least once (kernels/wgmma/dispatch.hip).
    for (const char* form : {"rows-64 p-split", "rows-64 p-once", "transposed-64 p-split", "transposed-64 p-once",
                             "transposed-64 qk-e4m3", "transposed-64 qk-e4m3+pv-e4m3", "transposed-64 k-registers",
                             "transposed-64 k-registers+pv-e4m3"})
      expect(leg.forms.count(form) > 0, std::string("leg wgmma: ") + form + " never ran");
  }
  const std::string asked = mla::to_string(*leg.asked);
  const bool can_run = *leg.asked == mla::Stage1Kernel::wgmma   ? sm90
                       : *leg.asked == mla::Stage1Kernel::mma   ? d.vendor != mla::GpuVendor::none
                       : *leg.asked == mla::Stage1Kernel::automatic ? false
                                                                 : true;
  if (can_run) expect(leg.ran[int(*leg.asked)] > 0, "leg " + asked + ": " + asked + " never ran");
  if (*leg.asked == mla::Stage1Kernel::automatic) expect(leg.refused == 0, "leg automatic: a run was refused");
}

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  // --wgmma: only the wgmma leg.
  const bool wgmma_only = mode == "--wgmma";
  // --cpu-self-check: run every case with CpuExecutor as the executor under test
  // (checks this harness and the CPU executor where no GPU exists).
  const bool self_check = mode == "--cpu-self-check";
  // --split-reduce: only the split-reduce cases (split_reduce_cases).
  const bool split_only = mode == "--split-reduce";
  std::string why;
  if (!self_check && !gpu_available(&why)) {
    std::printf("gpu_tests: skipped (%s)\n", why.c_str());
    return kExitSkipped;
  }
  // Every case runs on each stage-1 kernel asked: automatic, wgmma (sm_90a builds on a
  // Hopper device), mma.sync (NVIDIA) and CUDA-core; a named kernel that does not apply
  // to a case's view must be refused as select_stage1 says, and every run must report
  // the kernel, schedule and precision select_stage1 predicts (check_ran).
  std::vector<Leg> legs;
  if (self_check) {
    legs.push_back(make_leg(std::make_unique<CpuExecutor>(), std::nullopt, {}));
  } else {
    for (mla::Stage1Kernel k : {mla::Stage1Kernel::wgmma, mla::Stage1Kernel::automatic, mla::Stage1Kernel::mma,
                                mla::Stage1Kernel::cuda_core})
      if (!wgmma_only || k == mla::Stage1Kernel::wgmma)
        legs.push_back(make_leg(std::make_unique<GpuExecutor>(k), k, gpu_stage1_device()));
  }
  const auto t0 = std::chrono::steady_clock::now();
  if (split_only) legs.clear();
  for (Leg& leg : legs) {
    std::printf("gpu_tests on %s%s%s (warp size %d)\n", leg.exec->name().c_str(), self_check ? "" : ", stage 1 asked: ",
                leg.asked ? leg_label(leg).c_str() : "", self_check ? 0 : gpu_device_warp_size());
    contract_cases(leg);
    for (const Probe& pr : kProbes) decode_probe(leg, pr.kv, pr.flavor, pr.kv_scale, pr.out, pr.q);
    summarize(leg);
  }
  if (!self_check) split_reduce_cases();
  if (mode == "--bench") {
    for (Leg& leg : legs) {
      std::printf("bench on stage 1 %s\n", leg_label(leg).c_str());
      bench(*leg.exec, 128, 8192, 16);
      bench(*leg.exec, 128, 8192, 16, 2);
      bench(*leg.exec, 1, 32768, 16);
      bench(*leg.exec, 1, 32768, 16, 132);
      bench(*leg.exec, 128, 4096, 128);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("gpu_tests: %d checks, %d failed (%.1f s)\n", g_checks, g_failures, secs);
  return g_failures == 0 ? 0 : 1;
}
