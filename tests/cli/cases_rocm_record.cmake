# Issue 38: the AITER rule sets (docs/stacks/vllm-rocm-aiter.md §A5.5) and the 2026 record
# as fixtures (docs/known_faults.md).
# --version lists each rule set with the upstream commits it was read from
mlactl_cli_test(version-aiter-rule-sets RC 0 ARGS --version
                STDOUT "\naiter: +2026\\.08 \\(ROCm/aiter@e4048607\\), 2026\\.08\\+4899 \\(ROCm/aiter@e4048607 \\+ ROCm/aiter#4899@7975419d89 \\(planner split count\\), default\\)")
# schedule on one batch under the two rule sets: 54 works under 2026.08, 11 under #4899's split count
mlactl_cli_test(schedule-rules-2026.08 RC 0 ARGS schedule --arch gfx950 --heads 16 --qlen 1 --context 99,699,39
                --set platform.aiter=2026.08
                STDOUT "aiter rules 2026\\.08\\).*256, 54 works, 3 split tiles")
mlactl_cli_test(schedule-rules-4899 RC 0 ARGS schedule --arch gfx950 --heads 16 --qlen 1 --context 99,699,39
                --set platform.aiter=2026.08+4899
                STDOUT "aiter rules 2026\\.08\\+4899\\).*256, 11 works, 2 split tiles.*split count 20 = clamp\\(lrintf\\(1\\.2 \\* 16\\.90")
mlactl_cli_test(rules-unknown RC 3 ARGS route --arch gfx950 --heads 16 --qlen 1 --context 10 --set platform.aiter=latest
                STDERR "/platform/aiter: must be one of 2026\\.08, 2026\\.08\\+4899, got \"latest\"")
# rule sets read about, not read: refused with that reason, never guessed
mlactl_cli_test(rules-5212-read-about RC 3 ARGS route --arch gfx950 --heads 16 --qlen 1 --context 10 --set platform.aiter=2026.08+4899+5212
                STDERR "/platform/aiter: rule set 2026\\.08\\+4899\\+5212 is read about, not read: ROCm/aiter#5212 \\(merged\\)")
mlactl_cli_test(rules-5582-read-about RC 3 ARGS route --arch gfx950 --heads 16 --qlen 1 --context 10 --set platform.aiter=2026.08+4899+5212+5582
                STDERR "/platform/aiter: rule set 2026\\.08\\+4899\\+5212\\+5582 is read about, not read: ROCm/aiter#5582 \\(merged\\) adds a gfx950 bf16 qh96")
# the default is the newest rule set: the same batch without --set plans as 2026.08+4899
mlactl_cli_test(schedule-rules-default RC 0 ARGS schedule --arch gfx950 --heads 16 --qlen 1 --context 99,699,39
                STDOUT "aiter rules 2026\\.08\\+4899\\).*256, 11 works, 2 split tiles")
# the record: each fixture by name, its cause pinned in its expect block
foreach(id vllm55609-gfx942-bf16-verify-q8 vllm55609-gfx942-bf16-verify-q8-fixed aiter5040-gfx942-h8-bf16-q2
        aiter4751-gfx950-bf16q-fp8kv-q5 rules-2026.08-vector-a rules-4899-vector-a)
  mlactl_cli_test(check-${id} RC 0 ARGS check fixtures/${id}.json --backend cpu STDOUT "(passed|refused-as-expected) +${id} .*1 passed, 0 failed")
endforeach()
# vLLM rule sets: platform.vllm R1 (default) and R1+57642 (#57642's gfx942 guard), listed and refused by name
mlactl_cli_test(version-vllm-rule-sets RC 0 ARGS --version
                STDOUT "\nvllm: +R1 \\(vllm-project/vllm@baae27c5, default\\), R1\\+57642 \\(vllm-project/vllm@baae27c5 \\+ vllm-project/vllm#57642")
mlactl_cli_test(vllm-rules-unknown RC 3 ARGS route --arch gfx942 --heads 16 --qlen 8 --context 10 --set platform.vllm=main
                STDERR "/platform/vllm: must be one of R1, R1\\+57642, got \"main\"")
mlactl_cli_test(route-57642-guard RC 0 ARGS route fixtures/vllm55609-gfx942-bf16-verify-q8-fixed.json
                STDOUT "use_persistent_schedule +false +gfx942 bf16 causal block with Q 8 > 4: #57642's guard keeps the persistent decode at Q <= 4")
# the lookup key AITER prints for ROCm/aiter #4751, field for field
mlactl_cli_test(route-aiter4751-key RC 0 ARGS route fixtures/aiter4751-gfx950-bf16q-fp8kv-q5.json
                STDOUT "cannot get heuristic kernel!  \\(gfx950, q bf16, kv fp8, Gqa 16, ps 1, prefill 0, causal 0, qSeqLen 5, lse 0\\)")

# Known kernel faults (issue 38 item 4, docs/known_faults.md): route, run and check print the
# warning with its link in every format they write; a batch off the fault gets none.
set(KF_LINE "known kernel fault: gfx942 mla_a16w16_qh16_m32x4 at q_len 8: wrong output reported upstream, ROCm/aiter #5679 \\(https://github\\.com/ROCm/aiter/issues/5679\\)")
set(KF_SEED fixtures/seed003-h12-gfx942-verify-q8.json)
set(KFGEN ${CMAKE_CURRENT_BINARY_DIR}/known-faults-generated)
file(MAKE_DIRECTORY ${KFGEN})
mlactl_cli_test(kf-route-table RC 0 ARGS route ${KF_SEED} STDOUT "\nwarning: +${KF_LINE}\n")
mlactl_cli_test(kf-route-json RC 0 ARGS route ${KF_SEED} --format json
                STDOUT "\"known_faults\": \\[\n +\\{\n +\"id\": \"aiter-5679\",\n +\"warning\": \"gfx942 mla_a16w16_qh16_m32x4 at q_len 8: wrong output reported upstream, ROCm/aiter #5679\",\n +\"link\": \"https://github\\.com/ROCm/aiter/issues/5679\",\n +\"state\": \"open\"")
mlactl_cli_test(kf-route-csv RC 0 ARGS route ${KF_SEED} --format csv
                STDOUT "^case,route,error_type,error,padded_heads,aiter_kernel,backend,known_faults,step,name,value,why\nseed003-h12-gfx942-verify-q8,asm_nonpersistent,,,16,mla_a16w16_qh16_m32x4_n16x1_coex0_mask1,,\"${KF_LINE}\",1,backend,")
mlactl_cli_test(kf-run-table RC 0 ARGS run ${KF_SEED} --backend cpu STDOUT "status: +PASSED.*\nwarning: +${KF_LINE}\n")
mlactl_cli_test(kf-run-json RC 0 ARGS run ${KF_SEED} --backend cpu --format json STDOUT "\"known_faults\": \\[\n +\\{\n +\"id\": \"aiter-5679\"")
mlactl_cli_test(kf-check-table RC 0 ARGS check ${KF_SEED} --backend cpu
                STDOUT "passed +seed003-h12-gfx942-verify-q8  \\(route, known_faults\\)\n +warning: ${KF_LINE}\n")
mlactl_cli_test(kf-check-json RC 0 ARGS check ${KF_SEED} --backend cpu --format json STDOUT "\"known_faults\": \\[\n +\"${KF_LINE}\"\n +\\],")
mlactl_cli_test(kf-check-jsonl RC 0 ARGS check ${KF_SEED} --backend cpu --format jsonl STDOUT "\"known_faults\":\\[\"${KF_LINE}\"\\]")
mlactl_cli_test(kf-check-junit RC 0 ARGS check ${KF_SEED} --backend cpu --junit ${KFGEN}/kf.xml
                FILE ${KFGEN}/kf.xml FILE_RE "<properties><property name=\"known_fault\" value=\"${KF_LINE}\"/></properties></testcase>")
# -q: the verdict alone on stdout, the warning on stderr
mlactl_cli_test(kf-route-quiet RC 0 ARGS -q route ${KF_SEED} STDOUT "^asm_nonpersistent\n$" STDERR "^warning: ${KF_LINE}\n$")
mlactl_cli_test(kf-run-quiet RC 0 ARGS -q run ${KF_SEED} --backend cpu STDOUT "^passed\n$" STDERR "^warning: ${KF_LINE}\n$")
# SGLang's aiter route lands on the same kernel (16 heads bf16: non-persistent) at 8 drafts
mlactl_cli_test(kf-sglang-route RC 0 ARGS route fixtures/sglang-aiter-5679-verify-q8.json STDOUT "aiter kernel: +mla_a16w16_qh16_m32x4_n16x1_coex0_mask1\n.*warning: +${KF_LINE}\n")
mlactl_cli_test(kf-sglang-check RC 0 ARGS check fixtures/sglang-aiter-5679-verify-q8.json fixtures/sglang-aiter-5679-verify-q4.json --backend cpu STDOUT "2 passed, 0 failed")
# off the fault: q_len 4 on gfx942 runs the persistent m16x4 kernel
mlactl_cli_test(kf-route-none RC 0 ARGS route --arch gfx942 --heads 12 --qlen 4 --context 100,2000 --format json STDOUT "\"known_faults\": \\[\\]")

# Findings in the modelled stack (issue 38 item 5, docs/findings.md M1-M5): the run fails on the
# stack's own plan and says so, apart from an executor fault; check fixtures expect it by name.
set(SF_Q5 fixtures/finding-aiter-tile-trim-gfx950-h16-q5.json)
set(SF_LINE "finding in the modelled stack: aiter-tile-trim: AITER's causal trim counts q tiles, not tokens \\(batch_tail = num_qo_tiles - 1 - tile\\)")
mlactl_cli_test(sf-run-table RC 1 ARGS run ${SF_Q5} --backend cpu
                STDOUT "status: +INCORRECT \\(finding in the modelled stack, not an executor fault\\)\nmessage: +finding in the modelled stack \\(aiter-tile-trim\\): position audit: 3 rows read the wrong KV positions\n.*stack finding: +${SF_LINE}.*v1_2_device\\.cuh@e4048607 L469-470, L481-484")
mlactl_cli_test(sf-run-json RC 1 ARGS run ${SF_Q5} --backend cpu --format json
                STDOUT "\"finding_in_modelled_stack\": true,\n +\"stack_findings\": \\[\n +\\{\n +\"id\": \"aiter-tile-trim\",\n +\"finding\": \"finding in the modelled stack\",")
mlactl_cli_test(sf-check-table RC 0 ARGS check ${SF_Q5} fixtures/finding-aiter-tile-trim-gfx950-h16-q4.json --backend cpu
                STDOUT "passed +finding-aiter-tile-trim-gfx950-h16-q4  \\(route, known_faults, stack_findings, run=passed\\)\npassed +finding-aiter-tile-trim-gfx950-h16-q5  \\(route, known_faults, stack_findings, run=incorrect \\(position audit\\)\\)\n +${SF_LINE}.*2 passed, 0 failed")
mlactl_cli_test(sf-check-jsonl RC 0 ARGS check ${SF_Q5} --backend cpu --format jsonl
                STDOUT "\"finding_in_modelled_stack\":true,\"stack_findings\":\\[\\{\"id\":\"aiter-tile-trim\",\"finding\":\"finding in the modelled stack\"")
mlactl_cli_test(sf-check-junit RC 0 ARGS check ${SF_Q5} --backend cpu --junit ${KFGEN}/sf.xml
                FILE ${KFGEN}/sf.xml FILE_RE "<property name=\"stack_finding\" value=\"${SF_LINE}")
# the run expectation left out: the case fails on the finding, typed as one in JUnit
file(READ ${CMAKE_SOURCE_DIR}/${SF_Q5} SF_DOC)
string(REPLACE ",\n    \"run\": { \"status\": \"incorrect\", \"reason\": \"position audit\" }" ",\n    \"run\": \"passed\"" SF_DOC "${SF_DOC}")
file(WRITE ${KFGEN}/sf-unexpected.json "${SF_DOC}")
mlactl_cli_test(sf-check-junit-failure RC 1 ARGS check ${KFGEN}/sf-unexpected.json --backend cpu --junit ${KFGEN}/sf-fail.xml
                FILE ${KFGEN}/sf-fail.xml FILE_RE "<failure type=\"finding in the modelled stack\" message=\"run: expected passed, got incorrect \\(finding in the modelled stack \\(aiter-tile-trim\\): position audit")
mlactl_cli_test(sf-expect-unknown RC 3 ARGS check tests/cli/bad/expect-stack-findings-unknown.json
                STDOUT "/expect/stack_findings/0: must be one of aiter-tile-trim, aiter-fold-trim, aiter-negative-kv-range, vllm-sparse-dtypes-omitted, sglang-aiter-noncausal-plan, got \"aiter-trim\"")
