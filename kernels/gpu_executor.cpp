// GPU executor (SPEC §5). With a backend this file is compiled by the GPU
// compiler (nvcc as CUDA, or hipcc); without one it is plain C++ and every entry
// point says the build has no GPU backend.
#include "kernels/gpu_executor.hpp"

#include <algorithm>
#include <array>
#include <cstring>
#include <vector>

#if defined(MLACTL_HAVE_GPU) && MLACTL_HAVE_GPU
#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"
#endif

namespace mlactl {

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

// Grow-only device allocation; contents are whatever the last run left.
struct DeviceBuffer {
  void* ptr = nullptr;
  size_t capacity = 0;
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
  mla::gpu_event_t events[3] = {nullptr, nullptr, nullptr};
  bool events_ready = false;

  ~DeviceState() {
    for (DeviceBuffer* b : {&work_indptr, &work_info, &kv_indices, &q, &kv, &out, &lse, &partial_out, &partial_lse,
                            &reduce_indptr, &reduce_final_map, &reduce_partial_map, &error})
      if (b->ptr) (void)mla::gpu_free(b->ptr);
    if (events_ready)
      for (auto e : events) (void)mla::gpu_event_destroy(e);
  }
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

GpuExecutor::GpuExecutor(bool force_scalar)
    : state_(new DeviceState), device_name_(gpu_device_name()), force_scalar_(force_scalar) {}
GpuExecutor::~GpuExecutor() = default;

std::string GpuExecutor::name() const { return "gpu:" + (device_name_.empty() ? std::string("none") : device_name_); }

ExecResult GpuExecutor::run(const ExecArgs& a) {
  ExecResult result;
  std::string& err = result.error;
  auto fail = [&](const std::string& text) {
    result.ok = false;
    if (err.empty()) err = text;
    return result;
  };
  if (!a.work) return fail("no work list");
  if (std::string why; !gpu_available(&why)) return fail(why);
  if (std::string why = unsupported_reason(a); !why.empty()) return fail(why);

  const WorkList& w = *a.work;
  const KernelView& v = a.view;
  DeviceState& d = *state_;
  if (!d.events_ready) {
    for (auto& e : d.events)
      if (!mla::check(mla::gpu_event_create(&e), "create event", &err)) return fail(err);
    d.events_ready = true;
  }

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

  const size_t q_bytes = size_t(a.num_q_rows) * v.heads * v.head_dim * dtype_bytes(v.q_dtype);
  const size_t kv_bytes = size_t(a.num_slots) * a.kv_row_stride * dtype_bytes(v.kv_dtype);
  const size_t out_bytes = size_t(a.num_q_rows) * v.heads * v.v_dim * sizeof(uint16_t);
  const size_t lse_bytes = a.lse ? size_t(a.num_q_rows) * v.heads * sizeof(float) : 0;
  const size_t partial_bytes = size_t(w.num_partial_rows) * v.heads * v.v_dim * sizeof(float);
  const size_t partial_lse_bytes = size_t(w.num_partial_rows) * v.heads * sizeof(float);

  // Outputs start as the caller poisoned them, so rows no work writes stay NaN.
  bool ok = d.work_indptr.upload(w.work_indptr.data(), w.work_indptr.size() * 4, "upload work_indptr", &err) &&
            d.work_info.upload(work_info.data(), work_info.size() * 4, "upload work_info", &err) &&
            d.kv_indices.upload(a.kv_indices, size_t(a.num_kv_indices) * 4, "upload kv_indices", &err) &&
            d.q.upload(a.q, q_bytes, "upload q", &err) && d.kv.upload(a.kv, kv_bytes, "upload kv", &err) &&
            d.out.upload(a.out, out_bytes, "upload out", &err) &&
            d.lse.upload(a.lse, lse_bytes, "upload lse", &err) &&
            d.partial_out.upload(a.partial_out, partial_bytes, "upload partial_out", &err) &&
            d.partial_lse.upload(a.partial_lse, partial_lse_bytes, "upload partial_lse", &err) &&
            d.reduce_indptr.upload(w.reduce_indptr.data(), w.reduce_indptr.size() * 4, "upload reduce_indptr", &err) &&
            d.reduce_final_map.upload(final_map.data(), final_map.size() * 4, "upload reduce_final_map", &err) &&
            d.reduce_partial_map.upload(w.reduce_partial_map.data(), w.reduce_partial_map.size() * 4,
                                        "upload reduce_partial_map", &err) &&
            d.error.upload(error_init, sizeof(error_init), "upload error word", &err);
  if (!ok) return fail(err);

  mla::Stage1Params s1;
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
  s1.force_scalar = force_scalar_;

  mla::ReduceParams rd;
  rd.reduce_indptr = d.reduce_indptr.as<int32_t>();
  rd.num_tiles = w.reduce_indptr.empty() ? 0 : int32_t(w.reduce_indptr.size() - 1);
  for (int32_t t = 0; t < rd.num_tiles; ++t) {
    const int splits = w.reduce_indptr[t + 1] - w.reduce_indptr[t];
    if (splits > 1 && size_t(t) < w.reduce_final_map.size())
      rd.max_items = std::max(rd.max_items, mla::reduce_items(std::max(0, w.reduce_final_map[t][1] - w.reduce_final_map[t][0]),
                                                               v.heads, v.v_dim, splits));
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

  ok = mla::check(mla::gpu_event_record(d.events[0]), "record event", &err) && mla::launch_stage1(s1, &err) &&
       mla::check(mla::gpu_event_record(d.events[1]), "record event", &err) && mla::launch_reduce(rd, &err) &&
       mla::check(mla::gpu_event_record(d.events[2]), "record event", &err) &&
       mla::check(mla::gpu_event_synchronize(d.events[2]), "stage-1/reduce execution", &err) &&
       mla::check(mla::gpu_last_error(), "stage-1/reduce execution", &err);
  if (!ok) return fail(err);
  float stage1_ms = 0, reduce_ms = 0;
  if (!mla::check(mla::gpu_event_elapsed_ms(&stage1_ms, d.events[0], d.events[1]), "event time", &err) ||
      !mla::check(mla::gpu_event_elapsed_ms(&reduce_ms, d.events[1], d.events[2]), "event time", &err))
    return fail(err);
  result.stage1_ms = stage1_ms;
  result.reduce_ms = reduce_ms;

  int32_t error_words[mla::kDeviceErrorWords] = {};
  ok = d.error.download(error_words, sizeof(error_words), "download error word", &err) &&
       d.out.download(a.out, out_bytes, "download out", &err) && d.lse.download(a.lse, lse_bytes, "download lse", &err) &&
       d.partial_out.download(a.partial_out, partial_bytes, "download partial_out", &err) &&
       d.partial_lse.download(a.partial_lse, partial_lse_bytes, "download partial_lse", &err);
  if (!ok) return fail(err);
  if (error_words[0] != 0) return fail(mla::describe_device_error(error_words));
  return result;
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

struct GpuExecutor::DeviceState {};
GpuExecutor::GpuExecutor(bool force_scalar) : state_(new DeviceState), force_scalar_(force_scalar) {}
GpuExecutor::~GpuExecutor() = default;
std::string GpuExecutor::name() const { return "gpu:none"; }
ExecResult GpuExecutor::run(const ExecArgs&) {
  ExecResult r;
  r.ok = false;
  r.error = kNoBackend;
  return r;
}

#endif

}  // namespace mlactl
