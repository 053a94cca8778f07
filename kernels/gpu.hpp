// The only file that knows which GPU vendor it is compiled for (docs/design.md §5,
// the portable header). Kernel sources are written once against
// the small surface below and build with hipcc (AMD) or nvcc (NVIDIA, the .hip
// file compiled as CUDA).
//
// Rules the kernels follow:
//  * the vendor is detected here, once (MLACTL_GPU_HIP / MLACTL_GPU_CUDA);
//  * wave width comes from mla::warp_size() in device code (64 on gfx9, else 32),
//    never from warpSize (not constexpr from ROCm 7); host code queries it;
//  * shuffles go through shfl_xor() (CUDA full 32-bit mask, HIP maskless form);
//  * no vendor fp8 or bf16 arithmetic: stored values are decoded from their bits
//    by the functions below, which give exactly the values core/dtype.hpp's
//    software codecs give, so CPU and GPU executors read identical inputs;
//  * every runtime call goes through check(), which turns a failure into text
//    (ExecResult.ok = false, exit 4) instead of aborting.
#pragma once

#if defined(__HIP_PLATFORM_AMD__) || defined(__HIPCC__) || defined(MLACTL_FORCE_HIP)
#define MLACTL_GPU_HIP 1
#include <hip/hip_runtime.h>
// Debian's ROCm 5.2 has only hip_bfloat16.h; ROCm >= 6.2 ships hip_bf16.h.
#if __has_include(<hip/hip_bf16.h>)
#include <hip/hip_bf16.h>
#else
#include <hip/hip_bfloat16.h>
#endif
#elif defined(__CUDACC__) || defined(MLACTL_FORCE_CUDA)
#define MLACTL_GPU_CUDA 1
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#else
#error "kernels/gpu.hpp needs a GPU compiler (hipcc or nvcc)"
#endif

#include <cstdint>
#include <string>

// Functions the kernels and the host tests share.
#define MLACTL_HD __host__ __device__

namespace mla {

// ---- vendor types ---------------------------------------------------------
#if defined(MLACTL_GPU_HIP)
#if __has_include(<hip/hip_bf16.h>)
using bf16_t = __hip_bfloat16;
#else
using bf16_t = hip_bfloat16;
#endif
using gpu_error_t = hipError_t;
using gpu_stream_t = hipStream_t;
using gpu_event_t = hipEvent_t;
#else
using bf16_t = __nv_bfloat16;
using gpu_error_t = cudaError_t;
using gpu_stream_t = cudaStream_t;
using gpu_event_t = cudaEvent_t;
#endif

// ---- wave width and shuffles ------------------------------------------------
// Physical wave width of the code being compiled: CDNA/GCN (gfx9xx) run wave64;
// NVIDIA and RDNA (HIP's default there) run 32.
__device__ constexpr int warp_size() {
#if defined(__GFX9__)
  return 64;
#else
  return 32;
#endif
}

// XOR shuffle among `width` lanes (a power of two <= 32, so it means the same on
// wave32 and wave64).
__device__ inline float shfl_xor(float v, int lane_mask, int width) {
#if defined(MLACTL_GPU_HIP)
  return __shfl_xor(v, lane_mask, width);
#else
  return __shfl_xor_sync(0xffffffffu, v, lane_mask, width);
#endif
}

// ---- bit-level decoders (exact; shared by host tests and device code) --------
MLACTL_HD inline float bits_to_float(uint32_t u) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __uint_as_float(u);
#else
  float f;
  __builtin_memcpy(&f, &u, 4);
  return f;
#endif
}
MLACTL_HD inline uint32_t float_to_bits(float f) {
#if defined(__CUDA_ARCH__) || defined(__HIP_DEVICE_COMPILE__)
  return __float_as_uint(f);
#else
  uint32_t u;
  __builtin_memcpy(&u, &f, 4);
  return u;
#endif
}

MLACTL_HD inline float decode_bf16(uint16_t h) { return bits_to_float(uint32_t(h) << 16); }

// binary16 -> fp32, exact. Normals are rebiased in the exponent field;
// subnormals are mantissa * 2^-24 (an exact integer-to-float conversion and a
// power-of-two product), so no step depends on fp32 denormal support (FTZ).
MLACTL_HD inline float decode_fp16(uint16_t h) {
  const uint32_t sign = uint32_t(h & 0x8000u) << 16;
  const uint32_t exponent = (h >> 10) & 0x1fu, mantissa = h & 0x3ffu;
  if (exponent == 0) {
    const float f = float(mantissa) * 5.9604644775390625e-08f;  // 2^-24
    return bits_to_float(float_to_bits(f) | sign);
  }
  if (exponent == 31) return bits_to_float(sign | 0x7f800000u | (mantissa << 13) | (mantissa ? 0x00400000u : 0u));
  return bits_to_float(sign | ((exponent + 112u) << 23) | (mantissa << 13));
}

// fp8 e4m3, both flavours (docs/design.md §10), exact, same construction:
//  e4m3fn:   bias 7, max 448, NaN 0x7F/0xFF, no inf, subnormal step 2^-9.
//  e4m3fnuz: bias 8, max 240, NaN 0x80 only, no -0, subnormal step 2^-10.
MLACTL_HD inline float decode_fp8(uint8_t b, bool fnuz) {
  const uint32_t sign = uint32_t(b & 0x80u) << 24;
  const uint32_t exponent = (b >> 3) & 0xfu, mantissa = b & 0x7u;
  if (fnuz) {
    if (b == 0x80u) return bits_to_float(0x7fc00000u);
    if (exponent == 0) return bits_to_float(float_to_bits(float(mantissa) * 0.0009765625f) | sign);  // 2^-10
    return bits_to_float(sign | ((exponent + 119u) << 23) | (mantissa << 20));
  }
  if ((b & 0x7fu) == 0x7fu) return bits_to_float(sign | 0x7fc00000u);
  if (exponent == 0) return bits_to_float(float_to_bits(float(mantissa) * 0.001953125f) | sign);  // 2^-9
  return bits_to_float(sign | ((exponent + 120u) << 23) | (mantissa << 20));
}

// fp32 -> bf16 / fp16 bits, round to nearest even (output rounding).
MLACTL_HD inline uint16_t encode_bf16(float x) {
  const uint32_t u = float_to_bits(x);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x0040u);  // quiet NaN
  return uint16_t((u + 0x7fffu + ((u >> 16) & 1u)) >> 16);
}
MLACTL_HD inline uint16_t encode_fp16(float x) {
  const uint32_t u = float_to_bits(x);
  const uint16_t sign = uint16_t((u >> 16) & 0x8000u);
  const uint32_t a = u & 0x7fffffffu;
  if (a > 0x7f800000u) return uint16_t(sign | 0x7e00u | ((a >> 13) & 0x3ffu));  // NaN
  if (a >= 0x477ff000u) return uint16_t(sign | 0x7c00u);                          // >= 65520: inf
  if (a < 0x38800000u) {                                                          // subnormal / zero
    // Adding 0.5 (2^-1) aligns the value so that the fp32 adder's own RNE rounds
    // it to a multiple of 2^-24, the fp16 subnormal step.
    const float shifted = bits_to_float(a) + 0.5f;
    return uint16_t(sign | (float_to_bits(shifted) - 0x3f000000u));
  }
  const uint32_t rounded = a + 0xfffu + ((a >> 13) & 1u);
  return uint16_t(sign | ((rounded - 0x38000000u) >> 13));
}

// ---- runtime calls (the hip* -> cuda* mapping, only what kernels/ uses) -------
// The calls named alike on both runtimes, once: MLA_RT(Malloc) is hipMalloc or cudaMalloc.
#if defined(MLACTL_GPU_HIP)
#define MLA_RT(name) hip##name
#else
#define MLA_RT(name) cuda##name
#endif
inline gpu_error_t gpu_malloc(void** p, size_t n) { return MLA_RT(Malloc)(p, n); }
inline gpu_error_t gpu_free(void* p) { return MLA_RT(Free)(p); }
inline gpu_error_t gpu_memcpy_h2d(void* d, const void* h, size_t n) { return MLA_RT(Memcpy)(d, h, n, MLA_RT(MemcpyHostToDevice)); }
inline gpu_error_t gpu_memcpy_d2h(void* h, const void* d, size_t n) { return MLA_RT(Memcpy)(h, d, n, MLA_RT(MemcpyDeviceToHost)); }
inline gpu_error_t gpu_memset(void* d, int v, size_t n) { return MLA_RT(Memset)(d, v, n); }
inline gpu_error_t gpu_device_count(int* n) { return MLA_RT(GetDeviceCount)(n); }
inline gpu_error_t gpu_current_device(int* d) { return MLA_RT(GetDevice)(d); }
inline gpu_error_t gpu_device_synchronize() { return MLA_RT(DeviceSynchronize)(); }
inline gpu_error_t gpu_last_error() { return MLA_RT(GetLastError)(); }
inline gpu_error_t gpu_event_create(gpu_event_t* e) { return MLA_RT(EventCreate)(e); }
inline gpu_error_t gpu_event_destroy(gpu_event_t e) { return MLA_RT(EventDestroy)(e); }
inline gpu_error_t gpu_event_record(gpu_event_t e) { return MLA_RT(EventRecord)(e, 0); }
inline gpu_error_t gpu_event_synchronize(gpu_event_t e) { return MLA_RT(EventSynchronize)(e); }
inline gpu_error_t gpu_event_elapsed_ms(float* ms, gpu_event_t a, gpu_event_t b) { return MLA_RT(EventElapsedTime)(ms, a, b); }
inline const char* gpu_error_string(gpu_error_t e) { return MLA_RT(GetErrorString)(e); }
inline bool gpu_ok(gpu_error_t e) { return e == MLA_RT(Success); }
#undef MLA_RT

// The calls that differ.
#if defined(MLACTL_GPU_HIP)
inline std::string gpu_device_name(int device) {
  hipDeviceProp_t p;
  if (hipGetDeviceProperties(&p, device) != hipSuccess) return "unknown";
  return std::string(p.name) + (p.gcnArchName[0] ? std::string(" (") + p.gcnArchName + ")" : std::string());
}
inline int gpu_device_multiprocessors(int device) {
  int n = 0;
  return hipDeviceGetAttribute(&n, hipDeviceAttributeMultiprocessorCount, device) == hipSuccess ? n : 0;
}
inline int gpu_device_warp_size(int device) {
  hipDeviceProp_t p;
  return hipGetDeviceProperties(&p, device) == hipSuccess ? p.warpSize : 0;
}
// Raise a kernel's dynamic shared-memory limit (needed above 48 KB on NVIDIA).
template <typename Kernel>
inline gpu_error_t gpu_set_max_dynamic_shared(Kernel k, int bytes) {
  return hipFuncSetAttribute(reinterpret_cast<const void*>(k), hipFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
// A launch that may start while the previous kernel in the stream drains (see
// the CUDA version); HIP has no such launch: a plain one.
template <typename... Params, typename... Args>
inline gpu_error_t gpu_launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  kernel<<<grid, block, 0, 0>>>(args...);
  return hipGetLastError();
}
#else
inline std::string gpu_device_name(int device) {
  cudaDeviceProp p;
  return cudaGetDeviceProperties(&p, device) == cudaSuccess ? std::string(p.name) : std::string("unknown");
}
inline int gpu_device_multiprocessors(int device) {
  int n = 0;
  return cudaDeviceGetAttribute(&n, cudaDevAttrMultiProcessorCount, device) == cudaSuccess ? n : 0;
}
inline int gpu_device_warp_size(int device) {
  cudaDeviceProp p;
  return cudaGetDeviceProperties(&p, device) == cudaSuccess ? p.warpSize : 0;
}
// Compute capability major.minor * 10 of the current device (90: Hopper), 0 when unknown.
inline int gpu_current_compute_capability() {
  int dev = 0, major = 0, minor = 0;
  if (cudaGetDevice(&dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) != cudaSuccess) return 0;
  if (cudaDeviceGetAttribute(&minor, cudaDevAttrComputeCapabilityMinor, dev) != cudaSuccess) return 0;
  return major * 10 + minor;
}
template <typename Kernel>
inline gpu_error_t gpu_set_max_dynamic_shared(Kernel k, int bytes) {
  return cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, bytes);
}
// Programmatic dependent launch (compute capability 9.0+): the kernel's blocks may
// be scheduled as the previous kernel's blocks retire, instead of after a full
// drain and launch gap; the kernel must call grid_dependency_wait() before it
// reads what the previous kernel wrote. Older devices get a plain launch.
template <typename... Params, typename... Args>
inline gpu_error_t gpu_launch_dependent(void (*kernel)(Params...), dim3 grid, dim3 block, Args... args) {
  static const bool pdl = gpu_current_compute_capability() >= 90;
  cudaLaunchConfig_t cfg = {};
  cfg.gridDim = grid;
  cfg.blockDim = block;
  cudaLaunchAttribute attr[1];
  attr[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attr[0].val.programmaticStreamSerializationAllowed = 1;
  cfg.attrs = attr;
  cfg.numAttrs = pdl ? 1 : 0;
  return cudaLaunchKernelEx(&cfg, kernel, Params(args)...);
}
#endif

// Waits until the kernel this one was launched after (gpu_launch_dependent) has
// finished and its writes are visible; a no-op where there is no such launch.
__device__ inline void grid_dependency_wait() {
#if defined(MLACTL_GPU_CUDA) && defined(__CUDA_ARCH__) && (__CUDA_ARCH__ >= 900)
  asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
}

// Turns a runtime status into text; returns false (and fills *error once) on failure.
inline bool check(gpu_error_t status, const char* what, std::string* error) {
  if (gpu_ok(status)) return true;
  if (error && error->empty()) *error = std::string(what) + ": " + gpu_error_string(status);
  return false;
}

// The last launch's configuration error, as check() reports it.
inline bool check_launch(const char* kernel_name, std::string* error) {
  return check(gpu_last_error(), kernel_name, error);
}

}  // namespace mla
