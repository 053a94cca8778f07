// GPU executor (docs/design.md §5). With a backend this file is compiled by the GPU
// compiler (nvcc as CUDA, or hipcc); without one it is plain C++ and every entry
// point says the build has no GPU backend.
#include "kernels/gpu_executor.hpp"

#include <algorithm>
#include <cmath>
#include <array>
#include <cstring>
#include <optional>
#include <vector>

#include "core/dtype.hpp"

#if defined(MLACTL_HAVE_GPU) && MLACTL_HAVE_GPU
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#include "kernels/select_stage1.hpp"
#endif

namespace mlactl {

// Stage1Params::q_f16_exact / q_f16_scale: fp8 and fp16 q are exact in fp16; bf16
// q is when each value (NaN and inf excluded) times 2^s survives bf16 -> fp16, s
// putting the largest magnitude in [2^14, 2^15) (fp16's range: bf16 values of
// q's usual spread then lose no bits; unscaled, one |q| < 2^-17 with low mantissa
// bits set would not be exact).
bool q_exact_in_fp16(DType q_dtype, const void* q, size_t bytes, float* scale) {
  *scale = 1.0f;
  if (q_dtype != DType::bf16) return q_dtype == DType::fp16 || q_dtype == DType::fp8;
  const uint16_t* b = static_cast<const uint16_t*>(q);
  float max_abs = 0.0f;
  for (size_t i = 0; i < bytes / 2; ++i) {
    const float x = std::fabs(bf16_bits_to_float(b[i]));
    if (!std::isfinite(x)) return false;
    max_abs = std::max(max_abs, x);
  }
  if (max_abs == 0.0f) return true;
  const int s = std::min(100, std::max(-100, 14 - std::ilogb(max_abs)));
  const float f = std::ldexp(1.0f, s);
  for (size_t i = 0; i < bytes / 2; ++i) {
    const float x = bf16_bits_to_float(b[i]) * f;  // exact: |x| < 2^15, no underflow past fp16's
    if (fp16_bits_to_float(float_to_fp16_bits(x)) != x) return false;
  }
  *scale = f;
  return true;
}

#if defined(MLACTL_HAVE_GPU) && MLACTL_HAVE_GPU

namespace {

mla::ElemType elem_type(DType t) {
  switch (t) {
    case DType::bf16: return mla::ElemType::bf16;
    case DType::fp16: return mla::ElemType::fp16;
    case DType::fp8: return mla::ElemType::fp8;
  }
  return mla::ElemType::bf16;
}

// Grow-only device allocation, freed with the buffer; contents are whatever the
// last run left.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t capacity = 0;
  DeviceBuffer() = default;
  DeviceBuffer(const DeviceBuffer&) = delete;
  DeviceBuffer& operator=(const DeviceBuffer&) = delete;
  ~DeviceBuffer() {
    if (ptr) (void)mla::gpu_free(ptr);
  }
  bool reserve(size_t bytes, const char* what, std::string* error) {
    if (bytes <= capacity) return true;
    if (ptr) (void)mla::gpu_free(ptr);
    ptr = nullptr;
    capacity = 0;
    if (!mla::check(mla::gpu_malloc(&ptr, bytes), what, error)) return false;
    capacity = bytes;
    return true;
  }
  bool upload(const void* host, size_t bytes, const char* what, std::string* error) {
    if (!reserve(bytes, what, error)) return false;
    return bytes == 0 || mla::check(mla::gpu_memcpy_h2d(ptr, host, bytes), what, error);
  }
  bool download(void* host, size_t bytes, const char* what, std::string* error) const {
    return bytes == 0 || mla::check(mla::gpu_memcpy_d2h(host, ptr, bytes), what, error);
  }
  template <typename T>
  T* as() const { return static_cast<T*>(ptr); }
};

// Device events, destroyed with the set.
class Events {
 public:
  Events() = default;
  Events(const Events&) = delete;
  Events& operator=(const Events&) = delete;
  ~Events() { clear(); }
  // n fresh events; on failure none are kept.
  bool create(size_t n, std::string* error) {
    clear();
    events_.assign(n, nullptr);
    for (auto& e : events_) {
      if (!mla::check(mla::gpu_event_create(&e), "create event", error)) {
        clear();
        return false;
      }
    }
    return true;
  }
  bool empty() const { return events_.empty(); }
  mla::gpu_event_t operator[](size_t i) const { return events_[i]; }

 private:
  void clear() {
    for (auto e : events_)
      if (e) (void)mla::gpu_event_destroy(e);
    events_.clear();
  }
  std::vector<mla::gpu_event_t> events_;
};

// Why this build's kernels cannot run `args`, or "" when they can.
std::string unsupported_reason(const ExecArgs& a) {
  const KernelView& v = a.view;
  const WorkList& w = *a.work;
  if (v.page_size != 1) return "GPU kernel reads token slots: page_size must be 1, got " + std::to_string(v.page_size);
  if (v.heads < 1) return "heads must be >= 1";
  if (v.head_dim < mla::kHeadDimMultiple || v.head_dim > mla::kMaxHeadDim || v.head_dim % mla::kHeadDimMultiple)
    return "GPU kernel supports head_dim in [8, 576], a multiple of 8; got " + std::to_string(v.head_dim);
  if (v.v_dim < 2 || v.v_dim > mla::kMaxVDim || v.v_dim % 2 || v.v_dim > v.head_dim)
    return "GPU kernel supports an even v_dim in [2, min(512, head_dim)]; got " + std::to_string(v.v_dim);
  if (a.out_dtype == DType::fp8) return "output dtype must be bf16 or fp16";
  if (w.num_workgroups < 0 || w.work_indptr.size() != size_t(w.num_workgroups) + 1)
    return "work_indptr must have num_workgroups + 1 entries";
  if (!w.reduce_indptr.empty() && w.reduce_final_map.size() + 1 < w.reduce_indptr.size())
    return "reduce_final_map must have an entry per reduce tile";
  if (a.kv_row_stride < 0 || a.num_slots < 0 || a.num_q_rows < 0 || a.num_kv_indices < 0) return "negative size";
  if (a.num_q_rows > 0 && (!a.q || !a.out)) return "q and out are required";
  if (a.num_slots > 0 && !a.kv) return "kv is required";
  if (a.num_kv_indices > 0 && !a.kv_indices) return "kv_indices are required";
  if (w.num_partial_rows > 0 && (!a.partial_out || !a.partial_lse)) return "partial buffers are required";
  return {};
}

}  // namespace

struct GpuExecutor::DeviceState {
  DeviceBuffer work_indptr, work_info, kv_indices, q, kv, out, lse, partial_out, partial_lse;
  DeviceBuffer reduce_indptr, reduce_final_map, reduce_partial_map, error;
  Events events;  // run(): before stage 1, between, after the reduce
};

bool gpu_available(std::string* why) {
  int count = 0;
  const mla::gpu_error_t status = mla::gpu_device_count(&count);
  if (!mla::gpu_ok(status)) {
    if (why) *why = std::string("no GPU: ") + mla::gpu_error_string(status);
    return false;
  }
  if (count == 0) {
    if (why) *why = "no GPU: no device visible";
    return false;
  }
  return true;
}

std::string gpu_device_name() { return gpu_available() ? mla::gpu_device_name(0) : std::string(); }
int gpu_device_warp_size() { return gpu_available() ? mla::gpu_device_warp_size(0) : 0; }
int gpu_device_multiprocessors() { return gpu_available() ? mla::gpu_device_multiprocessors(0) : 0; }
mla::Stage1Device gpu_stage1_device() { return gpu_available() ? mla::current_stage1_device() : mla::Stage1Device{}; }

GpuExecutor::GpuExecutor(mla::Stage1Kernel kernel)
    : state_(new DeviceState), device_name_(gpu_device_name()), kernel_(kernel) {}
GpuExecutor::~GpuExecutor() = default;

std::string GpuExecutor::name() const { return "gpu:" + (device_name_.empty() ? std::string("none") : device_name_); }

namespace {
struct Sizes {
  size_t q = 0, kv = 0, out = 0, lse = 0, partial = 0, partial_lse = 0;
};

// Uploads everything a launch reads (the KV cache unless `upload_kv` is false) and
// fills the launch parameters.
bool prepare(const ExecArgs& a, GpuExecutor::DeviceState& d, bool upload_kv, mla::Stage1Kernel kernel,
             mla::Stage1Params& s1, mla::ReduceParams& rd, Sizes& sz, std::string* errp) {
  std::string& err = *errp;
  const WorkList& w = *a.work;
  const KernelView& v = a.view;
  std::vector<int32_t> work_info;
  work_info.reserve(w.work_info.size() * 8);
  for (const WorkInfo& wi : w.work_info)
    for (int32_t x : wi.as_array()) work_info.push_back(x);
  std::vector<int32_t> final_map;
  final_map.reserve(w.reduce_final_map.size() * 2);
  for (const auto& pr : w.reduce_final_map) {
    final_map.push_back(pr[0]);
    final_map.push_back(pr[1]);
  }
  const int32_t error_init[mla::kDeviceErrorWords] = {0, -1, 0};

  sz.q = size_t(a.num_q_rows) * v.heads * v.head_dim * dtype_bytes(v.q_dtype);
  sz.kv = size_t(a.num_slots) * a.kv_row_stride * dtype_bytes(v.kv_dtype);
  sz.out = size_t(a.num_q_rows) * v.heads * v.v_dim * sizeof(uint16_t);
  sz.lse = a.lse ? size_t(a.num_q_rows) * v.heads * sizeof(float) : 0;
  sz.partial = size_t(w.num_partial_rows) * v.heads * v.v_dim * sizeof(float);
  sz.partial_lse = size_t(w.num_partial_rows) * v.heads * sizeof(float);

  // Outputs start as the caller poisoned them, so rows no work writes stay NaN.
  bool ok = d.work_indptr.upload(w.work_indptr.data(), w.work_indptr.size() * 4, "upload work_indptr", &err) &&
            d.work_info.upload(work_info.data(), work_info.size() * 4, "upload work_info", &err) &&
            d.kv_indices.upload(a.kv_indices, size_t(a.num_kv_indices) * 4, "upload kv_indices", &err) &&
            d.q.upload(a.q, sz.q, "upload q", &err) && (!upload_kv || d.kv.upload(a.kv, sz.kv, "upload kv", &err)) &&
            d.out.upload(a.out, sz.out, "upload out", &err) && d.lse.upload(a.lse, sz.lse, "upload lse", &err) &&
            d.partial_out.upload(a.partial_out, sz.partial, "upload partial_out", &err) &&
            d.partial_lse.upload(a.partial_lse, sz.partial_lse, "upload partial_lse", &err) &&
            d.reduce_indptr.upload(w.reduce_indptr.data(), w.reduce_indptr.size() * 4, "upload reduce_indptr", &err) &&
            d.reduce_final_map.upload(final_map.data(), final_map.size() * 4, "upload reduce_final_map", &err) &&
            d.reduce_partial_map.upload(w.reduce_partial_map.data(), w.reduce_partial_map.size() * 4,
                                        "upload reduce_partial_map", &err) &&
            d.error.upload(error_init, sizeof(error_init), "upload error word", &err);
  if (!ok) return false;

  s1 = mla::Stage1Params{};
  s1.work_indptr = d.work_indptr.as<int32_t>();
  s1.num_workgroups = w.num_workgroups;
  s1.work_info = d.work_info.as<int32_t>();
  s1.num_works = int64_t(w.work_info.size());
  s1.kv_indices = d.kv_indices.as<int32_t>();
  s1.num_kv_indices = a.num_kv_indices;
  s1.q = d.q.ptr;
  s1.num_q_rows = a.num_q_rows;
  s1.q_type = elem_type(v.q_dtype);
  s1.q_scale = a.q_scale;
  s1.kv = d.kv.ptr;
  s1.kv_elements = a.num_slots * int64_t(a.kv_row_stride);
  s1.kv_type = elem_type(v.kv_dtype);
  s1.kv_scale = a.kv_scale;
  s1.q_f16_exact = s1.kv_type == mla::ElemType::fp8 && q_exact_in_fp16(v.q_dtype, a.q, sz.q, &s1.q_f16_scale);
  s1.fp8_fnuz = a.fp8_flavor == Fp8Flavor::e4m3fnuz;
  s1.heads = v.heads;
  s1.head_dim = v.head_dim;
  s1.v_dim = v.v_dim;
  s1.causal = v.causal;
  s1.softmax_scale = a.softmax_scale;
  s1.out_type = elem_type(a.out_dtype);
  s1.out = d.out.as<uint16_t>();
  s1.lse = a.lse ? d.lse.as<float>() : nullptr;
  s1.partial_out = d.partial_out.as<float>();
  s1.partial_lse = d.partial_lse.as<float>();
  s1.num_partial_rows = w.num_partial_rows;
  s1.error = d.error.as<int32_t>();
  s1.kernel = kernel;
  for (const WorkInfo& wi : w.work_info)
    s1.max_pairs = std::max<int64_t>(s1.max_pairs, int64_t(wi.qo_end - wi.qo_start) * v.heads);

  rd = mla::ReduceParams{};
  rd.reduce_indptr = d.reduce_indptr.as<int32_t>();
  rd.num_tiles = w.reduce_indptr.empty() ? 0 : int32_t(w.reduce_indptr.size() - 1);
  for (int32_t t = 0; t < rd.num_tiles; ++t) {
    const int splits = w.reduce_indptr[t + 1] - w.reduce_indptr[t];
    if (splits > 1 && size_t(t) < w.reduce_final_map.size()) {
      const int rows = std::max(0, w.reduce_final_map[t][1] - w.reduce_final_map[t][0]);
      rd.max_items = std::max(rd.max_items, mla::reduce_items(rows, v.heads, v.v_dim, splits));
      rd.max_splits = std::max(rd.max_splits, splits);
      rd.max_rows = std::max(rd.max_rows, rows);
    }
  }
  rd.reduce_final_map = d.reduce_final_map.as<int32_t>();
  rd.reduce_partial_map = d.reduce_partial_map.as<int32_t>();
  rd.num_partial_map = int64_t(w.reduce_partial_map.size());
  rd.partial_out = s1.partial_out;
  rd.partial_lse = s1.partial_lse;
  rd.num_partial_rows = w.num_partial_rows;
  rd.heads = v.heads;
  rd.v_dim = v.v_dim;
  rd.out_type = s1.out_type;
  rd.out = s1.out;
  rd.lse = s1.lse;
  rd.num_q_rows = a.num_q_rows;
  rd.error = s1.error;
  return true;
}

bool ensure_events(GpuExecutor::DeviceState& d, std::string* err) {
  return !d.events.empty() || d.events.create(3, err);
}
// Why a launch cannot happen (no work list, no device, a view this build cannot run),
// or "" — shared by run() and bench().
std::string launch_precheck(const ExecArgs& a) {
  if (!a.work) return "no work list";
  if (std::string why; !gpu_available(&why)) return why;
  return unsupported_reason(a);
}
}  // namespace

namespace {
// Marks a result failed with `text` (the first error wins) and returns it:
// run's and bench's one way out.
template <typename Result>
Result failed(Result& r, const std::string& text) {
  r.ok = false;
  if (r.error.empty()) r.error = text;
  return r;
}

}  // namespace

ExecResult GpuExecutor::run(const ExecArgs& a) {
  ExecResult result;
  std::string& err = result.error;
  auto fail = [&](const std::string& text) { return failed(result, text); };
  if (std::string why = launch_precheck(a); !why.empty()) return fail(why);

  DeviceState& d = *state_;
  if (!ensure_events(d, &err)) return fail(err);
  mla::Stage1Params s1;
  mla::ReduceParams rd;
  Sizes sz;
  if (!prepare(a, d, /*upload_kv=*/true, kernel_, s1, rd, sz, &err)) return fail(err);
  apply_stage1_options(s1);

  // What ran comes from the launch sites (launch_stage1, launch_reduce).
  std::optional<mla::Stage1Ran> ran;
  mla::ReduceRan reduced;
  bool ok = mla::check(mla::gpu_event_record(d.events[0]), "record event", &err) && mla::launch_stage1(s1, &ran, &err);
  result.stage1 = ran;
  ok = ok && mla::check(mla::gpu_event_record(d.events[1]), "record event", &err) &&
       mla::launch_reduce(rd, &reduced, &err) &&
       mla::check(mla::gpu_event_record(d.events[2]), "record event", &err) &&
       mla::check(mla::gpu_event_synchronize(d.events[2]), "stage-1/reduce execution", &err) &&
       mla::check(mla::gpu_last_error(), "stage-1/reduce execution", &err);
  if (ran) result.reduce = reduced;
  if (!ok) return fail(err);
  float stage1_ms = 0, reduce_ms = 0;
  if (!mla::check(mla::gpu_event_elapsed_ms(&stage1_ms, d.events[0], d.events[1]), "event time", &err) ||
      !mla::check(mla::gpu_event_elapsed_ms(&reduce_ms, d.events[1], d.events[2]), "event time", &err))
    return fail(err);
  result.stage1_ms = stage1_ms;
  result.reduce_ms = reduce_ms;

  int32_t error_words[mla::kDeviceErrorWords] = {};
  ok = d.error.download(error_words, sizeof(error_words), "download error word", &err) &&
       d.out.download(a.out, sz.out, "download out", &err) && d.lse.download(a.lse, sz.lse, "download lse", &err) &&
       d.partial_out.download(a.partial_out, sz.partial, "download partial_out", &err) &&
       d.partial_lse.download(a.partial_lse, sz.partial_lse, "download partial_lse", &err);
  if (!ok) return fail(err);
  if (error_words[0] != 0) return fail(mla::describe_device_error(error_words));
  return result;
}

namespace {
// BenchResult::block_clock: one untimed stage-1 launch (a wgmma kernel) with
// Stage1Params::block_clock set. The grid is workgroups x pair_tiles blocks
// (mla::wgmma_pair_tiles, as the launch sets it); a block that never started keeps
// the zeroed entry time and is dropped.
bool record_block_clock(mla::Stage1Params s1, void* kv, BenchResult& r, std::string* err) {
  const int pair_tiles = mla::wgmma_pair_tiles(s1);
  const int64_t blocks = int64_t(s1.num_workgroups) * pair_tiles;
  constexpr size_t kWords = mla::kBlockClockWords;
  const size_t bytes = kWords * size_t(blocks) * sizeof(uint64_t);
  DeviceBuffer clock;
  if (!clock.reserve(bytes, "allocate block clock", err) ||
      !mla::check(mla::gpu_memset(clock.ptr, 0, bytes), "zero block clock", err))
    return false;
  s1.kv = kv;
  s1.block_clock = clock.as<uint64_t>();
  std::optional<mla::Stage1Ran> ran;
  if (!mla::launch_stage1(s1, &ran, err) || !mla::check(mla::gpu_device_synchronize(), "block-clock launch", err))
    return false;
  std::vector<uint64_t> host(kWords * size_t(blocks));
  if (!clock.download(host.data(), bytes, "download block clock", err)) return false;
  uint64_t first = 0;
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t start = host[kWords * b + mla::kClockEntry];
    if (start && (!first || start < first)) first = start;
  }
  for (int64_t b = 0; b < blocks; ++b) {
    const uint64_t* w = host.data() + kWords * b;
    const uint64_t start = w[mla::kClockEntry], end = w[mla::kClockEnd];
    if (!start) continue;
    BenchResult::BlockClock c{b, b / pair_tiles, int(w[mla::kClockSm]), 1e-3 * double(start - first),
                              1e-3 * double(std::max(end, start) - first), {}};
    for (int m = 0; m < int(c.marks_us.size()); ++m)
      if (const uint64_t at = w[mla::kClockFirstIssue + m]; at >= start) c.marks_us[size_t(m)] = 1e-3 * double(at - start);
    r.block_clock.push_back(c);
  }
  return true;
}
}  // namespace

BenchResult GpuExecutor::bench(const ExecArgs& a, int warmup, int iters, int kv_copies) {
  BenchResult r;
  r.warmup = std::max(0, warmup);
  r.iters = std::max(1, iters);
  r.kv_copies = std::max(1, kv_copies);
  std::string& err = r.error;
  auto fail = [&](const std::string& text) { return failed(r, text); };
  if (std::string why = launch_precheck(a); !why.empty()) return fail(why);

  DeviceState& d = *state_;
  mla::Stage1Params s1;
  mla::ReduceParams rd;
  Sizes sz;
  if (!prepare(a, d, /*upload_kv=*/false, kernel_, s1, rd, sz, &err)) return fail(err);
  apply_stage1_options(s1);
  r.stage1_why = mla::select_stage1(s1, mla::current_stage1_device()).why;

  // KV copies, each 256-byte aligned: upload once, replicate on the device.
  const size_t stride = (std::max<size_t>(sz.kv, 1) + 255) / 256 * 256;
  r.kv_copy_bytes = sz.kv;
  DeviceBuffer kv;
  if (!kv.reserve(stride * size_t(r.kv_copies), "allocate KV copies", &err)) return fail(err);
  char* base = kv.as<char>();
  if (sz.kv && !mla::check(mla::gpu_memcpy_h2d(base, a.kv, sz.kv), "upload kv", &err)) return fail(err);
  for (int c = 1; c < r.kv_copies; ++c)
    if (sz.kv && !mla::launch_device_copy(base + stride * c, base, sz.kv, &err)) return fail(err);
  if (!mla::check(mla::gpu_device_synchronize(), "replicate kv", &err)) return fail(err);

  // Timed runs come in two kinds, r.iters each: stage 1 + reduce with no event
  // between the two kernels (an event there would keep the reduce from starting
  // as stage-1 blocks retire: gpu_launch_dependent), then stage 1 alone. Every
  // launch reports what it enqueued; they must all agree.
  const int total = r.warmup + 2 * r.iters;
  Events ev;
  if (!ev.create(size_t(4) * r.iters, &err)) return fail(err);
  for (int i = 0; i < total; ++i) {
    s1.kv = base + stride * size_t(i % r.kv_copies);
    const int t = i - r.warmup;
    const bool timed = t >= 0, whole = t < r.iters;  // events [2t, 2t+2): [0, 2 iters) both kernels, then stage 1
    const size_t e = timed ? size_t(2) * t : 0;
    bool ok = !timed || mla::check(mla::gpu_event_record(ev[e]), "record event", &err);
    std::optional<mla::Stage1Ran> ran;
    mla::ReduceRan reduced;
    ok = ok && mla::launch_stage1(s1, &ran, &err);
    if (timed && !whole) ok = ok && mla::check(mla::gpu_event_record(ev[e + 1]), "record event", &err);
    ok = ok && mla::launch_reduce(rd, &reduced, &err);
    if (ok && i == 0) {
      r.stage1 = ran;
      r.reduce = reduced;
    } else if (ok && (ran.has_value() != r.stage1.has_value() || (ran && ran->instance != r.stage1->instance) ||
                      reduced.instance != r.reduce.instance)) {
      return fail("launch " + std::to_string(i) + " enqueued another kernel than the first");
    }
    if (timed && whole) ok = ok && mla::check(mla::gpu_event_record(ev[e + 1]), "record event", &err);
    if (!ok) return fail(err);
  }
  if (!mla::check(mla::gpu_device_synchronize(), "stage-1/reduce execution", &err) ||
      !mla::check(mla::gpu_last_error(), "stage-1/reduce execution", &err))
    return fail(err);
  r.stage1_ms.resize(size_t(r.iters));
  r.total_ms.resize(size_t(r.iters));
  for (int t = 0; t < r.iters; ++t) {
    const size_t w = size_t(2) * t, s = size_t(2) * (t + r.iters);
    if (!mla::check(mla::gpu_event_elapsed_ms(&r.total_ms[size_t(t)], ev[w], ev[w + 1]), "event time", &err) ||
        !mla::check(mla::gpu_event_elapsed_ms(&r.stage1_ms[size_t(t)], ev[s], ev[s + 1]), "event time", &err))
      return fail(err);
  }

  if (block_clock_ && r.stage1 && r.stage1->kernel == mla::Stage1Kernel::wgmma && !record_block_clock(s1, base, r, &err))
    return fail(err);

  int32_t error_words[mla::kDeviceErrorWords] = {};
  const bool ok = d.error.download(error_words, sizeof(error_words), "download error word", &err) &&
                  d.out.download(a.out, sz.out, "download out", &err) && d.lse.download(a.lse, sz.lse, "download lse", &err);
  if (!ok) return fail(err);
  if (error_words[0] != 0) return fail(mla::describe_device_error(error_words));
  return r;
}

CopyRoofline gpu_copy_roofline(size_t bytes, int iters) {
  CopyRoofline r;
  r.bytes = bytes = (bytes + 255) / 256 * 256;
  r.iters = iters = std::max(1, iters);
  std::string& err = r.error;
  auto fail = [&]() {
    r.ok = false;
    return r;
  };
  if (std::string why; !gpu_available(&why)) {
    err = why;
    return fail();
  }
  DeviceBuffer src, dst;
  if (!src.reserve(bytes, "allocate copy source", &err) || !dst.reserve(bytes, "allocate copy destination", &err)) return fail();
  if (!mla::check(mla::gpu_memset(src.ptr, 0x3c, bytes), "fill copy source", &err)) return fail();
  Events ev;
  if (!ev.create(size_t(iters) + 1, &err)) return fail();
  for (int i = 0; i < 3; ++i)
    if (!mla::launch_device_copy(dst.ptr, src.ptr, bytes, &err)) return fail();
  // alternate direction so neither buffer stays hot (each is far larger than L2)
  for (int i = 0; i < iters; ++i) {
    if (!mla::check(mla::gpu_event_record(ev[size_t(i)]), "record event", &err)) return fail();
    if (!mla::launch_device_copy(i % 2 ? src.ptr : dst.ptr, i % 2 ? dst.ptr : src.ptr, bytes, &err)) return fail();
  }
  if (!mla::check(mla::gpu_event_record(ev[size_t(iters)]), "record event", &err) ||
      !mla::check(mla::gpu_device_synchronize(), "device copy", &err))
    return fail();
  std::vector<float> ms(static_cast<size_t>(iters));
  for (int i = 0; i < iters; ++i)
    if (!mla::check(mla::gpu_event_elapsed_ms(&ms[size_t(i)], ev[size_t(i)], ev[size_t(i) + 1]), "event time", &err)) return fail();
  std::sort(ms.begin(), ms.end());
  r.median_ms = iters % 2 ? ms[size_t(iters / 2)] : 0.5 * (ms[size_t(iters / 2 - 1)] + ms[size_t(iters / 2)]);
  r.gbps = r.median_ms > 0 ? 2.0 * double(bytes) / (r.median_ms * 1e-3) / 1e9 : 0;
  return r;
}

#else  // no GPU backend in this build

namespace {
const char* kNoBackend = "built without a GPU backend (configure with -DMLACTL_GPU=cuda or hip)";
}

bool gpu_available(std::string* why) {
  if (why) *why = kNoBackend;
  return false;
}
std::string gpu_device_name() { return {}; }
int gpu_device_warp_size() { return 0; }
int gpu_device_multiprocessors() { return 0; }
mla::Stage1Device gpu_stage1_device() { return {}; }

struct GpuExecutor::DeviceState {};
GpuExecutor::GpuExecutor(mla::Stage1Kernel kernel) : state_(new DeviceState), kernel_(kernel) {}
GpuExecutor::~GpuExecutor() = default;
std::string GpuExecutor::name() const { return "gpu:none"; }
ExecResult GpuExecutor::run(const ExecArgs&) {
  ExecResult r;
  r.ok = false;
  r.error = kNoBackend;
  return r;
}
BenchResult GpuExecutor::bench(const ExecArgs&, int, int, int) {
  BenchResult r;
  r.ok = false;
  r.error = kNoBackend;
  return r;
}
CopyRoofline gpu_copy_roofline(size_t, int) {
  CopyRoofline r;
  r.ok = false;
  r.error = kNoBackend;
  return r;
}

#endif

}  // namespace mlactl
