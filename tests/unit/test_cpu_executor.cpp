// The CPU executor against the reference with hand-built work lists (reference
// docs/stacks/vllm-rocm-aiter.md §A7.1), and corrupted work lists that compare must catch.
#include <catch2/catch.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <limits>
#include <string>

#include <Eigen/Dense>

#include "core/stacks/vllm_rocm_aiter/head_padding.hpp"
#include "core/compare.hpp"
#include "core/dtype.hpp"
#include "core/heads.hpp"
#include "core/inputs.hpp"
#include "core/layout.hpp"
#include "core/reference.hpp"
#include "core/semantics.hpp"
#include "kernels/cpu_executor.hpp"
#include "numerics_helpers.hpp"

using namespace mlactl;
using namespace mlactl::testing;

namespace {

struct Case {
  Batch b;
  std::vector<RowWindow> rows;
  Inputs in;
  ReferenceOutput ref;
  SlotList slots;
  Case() = default;
  explicit Case(const BatchShape& s) { init(make_batch(s)); }
  // (re)derive everything from the batch: windows, inputs, reference, slot list
  void init(Batch batch) {
    b = std::move(batch);
    rows = oracle_windows(b);
    in = generate_inputs(b, rows);
    ref = compute_reference(b, rows, in, 2);
    slots = slot_list(b, b.rows_per_padding_request());
  }
};

struct Outcome {
  ExecResult exec;
  CompareReport cmp;
  std::vector<uint16_t> view_out;
  std::vector<float> view_lse;
};

KernelView view_for(const Inputs& in, int view_heads, int fold_ratio) {
  KernelView v;
  v.heads = view_heads;
  v.fold_ratio = fold_ratio;
  v.head_dim = in.head_dim;
  v.v_dim = in.v_dim;
  v.q_dtype = in.q.dtype;
  v.kv_dtype = in.kv.dtype;
  return v;
}

// Poison outputs, lay q out for the view, run the CPU executor, un-layout, compare.
Outcome execute(const Case& c, const WorkList& wl, const KernelView& view, const std::vector<int32_t>& kv_indices,
                int64_t uniform_qlen = 1) {
  const HeadPadding hp = head_padding(c.in.num_heads);
  const ViewLayout layout = make_view_layout(c.in.num_rows, view, hp, uniform_qlen);
  const EncodedTensor kq = build_kernel_q(c.in, layout, view);
  Outcome o;
  const DType out_dtype = c.b.model.dtype;
  o.view_out.assign((size_t)(layout.view_rows * view.heads * view.v_dim), nan_bits16(out_dtype));
  o.view_lse.assign((size_t)(layout.view_rows * view.heads), std::numeric_limits<float>::quiet_NaN());
  std::vector<float> pout((size_t)(wl.num_partial_rows * view.heads * view.v_dim), NAN);
  std::vector<float> plse((size_t)(wl.num_partial_rows * view.heads), NAN);
  ExecArgs a;
  a.work = &wl;
  a.view = view;
  a.kv_indices = kv_indices.data();
  a.num_kv_indices = (int64_t)kv_indices.size();
  a.q = kq.data();
  a.num_q_rows = layout.view_rows;
  a.q_scale = kq.scale;
  a.kv = c.in.kv.data();
  a.num_slots = c.in.num_slots;
  a.kv_row_stride = c.in.head_dim;
  a.kv_scale = c.in.kv.scale;
  a.fp8_flavor = c.b.fp8_flavor();
  a.softmax_scale = c.in.softmax_scale;
  a.out_dtype = out_dtype;
  a.out = o.view_out.data();
  a.lse = o.view_lse.data();
  a.partial_out = pout.data();
  a.partial_lse = plse.data();
  CpuExecutor exec(2);
  o.exec = exec.run(a);
  if (!o.exec.ok) return o;
  const auto out = unlayout_out(layout, out_dtype, o.view_out.data(), view.v_dim);
  const auto lse = unlayout_lse(layout, o.view_lse.data());
  CompareOptions opt;
  opt.out_dtype = out_dtype;
  opt.tol = default_tolerance(out_dtype, c.in.kv.dtype, c.in.q.dtype);
  o.cmp = compare_outputs(c.rows, c.ref, out.data(), lse.data(), opt);
  return o;
}

int64_t qlen_of(const Case& c, size_t r) {
  return c.b.requests[r].padding ? 0 : c.b.requests[r].query_len;
}

// One final-output work per request over its whole list (Gluon-style), one
// workgroup each; the reduce has one single-entry tile per request (skipped).
WorkList single_work_list(const Case& c) {
  WorkList wl;
  wl.work_indptr.push_back(0);
  wl.reduce_indptr.push_back(0);
  for (size_t r = 0; r < c.b.requests.size(); ++r) {
    const int64_t q = qlen_of(c, r);
    if (q == 0) continue;
    const int64_t q0 = c.slots.row_begin[r];
    wl.work_info.push_back(make_work((int32_t)r, -1, q0, q0 + q, c.slots.indptr[r], c.slots.indptr[r + 1], 0));
    wl.work_indptr.push_back((int32_t)wl.work_info.size());
    wl.reduce_final_map.push_back({(int32_t)q0, (int32_t)(q0 + q)});
    wl.reduce_partial_map.push_back(0);
    wl.reduce_indptr.push_back((int32_t)wl.reduce_partial_map.size());
  }
  wl.num_workgroups = (int)wl.work_indptr.size() - 1;
  wl.num_q_rows = c.in.num_rows;
  return wl;
}

// Each request's list split in `splits` partial works (kv_offset = its KV after
// kv_end, the causal diagonal), spread round-robin over `workgroups`, merged by
// one reduce tile per request.
WorkList split_work_list(const Case& c, int splits, int workgroups) {
  WorkList wl;
  std::vector<std::vector<WorkInfo>> per_wg((size_t)workgroups);
  wl.reduce_indptr.push_back(0);
  int64_t next_partial = 0, n = 0;
  for (size_t r = 0; r < c.b.requests.size(); ++r) {
    const int64_t q = qlen_of(c, r);
    if (q == 0) continue;
    const int64_t q0 = c.slots.row_begin[r], ks = c.slots.indptr[r], ke = c.slots.indptr[r + 1];
    for (int k = 0; k < splits; ++k) {
      const int64_t a = ks + (ke - ks) * k / splits, e = ks + (ke - ks) * (k + 1) / splits;
      per_wg[(size_t)(n++ % workgroups)].push_back(make_work((int32_t)r, (int32_t)next_partial, q0, q0 + q, a, e, ke - e));
      wl.reduce_partial_map.push_back((int32_t)next_partial);
      next_partial += q;
    }
    wl.reduce_indptr.push_back((int32_t)wl.reduce_partial_map.size());
    wl.reduce_final_map.push_back({(int32_t)q0, (int32_t)(q0 + q)});
  }
  wl.work_indptr.push_back(0);
  for (const auto& g : per_wg) {
    wl.work_info.insert(wl.work_info.end(), g.begin(), g.end());
    wl.work_indptr.push_back((int32_t)wl.work_info.size());
  }
  wl.num_workgroups = workgroups;
  wl.num_partial_rows = next_partial;
  wl.num_q_rows = c.in.num_rows;
  return wl;
}

// One work per query token with the causal trim (AITER's tail rule): token t of q
// ends its list q-1-t entries early and says so in kv_offset.
WorkList per_token_work_list(const Case& c) {
  WorkList wl;
  wl.work_indptr.push_back(0);
  wl.reduce_indptr.push_back(0);
  for (size_t r = 0; r < c.b.requests.size(); ++r) {
    const int64_t q = qlen_of(c, r);
    for (int64_t t = 0; t < q; ++t) {
      const int64_t row = c.slots.row_begin[r] + t, trim = q - 1 - t;
      wl.work_info.push_back(make_work((int32_t)r, -1, row, row + 1, c.slots.indptr[r], c.slots.indptr[r + 1] - trim, trim));
      wl.work_indptr.push_back((int32_t)wl.work_info.size());
    }
  }
  wl.num_workgroups = (int)wl.work_indptr.size() - 1;
  wl.num_q_rows = c.in.num_rows;
  return wl;
}

BatchShape small_shape() {
  BatchShape s;
  s.context_query = {{5, 3}, {200, 3}, {61, 3}, {1000, 3}};
  s.num_padding = 1;
  s.heads = 16;
  s.block_size = 16;
  s.spare_blocks = 5;
  return s;
}


// Stage 1 as it was first written: Eigen GEMMs on RowMatrix operands per KV tile
// of 128. The optimised executor must write exactly these bits (outputs, LSE,
// partials) for a well-formed work list.
using RowMatrix = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct Buffers {
  std::vector<uint16_t> out;
  std::vector<float> lse, pout, plse;
};

void eigen_stage1(const ExecArgs& a, Buffers& o) {
  const KernelView& v = a.view;
  const int64_t H = v.heads, D = v.head_dim, V = v.v_dim;
  const float q_scale = v.q_dtype == DType::fp8 ? a.q_scale : 1.0f;
  const float kv_scale = v.kv_dtype == DType::fp8 ? a.kv_scale : 1.0f;
  for (const WorkInfo& wi : a.work->work_info) {
    const int64_t qs = wi.qo_start, Qn = wi.qo_end - wi.qo_start, ks = wi.kv_start, ke = wi.kv_end;
    if (Qn <= 0) continue;
    const int64_t rows_per_chunk = std::max<int64_t>(1, 1024 / H);
    for (int64_t i0 = 0; i0 < Qn; i0 += rows_per_chunk) {
      const int64_t i1 = std::min(Qn, i0 + rows_per_chunk), nr = i1 - i0, M = nr * H;
      std::vector<int64_t> limit(nr);
      for (int64_t i = i0; i < i1; ++i)
        limit[i - i0] = std::max(ks, v.causal ? ke - std::max<int64_t>(0, (Qn - 1 - i) - wi.kv_offset) : ke);
      const int64_t chunk_end = ke > ks ? limit[nr - 1] : ks;
      RowMatrix q(M, D), keys, scores, probs, acc = RowMatrix::Zero(M, V);
      decode_elements(v.q_dtype, a.fp8_flavor, a.q, (qs + i0) * H * D, M * D, q_scale, q.data());
      std::vector<float> row_max(M, -std::numeric_limits<float>::infinity()), row_sum(M, 0.0f);
      for (int64_t e0 = ks; e0 < chunk_end; e0 += 128) {
        const int64_t e1 = std::min(chunk_end, e0 + 128), n = e1 - e0;
        keys.resize(n, D);
        for (int64_t e = e0; e < e1; ++e)
          decode_elements(v.kv_dtype, a.fp8_flavor, a.kv, a.kv_indices[e] * D, D, kv_scale, keys.row(e - e0).data());
        scores.noalias() = q * keys.transpose();
        probs.resize(M, n);
        for (int64_t r = 0; r < M; ++r) {
          const int64_t visible = std::min(e1, limit[r / H]) - e0;
          float* p = probs.row(r).data();
          if (visible <= 0) {
            std::fill(p, p + n, 0.0f);
            continue;
          }
          const float* sc = scores.row(r).data();
          float tile_max = -std::numeric_limits<float>::infinity();
          for (int64_t j = 0; j < visible; ++j) tile_max = std::max(tile_max, a.softmax_scale * sc[j]);
          const float m_new = std::max(row_max[r], tile_max);
          const float alpha = std::exp(row_max[r] - m_new);
          float sum = 0;
          for (int64_t j = 0; j < visible; ++j) {
            p[j] = std::exp(a.softmax_scale * sc[j] - m_new);
            sum += p[j];
          }
          std::fill(p + visible, p + n, 0.0f);
          row_sum[r] = row_sum[r] * alpha + sum;
          row_max[r] = m_new;
          if (alpha != 1.0f) acc.row(r) *= alpha;
        }
        acc.noalias() += probs * keys.leftCols(V);
      }
      for (int64_t r = 0; r < M; ++r) {
        const int64_t qrow = i0 + r / H, h = r % H;
        const float l = row_sum[r];
        const float inv = l == 0.0f ? 0.0f : 1.0f / l;
        const float lse = l == 0.0f ? -std::numeric_limits<float>::infinity() : row_max[r] + std::log(l);
        if (wi.partial_qo_loc < 0) {
          for (int64_t d = 0; d < V; ++d)
            o.out[((qs + qrow) * H + h) * V + d] =
                a.out_dtype == DType::fp16 ? float_to_fp16_bits(acc(r, d) * inv) : float_to_bf16_bits(acc(r, d) * inv);
          o.lse[(qs + qrow) * H + h] = lse;
        } else {
          for (int64_t d = 0; d < V; ++d) o.pout[((wi.partial_qo_loc + qrow) * H + h) * V + d] = acc(r, d) * inv;
          o.plse[(wi.partial_qo_loc + qrow) * H + h] = lse;
        }
      }
    }
  }
}

// Runs the CPU executor and the formulation above on the same poisoned buffers.
// With `with_reduce` false the tiles that merge partials are left out of the final
// output comparison (the reduce is the same code either way); partials always count.
void expect_same_bits_as_eigen(const Case& c, const WorkList& wl, const KernelView& view,
                               const std::vector<int32_t>& kv_indices, int64_t uniform_qlen, int threads) {
  const HeadPadding hp = head_padding(c.in.num_heads);
  const ViewLayout layout = make_view_layout(c.in.num_rows, view, hp, uniform_qlen);
  const EncodedTensor kq = build_kernel_q(c.in, layout, view);
  const DType out_dtype = c.b.model.dtype;
  Buffers got, want;
  got.out.assign((size_t)(layout.view_rows * view.heads * view.v_dim), nan_bits16(out_dtype));
  got.lse.assign((size_t)(layout.view_rows * view.heads), std::numeric_limits<float>::quiet_NaN());
  got.pout.assign((size_t)(std::max<int64_t>(1, wl.num_partial_rows) * view.heads * view.v_dim), NAN);
  got.plse.assign((size_t)(std::max<int64_t>(1, wl.num_partial_rows) * view.heads), NAN);
  want = got;
  ExecArgs a;
  a.work = &wl;
  a.view = view;
  a.kv_indices = kv_indices.data();
  a.num_kv_indices = (int64_t)kv_indices.size();
  a.q = kq.data();
  a.num_q_rows = layout.view_rows;
  a.q_scale = kq.scale;
  a.kv = c.in.kv.data();
  a.num_slots = c.in.num_slots;
  a.kv_row_stride = c.in.head_dim;
  a.kv_scale = c.in.kv.scale;
  a.fp8_flavor = c.b.fp8_flavor();
  a.softmax_scale = c.in.softmax_scale;
  a.out_dtype = out_dtype;
  a.out = got.out.data();
  a.lse = got.lse.data();
  a.partial_out = got.pout.data();
  a.partial_lse = got.plse.data();
  CpuExecutor exec(threads);
  REQUIRE(exec.run(a).ok);
  eigen_stage1(a, want);
  // rows the reduce rewrote (tiles of more than one partial) are the reduce's, not stage 1's
  for (size_t t = 0; t + 1 < wl.reduce_indptr.size(); ++t) {
    if (wl.reduce_indptr[t + 1] - wl.reduce_indptr[t] <= 1) continue;
    for (int64_t r = wl.reduce_final_map[t][0]; r < wl.reduce_final_map[t][1]; ++r) {
      std::copy_n(got.out.begin() + r * view.heads * view.v_dim, view.heads * view.v_dim,
                  want.out.begin() + r * view.heads * view.v_dim);
      std::copy_n(got.lse.begin() + r * view.heads, view.heads, want.lse.begin() + r * view.heads);
    }
  }
  CHECK(std::memcmp(got.out.data(), want.out.data(), got.out.size() * sizeof(uint16_t)) == 0);
  CHECK(std::memcmp(got.lse.data(), want.lse.data(), got.lse.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(got.pout.data(), want.pout.data(), got.pout.size() * sizeof(float)) == 0);
  CHECK(std::memcmp(got.plse.data(), want.plse.data(), got.plse.size() * sizeof(float)) == 0);
}

}  // namespace

TEST_CASE("cpu executor: single work per request equals the reference", "[executor]") {
  BatchShape s = small_shape();
  SECTION("bf16") {}
  SECTION("fp16") { s.model_dtype = s.kv_dtype = s.q_dtype = DType::fp16; }
  SECTION("fp8 q and KV (e4m3fnuz)") {
    s.arch = Arch::gfx942;
    s.kv_dtype = s.q_dtype = DType::fp8;
    s.kv_scale = 0.5;
  }
  SECTION("non-causal") {
    s.causal = false;
  }
  const Case c(s);
  KernelView view = view_for(c.in, 16, 1);
  view.causal = s.causal;
  const Outcome o = execute(c, single_work_list(c), view, c.slots.indices);
  REQUIRE(o.exec.ok);
  INFO((o.cmp.reasons.empty() ? std::string() : o.cmp.reasons[0]));
  CHECK(o.cmp.passed);
  CHECK(o.cmp.compared_rows == 12);
  CHECK(o.cmp.lse_max_abs_err < 2e-5);
}

TEST_CASE("cpu executor: 3 partials per request + reduce equals the reference", "[executor]") {
  const Case c(small_shape());
  const WorkList wl = split_work_list(c, 3, 5);
  const Outcome o = execute(c, wl, view_for(c.in, 16, 1), c.slots.indices);
  REQUIRE(o.exec.ok);
  INFO((o.cmp.reasons.empty() ? std::string() : o.cmp.reasons[0]));
  CHECK(o.cmp.passed);
  CHECK(o.cmp.lse_max_abs_err < 2e-5);
  CHECK(o.cmp.max_abs_err < 1e-3);
}

TEST_CASE("cpu executor: per-token works with kv_offset (causal trim)", "[executor]") {
  const Case c(small_shape());
  const Outcome o = execute(c, per_token_work_list(c), view_for(c.in, 16, 1), c.slots.indices);
  REQUIRE(o.exec.ok);
  CHECK(o.cmp.passed);
}

TEST_CASE("cpu executor: padded heads (12 -> 16) and head->batch fold (32 = 2 x 16)", "[executor]") {
  BatchShape s = small_shape();
  s.num_padding = 0;
  SECTION("12 heads, tile-and-slice") {
    s.heads = 12;
    const Case c(s);
    const Outcome o = execute(c, split_work_list(c, 2, 3), view_for(c.in, 16, 1), c.slots.indices);
    REQUIRE(o.exec.ok);
    CHECK(o.cmp.passed);
  }
  SECTION("32 heads folded: batch b*2+g holds heads [16g, 16g+16)") {
    s.heads = 32;
    const Case c(s);
    const int64_t L = 3;
    WorkList wl;
    wl.work_indptr.push_back(0);
    wl.reduce_indptr.push_back(0);
    for (size_t r = 0; r < c.b.requests.size(); ++r)
      for (int g = 0; g < 2; ++g) {
        const int64_t fb = (int64_t)r * 2 + g;
        wl.work_info.push_back(make_work((int32_t)fb, -1, fb * L, fb * L + L, c.slots.indptr[r], c.slots.indptr[r + 1], 0));
        wl.work_indptr.push_back((int32_t)wl.work_info.size());
      }
    wl.num_workgroups = (int)wl.work_indptr.size() - 1;
    const Outcome o = execute(c, wl, view_for(c.in, 16, 2), c.slots.indices, L);
    REQUIRE(o.exec.ok);
    CHECK(o.cmp.passed);
    // the same work list read without the fold (heads 32 per row) is wrong
    const Outcome wrong = execute(c, wl, view_for(c.in, 32, 1), c.slots.indices);
    CHECK((!wrong.exec.ok || !wrong.cmp.passed));
  }
}

TEST_CASE("cpu executor: an empty visible window writes 0 and lse -inf", "[executor]") {
  const Case c(small_shape());
  WorkList wl;
  wl.work_indptr = {0, 1};
  wl.work_info.push_back(make_work(0, -1, 0, 1, 4, 4, 0));
  wl.reduce_indptr = {0};
  const Outcome o = execute(c, wl, view_for(c.in, 16, 1), c.slots.indices);
  REQUIRE(o.exec.ok);
  CHECK(o.view_out[0] == 0);
  CHECK(o.view_lse[0] == -std::numeric_limits<float>::infinity());
  CHECK(o.cmp.unwritten_row_heads == 11 * 16);  // every other non-padding row
}

TEST_CASE("cpu executor: corrupted work lists make compare fail", "[executor]") {
  const Case c(small_shape());
  const KernelView view = view_for(c.in, 16, 1);
  SECTION("kv_end + 1: one extra key (the next request's first token)") {
    WorkList wl = single_work_list(c);
    wl.work_info[0].kv_end += 1;
    const Outcome o = execute(c, wl, view, c.slots.indices);
    REQUIRE(o.exec.ok);
    CHECK_FALSE(o.cmp.passed);
    REQUIRE_FALSE(o.cmp.failing.empty());
    CHECK(o.cmp.failing[0].request == 0);
  }
  SECTION("kv_end - 1 in a split: one missing key") {
    WorkList wl = split_work_list(c, 3, 5);
    wl.work_info[0].kv_end -= 1;
    const Outcome o = execute(c, wl, view, c.slots.indices);
    REQUIRE(o.exec.ok);
    CHECK_FALSE(o.cmp.passed);
  }
  SECTION("a dropped work leaves its rows unwritten") {
    WorkList wl = single_work_list(c);
    wl.work_info.erase(wl.work_info.begin() + 2);
    wl.work_indptr.pop_back();
    wl.num_workgroups -= 1;
    const Outcome o = execute(c, wl, view, c.slots.indices);
    REQUIRE(o.exec.ok);
    CHECK_FALSE(o.cmp.passed);
    CHECK(o.cmp.unwritten_row_heads == 3 * 16);
    REQUIRE_FALSE(o.cmp.unwritten.empty());
    CHECK(o.cmp.unwritten[0].request == 2);
  }
  SECTION("swapped partial locations between two requests") {
    WorkList wl = split_work_list(c, 3, 1);  // one workgroup: works in request order
    std::swap(wl.work_info[0].partial_qo_loc, wl.work_info[3].partial_qo_loc);
    const Outcome o = execute(c, wl, view, c.slots.indices);
    REQUIRE(o.exec.ok);
    CHECK_FALSE(o.cmp.passed);
  }
  SECTION("kv_end past the index list is a device fault naming the work") {
    WorkList wl = single_work_list(c);
    wl.work_info.back().kv_end += 1;
    const Outcome o = execute(c, wl, view, c.slots.indices);
    CHECK_FALSE(o.exec.ok);
    CHECK(o.exec.error.find("work 3") != std::string::npos);
  }
}

TEST_CASE("cpu executor: a KV stride mismatch reads the wrong rows", "[executor]") {
  // rope-free inputs (512-wide rows) read by a kernel whose stride is 576 (seed 002)
  BatchShape s = small_shape();
  s.num_padding = 0;
  SparseSpec sp;
  sp.topk = 2048;
  sp.geometry = SparseGeometry::rope_free;
  SECTION("inside the buffer: wrong values, caught by compare") {
    BatchShape big = s;
    big.spare_blocks = 200;  // room for slot * 576 / 512
    Batch b = make_batch(big);
    b.sparse = sp;
    Case c;
    c.init(b);
    REQUIRE(c.in.head_dim == 512);
    // the sparse rows' own index lists, one work per token
    std::vector<int32_t> indices;
    WorkList wl;
    wl.work_indptr.push_back(0);
    wl.reduce_indptr.push_back(0);
    for (const RowWindow& w : c.rows) {
      const int64_t k0 = (int64_t)indices.size();
      for (int64_t pos : w.sparse_positions) indices.push_back((int32_t)kv_slot_of(c.b, w.request, pos));
      wl.work_info.push_back(make_work((int32_t)w.row, -1, w.row, w.row + 1, k0, (int64_t)indices.size(), 0));
      wl.work_indptr.push_back((int32_t)wl.work_info.size());
    }
    KernelView right = view_for(c.in, 16, 1);
    right.causal = false;
    const Outcome ok = execute(c, wl, right, indices);
    REQUIRE(ok.exec.ok);
    CHECK(ok.cmp.passed);
    KernelView strided = right;
    strided.head_dim = 576;
    const Outcome o = execute(c, wl, strided, indices);
    CHECK((!o.exec.ok || !o.cmp.passed));
    if (o.exec.ok) CHECK(o.cmp.failing_elements > 0);
  }
  SECTION("past the end of the buffer: a device fault naming the slot") {
    Batch b = make_batch(s);
    b.sparse = sp;
    Case c;
    c.init(b);
    // the highest slot of the cache, read at 576 per row, lies past 512-wide storage
    const std::vector<int32_t> indices = {(int32_t)(c.in.num_slots - 1)};
    WorkList wl;
    wl.work_indptr = {0, 1};
    wl.work_info.push_back(make_work(0, -1, 0, 1, 0, 1, 0));
    wl.reduce_indptr = {0};
    KernelView strided = view_for(c.in, 16, 1);
    strided.head_dim = 576;
    const Outcome o = execute(c, wl, strided, indices);
    CHECK_FALSE(o.exec.ok);
    CHECK(o.exec.error.find("slot " + std::to_string(c.in.num_slots - 1)) != std::string::npos);
    CHECK(o.exec.error.find("work 0") != std::string::npos);
  }
}

TEST_CASE("cpu executor: bit for bit the plain Eigen formulation", "[executor]") {
  BatchShape s;
  // windows of 1..a few keys and tiles whose last piece has every length mod 8
  s.context_query = {{0, 1}, {2, 2}, {6, 3}, {9, 1}, {13, 4}, {130, 8}, {381, 5}, {1003, 8}};
  s.num_padding = 1;
  s.heads = 16;
  s.block_size = 16;
  s.spare_blocks = 3;
  int view_heads = 16;
  SECTION("bf16") {}
  SECTION("fp16, non-causal") {
    s.model_dtype = s.kv_dtype = s.q_dtype = DType::fp16;
    s.causal = false;
  }
  SECTION("fp8 q and KV (e4m3fnuz)") {
    s.arch = Arch::gfx942;
    s.kv_dtype = s.q_dtype = DType::fp8;
    s.kv_scale = 0.5;
  }
  SECTION("128 heads (1024 rows per GEMM)") {
    s.heads = view_heads = 128;
    s.context_query = {{300, 8}, {77, 2}, {1, 1}};
  }
  SECTION("12 heads padded to 16") { s.heads = 12; }
  const Case c(s);
  KernelView view = view_for(c.in, view_heads, 1);
  view.causal = s.causal;
  for (int threads : {1, 2}) {
    INFO("threads " << threads);
    expect_same_bits_as_eigen(c, single_work_list(c), view, c.slots.indices, 1, threads);
    expect_same_bits_as_eigen(c, split_work_list(c, 3, 5), view, c.slots.indices, 1, threads);
    if (s.causal) expect_same_bits_as_eigen(c, per_token_work_list(c), view, c.slots.indices, 1, threads);
  }
}

TEST_CASE("cpu executor: bit for bit the plain Eigen formulation, NaN from poisoned slots", "[executor]") {
  // request 1's list reads one unused (NaN) slot in place of its first key: NaN
  // scores, probabilities and outputs for its rows, in one work and in split works
  const Case c(small_shape());
  std::vector<int32_t> indices = c.slots.indices;
  std::vector<uint8_t> used((size_t)c.in.num_slots, 0);
  for (int32_t i : indices) used[(size_t)i] = 1;
  int32_t unused = -1;
  for (int64_t i = 0; i < c.in.num_slots && unused < 0; ++i)
    if (!used[(size_t)i]) unused = (int32_t)i;
  REQUIRE(unused >= 0);
  indices[(size_t)c.slots.indptr[1]] = unused;
  const KernelView view = view_for(c.in, 16, 1);
  expect_same_bits_as_eigen(c, single_work_list(c), view, indices, 1, 2);
  expect_same_bits_as_eigen(c, split_work_list(c, 3, 5), view, indices, 1, 2);
}

TEST_CASE("cpu executor: of several faulting workgroups the lowest is reported, whatever the timing", "[executor]") {
  const Case c(small_shape());
  const WorkList base = single_work_list(c);
  const int32_t past = (int32_t)c.slots.indices.size() + 1;
  // workgroup 0: the long request's work, then a work reading past the index list
  // (it faults late); workgroup 1: only such a work (it faults at once)
  WorkList wl;
  wl.work_info = {base.work_info[3], base.work_info[0], base.work_info[1]};
  wl.work_info[1].kv_end = past;
  wl.work_info[2].kv_end = past;
  wl.work_indptr = {0, 2, 3};
  wl.num_workgroups = 2;
  wl.reduce_indptr = {0};
  for (int rep = 0; rep < 5; ++rep) {
    const Outcome o = execute(c, wl, view_for(c.in, 16, 1), c.slots.indices);
    REQUIRE_FALSE(o.exec.ok);
    CHECK(o.exec.error.find("workgroup 0 work 1 ") != std::string::npos);
  }
}

// Timing of the acceptance shape (64 requests x 16 heads x 8192 context): hidden,
// run with `unit_tests "[.perf]"`; prints the times.
TEST_CASE("cpu executor + reference: 64 x 16 heads x 8192 timing", "[.perf]") {
  using clock = std::chrono::steady_clock;
  BatchShape s;
  for (int r = 0; r < 64; ++r) s.context_query.push_back({8191, 1});
  s.heads = 16;
  s.block_size = 16;
  Case c;
  auto t0 = clock::now();
  c.b = make_batch(s);
  c.rows = oracle_windows(c.b);
  c.in = generate_inputs(c.b, c.rows);
  auto t1 = clock::now();
  c.ref = compute_reference(c.b, c.rows, c.in);
  auto t2 = clock::now();
  c.slots = slot_list(c.b);
  const Inputs& in = c.in;
  auto t3 = clock::now();
  const Outcome single = execute(c, single_work_list(c), view_for(in, 16, 1), c.slots.indices);
  auto t4 = clock::now();
  const Outcome split = execute(c, split_work_list(c, 4, 256), view_for(in, 16, 1), c.slots.indices);
  auto t5 = clock::now();
  auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
  std::printf("inputs %.0f ms, reference %.0f ms, executor single %.0f ms (stage1 %.0f), split4 %.0f ms (stage1 %.0f, reduce %.1f)\n",
              ms(t0, t1), ms(t1, t2), ms(t3, t4), single.exec.stage1_ms, ms(t4, t5), split.exec.stage1_ms,
              split.exec.reduce_ms);
  std::printf("single: max abs %.3g max rel %.3g cos %.3g lse %.3g; split: max abs %.3g cos %.3g lse %.3g\n",
              single.cmp.max_abs_err, single.cmp.max_rel_err, single.cmp.cos_diff, single.cmp.lse_max_abs_err,
              split.cmp.max_abs_err, split.cmp.cos_diff, split.cmp.lse_max_abs_err);
  CHECK(single.cmp.passed);
  CHECK(split.cmp.passed);
}
