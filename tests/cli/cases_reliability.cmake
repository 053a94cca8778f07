# The bug-report path hardened (issue 15; docs/design.md §2 captured, §6, §9): one row per
# class of hostile or broken input, each asserting the exit code, the named field and a
# time bound (TIMEOUT, seconds, on the 2-core CI machine) and a peak-memory bound (MAXRSS,
# MiB, measured by tests/common/run_bounded.cpp): every row here gets 60 s and 256 MiB unless
# it says otherwise; the inputs that would need gigabytes are refused before they allocate,
# so their bounds are tight (32 MiB).
set(MLACTL_CLI_DEFAULT_TIMEOUT 60)
set(MLACTL_CLI_DEFAULT_MAXRSS 256)
set(BAD tests/cli/bad)
set(RELGEN ${CMAKE_CURRENT_BINARY_DIR}/reliability-generated)
file(MAKE_DIRECTORY ${RELGEN})

# ---- 1. captured data is first-class: run executes it by default, as check does ----------
mlactl_cli_test(captured-run-default RC 1 ARGS run fixtures/seed000-captured-broadcast.json --backend cpu
                STDOUT "position audit: 28 of 32 rows read wrong KV positions")
mlactl_cli_test(captured-run-own-metadata RC 0 ARGS run fixtures/seed000-captured-broadcast.json --own-metadata --backend cpu
                STDOUT "status: +PASSED.*captured: +differs: paged_kv_indptr\\[1\\]")
mlactl_cli_test(captured-check-agrees RC 0 ARGS check fixtures/seed000-captured-broadcast.json --backend cpu STDOUT "run=incorrect \\(position audit\\)")
mlactl_cli_test(captured-schedule-diff RC 1 ARGS schedule fixtures/worklist-kv-end-shifted.json
                STDOUT "captured: first difference: work_info_set\\[1\\]\\.kv_end")
mlactl_cli_test(captured-run-flags-exclusive RC 2 ARGS run fixtures/worklist-captured-clean.json --use-captured --own-metadata)

# ---- 2. a captured plan is validated as a plan of this batch (exit 3, field and index) -----
mlactl_cli_test(captured-batch-idx RC 3 MAXRSS 32 ARGS run ${BAD}/captured-batch-idx.json --backend cpu TIMEOUT 10
                STDERR "/captured/work_info_set/1/0: batch_idx 99 is not a batch of this plan .*\\(work 1 of workgroup 0, batch 99")
mlactl_cli_test(captured-kv-end-1e9 RC 3 MAXRSS 32 ARGS run ${BAD}/captured-kv-end-1e9.json --backend cpu TIMEOUT 10
                STDERR "/captured/work_info_set/1/5: KV range \\[100, 1000000000\\) is not inside the 840 KV index entries of this batch")
mlactl_cli_test(captured-ploc-huge RC 3 MAXRSS 32 ARGS run ${BAD}/captured-ploc-huge.json --backend cpu TIMEOUT 10
                STDERR "/captured/work_info_set/1/1: partial_qo_loc 2147483647 is neither -1")
mlactl_cli_test(captured-qo-indptr-decreasing RC 3 ARGS run ${BAD}/captured-qo-indptr-decreasing.json --backend cpu
                STDERR "/captured/qo_indptr/2: decreases \\(2 -> 1\\): request 1 would get a negative length")
mlactl_cli_test(captured-reduce-final-map-short-run RC 3 ARGS run ${BAD}/captured-reduce-final-map-short.json --backend cpu
                STDERR "/captured/reduce_final_map: has 1 entries, fewer than the 3 q tiles reduce_indptr has")
mlactl_cli_test(captured-reduce-final-map-short-check RC 3 ARGS check ${BAD}/captured-reduce-final-map-short.json --backend cpu
                STDOUT "invalid_input +captured-reduce-final-map-short\n +/captured/reduce_final_map: has 1 entries")
mlactl_cli_test(captured-work-indptr-long RC 3 ARGS run ${BAD}/captured-work-indptr-long.json --backend cpu
                STDERR "/captured/work_indptr: has 11 entries, more than the 5 of the work_indptr buffer")
mlactl_cli_test(captured-indices-long RC 3 ARGS windows ${BAD}/captured-indices-long.json
                STDERR "/captured/paged_kv_indices: has 4547 entries, more than the 4544 entries paged_kv_indptr addresses")
mlactl_cli_test(captured-min-kv-negative RC 3 ARGS run ${BAD}/captured-min-kv-negative.json --backend cpu
                STDERR "/captured/min_kv_seq_len: must be >= 0 \\(a KV length\\), got -1")

# ---- 3. bounded before built: refused in well under a second ------------------------------
mlactl_cli_test(bound-padding-1e8 RC 3 MAXRSS 32 ARGS route --heads 16 --context 10 --padding 100000000 TIMEOUT 5
                STDERR "/requests: has 100000001 requests \\(--context and --padding\\), more than 4194304")
mlactl_cli_test(bound-dev-zero RC 3 MAXRSS 64 ARGS --max-memory 64M validate /dev/zero TIMEOUT 10
                STDERR "/dev/zero: is not a regular file \\(a FIFO, a device or a socket\\)")
mlactl_cli_test(bound-directory RC 3 ARGS validate tests/cli/bad STDERR "tests/cli/bad: is a directory, not a batch file")

# ---- 4. linear JSON: 10^6 requests (37 MB) parse in seconds -------------------------------
if(NOT EXISTS ${RELGEN}/requests-1m.json)
  string(REPEAT "{\"context_len\": 1, \"query_len\": 1}," 999999 _reqs)
  file(WRITE ${RELGEN}/requests-1m.json
       "{\"schema\": 1, \"name\": \"requests-1m\", \"model\": {\"num_heads\": 16}, \"requests\": [${_reqs}{\"context_len\": 1, \"query_len\": 1}]}")
  unset(_reqs)
endif()
mlactl_cli_test(json-1m-requests RC 0 MAXRSS 640 ARGS check ${RELGEN}/requests-1m.json --list TIMEOUT 60 STDOUT "requests-1m  ")

# ---- 5. safe writes -----------------------------------------------------------------------
mlactl_cli_test(junit-device-refused RC 2 ARGS check fixtures/seed000-verify-causal.json --junit /dev/null
                STDERR "/dev/null: exists and is not a regular file")
mlactl_cli_test(dump-dir-name-sanitised RC 1 ARGS run ${BAD}/dump-name-escape.json --backend cpu --dump-dir ${RELGEN}/dumps
                STDOUT "dumped: +[^\n]*reliability-generated/dumps/_\\._\\.\\._escaped\\.\\{batch")

# ---- 6. a robust check --------------------------------------------------------------------
mlactl_cli_test(check-captured-without-data RC 3 ARGS check ${BAD}/check-captured-without-data.json
                STDOUT "/expect/captured: the batch has no `captured` block to compare")
mlactl_cli_test(check-tolerance-string RC 3 ARGS check ${BAD}/check-tolerance-string.json STDOUT "/expect/tolerance/atol: must be a number, got string")
mlactl_cli_test(check-tolerance-negative RC 3 ARGS check ${BAD}/check-tolerance-negative.json
                STDOUT "/expect/tolerance/rtol: must be a finite number >= 0, got -1")
mlactl_cli_test(check-run-typo RC 3 ARGS check ${BAD}/check-run-typo.json
                STDOUT "/expect/run/status: must be one of passed, incorrect, refused, got \"pased\"")
mlactl_cli_test(check-route-unknown RC 3 ARGS check ${BAD}/check-route-unknown.json STDOUT "/expect/route: must be one of .*got \"asm_persistant\"")
mlactl_cli_test(check-reason-on-passed RC 3 ARGS check ${BAD}/check-reason-on-passed.json STDOUT "/expect/run/reason: only an incorrect run has a reason")
# one bad case does not stop the others
mlactl_cli_test(check-bad-case-others-run RC 3 ARGS check ${BAD}/check-run-typo.json fixtures/seed000-verify-causal.json --backend cpu
                STDOUT "passed +seed000-verify-causal.*invalid_input +check-run-typo.*1 passed, 0 failed, 1 errors, 0 skipped, 0 refused")
mlactl_cli_test(check-filter-nested RC 0 ARGS check fixtures --filter "^(a|a)*(a|a)*(a|a)*(a|a)*(a|a)*(a|a)*(a|a)*(a|a)*zzz|^seed000-verify-causal$" --list
                TIMEOUT 5 STDOUT "^seed000-verify-causal  fixtures/seed000-verify-causal.json\n$")
mlactl_cli_test(check-filter-none RC 2 ARGS check fixtures --filter nothing-matches-this STDERR "check: no case selected \\([0-9]+ files, none selected by --filter\\)")
mlactl_cli_test(check-filter-bad RC 2 ARGS check fixtures --filter "(unclosed" STDERR "--filter: bad pattern \"\\(unclosed\" at offset 9: missing '\\)'")
mlactl_cli_test(check-exclude RC 0 ARGS check fixtures --filter "^seed00[01]" --exclude "captured|fixed|002" --list
                STDOUT "^seed000-verify-causal  [^\n]*\n(seed001-[^\n]*\n)+$")
# a symlink loop and a directory link are skipped (directory links are not followed)
file(MAKE_DIRECTORY ${RELGEN}/loops)
file(COPY ${CMAKE_SOURCE_DIR}/fixtures/seed000-verify-causal.json DESTINATION ${RELGEN}/loops)
file(CREATE_LINK loop.json ${RELGEN}/loops/loop.json SYMBOLIC)
file(CREATE_LINK . ${RELGEN}/loops/self SYMBOLIC)
mlactl_cli_test(check-symlink-loop RC 0 ARGS check ${RELGEN}/loops --backend cpu TIMEOUT 20 STDOUT "passed +seed000-verify-causal.*1 passed, 0 failed, 0 errors, 0 skipped, 0 refused\n$")

# ---- issue 18's check items: streaming, skips, JUnit, --fail-fast, --timeout --------------
# a skipped case (no expect block) beside a passing one: exit 0, the skip reported
mlactl_cli_test(check-skip-not-77 RC 0 ARGS check fixtures/seed000-verify-causal.json ${RELGEN}/no-expect.json --backend cpu
                STDOUT "skipped +no-expect\n +no expect block\n.*1 passed, 0 failed, 0 errors, 1 skipped, 0 refused")
file(WRITE ${RELGEN}/no-expect.json "{\"schema\": 1, \"name\": \"no-expect\", \"model\": {\"num_heads\": 16}, \"requests\": [{\"context_len\": 4, \"query_len\": 1}]}")
mlactl_cli_test(check-only-skips-77 RC 77 ARGS check ${RELGEN}/no-expect.json STDOUT "0 passed, 0 failed, 0 errors, 1 skipped, 0 refused")
mlactl_cli_test(check-junit RC 3 ARGS check fixtures/seed000-verify-causal.json tests/cli/bad/check-wrong-reason.json ${BAD}/check-run-typo.json --backend cpu
                --junit ${RELGEN}/junit.xml FILE ${RELGEN}/junit.xml
                FILE_RE "<testsuite name=\"mlactl check\" tests=\"3\" failures=\"1\" errors=\"1\" skipped=\"0\" time=\"[0-9]+\\.[0-9]+\">.*name=\"check-run-typo\" file=\"tests/cli/bad/check-run-typo.json\" time=\"[0-9]+\\.[0-9][0-9][0-9][0-9][0-9][0-9]\"><error type=\"invalid_input\" message=\"/expect/run/status: must be one of.*<failure type=\"incorrect\" message=\"run: expected incorrect because of numeric, got position audit")
mlactl_cli_test(check-fail-fast RC 3 ARGS check ${BAD}/check-run-typo.json ${BAD}/check-tolerance-string.json --fail-fast
                STDOUT "0 passed, 0 failed, 1 errors, 0 skipped, 0 refused \\(--fail-fast: stopped after the first failure, 1 cases not run\\)")
# 2 requests x 200k tokens x 128 heads x q_len 8: ~16 s of CPU reference on an AVX-512 core (q_len 1 took 3 s, under
# check-jobs-ordered's 4 s); killed after 1 s
file(WRITE ${RELGEN}/slow.json
     "{\"schema\": 1, \"name\": \"slow\", \"model\": {\"num_heads\": 128}, \"requests\": [{\"context_len\": 200000, \"query_len\": 8}, {\"context_len\": 200000, \"query_len\": 8}], \"expect\": {\"run\": \"passed\"}}")
mlactl_cli_test(check-timeout RC 4 MAXRSS 2048 ARGS check ${RELGEN}/slow.json fixtures/seed000-verify-causal.json --backend cpu --timeout 1 TIMEOUT 30
                STDOUT "timed_out +slow\n +timed out after 1 s \\(--timeout\\).*passed +seed000-verify-causal")
mlactl_cli_test(check-timeout-bad RC 2 ARGS check fixtures --timeout 0 STDERR "--timeout expects seconds in \\(0, 86400\\]")
# -j N: cases in parallel child processes, printed in case order (the slow one sorts first
# and is killed by --timeout while the two quick ones finish)
mlactl_cli_test(check-jobs-ordered RC 4 MAXRSS 2048 ARGS check ${RELGEN}/slow.json fixtures/aiter-vector-a.json fixtures/seed000-verify-causal.json
                --backend cpu -j 3 --timeout 4 TIMEOUT 40
                STDOUT "^timed_out +slow\n +timed out after 4 s \\(--timeout\\)\n +repro: mlactl check [^\n]*slow.json\npassed +aiter-vector-a [^\n]*\npassed +seed000-verify-causal [^\n]*\n2 passed, 0 failed, 1 errors, 0 skipped, 0 refused\n$")
mlactl_cli_test(check-jobs-bad RC 2 ARGS check fixtures -j 0 STDERR "--jobs: Value 0 not in range 1 to 256")
# --format jsonl: a line per case as it finishes, then the summary line
mlactl_cli_test(check-jsonl RC 0 ARGS --format jsonl check fixtures/aiter-vector-a.json fixtures/seed000-verify-causal.json --backend cpu -j 2
                STDOUT "^{\"type\":\"case\",\"id\":\"aiter-vector-a\",\"file\":\"fixtures/aiter-vector-a.json\",\"status\":\"passed\",[^\n]*}\n{\"type\":\"case\",\"id\":\"seed000-verify-causal\",[^\n]*}\n{\"type\":\"summary\",\"passed\":2,\"failed\":0,\"errors\":0,\"skipped\":0,\"refused\":0,\"total\":2,\"selected\":2,\"seconds\":[0-9.e+-]+,\"exit_code\":0}\n$")
mlactl_cli_test(check-jsonl-list RC 0 ARGS --format jsonl check fixtures/aiter-vector-a.json --list
                STDOUT "^{\"type\":\"listed\",\"id\":\"aiter-vector-a\",\"file\":\"fixtures/aiter-vector-a.json\"}\n$")
mlactl_cli_test(check-jsonl-error RC 2 ARGS --format jsonl check fixtures --filter nothing-matches-this
                STDOUT "^{\"type\":\"error\",\"schema_version\":1,[^\n]*\"command\":\"check\",\"status\":\"usage error\",\"exit_code\":2,\"error\":\"check: no case selected[^\n]*}\n$")
mlactl_cli_test(jsonl-only-check RC 2 ARGS --format jsonl validate fixtures/aiter-vector-a.json STDERR "`validate` has no --format jsonl output \\(it writes table, json\\)")


# ---- 7. the small ones --------------------------------------------------------------------
mlactl_cli_test(small-requests-empty RC 3 ARGS validate ${BAD}/requests-empty.json STDERR "error: /requests: must hold at least one request")
mlactl_cli_test(small-padding-only RC 3 ARGS run ${BAD}/requests-padding-only.json --backend cpu
                STDERR "error: /requests: holds only padding slots; a decode step needs at least one real request")
mlactl_cli_test(small-softmax-scale-1e308 RC 3 ARGS validate ${BAD}/softmax-scale-1e308.json STDERR "error: /model/softmax_scale: must be <= 10000")
mlactl_cli_test(small-heads-1e10 RC 3 ARGS validate ${BAD}/heads-1e10.json STDERR "error: /model/num_heads: must be <= 1024\n")
mlactl_cli_test(small-block-table-repeat RC 3 ARGS validate ${BAD}/block-table-repeat.json
                STDERR "error: /kv_cache/block_table/0/2: block id 3 repeats entry 0 of request 0")
mlactl_cli_test(small-run-atol-negative RC 2 ARGS run fixtures/seed000-verify-causal.json --atol -1 STDERR "--atol: must be a finite number >= 0, got \"-1\"")
mlactl_cli_test(small-run-rtol-nan RC 2 ARGS run fixtures/seed000-verify-causal.json --rtol nan STDERR "--rtol: must be a finite number >= 0")
mlactl_cli_test(small-name-escaped RC 0 ARGS check ${BAD}/check-evil-name.json
                STDOUT "passed +check-evil-name\\\\x1b\\[2K\\\\rpassed +forged  \\(route\\)\n1 passed, 0 failed")
mlactl_cli_test(small-json-error RC 3 ARGS --format json validate ${BAD}/heads-0.json
                STDOUT "\"command\": \"validate\",\n  \"status\": \"invalid input\",\n  \"exit_code\": 3,\n  \"error\": \"/model/num_heads: ")
mlactl_cli_test(small-json-usage-error RC 2 ARGS --format json check fixtures --filter nothing-matches-this STDOUT "\"exit_code\": 2,\n  \"error\": \"check: no case selected")

unset(MLACTL_CLI_DEFAULT_TIMEOUT)
unset(MLACTL_CLI_DEFAULT_MAXRSS)
