#!/bin/bash
# scripts/gpu_verify.sh on fake builds (no GPU needed): every step runs with its logs in
# $OUT, exit 0 when all pass, 1 when one fails (the others still run), 2 on bad usage or a
# missing binary. Usage: test_gpu_verify.sh SOURCE_DIR
set -u
SRC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"  # check NAME CONDITION...; $fails
fake() {  # fake DIR GPU_TESTS_RC
  mkdir -p "$1"
  printf '#!/bin/sh\n[ "$1" = --version ] && { echo mlactl; echo "commit: fake"; exit 0; }\necho "mlactl $*"\n' > "$1/mlactl"
  printf '#!/bin/sh\necho "gpu_tests: 10 checks, 0 failed"\nexit %s\n' "$2" > "$1/gpu_tests"
  printf '#!/bin/sh\necho "run_grid $*"\n' > "$1/run_grid"
  chmod +x "$1/mlactl" "$1/gpu_tests" "$1/run_grid"
}
fake "$T/good" 0
fake "$T/bad" 1
export OUT=$T
out=$(bash "$SRC/scripts/gpu_verify.sh" "$T/good" 2>&1); rc=$?
check "exit 0 when every step passes" [ $rc -eq 0 ]
for s in gpu_tests fixtures grid_sglang grid_vllm_cuda grid_vllm_rocm; do
  check "step $s ran and logged" [ -s "$T/$s.txt" ]
done
grep -q "run_grid --backend gpu --stack sglang --cases 300 --seed 2061 --cross-check" "$T/grid_sglang.txt"; sg=$?
check "the SGLang grid runs on the GPU with the cross-check" [ $sg -eq 0 ]
grep -q "check fixtures --backend gpu" "$T/fixtures.txt"; fx=$?
check "every fixture runs on the GPU" [ $fx -eq 0 ]
out=$(bash "$SRC/scripts/gpu_verify.sh" "$T/bad" 2>&1); rc=$?
grep -q "== grid_vllm_rocm" <<< "$out"; went_on=$?
check "exit 1 when gpu_tests fails, the other steps still run" [ $rc -eq 1 -a $went_on -eq 0 ]
out=$(bash "$SRC/scripts/gpu_verify.sh" 2>&1); rc=$?
check "exit 2 without a build" [ $rc -eq 2 ]
err=$(bash "$SRC/scripts/gpu_verify.sh" "$T/nowhere" 2>&1 >/dev/null); rc=$?
grep -q "nowhere/mlactl is missing" <<< "$err"; named=$?
check "exit 2 on a missing build, naming it" [ $rc -eq 2 -a $named -eq 0 ]

[ $fails -eq 0 ] && echo "test_gpu_verify: all passed" || echo "test_gpu_verify: $fails failed"
[ $fails -eq 0 ]
