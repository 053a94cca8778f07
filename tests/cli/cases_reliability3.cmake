# Reliability III (issue 39): a captured plan is checked whole before it runs, no captured
# array is ignored, and a capture laid out as its planner lays out partials is accepted.
set(BAD tests/cli/bad)
# (1) every captured work list meets the invariants `schedule` holds mlactl's plans to
# (core/invariants.hpp); a violation is INCORRECT naming the work, the q row and the rule.
# Each of these read every KV position exactly once: they passed before.
mlactl_cli_test(captured-plan-merged-twice RC 1 ARGS run ${BAD}/captured-merged-twice.json --backend cpu
                STDOUT "status: +INCORRECT\nmessage: +captured plan breaks the plan invariants \\(1 violation\\): work 3, q row 1: every partial row merged exactly once \\(reduce_map\\): work 3's partial rows are merged twice")
mlactl_cli_test(captured-plan-never-merged RC 1 ARGS run ${BAD}/captured-never-merged.json --backend cpu
                STDOUT "message: +captured plan breaks .*work 3, q row 1: every partial row merged exactly once .*no reduce tile merges")
mlactl_cli_test(captured-plan-partial-two-writers RC 1 ARGS run ${BAD}/captured-partial-two-writers.json --backend cpu
                STDOUT "message: +captured plan breaks .*work 3: every partial row written by exactly one work \\(partial_overlap\\): works 2 and 3 both write partial rows \\[1, 2\\)")
mlactl_cli_test(captured-plan-final-two-writers RC 1 ARGS run ${BAD}/captured-final-two-writers.json --backend cpu
                STDOUT "captured plan invariants broken.*every output row written exactly once \\(by a work or a merge\\); work 3; q row 1: output q rows \\[1, 2\\) are written by reduce tile 1 and by work 3")
# FlashMLA: num_splits against the tile metadata (the combine merges a split no SM part writes)
mlactl_cli_test(captured-plan-flashmla-num-splits RC 1 ARGS run ${BAD}/captured-flashmla-num-splits-extra.json --backend cpu
                STDOUT "message: +captured plan breaks .*q row 0: reduce maps consistent with the works \\(reduce_map\\): reduce tile 0 merges partial row 2, which no work's partial_qo_loc starts")
mlactl_cli_test(captured-plan-json RC 1 ARGS --format json run ${BAD}/captured-merged-twice.json --backend cpu
                STDOUT "\"reason\": \"captured plan\".*\"captured_plan\": \\{\n *\"ok\": false,\n *\"total_violations\": 1")
mlactl_cli_test(captured-plan-clean RC 0 ARGS run fixtures/worklist-captured-clean.json --backend cpu STDOUT "captured plan: +ok \\(the plan invariants hold\\)")
# a work list without its reduce maps is refused, never completed with mlactl's own
mlactl_cli_test(captured-no-reduce-maps RC 3 ARGS run ${BAD}/captured-no-reduce-maps.json --backend cpu
                STDERR "/captured/reduce_indptr: is missing: a captured work list \\(work_indptr, work_info_set\\) needs its reduce maps")
# (2) no captured array ignored: FlashMLA's arrays under a route that does not read them are
# compared with FlashMLA's plan and said to be unread; --use-captured refuses them
mlactl_cli_test(captured-unread-differs RC 1 ARGS schedule ${BAD}/captured-flashmla-unread.json
                STDOUT "route: +flash_attn_mla.*captured: first difference: captured `tile_scheduler_metadata` differs; the routed kernel \\(flash_attn_mla\\) does not read it: tile_scheduler_metadata\\[0\\]\\[3\\]")
mlactl_cli_test(captured-unread-run RC 0 ARGS run ${BAD}/captured-flashmla-unread.json --backend cpu
                STDOUT "status: +PASSED.*captured: +differs: captured `tile_scheduler_metadata` differs; the routed kernel \\(flash_attn_mla\\) does not read it")
mlactl_cli_test(captured-unread-use-captured RC 2 ARGS run ${BAD}/captured-flashmla-unread.json --use-captured --backend cpu
                STDERR "--use-captured: captured `tile_scheduler_metadata` cannot be used: the routed kernel \\(flash_attn_mla\\) does not read it, flashmla does")
mlactl_cli_test(captured-windows-worklist-compared RC 0 ARGS windows fixtures/worklist-kv-end-shifted.json
                STDOUT "captured: first difference: work_info_set\\[1\\]\\.kv_end")
mlactl_cli_test(captured-windows-no-zero-matches RC 0 ARGS windows fixtures/worklist-captured-clean.json
                STDOUT "captured metadata matches what mlactl builds \\([1-9][0-9]* fields compared\\)")
# (3) FA3's split-major partial layout (split j of row r at j * total_q + r) is accepted
mlactl_cli_test(captured-fa3-faithful RC 0 ARGS run fixtures/cuda-fa3-captured-faithful.json --use-captured --backend cpu
                STDOUT "status: +PASSED.*planner: +captured, 23 works.*captured plan: +ok")
# (4, 5) --executor-keep never deletes or writes through what it did not create; SIGTERM ends
# the executor's process group; --executor-timeout is finite
if(MLACTL_PYTHON3)
  set(R3GEN ${CMAKE_CURRENT_BINARY_DIR}/reliability3)
  file(MAKE_DIRECTORY ${R3GEN})
  add_test(NAME "cli: executor files and process group (issue 39)"
           COMMAND ${MLACTL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/executor_reliability.py $<TARGET_FILE:mlactl> ${CMAKE_SOURCE_DIR} ${R3GEN})
  set_tests_properties("cli: executor files and process group (issue 39)" PROPERTIES LABELS cli TIMEOUT 180)
  # (4, 7) run --inputs: files checked before read; a NaN or a scale past fp32 is the inputs' fault
  add_test(NAME "cli: captured inputs checked before use (issue 39)"
           COMMAND ${MLACTL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/inputs_reliability.py $<TARGET_FILE:mlactl> ${CMAKE_SOURCE_DIR} ${R3GEN}/inputs)
  set_tests_properties("cli: captured inputs checked before use (issue 39)" PROPERTIES LABELS cli TIMEOUT 120)
endif()

# (6) budget before allocation: every buffer sized by num_blocks, the token slots or the
# reference's heads × window is counted before it exists (peak-memory bounds: MAXRSS, MiB)
mlactl_cli_test(budget-block-table-num-blocks RC 3 MAXRSS 32 TIMEOUT 10 ARGS validate ${BAD}/budget-block-table-num-blocks-2e9.json
                STDERR "/kv_cache/num_blocks: the batch needs about 14\\.9 GiB for the per-block maps of its 2000000000 KV blocks, more than the memory budget of 4\\.0 GiB")
# a token slot past int32 was a negative paged_kv_indices entry
mlactl_cli_test(budget-slots-past-int32 RC 3 MAXRSS 32 TIMEOUT 10 ARGS metadata fixtures/seed000-verify-causal.json
                --set kv_cache.num_blocks=2147483647 --set kv_cache.block_size=65536
                STDERR "/kv_cache/num_blocks: num_blocks × block_size = 2147483647 × 65536 = 140737488289792 KV token slots, more than the int32 slot indices of the stacks hold \\(2147483647\\)")
set(R3GEN_FILES ${CMAKE_CURRENT_BINARY_DIR}/reliability3-generated)
file(MAKE_DIRECTORY ${R3GEN_FILES})
if(NOT EXISTS ${R3GEN_FILES}/slots-past-int32.json)
  string(REPEAT "{\"context_len\": 1, \"query_len\": 1}," 32768 _reqs)
  file(WRITE ${R3GEN_FILES}/slots-past-int32.json
       "{\"schema\": 1, \"name\": \"slots-past-int32\", \"model\": {\"num_heads\": 16}, \"kv_cache\": {\"block_size\": 65536}, \"requests\": [${_reqs}{\"context_len\": 1, \"query_len\": 1}]}")
  unset(_reqs)
endif()
mlactl_cli_test(budget-slots-past-int32-derived RC 3 MAXRSS 64 TIMEOUT 20 ARGS metadata ${R3GEN_FILES}/slots-past-int32.json
                STDERR "/kv_cache/block_size: num_blocks × block_size = 32769 × 65536 = 2147549184 KV token slots, more than the int32 slot indices")
# the position audit's slot map (8 bytes a slot) was made before the budget was applied: 3.9 GiB
mlactl_cli_test(budget-audit-slot-map RC 3 MAXRSS 64 TIMEOUT 10 ARGS run fixtures/seed000-verify-causal.json --backend cpu --set kv_cache.num_blocks=500000000
                STDERR "/requests: the batch needs about [0-9.]+ GiB for inputs, reference and outputs, more than the memory budget of 4\\.0 GiB")
# the reference's keys, scores and probabilities (heads × window, per thread) were not counted:
# this batch's inputs fit 4 GiB, its reference took ~12 GiB more
mlactl_cli_test(budget-reference-workspace RC 3 MAXRSS 64 TIMEOUT 10 ARGS run --heads 128 --context 2000000 --backend cpu
                STDERR "/requests: the batch needs about 12\\.8 GiB for inputs, reference and outputs, more than the memory budget of 4\\.0 GiB")
# (7) right blame: an fp8 KV scale past fp32 was inf, every KV value NaN, and the executor's
# output reported INCORRECT; a reference that is still not finite names the input (inputs_reliability.py)
mlactl_cli_test(blame-kv-scale-past-fp32 RC 3 MAXRSS 64 TIMEOUT 10 ARGS run fixtures/seed000-verify-causal.json --backend cpu
                --set kv_cache.dtype=fp8 --set kv_cache.scale=1e39
                STDERR "/kv_cache/scale: must be within fp32's normal range \\(1\\.2e-38 to 3\\.4e38\\): the kernels take it as fp32")
# (8) small ones. C1 controls (U+0080..U+009F: U+009B is CSI) escaped in text and JSON
mlactl_cli_test(c1-name-text RC 0 ARGS validate ${BAD}/c1-name.json STDOUT "case: +c1-\\\\u009b31m-name\n")
mlactl_cli_test(c1-name-json RC 0 ARGS --format json validate ${BAD}/c1-name.json STDOUT "\"case\": \"c1-\\\\u009b31m-name\"")
# a --set number no double holds was an internal error (exit 4)
mlactl_cli_test(set-number-overflow RC 3 ARGS validate fixtures/seed000-verify-causal.json --set model.softmax_scale=1e999
                STDERR "/model/softmax_scale: is 1e999, a number out of the range of a double \\(--set\\)")
# query_len has mtp_qlen's bound (mtp_qlen defaults to it): 1025 was valid, K 1025
mlactl_cli_test(query-len-bound RC 3 ARGS validate --heads 16 --context 10 --qlen 1025 STDERR "/requests/0/query_len: must be <= 1024")
# --seed past int64 was clamped to 9223372036854775807 in silence
mlactl_cli_test(seed-past-int64 RC 3 ARGS validate --heads 16 --context 1 --seed 99999999999999999999
                STDERR "/data/seed: must be <= 9223372036854775807 \\(2\\^63 - 1\\)")
# validate checks captured arrays as run does: these passed validate and failed run (exit 3)
mlactl_cli_test(validate-captured-batch-idx RC 3 ARGS validate ${BAD}/captured-batch-idx.json
                STDERR "/captured/work_info_set/1/0: batch_idx 99 is not a batch of this plan")
mlactl_cli_test(validate-captured-kv-end RC 3 ARGS validate ${BAD}/captured-kv-end-1e9.json
                STDERR "/captured/work_info_set/1/5: KV range \\[100, 1000000000\\) is not inside the 840 KV index entries of this batch")
