// Shared vocabulary of mlactl's core: dtypes, arches, errors with exit codes.
// No GPU headers here (docs/design.md §1).
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

namespace mlactl {

// Exit codes, docs/design.md §6.
enum ExitCode : int {
  kExitOk = 0,
  kExitVerifyFailed = 1,
  kExitUsage = 2,
  kExitInvalidInput = 3,
  kExitDevice = 4,
  kExitRefused = 5,
  kExitSkipped = 77,
};

// An error that carries the exit code it maps to. `where` is a JSON pointer
// (e.g. "/requests/3/query_len") for input errors, empty otherwise.
class Error : public std::runtime_error {
 public:
  Error(int exit_code, std::string where, const std::string& msg)
      : std::runtime_error(where.empty() ? msg : where + ": " + msg),
        exit_code_(exit_code), where_(std::move(where)), bare_(msg) {}
  int exit_code() const { return exit_code_; }
  const std::string& where() const { return where_; }
  const std::string& bare_message() const { return bare_; }
 private:
  int exit_code_;
  std::string where_;
  std::string bare_;
};

inline Error invalid_input(const std::string& where, const std::string& msg) {
  return Error(kExitInvalidInput, where, msg);
}

// gfx942/gfx950: AMD targets (the vLLM ROCm AITER stack); sm90: NVIDIA Hopper
// (H100/H200/H800, the vLLM CUDA stack, docs/stacks/vllm-cuda.md).
enum class Arch { gfx942, gfx950, sm90 };
enum class DType { bf16, fp16, fp8 };
// AITER rule sets (platform.aiter), each the upstream code it was read from
// (docs/stacks/vllm-rocm-aiter.md, "AITER rule sets"): r2026_08 = ROCm/aiter@e4048607;
// r2026_08_pr4899 = the same with #4899's workload-adaptive split count, read at its
// branch head ROCm/aiter@7975419d89 (csrc/kernels/mla/metadata/v1_2_device.cuh).
enum class AiterRules { r2026_08, r2026_08_pr4899 };
// vLLM ROCm AITER rule sets (platform.vllm): r1 = R1 as read
// (vllm-project/vllm/vllm/v1/attention/backends/mla/rocm_aiter_mla.py@baae27c5); r1_pr57642 = R1
// with vllm-project/vllm#57642's guard (open when read): the persistent gate's heads >= 16 arm
// holds on gfx950 only, so gfx942 bf16 causal blocks with q_len > 4 take the non-persistent decode.
enum class VllmRules { r1, r1_pr57642 };
inline const char* to_string(VllmRules r) { return r == VllmRules::r1 ? "R1" : "R1+57642"; }
inline const char* vllm_rules_commits(VllmRules r) {
  return r == VllmRules::r1 ? "vllm-project/vllm@baae27c5"
                            : "vllm-project/vllm@baae27c5 + vllm-project/vllm#57642 (open; the persistent gate's gfx942 guard)";
}
// fp8 flavour follows the arch (docs/design.md §2): e4m3fnuz on gfx942, OCP e4m3fn elsewhere.
enum class Fp8Flavor { e4m3fn, e4m3fnuz };

inline const char* to_string(AiterRules r) {
  switch (r) {
    case AiterRules::r2026_08: return "2026.08";
    case AiterRules::r2026_08_pr4899: return "2026.08+4899";
  }
  return "?";
}
// Upstream commits a rule set was read from, for --version and the docs.
inline const char* aiter_rules_commits(AiterRules r) {
  switch (r) {
    case AiterRules::r2026_08: return "ROCm/aiter@e4048607";
    case AiterRules::r2026_08_pr4899: return "ROCm/aiter@e4048607 + ROCm/aiter#4899@7975419d89 (planner split count)";
  }
  return "?";
}

inline const char* to_string(Arch a) {
  switch (a) {
    case Arch::gfx942: return "gfx942";
    case Arch::gfx950: return "gfx950";
    case Arch::sm90: return "sm90";
  }
  return "?";
}

// The serving stack a batch comes from (`platform.stack`); with platform.arch it picks the
// modelled stack (core/stacks/registry.hpp). No stack field means vLLM, the only stack
// batch files named before SGLang was modelled.
enum class ServingStack { vllm, sglang };
inline const char* to_string(ServingStack s) { return s == ServingStack::vllm ? "vllm" : "sglang"; }
inline const char* to_string(DType d) {
  switch (d) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp8: return "fp8";
  }
  return "?";
}
inline const char* to_string(Fp8Flavor f) { return f == Fp8Flavor::e4m3fn ? "e4m3fn" : "e4m3fnuz"; }
inline Fp8Flavor fp8_flavor_for(Arch a) { return a == Arch::gfx942 ? Fp8Flavor::e4m3fnuz : Fp8Flavor::e4m3fn; }
inline int dtype_bytes(DType d) { return d == DType::fp8 ? 1 : 2; }

}  // namespace mlactl
