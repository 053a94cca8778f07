# `mlactl bench` (docs/design.md §6, §8): GPU only. Without a GPU it exits 77 ("no GPU");
# a refused route is an answer on any machine (exit 5). CI has no GPU.
if(NOT MLACTL_GPU_BACKEND OR MLACTL_GPU_BACKEND STREQUAL "none")
  mlactl_cli_test(bench-no-gpu RC 77 ARGS bench --heads 16 --context 8191 --batch-size 4 STDERR "no GPU")
  mlactl_cli_test(bench-no-gpu-compare RC 77 ARGS bench --heads 12 --context 32767 --compare gluon_decode,asm_persistent STDERR "no GPU")
  mlactl_cli_test(bench-no-gpu-stage1 RC 77 ARGS bench --heads 128 --context 4095 --stage1 wgmma STDERR "no GPU")
  mlactl_cli_test(bench-no-gpu-block-times RC 77 ARGS bench --heads 16 --context 65535 --batch-size 8 --block-times STDERR "no GPU")
  mlactl_cli_test(bench-no-gpu-precision RC 77 ARGS bench --heads 12 --context 32767 --batch-size 1 --block-size 16 --pv-precision once
                  STDERR "no GPU")
  # the vllm-cuda stack's routes side by side (docs/stacks/vllm-cuda.md): timed on the H200 only
  mlactl_cli_test(bench-no-gpu-compare-cuda RC 77 ARGS bench --arch sm90 --heads 16 --context 8191 --compare flash_attn_mla,flashmla,triton_mla STDERR "no GPU")
  # a refused route is answered (exit 5), the others say why they were not timed
  mlactl_cli_test(bench-compare-cuda-refused RC 5 ARGS bench --arch sm90 --heads 16 --context 8191 --kv-dtype fp8 --compare flash_attn_mla,flashmla
                  STDOUT "flash_attn_mla +refused: ValueError: Selected backend AttentionBackendEnum.FLASH_ATTN_MLA is not valid for this configuration. Reason: \\['kv_cache_dtype not supported'\\]\nflashmla +skipped: no GPU")
endif()
mlactl_cli_test(bench-stage1-unknown RC 2 ARGS bench --heads 16 --context 10 --stage1 bogus
                STDERR "--stage1: bogus not in {automatic,wgmma,mma,cuda_core}")
# the experiments removed in issue 35 are unknown options now (docs/bench_notes.md)
mlactl_cli_test(bench-combine-removed RC 2 ARGS bench --heads 16 --context 10 --combine fused
                STDERR "not expected: --combine")
mlactl_cli_test(bench-wgmma-schedule-removed RC 2 ARGS bench --heads 16 --context 10 --wgmma-schedule seesaw
                STDERR "not expected: --wgmma-schedule")
mlactl_cli_test(bench-fp8-copy-removed RC 2 ARGS bench --heads 16 --context 10 --fp8-copy half-lines
                STDERR "not expected: --fp8-copy")
mlactl_cli_test(bench-fp8-qk-unknown RC 2 ARGS bench --heads 16 --context 10 --fp8-qk bf16
                STDERR "--fp8-qk: bf16 not in {automatic,e4m3,fp16}")
mlactl_cli_test(bench-fp8-pv-unknown RC 2 ARGS bench --heads 16 --context 10 --fp8-pv fp8
                STDERR "--fp8-pv: fp8 not in {automatic,e4m3,fp16}")
mlactl_cli_test(bench-refused RC 5 ARGS bench --heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal
                STDERR "route refused: ValueError: AITER has no non-causal fp8")
mlactl_cli_test(bench-batch-size-usage RC 2 ARGS bench --heads 16 --context 1,2 --batch-size 4 STDERR "--batch-size repeats one")
mlactl_cli_test(bench-compare-unknown RC 2 ARGS bench --heads 16 --context 10 --compare gluon_decode,nope STDERR "unknown route")
mlactl_cli_test(bench-fp8-convert-unknown RC 2 ARGS bench --heads 16 --context 10 --fp8-convert smem
                STDERR "--fp8-convert: smem not in {automatic,registers,staged}")
mlactl_cli_test(bench-pv-precision-unknown RC 2 ARGS bench --heads 16 --context 10 --pv-precision bf16
                STDERR "--pv-precision: bf16 not in {automatic,split,once}")
