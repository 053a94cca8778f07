# Issue 19's row-major and M1 shapes as `mlactl bench` arguments (docs/PERFORMANCE.md),
# sourced by the GPU scripts (gpu_run.sh, gpu_diag.sh, gpu_ab.sh) so each shape is written
# once; scripts/bench_vs_triton.py keeps the whole table for the Triton comparison.
# shellcheck shell=bash disable=SC2034  # read by the scripts that source this file
M1_ARGS="--heads 16 --qlen 1 --context 8191 --batch-size 128"
M2_ARGS="--heads 16 --qlen 4 --context 8191 --batch-size 32"
C1_ARGS="--heads 128 --qlen 1 --context 4095 --batch-size 128"
