#!/bin/sh
# Checks the object kernels/CMakeLists.txt's cdna_compile_check builds with clang-22
# (kernels/stage1_mma.hip for gfx942 and gfx950; kernels/README.md, "Building"):
# its offload bundle holds one code object per arch, each an AMDGPU ELF for that arch
# (code object v5: ELF ABI version 3), every stage1_mma_kernel instance in it is wave64
# and issues MFMA instructions, and the bf16 and f16 16x16x16 forms both appear.
# A target without the MFMA builtins compiles fragment.hpp's __builtin_trap() instead,
# so "no v_mfma" is the failure this catches.
#
#   check_cdna_objects.sh OBJECT TOOLDIR_SUFFIX ARCH...
#       OBJECT: the host object clang wrote (its .hip_fatbin section is the bundle);
#       TOOLDIR_SUFFIX: the LLVM tools' suffix ("-22": llvm-objcopy-22, ...);
#   check_cdna_objects.sh --skip REASON   prints the reason and exits 77 (ctest: skipped).
# Exit 0 when every arch passes, 1 otherwise.
set -u
if [ "${1:-}" = "--skip" ]; then
  echo "cdna_compile_check: skipped: ${2:-no reason given}"
  exit 77
fi
if [ $# -lt 3 ]; then
  echo "usage: check_cdna_objects.sh OBJECT TOOL_SUFFIX ARCH..." >&2
  exit 2
fi
obj="$1"
sfx="$2"
shift 2
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
fail=0
bad() {
  echo "cdna_compile_check: FAIL: $*"
  fail=1
}

[ -f "$obj" ] || { echo "cdna_compile_check: FAIL: $obj not built (ninja cdna_compile_check)"; exit 1; }
# clang's HIP objects carry the bundle in .hip_fatbin (clang/lib/CodeGen/CGCUDANV.cpp)
"llvm-objcopy$sfx" --dump-section=.hip_fatbin="$tmp/fatbin" "$obj" "$tmp/host.o" || { bad "no .hip_fatbin section in $obj"; exit 1; }
"clang-offload-bundler$sfx" --list --type=o --input="$tmp/fatbin" >"$tmp/list" || { bad "not an offload bundle"; exit 1; }
for arch in "$@"; do
  target="hipv4-amdgcn-amd-amdhsa--$arch"
  if ! grep -qx "$target" "$tmp/list"; then
    bad "$arch: no $target in the bundle (it holds: $(tr '\n' ' ' <"$tmp/list"))"
    continue
  fi
  co="$tmp/$arch.co"
  "clang-offload-bundler$sfx" --unbundle --type=o --input="$tmp/fatbin" --targets="$target" --output="$co" || { bad "$arch: unbundle failed"; continue; }
  "llvm-readelf$sfx" -h "$co" >"$tmp/$arch.h"
  grep -q "Machine: *EM_AMDGPU" "$tmp/$arch.h" || bad "$arch: not an AMDGPU ELF"
  grep -Eq "Flags: .*[ ,]$arch(,|$)" "$tmp/$arch.h" || bad "$arch: ELF flags name another arch: $(grep Flags "$tmp/$arch.h")"
  # ELFABIVERSION_AMDGPU_HSA_V5 = 3 (llvm/include/llvm/BinaryFormat/ELF.h)
  grep -Eq "ABI Version: *3$" "$tmp/$arch.h" || bad "$arch: not code object v5: $(grep 'ABI Version' "$tmp/$arch.h")"
  "llvm-readelf$sfx" --notes "$co" >"$tmp/$arch.notes"
  waves="$(grep -E '^ *\.wavefront_size:' "$tmp/$arch.notes" | awk '{print $2}' | sort -u | tr '\n' ' ')"
  [ "$waves" = "64 " ] || bad "$arch: wavefront sizes '$waves', expected 64 only"
  "llvm-objdump$sfx" -d "$co" >"$tmp/$arch.s"
  # per kernel: its mangled name and its MFMA count
  awk '/^[0-9a-f]+ <.*>:$/ { name = $2; gsub(/[<>:]/, "", name); n[name] = 0; order[++k] = name }
       /v_mfma_/ { n[name]++ }
       END { for (i = 1; i <= k; i++) print order[i], n[order[i]] }' "$tmp/$arch.s" >"$tmp/$arch.kernels"
  kernels="$(grep -c stage1_mma_kernel "$tmp/$arch.kernels")"
  [ "$kernels" -ge 1 ] || bad "$arch: no stage1_mma_kernel in the code object"
  grep stage1_mma_kernel "$tmp/$arch.kernels" | while read -r name count; do
    [ "$count" -gt 0 ] || echo "$name" >>"$tmp/$arch.nomfma"
  done
  [ -s "$tmp/$arch.nomfma" ] && bad "$arch: kernels without MFMA: $(tr '\n' ' ' <"$tmp/$arch.nomfma")"
  bf16="$(grep -c 'v_mfma_f32_16x16x16_bf16' "$tmp/$arch.s")"
  f16="$(grep -c 'v_mfma_f32_16x16x16_f16' "$tmp/$arch.s")"
  [ "$bf16" -gt 0 ] || bad "$arch: no v_mfma_f32_16x16x16_bf16"
  [ "$f16" -gt 0 ] || bad "$arch: no v_mfma_f32_16x16x16_f16"
  vgpr="$(grep -E '^ *\.vgpr_count:' "$tmp/$arch.notes" | awk '{print $2}' | sort -n | tail -1)"
  scratch="$(grep -E '^ *\.private_segment_fixed_size:' "$tmp/$arch.notes" | awk '{print $2}' | sort -n | tail -1)"
  echo "cdna_compile_check: $arch: code object v5, $kernels stage1_mma_kernel instances, wave64," \
       "v_mfma_f32_16x16x16_bf16 x$bf16, v_mfma_f32_16x16x16_f16 x$f16, max VGPRs $vgpr, max scratch $scratch bytes"
done
if [ "$fail" -ne 0 ]; then
  echo "cdna_compile_check: FAILED"
  exit 1
fi
echo "cdna_compile_check: passed ($*)"
