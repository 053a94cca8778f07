#!/bin/bash
# Everything mlactl checks on a GPU, in one device call (docs/bench_notes.md's method:
# correctness first): gpu_tests on every stage-1 leg, every fixture with --backend gpu,
# and the randomized grids of the three stacks with the CPU cross-check. Usage:
#   bash scripts/gpu_verify.sh BUILD_DIR
# BUILD_DIR holds mlactl, gpu_tests and run_grid of an sm_90a build. Each step's full
# output goes to $OUT/<step>.txt (the device tool's folder; else /tmp), its last lines
# here; a step over its time limit is cut (exit 124 shown). Exit 1 when a step failed.
set -u
[ $# -eq 1 ] || { echo "usage: gpu_verify.sh BUILD_DIR" >&2; exit 2; }
B=$1
cd "$(dirname "$0")/.." || exit 2
for x in mlactl gpu_tests run_grid; do [ -x "$B/$x" ] || { echo "gpu_verify.sh: $B/$x is missing" >&2; exit 2; }; done
LOGS=${OUT:-/tmp}
bad=0
echo "== device"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1
"$B/mlactl" --version | sed -n 2p
step() {
  local name=$1 limit=$2; shift 2
  local t0; t0=$(date +%s)
  echo "== $name"
  timeout "$limit" "$@" > "$LOGS/$name.txt" 2>&1; local rc=$?
  echo "   exit $rc, $(( $(date +%s) - t0 )) s"
  tail -3 "$LOGS/$name.txt"
  [ $rc -eq 0 ] || bad=1
}
step gpu_tests 150 "$B/gpu_tests"
step fixtures 90 "$B/mlactl" --format json check fixtures --backend gpu
step grid_sglang 60 "$B/run_grid" --backend gpu --stack sglang --cases 300 --seed 2061 --cross-check
step grid_vllm_cuda 45 "$B/run_grid" --backend gpu --stack vllm-cuda --cases 200 --seed 2060 --cross-check
step grid_vllm_rocm 45 "$B/run_grid" --backend gpu --stack vllm-rocm-aiter --cases 200 --seed 2060 --cross-check
exit $bad
