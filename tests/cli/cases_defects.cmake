# The defect catalog (docs/design.md §7) through the real binary: `mlactl defects`, and for
# every defect its fixture pair under `check` (both pass: the symptom is expected on
# one, a clean run on the other) and under `run`/`route` (the symptom itself).
set(MLACTL_DEFECT_IDS verify-window-broadcast causal-flag-dropped noncausal-probe-silent sparse-route-legacy
                      pad-repeat-noop pad-append-only gluon-arch-ungated metadata-dtype-omitted metadata-sized-qlen1)

# mlactl defects: all 9 ids of the AITER stack, in catalog order, with their PRs
mlactl_cli_test(defects-list RC 0 ARGS defects
                STDOUT "id +seed +fixed by +stage +symptom\nverify-window-broadcast +000 +#50476 +builder.*causal-flag-dropped +001 +#55966.*noncausal-probe-silent +001 +#55966.*sparse-route-legacy +002 +#55239.*pad-repeat-noop +003 +#50578.*pad-append-only +003 +#50578.*gluon-arch-ungated +003 +#50578.*metadata-dtype-omitted +004 +#46997 +planner.*\nmetadata-sized-qlen1 +- +#45227 +planner ")
mlactl_cli_test(defects-csv RC 0 ARGS --format csv defects STDOUT "^id,seed,fixed_by,stage,changes,symptom,fixture,fixed_fixture,introduced,where,explanation,related_fixtures\nverify-window-broadcast,000,#50476,builder,")
mlactl_cli_test(defects-json RC 0 ARGS --format json defects
                STDOUT "\"command\": \"defects\".*\"id\": \"sparse-route-legacy\".*\"fixed_by\": \"#55239\".*\"fixture\": \"fixtures/sparse-route-legacy.json\".*\"fixed_fixture\": \"fixtures/sparse-route-legacy-fixed.json\"")
mlactl_cli_test(defects-one RC 0 ARGS defects metadata-dtype-omitted
                STDOUT "fixed by: +vLLM #46997.*stage: +planner.*fixture \\(defect on\\): /[^\n]*/fixtures/metadata-dtype-omitted.json\nfixture \\(fixed\\): +/[^\n]*/fixtures/metadata-dtype-omitted-fixed.json.*get_mla_metadata_v1")
mlactl_cli_test(defects-one-json RC 0 ARGS --format json defects verify-window-broadcast
                STDOUT "\"id\": \"verify-window-broadcast\".*\"seed\": \"000\".*\"explanation\": \".*#50476")
mlactl_cli_test(defects-unknown RC 2 ARGS defects no-such-defect STDERR "unknown defect id \"no-such-defect\"; known ids: verify-window-broadcast, causal-flag-dropped")
mlactl_cli_test(inject-unknown RC 3 ARGS validate fixtures/seed000-verify-causal.json --inject no-such-defect
                STDERR "/inject/0: unknown defect id \"no-such-defect\" \\(see `mlactl defects`\\)")

# every pair passes `check`: the defect's symptom expected on <id>, a clean case on <id>-fixed
foreach(id ${MLACTL_DEFECT_IDS})
  mlactl_cli_test(check-${id} RC 0 ARGS check fixtures/${id}.json --backend cpu STDOUT "(passed|refused-as-expected) +${id} .*1 passed, 0 failed")
  mlactl_cli_test(check-${id}-fixed RC 0 ARGS check fixtures/${id}-fixed.json --backend cpu STDOUT "(passed|refused-as-expected) +${id}-fixed .*1 passed, 0 failed")
endforeach()

# the symptom itself, through run / route / windows / schedule
mlactl_cli_test(defect-verify-window-broadcast-windows RC 1 ARGS windows fixtures/verify-window-broadcast.json
                STDOUT "MISMATCH \\+7.*40 rows, 28 mismatched")
mlactl_cli_test(defect-verify-window-broadcast-run RC 1 ARGS run fixtures/verify-window-broadcast.json --backend cpu
                STDOUT "position audit: 28 of 32 rows read wrong KV positions")
mlactl_cli_test(defect-verify-window-broadcast-fixed-run RC 0 ARGS run fixtures/verify-window-broadcast-fixed.json --backend cpu
                STDOUT "status: +PASSED")

mlactl_cli_test(defect-causal-flag-dropped-run RC 1 ARGS run fixtures/causal-flag-dropped.json --backend cpu
                STDOUT "status: +INCORRECT.*position audit: [0-9]+ of 24 rows read wrong KV positions")
mlactl_cli_test(defect-causal-flag-dropped-fixed-run RC 0 ARGS run fixtures/causal-flag-dropped-fixed.json --backend cpu
                STDOUT "status: +PASSED")

mlactl_cli_test(defect-noncausal-probe-silent-route RC 0 ARGS route fixtures/noncausal-probe-silent.json
                STDOUT "route: +triton_mla.*finding: +silent fallback")
mlactl_cli_test(defect-noncausal-probe-silent-fixed-route RC 0 ARGS route fixtures/noncausal-probe-silent-fixed.json
                STDOUT "route: +refused\nerror: +RuntimeError: .*causal-only")
mlactl_cli_test(defect-noncausal-probe-silent-fixed-run RC 5 ARGS run fixtures/noncausal-probe-silent-fixed.json --backend cpu
                STDERR "causal-only")

mlactl_cli_test(defect-sparse-route-legacy-route RC 0 ARGS route fixtures/sparse-route-legacy.json
                STDOUT "route: +aiter_sparse.*finding: +rope-free geometry")
mlactl_cli_test(defect-sparse-route-legacy-run RC 1 ARGS run fixtures/sparse-route-legacy.json --backend cpu
                STDOUT "status: +INCORRECT")
mlactl_cli_test(defect-sparse-route-legacy-fixed-run RC 0 ARGS run fixtures/sparse-route-legacy-fixed.json --backend cpu
                STDOUT "status: +PASSED")

mlactl_cli_test(defect-pad-repeat-noop-run RC 5 ARGS run fixtures/pad-repeat-noop.json --backend cpu
                STDERR "AssertionError: mla_gluon requires gfx950")
mlactl_cli_test(defect-pad-repeat-noop-fixed-run RC 0 ARGS run fixtures/pad-repeat-noop-fixed.json --backend cpu
                STDOUT "status: +PASSED")
mlactl_cli_test(defect-pad-repeat-noop-gfx950-route RC 0 ARGS route fixtures/seed003-pad-repeat-noop-gfx950.json
                STDOUT "route: +gluon_decode")
mlactl_cli_test(defect-pad-repeat-noop-forced-asm RC 0 ARGS route fixtures/seed003-pad-repeat-noop-gfx950.json --kernel asm_persistent
                STDOUT "route: +refused\nerror: +AssertionError: .*multiple of 16, got 12 heads")

mlactl_cli_test(defect-pad-append-only-run RC 5 ARGS run fixtures/pad-append-only.json --backend cpu
                STDERR "multiple of 16, got 12 heads \\(padded from 6 by pad-append-only\\)")
mlactl_cli_test(defect-pad-append-only-fixed-run RC 0 ARGS run fixtures/pad-append-only-fixed.json --backend cpu
                STDOUT "status: +PASSED")

mlactl_cli_test(defect-gluon-arch-ungated-run RC 5 ARGS run fixtures/gluon-arch-ungated.json --backend cpu
                STDERR "AssertionError: mla_gluon requires gfx950")
mlactl_cli_test(defect-gluon-arch-ungated-fixed-run RC 0 ARGS run fixtures/gluon-arch-ungated-fixed.json --backend cpu
                STDOUT "status: +PASSED")

mlactl_cli_test(defect-metadata-dtype-omitted-route RC 0 ARGS route fixtures/metadata-dtype-omitted.json
                STDOUT "finding: +fold mismatch: the planner \\(bf16/bf16\\) plans 32 heads per row \\(ratio 1\\), the kernel \\(bf16/fp8\\) runs 16 \\(ratio 2\\)")
mlactl_cli_test(defect-metadata-dtype-omitted-schedule RC 1 ARGS schedule fixtures/metadata-dtype-omitted.json
                STDOUT "invariants: +BROKEN")
mlactl_cli_test(defect-metadata-dtype-omitted-run RC 1 ARGS run fixtures/metadata-dtype-omitted.json --backend cpu
                STDOUT "status: +INCORRECT")
mlactl_cli_test(defect-metadata-dtype-omitted-fixed-run RC 0 ARGS run fixtures/metadata-dtype-omitted-fixed.json --backend cpu
                STDOUT "status: +PASSED")

mlactl_cli_test(defect-metadata-sized-qlen1-schedule RC 1 ARGS schedule fixtures/metadata-sized-qlen1.json
                STDOUT "reduce_indptr 9 / 5 OVER, reduce_final_map 8 / 4 OVER.*invariants: +BROKEN: 2 violations.*buffer: reduce_indptr needs 9 entries, get_mla_metadata_info_v1 allocates 5")
mlactl_cli_test(defect-metadata-sized-qlen1-fixed-schedule RC 0 ARGS schedule fixtures/metadata-sized-qlen1-fixed.json
                STDOUT "reduce_indptr 9 / 9, reduce_final_map 8 / 8.*invariants: +ok")

# the whole fixture directory passes (expected failures and refusals count as passed)
mlactl_cli_test(check-fixtures-all RC 0 ARGS check fixtures --backend cpu STDOUT "[0-9]+ passed, 0 failed")

# an expected failure names its cause, and check compares it
mlactl_cli_test(check-run-reason RC 0 ARGS check fixtures/verify-window-broadcast.json --backend cpu
                STDOUT "run=incorrect \\(position audit\\)")
mlactl_cli_test(check-run-wrong-reason RC 1 ARGS check tests/cli/bad/check-wrong-reason.json --backend cpu
                STDOUT "run: expected incorrect because of numeric, got position audit \\(position audit: 28 rows read the wrong KV positions\\)")
# a mistyped expectation is that case's bad input (exit 3); the other cases still run
mlactl_cli_test(check-mistyped-expect RC 3 ARGS check tests/cli/bad/check-mistyped-expect.json tests/cli/bad/check-wrong-reason.json --backend cpu
                STDOUT "invalid_input +verify-window-broadcast-mistyped-expect\n +/expect/invariants: must be a string, got number.*incorrect +verify-window-broadcast-wrong-reason.*0 passed, 1 failed, 1 errors, 0 skipped, 0 refused")
