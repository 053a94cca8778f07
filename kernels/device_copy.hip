// Device-to-device copy (launch_device_copy): the bandwidth roofline of `bench`
// (gpu_copy_roofline) and the replication of its KV copies.
#include <algorithm>

#include "kernels/gpu.hpp"
#include "kernels/mla_decode.hpp"

namespace mla {
namespace {
constexpr int kCopyThreads = 256;
constexpr int kCopyUnroll = 8;
constexpr int kCopyBlocksPerMultiprocessor = 16;  // the grid: this many blocks per SM / CU at most

// Multiprocessors of the current device, queried once (0 when the query fails).
int current_multiprocessors() {
  static const int n = [] {
    int dev = 0;
    return gpu_ok(gpu_current_device(&dev)) ? gpu_device_multiprocessors(dev) : 0;
  }();
  return n;
}

// Grid-stride copy, kCopyUnroll independent 16-byte loads in flight per thread.
__global__ void __launch_bounds__(kCopyThreads) device_copy_kernel(uint4* __restrict__ dst, const uint4* __restrict__ src,
                                                                    size_t n16, unsigned char* __restrict__ dst_tail,
                                                                    const unsigned char* __restrict__ src_tail, size_t tail) {
  const size_t stride = size_t(gridDim.x) * kCopyThreads;
  size_t i = size_t(blockIdx.x) * kCopyThreads + threadIdx.x;
  for (; i + (kCopyUnroll - 1) * stride < n16; i += kCopyUnroll * stride) {
    uint4 v[kCopyUnroll];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) v[u] = src[i + u * stride];
#pragma unroll
    for (int u = 0; u < kCopyUnroll; ++u) dst[i + u * stride] = v[u];
  }
  for (; i < n16; i += stride) dst[i] = src[i];
  if (blockIdx.x == 0)
    for (size_t t = threadIdx.x; t < tail; t += kCopyThreads) dst_tail[t] = src_tail[t];
}
}  // namespace

bool launch_device_copy(void* dst, const void* src, size_t bytes, std::string* error) {
  if (bytes == 0) return true;
  if ((reinterpret_cast<uintptr_t>(dst) | reinterpret_cast<uintptr_t>(src)) % 16) {
    if (error) *error = "device copy: buffers must be 16-byte aligned";
    return false;
  }
  const int multiprocessors = current_multiprocessors();
  if (multiprocessors <= 0) {
    if (error) *error = "device copy: the device's multiprocessor count could not be read";
    return false;
  }
  const size_t n16 = bytes / 16, tail = bytes % 16;
  const size_t want = (n16 + size_t(kCopyThreads) * kCopyUnroll - 1) / (size_t(kCopyThreads) * kCopyUnroll);
  const size_t most = size_t(multiprocessors) * kCopyBlocksPerMultiprocessor;
  const unsigned blocks = unsigned(std::max<size_t>(1, std::min<size_t>(want, most)));
  device_copy_kernel<<<dim3(blocks), dim3(kCopyThreads), 0, 0>>>(
      static_cast<uint4*>(dst), static_cast<const uint4*>(src), n16, static_cast<unsigned char*>(dst) + n16 * 16,
      static_cast<const unsigned char*>(src) + n16 * 16, tail);
  return check_launch("device copy launch", error);
}

}  // namespace mla
