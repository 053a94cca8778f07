# adapters/flashmla.py's code paths that need no GPU (issue 37): manifest reading, the
# unsupported answers, the scale, layout and LSE conversions, through `--backend numpy`
# (a numpy model of flash_mla_with_kvcache's contract in place of the kernel) against
# mlactl's oracle. The kernel itself runs on a GPU (docs/executor-protocol.md, Adapters).
set(PY ${MLACTL_PYTHON3})
set(FLASHMLA_NUMPY "'${PY} adapters/flashmla.py --backend numpy'")

mlactl_cli_test(flashmla-numpy-fixtures RC 0 ARGS check fixtures --executor ${FLASHMLA_NUMPY} STDOUT " passed, 0 failed")
# the FLASHMLA route: per-request q [b, s_q, h, 576], causal s_q 3, the probe on every edge
mlactl_cli_test(flashmla-numpy-mtp RC 0 ARGS run --arch sm90 --heads 16 --qlen 3 --context 100,300 --block-size 64 --kernel flashmla
                --probe windows --executor ${FLASHMLA_NUMPY}
                STDOUT "status: +PASSED.*route: +flashmla.*position probe: ok \\(96 heads of 6 rows\\).*numeric: +ok.*lse: +ok")
# a CUDA-graph padding slot (no q rows) and a head count FlashMLA's 64-row tiles do not divide
mlactl_cli_test(flashmla-numpy-padding-odd-heads RC 0 ARGS run --arch sm90 --heads 3 --qlen 1 --context 0,65,1000 --padding 1
                --block-size 64 --kernel flashmla --probe windows --executor ${FLASHMLA_NUMPY}
                STDOUT "status: +PASSED.*numeric: +ok.*lse: +ok")
# TRITON_MLA's flattened rows as requests of s_q 1, at page and tile edges
mlactl_cli_test(flashmla-numpy-triton-rows RC 0 ARGS run --arch sm90 --heads 20 --qlen 1 --context 1,63,64,65,4000 --block-size 64
                --kernel triton_mla --probe windows --executor ${FLASHMLA_NUMPY}
                STDOUT "route: +triton_mla.*position probe: ok \\(100 heads of 5 rows\\).*numeric: +ok.*lse: +ok")
# SGLang's flashmla backend
mlactl_cli_test(flashmla-numpy-sglang RC 0 ARGS run --stack sglang --arch sm90 --heads 16 --qlen 1 --context 100,300 --block-size 64
                --attention-backend flashmla --probe windows --executor ${FLASHMLA_NUMPY} STDOUT "status: +PASSED.*route: +flashmla")
# what it cannot run is "unsupported" (exit 77) with the reason, never a wrong result
mlactl_cli_test(flashmla-unsupported-fp8 RC 77 ARGS run --arch sm90 --heads 16 --context 100 --block-size 64 --kernel flashmla --kv-dtype fp8
                --executor ${FLASHMLA_NUMPY} STDOUT "does not run route flashmla: q is fp8_e4m3fn: FlashMLA's dense decode at 9241ae3 takes bf16")
mlactl_cli_test(flashmla-unsupported-page RC 77 ARGS run --arch sm90 --heads 16 --context 100 --block-size 16 --kernel triton_mla
                --executor ${FLASHMLA_NUMPY} STDOUT "FlashMLA's pages are 64 tokens; this cache's block size is 16")
mlactl_cli_test(flashmla-unsupported-route RC 77 ARGS run --arch sm90 --heads 16 --context 100 --block-size 64 --kernel flash_attn_mla
                --executor ${FLASHMLA_NUMPY} STDOUT "runs routes flashmla and triton_mla \\(this case's route is flash_attn_mla\\)")
# random inputs at page edges: P rounded to bf16 before P·V moves short rows' outputs by up to
# 2^-8·max|V|; the adapter declares it (result.json p_rounding) and mlactl allows that bound
mlactl_cli_test(flashmla-numpy-p-rounding RC 0 ARGS run --arch sm90 --heads 16 --qlen 1 --context 0,1,63,64,65 --block-size 64
                --kernel flashmla --num-cu 132 --seed 52 --executor ${FLASHMLA_NUMPY}
                STDOUT "tolerance: +atol 0.004706, rtol 0.01562, cos 5e-06 \\(bf16 out; P rounded once to bf16 by the executor: atol \\+ 2\\^-8 x max\\|V\\| 1 = 0.003906\\).*numeric: +ok")
# bench --peer: its spelling is checked before anything runs (the timing itself needs a GPU)
mlactl_cli_test(bench-peer-syntax RC 2 ARGS bench --heads 16 --context 100 --peer flashmla
                STDERR "--peer takes NAME:ROUTE=COMMAND \\(e.g. flashmla:flashmla='python3 adapters/flashmla.py'\\), got \"flashmla\"")
mlactl_cli_test(bench-peer-route RC 2 ARGS bench --heads 16 --context 100 --peer "'fm:nosuch=python3 adapters/flashmla.py'"
                STDERR "--peer fm: unknown route \"nosuch\"")
