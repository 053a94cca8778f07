# The benchmark shapes of docs/PERFORMANCE.md as `mlactl bench` arguments, sourced by the
# GPU scripts (gpu_run.sh, gpu_diag.sh, gpu_ab.sh) so each shape is written once; the same
# arguments as scripts/bench_vs_triton.py's table (context = s_k - q_len, --mtp-qlen for
# q_len > 1). AB_ALL_SHAPES: every row, as gpu_ab.sh's AB_SHAPES takes them.
# shellcheck shell=bash disable=SC2034  # read by the scripts that source this file
M1_ARGS="--heads 16 --qlen 1 --context 8191 --batch-size 128"
M2_ARGS="--heads 16 --qlen 4 --context 8188 --batch-size 32 --mtp-qlen 4"
M3_ARGS="--heads 16 --qlen 1 --context 65535 --batch-size 8"
C1_ARGS="--heads 128 --qlen 1 --context 4095 --batch-size 128"
S1_ARGS="--heads 12 --qlen 1 --context 32767 --batch-size 1"
F1_ARGS="$M1_ARGS --kv-dtype fp8"
F2_ARGS="$M1_ARGS --kv-dtype fp8 --arch sm90 --block-size 64"
AB_ALL_SHAPES="M1|$M1_ARGS;M2|$M2_ARGS;M3|$M3_ARGS;C1|$C1_ARGS;S1|$S1_ARGS;F1|$F1_ARGS;F2|$F2_ARGS"
