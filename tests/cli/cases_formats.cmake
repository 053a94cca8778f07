# Install-and-discover and formats-that-do-not-lie (docs/design.md §6).
# --version: version, commit, backends, stacks
mlactl_cli_test(version-build-info RC 0 ARGS --version
                STDOUT "^mlactl [0-9]+\\.[0-9]+\\.[0-9]+\ncommit:   [0-9a-z-]+\nbackends: cpu[^\n]*\nstacks:   vllm-rocm-aiter \\(vLLM ROCm AITER MLA")
# unknown commands and options name the nearest one
mlactl_cli_test(unknown-command-suggests RC 2 ARGS windwos fixtures/seed000-verify-causal.json
                STDERR "^mlactl: unknown command \"windwos\"; did you mean \"windows\"\\?\nRun 'mlactl --help' for the commands.\n$")
mlactl_cli_test(unknown-command-after-global RC 2 ARGS --format json shedule --heads 16 --context 5 STDERR "did you mean \"schedule\"\\?"
                STDOUT "\"status\": \"usage error\",\n  \"exit_code\": 2,\n  \"error\": \"unknown command")
mlactl_cli_test(unknown-command-far RC 2 ARGS frobnicate STDERR "^mlactl: unknown command \"frobnicate\"\nRun")
mlactl_cli_test(unknown-option-suggests RC 2 ARGS windows fixtures/seed000-verify-causal.json --injct verify-window-broadcast
                STDERR "--injct.*; did you mean --inject\\?\nRun 'mlactl windows --help' for its options.")
mlactl_cli_test(unknown-global-option-suggests RC 2 ARGS route --formt json --heads 16 --context 5 STDERR "did you mean --format\\?")
# options that repeat take one value per flag: the batch path after them is the positional
mlactl_cli_test(inject-then-file RC 1 ARGS windows --inject verify-window-broadcast fixtures/seed000-verify-causal.json
                STDOUT "40 rows, 28 mismatched")
mlactl_cli_test(set-then-file RC 3 ARGS validate --set model.num_heads=130 fixtures/seed000-verify-causal.json STDERR "but got 130")
mlactl_cli_test(set-twice RC 0 ARGS -q validate --set platform.arch=gfx942 --set platform.num_cu=8 fixtures/seed000-verify-causal.json
                STDOUT "^valid\n$")
mlactl_cli_test(planner-repeated RC 0 ARGS schedule --planner aiter --planner gluon --heads 16 --qlen 1 --context 100,700,40 --num-cu 4
                STDOUT "^planner +route +workgroups.*\naiter +asm_persistent +4 +5 .*\ngluon ")
# formats: a verb without that format refuses it, exit 2, nothing on stdout
mlactl_cli_test(run-csv-refused RC 2 ARGS --format csv run fixtures/noncausal-draft-block.json --backend cpu
                STDOUT "^$" STDERR "^mlactl: error: `run` has no --format csv output \\(it writes table, json\\)\n$")
mlactl_cli_test(validate-csv-refused RC 2 ARGS validate fixtures/seed000-verify-causal.json --format csv STDOUT "^$" STDERR "`validate` has no --format csv")
mlactl_cli_test(check-csv-refused RC 2 ARGS --format csv check fixtures/noncausal-draft-block.json STDOUT "^$" STDERR "`check` has no --format csv")
mlactl_cli_test(route-svg-refused RC 2 ARGS --format svg route fixtures/seed000-verify-causal.json STDOUT "^$" STDERR "`route` has no --format svg")
mlactl_cli_test(windows-svg-rows RC 1 ARGS --format svg windows fixtures/seed000-verify-causal.json --inject verify-window-broadcast STDOUT "data-rows=\"40\" data-drawn=\"40\" data-mismatched=\"28\"")
# CSV: one header, one record per row, the JSON's fields
mlactl_cli_test(route-csv RC 0 ARGS --format csv route --heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal
                STDOUT "^case,route,error_type,error,padded_heads,aiter_kernel,backend,known_faults,step,name,value,why\ninline,refused,ValueError,AITER has no non-causal fp8 MLA kernel for this 2-token query block. Pin the draft to TRITON_MLA for this speculative config.,0,,,,1,mla_decode_supports_non_causal,true,mla_decode_fwd takes causal=\n")
mlactl_cli_test(schedule-csv RC 0 ARGS --format csv schedule --heads 16 --qlen 1 --context 100,700,40 --num-cu 4 --layout sequential
                STDOUT "^planner,kernel_route,workgroup,work,batch_idx,partial_qo_loc,qo_start,qo_end,kv_start,kv_end,kv_offset\naiter,asm_persistent,0,0,0,-1,0,1,0,101,0\naiter,asm_persistent,0,1,1,0,1,2,101,149,653\naiter,asm_persistent,1,2,1,1,1,2,149,565,237\naiter,asm_persistent,2,3,1,2,1,2,565,802,0\naiter,asm_persistent,3,4,2,-1,2,3,802,843,0\n$")
mlactl_cli_test(metadata-csv RC 0 ARGS --format csv metadata fixtures/seed000-verify-causal.json
                STDOUT "^field,index,value\ncase,,seed000-verify-causal\n.*\nqo_indptr,1,8\n.*\nmin_kv_seq_len.r1,,8\nmin_kv_seq_len.r0,,0\n.*\nhead_padding.method,,tile_slice\n")
mlactl_cli_test(defects-one-csv RC 0 ARGS --format csv defects gluon-arch-ungated
                STDOUT "^id,seed,fixed_by,stage,changes,symptom,fixture,fixed_fixture,introduced,where,explanation,related_fixtures\ngluon-arch-ungated,003,")
# JSON: one route object in every verb; errors and skips as JSON too
mlactl_cli_test(route-json-object RC 0 ARGS --format json route --heads 16 --qlen 1 --context 100,700,40
                STDOUT "\"case\": \"inline\",\n  \"route\": {\n    \"route\": \"asm_persistent\",\n    \"persistent_schedule\": true,")
mlactl_cli_test(windows-json-route-object RC 0 ARGS --format json windows --heads 16 --qlen 1 --context 100 STDOUT "\"route\": {\n    \"route\": \"asm_persistent\"")
mlactl_cli_test(error-json RC 3 ARGS --format json validate fixtures/does-not-exist.json
                STDOUT "\"command\": \"validate\",\n  \"status\": \"invalid input\",\n  \"exit_code\": 3,\n  \"error\": \"[^\"]*does-not-exist.json[^\"]*cannot open batch file"
                STDERR "cannot open batch file")
mlactl_cli_test(refused-json RC 5 ARGS --format json schedule --heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal
                STDOUT "\"command\": \"schedule\",\n  \"status\": \"refused\",\n  \"exit_code\": 5,")
mlactl_cli_test(skip-json RC 77 ARGS --format json run fixtures/noncausal-draft-block.json --backend gpu
                STDOUT "\"status\": \"skipped\",\n  \"exit_code\": 77,")
# -q: the verdict line only; -v: detail on stderr, never in the report
mlactl_cli_test(quiet-windows RC 1 ARGS -q windows fixtures/seed000-verify-causal.json --inject verify-window-broadcast
                STDOUT "^40 rows, 28 mismatched\n$")
mlactl_cli_test(quiet-run RC 1 ARGS -q run fixtures/seed000-verify-causal.json --inject verify-window-broadcast --backend cpu
                STDOUT "^incorrect: position audit: 28 rows read the wrong KV positions\n$")
mlactl_cli_test(quiet-route RC 0 ARGS -q route --heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal
                STDOUT "^refused: ValueError: AITER has no non-causal fp8 MLA kernel")
mlactl_cli_test(quiet-schedule RC 0 ARGS -q schedule --heads 16 --qlen 1 --context 100,700,40 --num-cu 4
                STDOUT "^aiter: 5 works on 4 workgroups, invariants ok\n$")
mlactl_cli_test(verbose-run-stderr RC 0 ARGS -v run fixtures/noncausal-draft-block.json --backend cpu
                STDERR "^run: time \\(ms\\): metadata [0-9.e-]+, plan\\+audit" STDOUT "status: +PASSED\n")
# not a terminal: no progress line, stderr empty
mlactl_cli_test(run-no-progress-off-tty RC 0 ARGS run fixtures/noncausal-draft-block.json --backend cpu STDERR "^$")
