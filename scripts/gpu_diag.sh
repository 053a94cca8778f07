#!/bin/bash
# Diagnostics for issue 19's rows that miss for reasons bench alone does not show
# (docs/bench_notes.md "Not done"), over the binaries of one build. Usage:
#   bash scripts/gpu_diag.sh BIN_DIR [OUT_DIR]
# Steps, each named in the output:
#   m3-plans   M3's stage 1 under AITER's plan for 132 and 120 CUs and FLASH_ATTN_MLA's fa3
#              plan (bench), then ncu on each: duration, SM active cycles (mean and max:
#              imbalance), DRAM
#   s1-fixed   S1's stage 1 at 1 tile a split and at S1's length: ncu duration (no launch
#              overhead) and SM active cycles against bench's event-timed kernel µs
#   blocks     bench --block-times on M3's three plans and S1: block durations, the slowest
#              blocks with their works and tokens
#   stalls     ncu's stall reasons a issued instruction, tensor pipe and issue activity on
#              C1, C1 P once, M2 and M1 (docs/bench_notes.md, "Not done")
#   source     with OUT_DIR: ncu's SASS source counters (stall reasons an instruction) of
#              S1's stage 1 at 4095, as CSV in OUT_DIR, summarised by scripts/stall_sites.py
# Needs ncu (else only the bench lines); exit 2 without BIN_DIR or when mlactl is missing.
set -u
[ $# -ge 1 ] || { echo "usage: gpu_diag.sh BIN_DIR [OUT_DIR]" >&2; exit 2; }
B=$1
O=${2:-}
cd "$(dirname "$0")/.." || exit 2
. scripts/gpu_shapes.sh
[ -x "$B/mlactl" ] || { echo "gpu_diag.sh: $B/mlactl is missing or not executable" >&2; exit 2; }
NCU=$(command -v ncu || ls /usr/local/cuda*/bin/ncu 2>/dev/null | head -1)
M=gpu__time_duration.sum,sm__cycles_active.avg,sm__cycles_active.max,sm__cycles_elapsed.avg
M=$M,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__grid_size
ncu_stage1() {  # the third stage-1 launch of a short bench
  [ -n "$NCU" ] || { echo "(ncu not found)"; return; }
  timeout 120 "$NCU" -k regex:stage1 --launch-skip 2 --launch-count 1 --metrics "$M" \
    "$B/mlactl" bench "$@" --iters 3 --warmup 1 2>&1 | grep -v "^==PROF==" | grep -E "^ +[a-z]" 
}
# AITER's plan (132 works of ~4000 tokens), the same planner for 120 CUs, and
# FLASH_ATTN_MLA's fa3 plan (120 works of 4416 tokens, faster so far: step 30).
M3="--heads 16 --qlen 1 --context 65535 --batch-size 8 --block-size 16"
for plan in "--num-cu 132" "--num-cu 120" "--num-cu 132 --arch sm90 --attention-backend FLASH_ATTN_MLA"; do
  echo "== m3-plans: $plan"
  "$B/mlactl" bench $M3 $plan 2>&1 | tail -4 | head -2
  ncu_stage1 $M3 $plan
done
for ctx in 4095 32767; do
  S1="--heads 12 --qlen 1 --context $ctx --batch-size 1 --block-size 16 --num-cu 132"
  echo "== s1-fixed: context $ctx"
  "$B/mlactl" bench $S1 2>&1 | tail -4 | head -2
  ncu_stage1 $S1
done
for args in "$M3 --num-cu 132" "$M3 --num-cu 120" "$M3 --num-cu 132 --arch sm90 --attention-backend FLASH_ATTN_MLA" \
  "--heads 12 --qlen 1 --context 32767 --batch-size 1 --block-size 16 --num-cu 132"; do
  echo "== blocks: $args"
  "$B/mlactl" bench $args --block-times 2>&1 | grep -E "^(block times|slowest blocks)" | cut -c1-900
done
S4="--heads 12 --qlen 1 --context 4095 --batch-size 1 --block-size 16 --num-cu 132"
S1="--heads 12 --qlen 1 --context 32767 --batch-size 1 --block-size 16 --num-cu 132"
# Stall reasons (docs/bench_notes.md step 44): warps stalled a issued instruction by
# reason (those >= 0.05), tensor pipe and issue activity, on the row-major kernel's shapes
# and M1 (the transposed kernel at the copy roofline) for comparison.
if [ -n "$NCU" ]; then
  SM="regex:smsp__average_warps_issue_stalled_.*_per_issue_active\\.ratio,smsp__inst_executed.sum"
  SM=$SM,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
  SM=$SM,smsp__issue_active.avg.pct_of_peak_sustained_active,gpu__time_duration.sum
  for args in "C1 $C1_ARGS" "C1-once $C1_ARGS --pv-precision once" "M2 $M2_ARGS" "M1 $M1_ARGS"; do
    echo "== stalls: ${args%% *}"
    timeout 120 "$NCU" -k regex:stage1 --launch-skip 2 --launch-count 1 --metrics "$SM" \
      "$B/mlactl" bench ${args#* } --block-size 16 --num-cu 132 --iters 3 --warmup 1 2>&1 | grep -v "^==PROF==" |
      grep -E "^ +[a-z]" | awk '$NF + 0 >= 0.05 || /inst_executed|duration|pct/'
  done
fi
if [ -n "$O" ] && [ -n "$NCU" ]; then
  mkdir -p "$O"
  for c in separate; do
    echo "== source: S1 at 4095 -> $O/s4_${c}_source.csv"
    timeout 240 "$NCU" -k regex:stage1 --launch-skip 2 --launch-count 1 --section SourceCounters --section WarpStateStats \
      --page source --print-source sass --csv "$B/mlactl" bench $S4 --iters 3 --warmup 1 \
      > "$O/s4_${c}_source.csv" 2>&1
    echo "rc $? ($(wc -l < "$O/s4_${c}_source.csv") lines)"
    python3 scripts/stall_sites.py "$O/s4_${c}_source.csv" --top 8  # by instruction, mbarrier waits named
  done
fi
