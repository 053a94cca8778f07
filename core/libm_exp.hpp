// exp over arrays of doubles or floats, bit for bit this process's std::exp (the
// reference's softmax exponentials, core/reference.cpp, and the CPU executor's,
// kernels/cpu_executor.cpp): one libm call per element was ~7% of a CPU run
// (docs/bench_notes.md). The vector paths redo, lane by lane, glibc's exp and expf
// as built with FMA (__exp_fma, __expf_fma; bminor/glibc glibc-2.36
// sysdeps/ieee754/dbl-64/e_exp.c and sysdeps/ieee754/flt-32/e_expf.c). A path is
// used only after it matched std::exp at first use, so another libm (or glibc's
// non-FMA build on a CPU without FMA) falls back to std::exp and never moves a result.
#pragma once
#include <cstdint>
#include <optional>

namespace mlactl {

enum class ExpIsa { scalar, avx2_fma, avx512 };
bool exp_isa_available(ExpIsa isa);  // the CPU has it and it matched std::exp
// Tests run every available path against std::exp; nullopt restores the default.
void set_exp_isa_for_testing(std::optional<ExpIsa> isa);

// x[i] = std::exp(x[i]) for i in [0, n), bit for bit (double: glibc's exp; float:
// its expf, the CPU executor's softmax, kernels/cpu_executor.cpp).
void exp_in_place(double* x, int64_t n);
void exp_in_place(float* x, int64_t n);

}  // namespace mlactl
