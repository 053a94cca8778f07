# Issue 38: the AITER rule sets (docs/stacks/vllm-rocm-aiter.md §A5.5) and the 2026 record
# as fixtures (docs/known_faults.md).
# --version lists each rule set with the upstream commits it was read from
mlactl_cli_test(version-aiter-rule-sets RC 0 ARGS --version
                STDOUT "\naiter: +2026\\.08 \\(ROCm/aiter@e4048607, default\\), 2026\\.08\\+4899 \\(ROCm/aiter@e4048607 \\+ ROCm/aiter#4899@7975419d89")
# schedule on one batch under the two rule sets: 54 works under 2026.08, 11 under #4899's split count
mlactl_cli_test(schedule-rules-2026.08 RC 0 ARGS schedule --arch gfx950 --heads 16 --qlen 1 --context 99,699,39
                STDOUT "aiter rules 2026\\.08\\).*256, 54 works, 3 split tiles")
mlactl_cli_test(schedule-rules-4899 RC 0 ARGS schedule --arch gfx950 --heads 16 --qlen 1 --context 99,699,39
                --set platform.aiter=2026.08+4899
                STDOUT "aiter rules 2026\\.08\\+4899\\).*256, 11 works, 2 split tiles.*split count 20 = clamp\\(lrintf\\(1\\.2 \\* 16\\.90")
mlactl_cli_test(rules-unknown RC 3 ARGS route --arch gfx950 --heads 16 --qlen 1 --context 10 --set platform.aiter=latest
                STDERR "/platform/aiter: must be one of 2026\\.08, 2026\\.08\\+4899, got \"latest\"")
# the record: each fixture by name, its cause pinned in its expect block
foreach(id vllm55609-gfx942-bf16-verify-q8 aiter4751-gfx950-bf16q-fp8kv-q5 rules-2026.08-vector-a rules-4899-vector-a)
  mlactl_cli_test(check-${id} RC 0 ARGS check fixtures/${id}.json --backend cpu STDOUT "(passed|refused-as-expected) +${id} .*1 passed, 0 failed")
endforeach()
# the lookup key AITER prints for ROCm/aiter #4751, field for field
mlactl_cli_test(route-aiter4751-key RC 0 ARGS route fixtures/aiter4751-gfx950-bf16q-fp8kv-q5.json
                STDOUT "cannot get heuristic kernel!  \\(gfx950, q bf16, kv fp8, Gqa 16, ps 1, prefill 0, causal 0, qSeqLen 5, lse 0\\)")
