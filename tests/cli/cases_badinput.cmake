# Bad inputs (docs/design.md §9): every malformed, inconsistent or hostile batch gets a clear
# error naming the field (its JSON pointer) and exit 3 -- never a crash or a hang --
# and the modelled stack's refusals exit 5. Files live in tests/cli/bad/; the huge
# ones (deep nesting, a 10 MB string) are generated here at configure time.
set(BAD tests/cli/bad)
set(BADGEN ${CMAKE_CURRENT_BINARY_DIR}/bad-generated)
file(MAKE_DIRECTORY ${BADGEN})
string(REPEAT "[" 100000 _open100k)
string(REPEAT "]" 100000 _close100k)
file(WRITE ${BADGEN}/deep-100k.json "${_open100k}${_close100k}")
file(WRITE ${BADGEN}/deep-100k-unclosed.json "${_open100k}")
# 10^6 levels under /captured: copying that value overflowed the stack (SIGSEGV) before
# parse_json_document bounded the depth
string(REPEAT "[" 1000000 _open1m)
string(REPEAT "]" 1000000 _close1m)
file(WRITE ${BADGEN}/deep-1m-captured.json
     "{\"schema\": 1, \"model\": {\"num_heads\": 16}, \"requests\": [{\"context_len\": 1, \"query_len\": 1}], \"captured\": {\"qo_indptr\": ${_open1m}${_close1m}}}")
string(REPEAT "x" 10485760 _str10m)
file(WRITE ${BADGEN}/string-10mb-arch.json
     "{\"schema\": 1, \"platform\": {\"arch\": \"${_str10m}\"}, \"model\": {\"num_heads\": 16}, \"requests\": [{\"context_len\": 1, \"query_len\": 1}]}")
file(WRITE ${BADGEN}/string-10mb-key.json "{\"schema\": 1, \"${_str10m}\": 1}")
file(WRITE ${BADGEN}/string-10mb-context.json
     "{\"schema\": 1, \"model\": {\"num_heads\": 16}, \"requests\": [{\"context_len\": \"${_str10m}\", \"query_len\": 1}]}")
unset(_open100k)
unset(_close100k)
unset(_open1m)
unset(_close1m)
unset(_str10m)

# JSON syntax and shape
mlactl_cli_test(bad-empty RC 3 ARGS validate ${BAD}/empty.json STDERR "empty.json: malformed JSON: parse error at line 1, column 1")
mlactl_cli_test(bad-truncated-check RC 3 ARGS check ${BAD}/truncated.json STDOUT "malformed JSON")
mlactl_cli_test(bad-top-array RC 3 ARGS validate ${BAD}/top-level-array.json STDERR "error: /: must be an object, got an array")
mlactl_cli_test(bad-top-string RC 3 ARGS validate ${BAD}/top-level-string.json STDERR "error: /: must be an object, got a string")
mlactl_cli_test(bad-duplicate-key RC 3 ARGS validate ${BAD}/dup-key.json STDERR "error: /model: duplicate key")
mlactl_cli_test(bad-duplicate-nested-key RC 3 ARGS validate ${BAD}/dup-nested-key.json STDERR "error: /model/num_heads: duplicate key")
mlactl_cli_test(bad-deep-100k RC 3 ARGS validate ${BADGEN}/deep-100k.json STDERR "malformed JSON: nested deeper than 64 levels \\(at /0/0/0/0/0/0/0/0/\\.\\.\\.\\)")
mlactl_cli_test(bad-deep-100k-unclosed RC 3 ARGS validate ${BADGEN}/deep-100k-unclosed.json STDERR "nested deeper than 64 levels")
mlactl_cli_test(bad-deep-1m-captured RC 3 ARGS validate ${BADGEN}/deep-1m-captured.json STDERR "nested deeper than 64 levels \\(at /captured/qo_indptr/0/0/0/0/0/0/\\.\\.\\.\\)")
mlactl_cli_test(bad-deep-1m-captured-check RC 3 ARGS check ${BADGEN}/deep-1m-captured.json STDOUT "nested deeper than 64 levels")
mlactl_cli_test(bad-string-10mb-arch RC 3 ARGS validate ${BADGEN}/string-10mb-arch.json
                STDERR "/platform/arch: must be one of gfx942, gfx950, sm90, got .x+\\.\\.\\.. \\(10485760 bytes\\)")
mlactl_cli_test(bad-string-10mb-key RC 3 ARGS validate ${BADGEN}/string-10mb-key.json STDERR "error: /x+\\.\\.\\.: unknown key")
mlactl_cli_test(bad-string-10mb-context RC 3 ARGS validate ${BADGEN}/string-10mb-context.json
                STDERR "/requests/0/context_len: must be an integer, got a string")

# wrong types
mlactl_cli_test(bad-requests-object RC 3 ARGS validate ${BAD}/requests-object.json STDERR "error: /requests: must be an array, got an object")
mlactl_cli_test(bad-heads-string RC 3 ARGS validate ${BAD}/heads-string.json STDERR "error: /model/num_heads: must be an integer, got a string")
mlactl_cli_test(bad-causal-string RC 3 ARGS validate ${BAD}/causal-string.json STDERR "error: /decode/causal: must be true or false, got a string")
mlactl_cli_test(bad-context-fraction RC 3 ARGS validate ${BAD}/context-fraction.json STDERR "error: /requests/0/context_len: must be an integer, got 2.5")

# huge numbers and overflowing lengths
mlactl_cli_test(bad-context-1e309 RC 3 ARGS validate ${BAD}/context-1e309.json
                STDERR "error: /requests/0/context_len: number overflow parsing '1e309' \\(not a finite number\\)")
mlactl_cli_test(bad-context-neg-1e309 RC 3 ARGS validate ${BAD}/context-neg-1e309.json
                STDERR "error: /requests/0/context_len: number overflow parsing '-1e309'")
mlactl_cli_test(bad-context-1e300 RC 3 ARGS validate ${BAD}/context-1e300.json STDERR "error: /requests/0/context_len: must be <= 2147483647")
mlactl_cli_test(bad-context-2p31 RC 3 ARGS validate ${BAD}/context-2p31.json STDERR "error: /requests/0/context_len: must be <= 2147483647")
mlactl_cli_test(bad-context-2p63 RC 3 ARGS validate ${BAD}/context-2p63.json STDERR "error: /requests/0/context_len: must be <= 2147483647")
mlactl_cli_test(bad-context-2p64 RC 3 ARGS validate ${BAD}/context-2p64.json STDERR "error: /requests/0/context_len: must be <= 2147483647 \\(2\\^31 - 1\\)")
mlactl_cli_test(bad-query-negative RC 3 ARGS validate ${BAD}/query-neg.json STDERR "error: /requests/0/query_len: must be >= 0")
mlactl_cli_test(bad-seq-lt-query RC 3 ARGS validate ${BAD}/seq-lt-query.json STDERR "error: /requests/0/seq_len: must be >= query_len \\(3\\)")
mlactl_cli_test(bad-total-kv-overflow RC 3 ARGS validate ${BAD}/total-kv-overflow.json
                STDERR "error: /requests/1: the batch's total KV length exceeds 2\\^31-1 entries")
mlactl_cli_test(bad-kv-scale-negative RC 3 ARGS validate ${BAD}/kv-scale-negative.json STDERR "error: /kv_cache/scale: must be > 0")
mlactl_cli_test(bad-block-size-0 RC 3 ARGS validate ${BAD}/block-size-0.json STDERR "error: /kv_cache/block_size: must be >= 1")
mlactl_cli_test(bad-context-set-2p63 RC 3 ARGS validate ${BAD}/negative-length.json --set requests.0.context_len=9223372036854775808
                STDERR "error: /requests/0/context_len: must be <= 2147483647")

# head counts vLLM rejects (and beyond mlactl's own bound)
mlactl_cli_test(bad-heads-0 RC 3 ARGS validate ${BAD}/heads-0.json STDERR "error: /model/num_heads: ROCM AITER MLA requires .* but got 0\\.")
mlactl_cli_test(bad-heads-129 RC 3 ARGS validate ${BAD}/heads-129.json STDERR "error: /model/num_heads: ROCM AITER MLA requires .* but got 129\\.")
mlactl_cli_test(bad-heads-neg16 RC 3 ARGS validate ${BAD}/heads--16.json STDERR "error: /model/num_heads: ROCM AITER MLA requires .* but got -16\\.")
mlactl_cli_test(bad-heads-1e9 RC 3 ARGS validate ${BAD}/heads-1e9.json STDERR "error: /model/num_heads: must be <= 1024")
# the limit stated is mlactl's (1024), not int32's
mlactl_cli_test(bad-heads-1e300 RC 3 ARGS validate ${BAD}/heads-1e300.json STDERR "error: /model/num_heads: must be <= 1024\n")

# page-table and sparse indices out of range
mlactl_cli_test(bad-block-table-range RC 3 ARGS validate ${BAD}/block-table-out-of-range.json
                STDERR "error: /kv_cache/block_table/0/1: block id 7 is out of range \\[0, 4\\)")
mlactl_cli_test(bad-block-table-negative RC 3 ARGS validate ${BAD}/block-table-negative.json STDERR "error: /kv_cache/block_table/0/1: must be >= 0")
mlactl_cli_test(bad-block-table-short RC 3 ARGS validate ${BAD}/block-table-short.json
                STDERR "error: /kv_cache/block_table/0: has 1 blocks but request 0 needs 2")
mlactl_cli_test(bad-sparse-index-range RC 3 ARGS validate ${BAD}/sparse-index-out-of-range.json
                STDERR "error: /sparse/indices/0/1: index 6 is outside \\[0, 6\\)")
mlactl_cli_test(bad-sparse-index-negative RC 3 ARGS validate ${BAD}/sparse-index-negative.json STDERR "error: /sparse/indices/0/1: must be >= -1")
mlactl_cli_test(bad-sparse-index-duplicate RC 3 ARGS validate ${BAD}/sparse-index-duplicate.json
                STDERR "error: /sparse/indices/0/1: index 1 appears twice")
mlactl_cli_test(bad-sparse-index-count RC 3 ARGS validate ${BAD}/sparse-index-count.json
                STDERR "error: /sparse/indices: must have one list per query token \\(1\\), got 2")

# captured arrays, inject ids
mlactl_cli_test(bad-captured-array RC 3 ARGS validate ${BAD}/captured-array.json STDERR "error: /captured: must be an object, got an array")
mlactl_cli_test(bad-captured-string RC 3 ARGS validate ${BAD}/captured-string.json STDERR "error: /captured/qo_indptr: must be an integer, got a string")
mlactl_cli_test(bad-captured-element RC 3 ARGS validate ${BAD}/captured-element.json
                STDERR "error: /captured/paged_kv_indices/1: must be an integer, got a string")
mlactl_cli_test(bad-captured-unknown RC 3 ARGS validate ${BAD}/captured-unknown.json STDERR "error: /captured/kv_indices: unknown key")
mlactl_cli_test(bad-inject-unknown RC 3 ARGS validate ${BAD}/inject-unknown.json
                STDERR "error: /inject/0: unknown defect id .no-such-defect.")
mlactl_cli_test(bad-inject-string RC 3 ARGS validate ${BAD}/inject-string.json STDERR "error: /inject: must be an array of defect ids, got a string")

# the same input errors through the other commands (exit 3 everywhere)
foreach(cmd metadata windows route schedule run)
  mlactl_cli_test(bad-heads-129-${cmd} RC 3 ARGS ${cmd} ${BAD}/heads-129.json STDERR "/model/num_heads: .*but got 129")
endforeach()

# the modelled stack refuses (exit 5; `route` answers the refusal with exit 0)
set(FP8NC ${BAD}/fp8-noncausal-2tok-12h.json)
mlactl_cli_test(refuse-fp8-noncausal-route RC 0 ARGS route ${FP8NC}
                STDOUT "route: +refused.*AITER has no non-causal fp8 MLA kernel for this 2-token query block")
mlactl_cli_test(refuse-fp8-noncausal-run RC 5 ARGS run --backend cpu ${FP8NC}
                STDERR "refused: ValueError: AITER has no non-causal fp8 MLA kernel for this 2-token query block")
mlactl_cli_test(refuse-fp8-noncausal-schedule RC 5 ARGS schedule ${FP8NC} STDERR "route refused: ValueError: AITER has no non-causal fp8")
