#!/bin/bash
# One GPU call as docs/bench_notes.md's method asks: correctness first, then timing, in
# the same call, over the binaries of one build. Usage:
#   bash scripts/gpu_run.sh BIN_DIR [OUT_DIR]
# BIN_DIR holds mlactl, gpu_tests and run_grid (built with -DMLACTL_GPU=cuda, Release,
# -DMLACTL_BUILD_TESTS=ON; copied out of the build folder so the device tool can carry
# one small folder). OUT_DIR (default $OUT, else .) receives the full logs; the
# console gets their summaries. Steps, each named in the output:
#   correctness  gpu_tests, check fixtures --backend gpu, run_grid on both stacks
#   table        scripts/bench_vs_triton.py --block-size 16 --no-peer (issue 19's shapes)
#   fp8          F1 with bf16 q (K in registers, and staged) and F1/F2 under each fp8
#                precision mode (docs/bench_notes.md, "Precision modes")
#   rows         M2 and C1 (the row-major kernel) with --pv-precision once
#   s1           S1's context sweep (stage 1 alone and with the reduce: fixed cost vs per tile)
#   ncu          F2's L2 request/sector counts, where ncu exists
# Exit status: 1 when a correctness step failed (the timings still run), else 0.
set -u
[ $# -ge 1 ] || { echo "usage: gpu_run.sh BIN_DIR [OUT_DIR]" >&2; exit 2; }
B=$1
O=${2:-${OUT:-.}}
cd "$(dirname "$0")/.." || exit 2
. scripts/gpu_shapes.sh
mkdir -p "$O"
for f in mlactl gpu_tests run_grid; do
  [ -x "$B/$f" ] || { echo "gpu_run.sh: $B/$f is missing or not executable" >&2; exit 2; }
done
bad=0
step() { echo "== $1"; }
step "device"; nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -2; "$B/mlactl" --version 2>/dev/null | head -2 | tr "\n" " "; echo  # the build's commit (the device copy's .git may lag)
step "correctness: gpu_tests"
"$B/gpu_tests" > "$O/gpu_tests.txt" 2>&1; rc=$?; echo "rc $rc"; tail -6 "$O/gpu_tests.txt"
[ $rc -eq 0 ] || bad=1
step "correctness: check fixtures --backend gpu"
"$B/mlactl" check fixtures --backend gpu > "$O/fixtures.txt" 2>&1; rc=$?; echo "rc $rc"; tail -2 "$O/fixtures.txt"
[ $rc -eq 0 ] || bad=1
for stack in vllm-rocm-aiter vllm-cuda; do
  step "correctness: run_grid --stack $stack"
  "$B/run_grid" --backend gpu --stack $stack --cases 200 --seed 2060 --cross-check > "$O/grid_$stack.txt" 2>&1; rc=$?
  echo "rc $rc"; tail -2 "$O/grid_$stack.txt"
  [ $rc -eq 0 ] || bad=1
done
step "table"
python3 scripts/bench_vs_triton.py --mlactl "$B/mlactl" --block-size 16 --no-peer --json "$O/table.json" 2>&1 | tail -14
F="$M1_ARGS --num-cu 132 --kv-dtype fp8"
# F1-a16w8: issue 19's literal F1 row (bf16 q, fp8 KV: AITER's mla_a16w8 kernel; K and V
# converted in registers, or staged, or with P·V on e4m3 as an experiment: bench_notes
# steps 30-31); plain --kv-dtype fp8 plans fp8 q (a8w8), which is what F1 has measured.
for form in "" "--fp8-convert staged" "--fp8-pv e4m3"; do
  step "fp8: F1-a16w8 (bf16 q) ${form:-default}"
  "$B/mlactl" bench $F --block-size 16 --set decode.q_dtype=model $form 2>&1 | tail -8
done
for shape in "F1 --block-size 16" "F2 --block-size 64 --arch sm90"; do
  for form in "" "--fp8-pv fp16" "--fp8-qk fp16" "--fp8-qk fp16 --fp8-convert staged"; do
    step "fp8: ${shape%% *} ${form:-default}"
    "$B/mlactl" bench $F ${shape#* } $form 2>&1 | tail -4
  done
done
for shape in "M2 $M2_ARGS" "C1 $C1_ARGS"; do
  for form in "--pv-precision once"; do
    step "rows: ${shape%% *} $form"
    "$B/mlactl" bench ${shape#* } --block-size 16 --num-cu 132 $form 2>&1 | tail -4 | head -2
  done
done
for ctx in 4095 8191 16383 32767 65535; do
  step "s1: batch 1, h12, context $ctx"
  "$B/mlactl" bench --heads 12 --qlen 1 --context $ctx --batch-size 1 --block-size 16 --num-cu 132 2>&1 | tail -3
done
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
if [ -n "$NCU" ]; then
  M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_tag_requests.avg.pct_of_peak_sustained_elapsed
  M=$M,lts__t_requests_srcunit_tex_op_read.sum,lts__t_sectors_srcunit_tex_op_read.sum
  for form in lines; do
    step "ncu: F2"
    timeout 240 "$NCU" -k regex:stage1 --launch-skip 2 --launch-count 1 --metrics "$M" \
      "$B/mlactl" bench $F --block-size 64 --arch sm90 --iters 3 --warmup 1 2>&1 | grep -v "^==PROF==" | tail -8
  done
else
  step "ncu: not found, skipped"
fi
exit $bad
