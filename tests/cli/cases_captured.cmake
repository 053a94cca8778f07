# Captured metadata (docs/design.md §2) and corrupted work lists run through `run --use-captured`.
mlactl_cli_test(captured-windows-first-bad-row RC 1 ARGS windows fixtures/seed000-captured-broadcast.json
                STDOUT "captured: first difference: paged_kv_indptr\\[1\\]: row 0 \\(request 0, token 0\\) gets 8 KV entries, its causal window \\[0, 1\\) has 1 \\(\\+7 excess\\)")
mlactl_cli_test(captured-causal-matches RC 0 ARGS windows fixtures/seed000-captured-causal.json STDOUT "captured: captured metadata matches")
mlactl_cli_test(captured-run-broadcast RC 1 ARGS run fixtures/seed000-captured-broadcast.json --use-captured --backend cpu
                STDOUT "position audit: 28 of 32 rows read wrong KV positions.*reads positions \\[1, 8\\) outside its window \\[0, 1\\)")
mlactl_cli_test(captured-run-causal RC 0 ARGS run fixtures/seed000-captured-causal.json --use-captured --backend cpu STDOUT "status: +PASSED")
mlactl_cli_test(captured-none RC 2 ARGS run fixtures/seed000-verify-causal.json --use-captured STDERR "has no `captured` arrays")
mlactl_cli_test(worklist-clean RC 0 ARGS run fixtures/worklist-captured-clean.json --use-captured --backend cpu STDOUT "planner: +captured")
mlactl_cli_test(worklist-kv-end-shifted RC 1 ARGS run fixtures/worklist-kv-end-shifted.json --use-captured --backend cpu
                STDOUT "1 of 3 rows read wrong KV positions.*  1        1      0  all        1        0  reads 1 positions twice")
mlactl_cli_test(worklist-work-dropped RC 1 ARGS run fixtures/worklist-work-dropped.json --use-captured --backend cpu
                STDOUT "never written \\(no work covers it\\).*unwritten \\(request, token, head\\).*request 2, token 0, head 0")
mlactl_cli_test(worklist-partials-swapped RC 1 ARGS run fixtures/worklist-partials-swapped.json --use-captured --backend cpu
                STDOUT "position audit: ok.*failing \\(request, token, head\\).*request 0, token 0")
mlactl_cli_test(run-seed000-broadcast-rows RC 1 ARGS run fixtures/seed000-verify-causal.json --inject verify-window-broadcast --backend cpu
                STDOUT "28 of 32 rows read wrong KV positions.*repro: mlactl run fixtures/seed000-verify-causal.json --inject verify-window-broadcast --backend cpu")
mlactl_cli_test(run-seed000-clean RC 0 ARGS run fixtures/seed000-verify-causal.json --backend cpu STDOUT "position audit: ok \\(32 rows\\)")
# no visible device (here, in CI, and with the GPU hidden on the H200): skipped, 77
mlactl_cli_test(run-gpu-skip RC 77 ARGS run fixtures/seed000-verify-causal.json --backend gpu STDERR "skipped: no GPU"
                ENV "CUDA_VISIBLE_DEVICES=;HIP_VISIBLE_DEVICES=")
mlactl_cli_test(run-refused RC 5 ARGS run --heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal --backend cpu
                STDERR "refused: ValueError: AITER has no non-causal fp8 MLA kernel for this 2-token query block")
mlactl_cli_test(run-budget RC 3 ARGS --max-memory 1M run --heads 16 --context 100000 --backend cpu
                STDERR "/requests: the batch needs about .* more than the memory budget of 1.0 MiB \\(raise it with --max-memory")
mlactl_cli_test(run-json RC 0 ARGS --format json run fixtures/noncausal-draft-block.json --backend cpu STDOUT "\"status\": \"passed\"")
# fuzz_captured's find (fuzz/regressions_captured/reduce-reads-unwritten-partial-row): a reduce
# merging a partial row no work writes reads the buffer's NaN poison (exit 1, cause named),
# not an executor fault (exit 4); the plan check names the rule first (issue 39)
mlactl_cli_test(captured-partial-row-unwritten RC 1 ARGS run tests/cli/bad/captured-partial-row-unwritten.json --backend cpu
                STDOUT "status: +INCORRECT\nmessage: +captured plan breaks the plan invariants \\(3 violations\\): work 3: every partial row written by exactly one work.*captured: +differs: work_info_set\\[3\\].partial_qo_loc: the aiter planner gives 2, captured 1.*reason: +16 \\(row, head\\) unwritten \\(output still NaN poison\\)")
# run --inputs DIR (cli/captured_inputs.hpp): the capture's q and KV blocks; tests/capture runs the good path
mlactl_cli_test(run-inputs-missing RC 3 ARGS run fixtures/noncausal-draft-block.json --backend cpu --inputs /nonexistent-capture
                STDERR "/nonexistent-capture/inputs.json: cannot be read")
mlactl_cli_test(run-inputs-with-probe RC 2 ARGS run fixtures/noncausal-draft-block.json --backend cpu --inputs /tmp --probe windows
                STDERR "excludes")
