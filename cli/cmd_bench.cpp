// `mlactl bench`: GPU timings of the routed kernels (docs/design.md §6 bench, §8).
//
// Per route (the decided one, --kernel, or each of --compare A,B) and its planner:
// the work list is planned as `run` plans it, the inputs are generated once, and
// GpuExecutor::bench times >= 20 iterations with device events after warm-up,
// rotating KV copies so L2 (50-60 MB on an H200) never holds the KV between runs.
// Reported: stage 1 alone (kernel-only), stage 1 + reduce, and host planning +
// kernels; effective bandwidth over the bytes a request must read (its KV once,
// q, the output written) and TFLOP/s over the real causal windows, each as a
// fraction of a roofline measured in the same run (device-to-device copy) or the
// datasheet bf16 dense rate (989 TFLOP/s on an H200 SXM).
#include <unistd.h>

#include <algorithm>
#include <array>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <map>
#include <optional>
#include <sstream>

#include "cli/app.hpp"
#include "cli/output_schema.hpp"
#include "cli/common.hpp"
#include "cli/external_executor.hpp"
#include "cli/kernel_ran.hpp"
#include "cli/pipeline.hpp"
#include "core/budget.hpp"
#include "core/decode_metadata.hpp"
#include "core/inputs.hpp"
#include "core/kernel_windows.hpp"
#include "core/layout.hpp"
#include "core/position_audit.hpp"
#include "core/plan.hpp"
#include "core/routed.hpp"
#include "core/semantics.hpp"
#include "kernels/gpu_executor.hpp"

namespace mlactl::cli {

namespace {

using clock_type = std::chrono::steady_clock;

// The H200 SXM datasheet's dense bf16 rate (the H100 SXM's is the same 989 TFLOP/s):
// the % of peak unless --peak-tflops is given.
constexpr double kH200PeakTflops = 989.0;

struct BenchOptions {
  std::string kernel;
  std::string stage1 = "automatic";  // which stage-1 kernel implementation (mla::Stage1Kernel)
  // The precision modes (kernels/stage1_kernel.hpp); automatic: the path's own.
  mla::Fp8QkMma fp8_qk = mla::Fp8QkMma::automatic;           // --fp8-qk
  mla::Fp8PvMma fp8_pv = mla::Fp8PvMma::automatic;           // --fp8-pv
  mla::Fp8Convert fp8_convert = mla::Fp8Convert::automatic;  // --fp8-convert
  mla::PvPrecision pv_precision = mla::PvPrecision::automatic;  // --pv-precision
  bool block_times = false;  // --block-times: one more stage-1 launch that clocks each block
  std::string compare;
  std::string planner;
  int batch_size = 0;     // repeat the single --context value this many times
  int warmup = 5;
  int iters = 30;
  int kv_copies = 0;      // 0: enough copies for >= kRotateBytes in all
  std::optional<double> peak_tflops;  // --peak-tflops; unset: kH200PeakTflops
  double peak() const { return peak_tflops.value_or(kH200PeakTflops); }
  // Where the peak comes from, for the device bench ran on (its name from the driver).
  std::string peak_source(const std::string& device) const {
    if (peak_tflops) return "--peak-tflops";
    for (const char* card : {"H200", "H100"})
      if (device.find(card) != std::string::npos) return std::string("datasheet: ") + card + " SXM dense bf16";
    return "datasheet: H200 SXM dense bf16, not this device's: --peak-tflops sets it";
  }
  int64_t copy_mib = 1024;  // roofline copy size (each of source and destination)
  // --peer NAME:ROUTE=CMD: an external kernel timed on the same shape, inputs and L2
  // rotation, in the same run (docs/executor-protocol.md, Timing)
  std::vector<std::string> peers;
  double peer_timeout_s = 600;
};

// One --peer: its name, the route whose metadata it runs, its command.
struct PeerSpec {
  std::string name, route, command;
};
PeerSpec parse_peer(const std::string& s) {
  const size_t colon = s.find(':'), eq = s.find('=');
  if (colon == std::string::npos || eq == std::string::npos || colon == 0 || eq < colon + 2 || eq + 1 >= s.size())
    throw Error(kExitUsage, "", "--peer takes NAME:ROUTE=COMMAND (e.g. flashmla:flashmla='python3 adapters/flashmla.py'), got \"" + s + "\"");
  PeerSpec p{s.substr(0, colon), s.substr(colon + 1, eq - colon - 1), s.substr(eq + 1)};
  if (!route_from_string(p.route)) throw Error(kExitUsage, "", "--peer " + p.name + ": unknown route \"" + p.route + "\"");
  return p;
}

constexpr double kRotateBytes = 256.0 * 1024 * 1024;  // > 4x the H200's 50-60 MB L2

struct Stats {
  double median = 0, min = 0, p10 = 0, p90 = 0, max = 0;
  int n = 0;
};
Stats stats_us(std::vector<float> ms) {
  Stats s;
  if (ms.empty()) return s;
  std::sort(ms.begin(), ms.end());
  auto q = [&](double f) {  // linear interpolation between order statistics
    const double pos = f * double(ms.size() - 1);
    const size_t lo = size_t(std::floor(pos)), hi = std::min(ms.size() - 1, lo + 1);
    return 1e3 * (double(ms[lo]) + (pos - double(lo)) * (double(ms[hi]) - double(ms[lo])));
  };
  s.n = int(ms.size());
  s.median = q(0.5);
  s.min = 1e3 * double(ms.front());
  s.max = 1e3 * double(ms.back());
  s.p10 = q(0.1);
  s.p90 = q(0.9);
  return s;
}
nlohmann::ordered_json stats_json(const Stats& s) {
  return {{"median", s.median}, {"min", s.min}, {"p10", s.p10}, {"p90", s.p90}, {"max", s.max}, {"n", s.n}};
}

// The stage-1 kernel that ran (its launch site's report), as bench prints it:
// family, schedule, precision (cli/kernel_ran.hpp).
std::string stage1_text(const BenchResult& r) { return r.stage1 ? stage1_label(*r.stage1) : "none"; }

// What a request must move and compute, independent of the route.
struct ShapeCost {
  int64_t requests = 0, rows = 0;
  double kv_bytes = 0, q_bytes = 0, out_bytes = 0, flop = 0;
  double bytes() const { return kv_bytes + q_bytes + out_bytes; }
};
ShapeCost shape_cost(const Batch& b, const std::vector<RowWindow>& rows) {
  ShapeCost c;
  const int heads = b.model.num_heads, hd = b.head_dim(), vd = b.model.kv_lora_rank;
  std::vector<int64_t> lo(b.requests.size(), std::numeric_limits<int64_t>::max()), hi(b.requests.size(), 0);
  for (const RowWindow& r : rows) {
    if (r.kind == MaskKind::padding) continue;
    ++c.rows;
    const int64_t len = b.sparse ? int64_t(r.sparse_positions.size()) : r.length();
    c.flop += 2.0 * heads * double(len) * double(hd + vd);
    if (size_t(r.request) < lo.size() && !b.sparse && r.length() > 0) {
      lo[size_t(r.request)] = std::min(lo[size_t(r.request)], r.begin);
      hi[size_t(r.request)] = std::max(hi[size_t(r.request)], r.end);
    }
  }
  for (size_t i = 0; i < b.requests.size(); ++i) {
    if (b.requests[i].padding) continue;
    ++c.requests;
    int64_t tokens = 0;
    if (b.sparse) {
      std::vector<int64_t> all;
      for (const RowWindow& r : rows)
        if (size_t(r.request) == i) all.insert(all.end(), r.sparse_positions.begin(), r.sparse_positions.end());
      std::sort(all.begin(), all.end());
      tokens = int64_t(std::unique(all.begin(), all.end()) - all.begin());
    } else if (hi[i] > lo[i]) {
      tokens = hi[i] - lo[i];
    }
    c.kv_bytes += double(tokens) * hd * dtype_bytes(b.kv_cache.dtype);
  }
  c.q_bytes = double(c.rows) * heads * hd * dtype_bytes(b.decode.q_dtype);
  c.out_bytes = double(c.rows) * heads * vd * dtype_bytes(b.model.dtype);
  return c;
}

enum class BenchStatus { ok, refused, skipped, failed, nonfinite };
const char* to_string(BenchStatus s) {
  switch (s) {
    case BenchStatus::ok: return "ok";
    case BenchStatus::refused: return "refused";
    case BenchStatus::skipped: return "skipped";
    case BenchStatus::failed: return "failed";
    case BenchStatus::nonfinite: return "nonfinite";
  }
  return "?";
}

struct RouteResult {
  std::string requested;  // as given (route name, or "auto")
  std::optional<PeerSpec> peer;  // a --peer row: an external kernel's timings (no stage-1 split)
  RouteDecision route;
  BenchStatus status = BenchStatus::ok;
  bool ran() const { return status == BenchStatus::ok || status == BenchStatus::nonfinite; }
  std::string message;
  // the route a table row names: the decided one, or the one asked for when it is refused
  std::string shown() const {
    const std::string r = route.route == Route::refused && requested != "auto" ? requested : to_string(route.route);
    return peer ? peer->name + " (" + r + ")" : r;
  }
  PlannerId planner = PlannerId::aiter;
  int workgroups = 0;
  int64_t works = 0, partial_rows = 0;
  bool audit_ok = true;
  BenchResult bench;
  Stats stage1, total;
  double plan_us = 0;  // host: metadata + route + plan (median)
  int64_t nonfinite = 0;
  // --block-times: each stage-1 block (BenchResult::block_clock) with the works and KV
  // tokens of the workgroup it ran (the row-major kernel's pair_tiles blocks of a
  // workgroup run its works' 64-pair chunks: mla::wgmma_pair_tiles).
  struct BlockRow {
    int64_t block = 0, workgroup = 0;
    int sm = 0;
    double start_us = 0, end_us = 0;
    int64_t works = 0, tokens = 0;
    std::array<std::optional<double>, mla::kBlockClockMarks> marks_us;  // BenchResult::BlockClock::marks_us
  };
  std::vector<BlockRow> blocks;
};

// BenchResult::block_clock joined with the plan's per-workgroup works and tokens.
std::vector<RouteResult::BlockRow> block_rows(const BenchResult& bench, const RoutePlan& plan) {
  std::vector<RouteResult::BlockRow> rows;
  const WorkList& w = plan.work;
  const int64_t groups = w.num_workgroups, unit = std::max(1, plan.kernel_view.page_size);
  if (groups <= 0 || int64_t(w.work_indptr.size()) != groups + 1) return rows;
  for (const BenchResult::BlockClock& c : bench.block_clock) {
    if (c.workgroup < 0 || c.workgroup >= groups) continue;
    RouteResult::BlockRow r{c.block, c.workgroup, c.sm, c.start_us, c.end_us, 0, 0, c.marks_us};
    for (int32_t i = w.work_indptr[size_t(r.workgroup)]; i < w.work_indptr[size_t(r.workgroup) + 1]; ++i) {
      if (i < 0 || size_t(i) >= w.work_info.size()) break;
      ++r.works;
      r.tokens += int64_t(w.work_info[size_t(i)].kv_end - w.work_info[size_t(i)].kv_start) * unit;
    }
    rows.push_back(r);
  }
  return rows;
}

// The routed kernel's q and call for a plan, as run builds them (kq and layout stay where the
// call points at them); null with rr failed when the kernel cannot lay out q for the view.
struct PreparedCall {
  ViewLayout layout;
  EncodedTensor kq;
  std::unique_ptr<ExecCall> call;
};
std::unique_ptr<PreparedCall> prepare_call(const Batch& b, const RoutePlan& plan, const std::vector<RowWindow>& rows,
                                           const Inputs& in, RouteResult& rr) {
  auto pc = std::make_unique<PreparedCall>();
  try {
    pc->layout = make_view_layout(int64_t(rows.size()), plan.kernel_view, plan.heads, plan.uniform_qlen);
  } catch (const std::exception& e) {
    rr.status = BenchStatus::failed;
    rr.message = std::string("the kernel cannot lay out q for this view: ") + e.what();
    return nullptr;
  }
  pc->kq = build_kernel_q(in, pc->layout, plan.kernel_view);
  pc->call = make_exec_call(b, plan, in, pc->layout, pc->kq);
  return pc;
}

// The timed output's non-finite elements in real rows: a nonfinite status naming `check_with`.
void check_finite(const Batch& b, const std::vector<RowWindow>& rows, const PreparedCall& pc, int v_dim, RouteResult& rr,
                  const std::string& check_with) {
  const std::vector<float> user_out = unlayout_out(pc.layout, b.model.dtype, pc.call->out.data(), v_dim);
  const int64_t per_row = int64_t(b.model.num_heads) * v_dim;
  for (const RowWindow& r : rows) {
    if (r.kind == MaskKind::padding) continue;
    const float* p = user_out.data() + r.row * per_row;
    for (int64_t i = 0; i < per_row; ++i)
      if (!std::isfinite(p[i])) ++rr.nonfinite;
  }
  if (rr.nonfinite) {
    rr.status = BenchStatus::nonfinite;
    rr.message = std::to_string(rr.nonfinite) + " output elements are not finite (unwritten rows?): check with " + check_with;
  }
}

// Host planning as run does it: metadata, route, plan.
RoutePlan plan_once(const Batch& b, const std::string& kernel, const std::string& planner, const std::vector<RowWindow>& rows,
                    RouteDecision* rd_out) {
  const RoutedBatch rb = route_batch(b, forced_route(kernel));
  if (rd_out) *rd_out = rb.decision;
  if (rb.refused()) throw Error(kExitRefused, "", rb.refusal());
  return plan_batch(b, rb, rows, planner_option(planner));
}

void bench_route(const Batch& b, const BenchOptions& opt, const std::vector<RowWindow>& rows, const Inputs& in, RouteResult& rr,
                 int kv_copies, bool progress, std::ostream& err) {
  const std::string kernel = rr.requested == "auto" ? "" : rr.requested;
  RoutePlan plan;
  try {
    plan = plan_once(b, kernel, opt.planner, rows, &rr.route);
  } catch (const Error& e) {
    if (e.exit_code() != kExitRefused) throw;
    rr.status = BenchStatus::refused;
    rr.message = e.what();
    return;
  }
  // host planning time (median of repeated plans, at most ~2 s of them)
  {
    std::vector<float> ms;
    const auto t_start = clock_type::now();
    for (int i = 0; i < std::max(5, opt.iters); ++i) {
      const auto t0 = clock_type::now();
      RoutePlan p = plan_once(b, kernel, opt.planner, rows, nullptr);
      ms.push_back(float(std::chrono::duration<double, std::milli>(clock_type::now() - t0).count()));
      if (std::chrono::duration<double>(clock_type::now() - t_start).count() > 2.0 && ms.size() >= 3) break;
    }
    rr.plan_us = stats_us(ms).median;
  }
  rr.planner = plan.planner;
  rr.workgroups = plan.work.num_workgroups;
  rr.works = int64_t(plan.work.work_info.size());
  rr.audit_ok = audit_positions(b, rows, plan, 5).ok;

  const std::unique_ptr<PreparedCall> pc = prepare_call(b, plan, rows, in, rr);
  if (!pc) return;
  ExecCall* call = pc->call.get();
  rr.partial_rows = call->work.num_partial_rows;
  if (progress) err << "bench: " << to_string(rr.route.route) << " (" << to_string(rr.planner) << "): timing " << opt.iters << " runs\n";
  GpuExecutor ex(mla::stage1_kernel_from_name(opt.stage1).value_or(mla::Stage1Kernel::automatic));
  ex.set_fp8_qk(opt.fp8_qk);
  ex.set_fp8_pv(opt.fp8_pv);
  ex.set_fp8_convert(opt.fp8_convert);
  ex.set_pv_precision(opt.pv_precision);
  ex.set_block_clock(opt.block_times);
  rr.bench = ex.bench(call->args, opt.warmup, opt.iters, kv_copies);
  rr.blocks = block_rows(rr.bench, plan);
  if (!rr.bench.ok) {
    rr.status = BenchStatus::failed;
    rr.message = "device/runtime error: " + rr.bench.error;
    return;
  }
  rr.stage1 = stats_us(rr.bench.stage1_ms);
  rr.total = stats_us(rr.bench.total_ms);
  check_finite(b, rows, *pc, plan.kernel_view.v_dim, rr, "`mlactl run`");
}

// A --peer row: the route planned as for mlactl's own kernel, the case written as `run
// --executor` writes it with a bench section, and the executor's own device-event timings
// of its whole call (its stage 1 and combine together: `total`; no stage-1 split).
void bench_peer(const Batch& b, const BenchOptions& opt, const std::vector<RowWindow>& rows, const Inputs& in, RouteResult& rr,
                int kv_copies, bool progress, std::ostream& err) {
  const PeerSpec& peer = *rr.peer;
  const RoutedBatch rb = route_batch(b, forced_route(peer.route));
  rr.route = rb.decision;
  if (rb.refused()) {
    rr.status = BenchStatus::refused;
    rr.message = rb.refusal();
    return;
  }
  const RoutePlan plan = plan_batch(b, rb, rows, planner_option(opt.planner));
  rr.planner = plan.planner;
  rr.workgroups = plan.work.num_workgroups;
  rr.works = int64_t(plan.work.work_info.size());
  const std::unique_ptr<PreparedCall> pc = prepare_call(b, plan, rows, in, rr);
  if (!pc) return;
  if (progress) err << "bench: peer " << peer.name << " (" << peer.route << "): timing " << opt.iters << " runs\n";
  ExternalSpec spec{peer.command, opt.peer_timeout_s, "", ExternalBench{opt.warmup, opt.iters, kv_copies}};
  ExternalExecutor ext(spec, ExternalCase{&b, &rb, &plan, &in, &pc->layout});
  const ExecResult res = ext.run(pc->call->args);
  if (ext.unsupported()) {
    rr.status = BenchStatus::skipped;
    rr.message = "n/a: " + *ext.unsupported();
    return;
  }
  if (!res.ok) {
    rr.status = BenchStatus::failed;
    rr.message = res.error;
    return;
  }
  rr.bench.ok = true;
  rr.total = stats_us(ext.timing_ms());
  rr.stage1 = rr.total;
  check_finite(b, rows, *pc, plan.kernel_view.v_dim, rr, "`mlactl run --executor`");
}

// Fixed-point (fmt_double is %g: 600 µs would print as 6e+02 at 1 digit).
std::string fx(double v, int decimals) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*f", decimals, v);
  return buf;
}

std::vector<std::string> split_list(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ','))
    if (!item.empty()) out.push_back(item);
  return out;
}


// --block-times in numbers: block durations, the last end, the slowest blocks, and
// time per KV token (a slow block with no more tokens than the rest is slow per token).
struct BlockSummary {
  int64_t blocks = 0, sms = 0;
  Stats duration_us;        // end - start over the blocks
  double last_end_us = 0;   // the grid's end on the device clock, after the first entry
  Stats ns_per_token;       // duration / tokens, blocks with tokens
  std::vector<size_t> slowest;  // indices into the rows, slowest first (at most 5)
  std::array<std::optional<double>, mla::kBlockClockMarks> mark_median_us;  // each phase mark, median over the blocks that have it
};
constexpr const auto& kMarkKeys = BenchResult::kMarkKeys;
constexpr const auto& kMarkNames = BenchResult::kMarkNames;
BlockSummary summarize_blocks(const std::vector<RouteResult::BlockRow>& rows) {
  BlockSummary s;
  s.blocks = int64_t(rows.size());
  std::vector<float> dur_ms, per_token;  // stats_us scales by 1000: ms in, µs out (per token: µs in, ns out)
  std::vector<int> sms;
  for (const auto& r : rows) {
    dur_ms.push_back(float(1e-3 * (r.end_us - r.start_us)));
    if (r.tokens > 0) per_token.push_back(float((r.end_us - r.start_us) / double(r.tokens)));  // µs in, ns out
    s.last_end_us = std::max(s.last_end_us, r.end_us);
    sms.push_back(r.sm);
  }
  std::sort(sms.begin(), sms.end());
  s.sms = std::unique(sms.begin(), sms.end()) - sms.begin();
  s.duration_us = stats_us(dur_ms);
  s.ns_per_token = stats_us(per_token);
  std::vector<size_t> order(rows.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return rows[a].end_us - rows[a].start_us > rows[b].end_us - rows[b].start_us;
  });
  order.resize(std::min<size_t>(order.size(), 5));
  s.slowest = order;
  for (size_t m = 0; m < s.mark_median_us.size(); ++m) {
    std::vector<float> at_ms;
    for (const auto& r : rows)
      if (r.marks_us[m]) at_ms.push_back(float(1e-3 * *r.marks_us[m]));
    if (!at_ms.empty()) s.mark_median_us[m] = stats_us(at_ms).median;
  }
  return s;
}

// What a bench run measured: the shape's cost, the roofline, every route's timings.
// The printers below turn it into JSON, CSV and the table.
struct BenchReport {
  bool skipped = false;        // no GPU (and nothing refused): exit 77
  std::string skip_reason;
  int exit_code = 0;
  bool have_gpu = false;
  std::string device;
  int multiprocessors = 0;
  ShapeCost cost;
  CopyRoofline roof;
  int kv_copies = 1;
  std::vector<RouteResult> results;
  const RouteResult* base() const {  // the first route that ran: the speed-up baseline
    for (const auto& rr : results)
      if (rr.status == BenchStatus::ok) return &rr;
    return nullptr;
  }
  double gbps(double us) const { return us > 0 ? cost.bytes() / (us * 1e-6) / 1e9 : 0.0; }
  double tflops(double us) const { return us > 0 ? cost.flop / (us * 1e-6) / 1e12 : 0.0; }
  double pct_bw(double us) const { return roof.gbps > 0 ? 100.0 * gbps(us) / roof.gbps : 0.0; }
};

BenchReport run_bench(const Batch& b, const BenchOptions& opt, const std::vector<std::string>& routes, bool quiet, std::ostream& err) {
  BenchReport r;
  const auto rows = oracle_windows(b);
  r.results.resize(routes.size() + opt.peers.size());
  bool any_refused = false;
  // refusals are answers independent of the machine: decide them first
  for (size_t i = 0; i < r.results.size(); ++i) {
    RouteResult& rr = r.results[i];
    if (i >= routes.size()) rr.peer = parse_peer(opt.peers[i - routes.size()]);
    rr.requested = rr.peer ? rr.peer->route : routes[i];
    const RoutedBatch rb = route_batch(b, rr.requested == "auto" ? std::nullopt : forced_route(rr.requested));
    rr.route = rb.decision;
    if (rb.refused()) {
      rr.status = BenchStatus::refused;
      rr.message = rb.refusal();
      any_refused = true;
      if (!quiet) err << "mlactl: bench: route refused: " << rr.message << "\n";
    }
  }
  std::string why;
  r.have_gpu = gpu_available(&why);
  if (!r.have_gpu && !any_refused) {
    r.skip_reason = no_gpu_reason(why);
    err << "mlactl: bench: " << r.skip_reason << "\n";
    r.skipped = true;
    r.exit_code = kExitSkipped;
    return r;
  }
  if (!r.have_gpu) {
    // some routes refused (an answer on any machine), the others cannot be timed here
    for (auto& rr : r.results)
      if (rr.status != BenchStatus::refused) {
        rr.status = BenchStatus::skipped;
        rr.message = no_gpu_reason(why);
      }
  }

  r.cost = shape_cost(b, rows);
  const bool progress = isatty(STDERR_FILENO) && !quiet;
  if (r.have_gpu) {
    // the inputs and each route's position audit (slot -> request, position: 8 bytes a slot)
    require_within_budget(estimated_input_bytes(b, int64_t(rows.size())) + b.kv_cache.num_blocks * (int64_t)b.kv_cache.block_size * 8, "/requests",
                          "bench inputs");
    if (progress) err << "bench: generating inputs\n";
    Inputs in = generate_inputs(b, rows, 0);
    const double kv_bytes = double(in.kv.bytes.size());
    r.kv_copies = opt.kv_copies > 0 ? opt.kv_copies : int(std::min(256.0, std::max(2.0, std::ceil(kRotateBytes / std::max(1.0, kv_bytes)))));
    if (progress) err << "bench: measuring the copy roofline\n";
    r.roof = gpu_copy_roofline(size_t(opt.copy_mib) << 20, 10);
    if (!r.roof.ok) throw Error(kExitDevice, "", "device copy roofline: " + r.roof.error);
    for (auto& rr : r.results) {
      if (rr.status == BenchStatus::refused) continue;
      if (rr.peer) bench_peer(b, opt, rows, in, rr, r.kv_copies, progress, err);
      else bench_route(b, opt, rows, in, rr, r.kv_copies, progress, err);
    }
    r.device = gpu_device_name();
    r.multiprocessors = gpu_device_multiprocessors();
  }

  for (const auto& rr : r.results) {
    if (rr.status == BenchStatus::failed) r.exit_code = std::max(r.exit_code, int(kExitDevice));
    else if (rr.status == BenchStatus::nonfinite || !rr.audit_ok) r.exit_code = std::max(r.exit_code, int(kExitVerifyFailed));
  }
  if (r.exit_code == 0 && any_refused) r.exit_code = kExitRefused;
  return r;
}

std::string utc_now() {
  std::time_t t = std::time(nullptr);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&t));
  return buf;
}

// The JSON of --block-times for one route: the summary, then every block (empty
// blocks and a note where the stage-1 kernel that ran does not record).
nlohmann::ordered_json block_times_json(const RouteResult& rr) {
  nlohmann::ordered_json o;
  if (rr.blocks.empty()) {
    o["note"] = "not recorded: only the wgmma stage-1 kernels clock their blocks (" + stage1_text(rr.bench) + " ran)";
    return o;
  }
  const BlockSummary s = summarize_blocks(rr.blocks);
  o["blocks"] = s.blocks;
  o["sms"] = s.sms;
  o["duration_us"] = stats_json(s.duration_us);
  o["last_end_us"] = s.last_end_us;
  o["ns_per_token"] = stats_json(s.ns_per_token);
  auto arr = nlohmann::ordered_json::array();
  nlohmann::ordered_json marks = nlohmann::ordered_json::object();
  for (size_t m = 0; m < s.mark_median_us.size(); ++m)
    if (s.mark_median_us[m]) marks[kMarkKeys[m]] = *s.mark_median_us[m];
  o["mark_median_us"] = marks;
  for (const auto& b : rr.blocks) {
    nlohmann::ordered_json row = {{"block", b.block}, {"workgroup", b.workgroup}, {"sm", b.sm}, {"start_us", b.start_us},
                                  {"end_us", b.end_us}, {"works", b.works}, {"tokens", b.tokens}};
    nlohmann::ordered_json bm = nlohmann::ordered_json::object();
    for (size_t m = 0; m < b.marks_us.size(); ++m)
      if (b.marks_us[m]) bm[kMarkKeys[m]] = *b.marks_us[m];
    row["marks_us"] = bm;
    arr.push_back(row);
  }
  o["per_block"] = arr;
  return o;
}

void print_bench_json(std::ostream& out, const Batch& b, const BenchOptions& opt, const BenchReport& r) {
  const ShapeCost& cost = r.cost;
  const RouteResult* base = r.base();
  auto pct_fl = [&](double us) { return opt.peak() > 0 ? 100.0 * r.tflops(us) / opt.peak() : 0.0; };
  auto j = json_envelope("bench");
  j["case"] = b.name;
  j["date_utc"] = utc_now();
  j["device"] = {{"name", r.device},
                 {"multiprocessors", r.multiprocessors},
                 {"planner_num_cu", b.platform.num_cu},
                 {"copy_roofline_gbps", r.roof.gbps},
                 {"copy_bytes", r.roof.bytes},
                 {"copy_median_us", r.roof.median_ms * 1e3},
                 {"bf16_peak_tflops", opt.peak()},
                 {"bf16_peak_source", opt.peak_source(r.device)}};
  j["shape"] = {{"requests", cost.requests},
                {"rows", cost.rows},
                {"heads", b.model.num_heads},
                {"max_query_len", b.max_query_len()},
                {"max_seq_len", b.max_seq_len()},
                {"kv_dtype", to_string(b.kv_cache.dtype)},
                {"q_dtype", to_string(b.decode.q_dtype)},
                {"block_size", b.kv_cache.block_size},
                {"layout", to_string(b.kv_cache.layout)},
                {"causal", b.decode.causal},
                {"num_cu", b.platform.num_cu},
                {"bytes", cost.bytes()},
                {"kv_bytes", cost.kv_bytes},
                {"q_bytes", cost.q_bytes},
                {"out_bytes", cost.out_bytes},
                {"flop", cost.flop}};
  j["settings"] = {{"warmup", opt.warmup}, {"iters", opt.iters}, {"kv_copies", r.kv_copies}, {"l2_rotated", r.kv_copies > 1}};
  auto arr = nlohmann::ordered_json::array();
  for (const auto& rr : r.results) {
    nlohmann::ordered_json o;
    o["requested"] = rr.requested;
    if (rr.peer) o["peer"] = {{"name", rr.peer->name}, {"command", rr.peer->command}};
    o["route"] = route_json(rr.route);  // the one route object of every verb's JSON
    o["status"] = to_string(rr.status);
    if (!rr.message.empty()) o["message"] = rr.message;
    if (rr.ran()) {
      o["planner"] = to_string(rr.planner);
      o["workgroups"] = rr.workgroups;
      o["works"] = rr.works;
      o["partial_rows"] = rr.partial_rows;
      o["position_audit_ok"] = rr.audit_ok;
      o["stage1_kernel"] = rr.bench.stage1 ? mla::to_string(rr.bench.stage1->kernel) : "none";
      o["stage1_why"] = rr.bench.stage1_why;
      o["stage1"] = rr.bench.stage1 ? stage1_json(*rr.bench.stage1) : nlohmann::ordered_json(nullptr);
      o["reduce"] = reduce_json(rr.bench.reduce);
      o["kv_copy_bytes"] = rr.bench.kv_copy_bytes;
      o["kernel_us"] = stats_json(rr.stage1);
      o["kernels_us"] = stats_json(rr.total);
      o["reduce_us_median"] = rr.total.median - rr.stage1.median;
      o["host_plan_us"] = rr.plan_us;
      o["metadata_plus_kernels_us"] = rr.plan_us + rr.total.median;
      o["gbps"] = r.gbps(rr.total.median);
      o["gbps_kernel_only"] = r.gbps(rr.stage1.median);
      o["pct_copy_roofline"] = r.pct_bw(rr.total.median);
      o["tflops"] = r.tflops(rr.total.median);
      o["pct_peak_tflops"] = pct_fl(rr.total.median);
      o["nonfinite_outputs"] = rr.nonfinite;
      if (base) o["speedup_vs_first"] = rr.total.median > 0 ? base->total.median / rr.total.median : 0.0;
      if (opt.block_times) o["block_times"] = block_times_json(rr);
    }
    arr.push_back(o);
  }
  j["results"] = arr;
  print_json(out, j);
}

void print_bench_csv(std::ostream& out, const BenchReport& r, double peak) {
  Table c;
  c.header = {"route", "planner", "stage1_kernel", "reduce", "workgroups", "kernel_us_median", "kernel_us_p10", "kernel_us_p90",
              "kernels_us_median", "kernels_us_min", "kernels_us_p10", "kernels_us_p90", "kernels_us_max", "host_plan_us",
              "gbps", "pct_copy_roofline", "tflops", "pct_peak_tflops", "copy_roofline_gbps", "status"};
  for (const auto& rr : r.results) {
    const bool ran = rr.ran();
    auto num = [&](double v, int p) { return ran ? fx(v, p) : std::string(); };
    c.add({rr.shown(), ran ? to_string(rr.planner) : "", ran ? stage1_text(rr.bench) : "",
           ran ? std::string(mla::to_string(rr.bench.reduce.kind)) : "",
           ran ? std::to_string(rr.workgroups) : "", num(rr.stage1.median, 2), num(rr.stage1.p10, 2), num(rr.stage1.p90, 2),
           num(rr.total.median, 2), num(rr.total.min, 2), num(rr.total.p10, 2), num(rr.total.p90, 2), num(rr.total.max, 2),
           num(rr.plan_us, 1), num(r.gbps(rr.total.median), 1), num(r.pct_bw(rr.total.median), 2), num(r.tflops(rr.total.median), 2),
           num(peak > 0 ? 100.0 * r.tflops(rr.total.median) / peak : 0.0, 2), fx(r.roof.gbps, 1), to_string(rr.status)});
  }
  c.print(out, Format::csv);
}

void print_bench_table(std::ostream& out, const Batch& b, const BenchOptions& opt, const BenchReport& r) {
  const ShapeCost& cost = r.cost;
  const RouteResult* base = r.base();
  auto pct_fl = [&](double us) { return opt.peak() > 0 ? 100.0 * r.tflops(us) / opt.peak() : 0.0; };
  Table t;
  t.header = {"route", "planner", "stage 1", "WGs", "kernel µs", "+reduce µs", "p10-p90 µs", "plan+kernels µs", "GB/s", "% copy",
              "TFLOP/s", "% peak", "speed-up", "status"};
  t.right_align = {false, false, false, true, true, true, true, true, true, true, true, true, true, false};
  for (const auto& rr : r.results) {
    if (!rr.ran()) {
      t.add({rr.shown(), "", "", "", "", "", "", "", "", "", "", "", "", std::string(to_string(rr.status)) + ": " + rr.message});
      continue;
    }
    t.add({rr.shown(), rr.peer ? "its own" : to_string(rr.planner), rr.peer ? "(whole call)" : stage1_text(rr.bench),
           rr.peer ? "" : std::to_string(rr.workgroups), rr.peer ? "" : fx(rr.stage1.median, 1), fx(rr.total.median, 1),
           fx(rr.total.p10, 1) + "-" + fx(rr.total.p90, 1), fx(rr.plan_us + rr.total.median, 1),
           fx(r.gbps(rr.total.median), 0), fx(r.pct_bw(rr.total.median), 1), fx(r.tflops(rr.total.median), 1),
           fx(pct_fl(rr.total.median), 1), base ? fx(base->total.median / rr.total.median, 2) + "x" : "",
           rr.status == BenchStatus::ok ? std::string("ok") : rr.message});
  }
  const std::string shape_text = std::to_string(cost.requests) + " requests, " + std::to_string(b.model.num_heads) + " heads, q_len " +
                                 std::to_string(b.max_query_len()) + ", max seq_len " + std::to_string(b.max_seq_len()) + ", KV " +
                                 to_string(b.kv_cache.dtype) + ", block_size " + std::to_string(b.kv_cache.block_size) + " (" +
                                 to_string(b.kv_cache.layout) + ")" + (b.decode.causal ? ", causal" : ", non-causal");
  std::vector<std::pair<std::string, std::string>> kv;
  kv.push_back({"case", b.name.empty() ? "(unnamed)" : terminal_safe(b.name)});
  kv.push_back({"shape", shape_text});
  kv.push_back({"device", r.device.empty() ? "(none)" : r.device});
  if (r.have_gpu) {
    kv.push_back({"copy roofline", fx(r.roof.gbps, 0) + " GB/s (device-to-device copy of " + std::to_string(r.roof.bytes >> 20) +
                                       " MiB, read + write, median of " + std::to_string(r.roof.iters) + ")"});
    kv.push_back({"bf16 peak", fx(opt.peak(), 0) + " TFLOP/s (" + opt.peak_source(r.device) + ")"});
    // The stage-1 kernels run one block per multiprocessor: a plan for another CU count
    // runs in extra waves (docs/bench_notes.md).
    const std::string cu = std::to_string(b.platform.num_cu), mp = std::to_string(r.multiprocessors);
    kv.push_back({"plan CUs", "num_cu " + cu + " (platform.num_cu); the device has " + mp + " multiprocessors" +
                                  (r.multiprocessors > 0 && r.multiprocessors != b.platform.num_cu ? ": --num-cu " + mp + " plans for it" : "")});
    kv.push_back({"bytes / FLOP", fx(cost.bytes() / 1e6, 1) + " MB (KV once, q, out) / " + fx(cost.flop / 1e9, 1) + " GFLOP"});
    kv.push_back({"timing", "median of " + std::to_string(opt.iters) + " event-timed runs after " + std::to_string(opt.warmup) +
                                " warm-up, KV rotated over " + std::to_string(r.kv_copies) + " copies"});
  }
  // Why that stage-1 kernel, what the launches enqueued, and how the partials were combined, once per run route
  // (both can differ by route).
  for (const auto& rr : r.results) {
    if (!rr.ran()) continue;
    if (rr.peer) {
      kv.push_back({"peer " + rr.peer->name, rr.peer->command + " on route " + rr.peer->route +
                                                 "'s metadata: the executor's device-event times of its whole call, same inputs and KV rotation"});
      continue;
    }
    const std::string route = r.results.size() > 1 ? " " + std::string(to_string(rr.route.route)) : std::string();
    if (!rr.bench.stage1_why.empty()) kv.push_back({"stage 1" + route, stage1_text(rr.bench) + ": " + rr.bench.stage1_why});
    if (rr.bench.stage1) kv.push_back({"launch" + route, ::mlactl::cli::stage1_text(*rr.bench.stage1)});
    kv.push_back({"reduce" + route, reduce_text(rr.bench.reduce)});

    if (!opt.block_times) continue;
    if (rr.blocks.empty()) {
      kv.push_back({"block times" + route, "not recorded: only the wgmma stage-1 kernels clock their blocks"});
      continue;
    }
    const BlockSummary s = summarize_blocks(rr.blocks);
    kv.push_back({"block times" + route,
                  std::to_string(s.blocks) + " blocks on " + std::to_string(s.sms) + " SMs, one untimed launch: " +
                      "duration min / median / max " + fx(s.duration_us.min, 1) + " / " + fx(s.duration_us.median, 1) +
                      " / " + fx(s.duration_us.max, 1) + " µs, last end " + fx(s.last_end_us, 1) + " µs; ns per KV token " +
                      "min / median / max " + fx(s.ns_per_token.min, 2) + " / " + fx(s.ns_per_token.median, 2) + " / " +
                      fx(s.ns_per_token.max, 2)});
    std::string slow;
    for (size_t i : s.slowest) {
      const auto& b = rr.blocks[i];
      slow += (slow.empty() ? "" : "; ") + std::string("block ") + std::to_string(b.block) + " (workgroup " +
              std::to_string(b.workgroup) + ", SM " + std::to_string(b.sm) + ", " + std::to_string(b.works) + " works, " +
              std::to_string(b.tokens) + " tokens) " + fx(b.end_us - b.start_us, 1) + " µs from " + fx(b.start_us, 1);
    }
    kv.push_back({"slowest blocks" + route, slow});
    std::string phases;
    for (size_t m = 0; m < s.mark_median_us.size(); ++m)
      if (s.mark_median_us[m]) phases += (phases.empty() ? "" : ", ") + std::string(kMarkNames[m]) + " " + fx(*s.mark_median_us[m], 1);
    if (!phases.empty())
      kv.push_back({"block phases" + route, phases + " (µs after the block's entry, median over blocks; the first chunk)"});
  }
  print_kv(out, kv);
  out << "\n";
  t.print(out, Format::table);
  out << "\nkernel = stage 1 alone; +reduce = stage 1 + reduce (GB/s, TFLOP/s and speed-up use it); plan+kernels adds the host "
         "metadata + planning median.\n";
}

}  // namespace

std::vector<std::string> bench_status_names() {
  std::vector<std::string> n;
  for (int i = 0; i <= static_cast<int>(BenchStatus::nonfinite); ++i) n.push_back(to_string(static_cast<BenchStatus>(i)));
  return n;
}

void setup_bench(CLI::App& app, Context& ctx) {
  auto bo = std::make_shared<BatchOptions>();
  auto opt = std::make_shared<BenchOptions>();
  auto* sub = app.add_subcommand("bench", "time the routed kernels on the GPU (device events, L2-rotated KV): µs, GB/s, TFLOP/s, % of roofline");
  add_batch_options(sub, *bo);
  add_kernel_option(sub, opt->kernel);
  sub->add_option("--compare", opt->compare, "routes side by side, comma-separated (e.g. gluon_decode,asm_persistent); the first is the baseline");
  sub->add_option("--peer", opt->peers,
                  "NAME:ROUTE=COMMAND: an external kernel timed beside mlactl's on the same shape, inputs and KV rotation, "
                  "through the executor protocol's timing (docs/executor-protocol.md); repeatable");
  sub->add_option("--peer-timeout", opt->peer_timeout_s, "seconds a --peer may take (build, warm-up and timed calls)")
      ->capture_default_str()->check(CLI::Range(1.0, 86400.0));
  sub->add_option("--stage1", opt->stage1,
                  "stage-1 kernel: automatic (the fastest that applies), wgmma (sm_90a on Hopper), mma, cuda_core; "
                  "a named kernel that does not apply to the view is an error (never a substitute)")
      ->check(CLI::IsMember(std::vector<std::string>(std::begin(mla::kStage1KernelNames), std::end(mla::kStage1KernelNames))))
      ->capture_default_str();
  sub->add_option("--fp8-qk", opt->fp8_qk,
                  "precision mode: Q·Kᵀ of fp8 q with e4m3fn KV on the wgmma stage 1 [automatic = e4m3]: e4m3 (fp8 "
                  "wgmma on the codes, ~14-bit accumulation), fp16 (codes converted to fp16 first, fp32-exact scores); "
                  "an error elsewhere")
      ->type_name("MMA")
      ->transform(enum_names(mla::kFp8QkMmas, &mla::fp8_qk_mma_from_name));
  sub->add_option("--fp8-pv", opt->fp8_pv,
                  "precision mode: P·V of the wgmma raw-code fp8 paths [automatic]: automatic (e4m3 with e4m3 Q·Kᵀ, "
                  "fp16 with K in registers), e4m3 (fp8 wgmma on the V codes, P in two e4m3 parts), fp16 (V converted "
                  "to fp16, P once in fp16); an error elsewhere")
      ->type_name("MMA")
      ->transform(enum_names(mla::kFp8PvMmas, &mla::fp8_pv_mma_from_name));
  sub->add_option("--fp8-convert", opt->fp8_convert,
                  "precision mode: where e4m3fn KV codes become fp16 operands when Q·Kᵀ is not on e4m3 wgmma (bf16 q, "
                  "or --fp8-qk fp16) [automatic = registers]: registers (the consumers, K and V, P once in fp16), "
                  "staged (the producer, into 16-bit stages, P in two parts); an error elsewhere")
      ->type_name("WHERE")
      ->transform(enum_names(mla::kFp8Converts, &mla::fp8_convert_from_name));
  sub->add_option("--pv-precision", opt->pv_precision,
                  "precision mode: P in the P·V of the wgmma stage 1 on 16-bit KV [automatic = split]: split (hi + lo "
                  "parts, fp32-level), once (rounded once to bf16/fp16 as FlashMLA does: half the P·V wgmmas); an "
                  "error where the path cannot")
      ->type_name("PRECISION")
      ->transform(enum_names(mla::kPvPrecisions, &mla::pv_precision_from_name));
  sub->add_flag("--block-times", opt->block_times,
               "after the timed runs, one more stage-1 launch that clocks every block (SM, start, end on the device "
               "clock; the wgmma kernels record): durations, the slowest blocks with their works and tokens, ns per KV "
               "token (JSON: every block)");
  sub->add_option("--planner", opt->planner, "plan every route with this planner instead of its own")->check(CLI::IsMember(planner_names()));
  sub->add_option("--batch-size", opt->batch_size, "inline batch: repeat the single --context value this many times (one request each)");
  sub->add_option("--warmup", opt->warmup, "untimed runs first")->capture_default_str()->check(CLI::Range(0, 10000));
  sub->add_option("--iters", opt->iters, "timed runs (at least 20 for the docs/design.md §8 numbers)")->capture_default_str()->check(CLI::Range(1, 100000));
  sub->add_option("--kv-copies", opt->kv_copies, "KV cache copies rotated between runs (0: enough for 256 MiB in all, at least 2; 1: no rotation)")
      ->capture_default_str()->check(CLI::Range(0, 4096));
  sub->add_option_function<double>(
      "--peak-tflops", [opt](const double& v) { opt->peak_tflops = v; }, "bf16 dense matrix rate for the % of peak [989: H200 SXM datasheet]");
  sub->add_option("--copy-mib", opt->copy_mib, "size of the device-to-device roofline copy (MiB, read and written)")->capture_default_str()->check(CLI::Range(16, 65536));
  sub->callback([bo, opt, &ctx]() {
    std::ostream& out = *ctx.out;
    std::ostream& err = *ctx.err;
    BatchOptions bopts = *bo;
    if (opt->batch_size > 0) {
      if (bopts.context.empty() || bopts.context.find(',') != std::string::npos)
        throw Error(kExitUsage, "", "--batch-size repeats one inline --context value (e.g. --context 8191 --batch-size 128)");
      std::string ctxs = bopts.context;
      for (int i = 1; i < opt->batch_size; ++i) ctxs += "," + bopts.context;
      bopts.context = ctxs;
    }
    Batch b = load_batch(bopts);

    std::vector<std::string> routes = split_list(opt->compare);
    if (!opt->compare.empty() && !opt->kernel.empty()) throw Error(kExitUsage, "", "give --kernel or --compare, not both");
    if (routes.empty()) routes.push_back(opt->kernel.empty() ? "auto" : opt->kernel);
    for (const auto& r : routes)
      if (r != "auto" && !route_from_string(r))
        throw Error(kExitUsage, "", "--compare: unknown route \"" + r + "\"");

    BenchReport r = run_bench(b, *opt, routes, ctx.global.quiet, err);
    ctx.exit_code = r.exit_code;
    if (r.skipped) {
      // a skip is an answer too: JSON readers get the envelope with the reason
      if (ctx.global.fmt() == Format::json) {
        auto j = json_envelope("bench");
        j["case"] = b.name;
        j["status"] = "skipped";
        j["exit_code"] = r.exit_code;
        j["message"] = r.skip_reason;
        print_json(out, j);
      }
      return;
    }
    if (ctx.global.fmt() == Format::json) print_bench_json(out, b, *opt, r);
    else if (ctx.global.fmt() == Format::csv) print_bench_csv(out, r, opt->peak());
    else print_bench_table(out, b, *opt, r);
  });
}

}  // namespace mlactl::cli
