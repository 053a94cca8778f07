# Issue #35 item 3, "say which kernel ran" (cli/kernel_ran.hpp, cli/expect_stage1.hpp):
# `run` names the stage-1 kernel and reduce the executor reported (the CPU executor: the
# fp32 contract, no GPU kernel; an external executor: none reported), its JSON carries
# "stage1" and "reduce", `check`'s records carry them (JSON, JUnit properties), and a
# fixture's expect.stage1 is validated and, without a GPU kernel, reported not checked.
# The GPU side (filled records, a mismatch) is tests/unit/test_kernel_ran.cpp's.
set(S1GEN ${CMAKE_CURRENT_BINARY_DIR}/stage1-generated)
file(MAKE_DIRECTORY ${S1GEN})
set(S1_PY ${MLACTL_PYTHON3})
set(S1_BATCH "\"schema\": 1, \"model\": {\"num_heads\": 16}, \"requests\": [{\"context_len\": 100, \"query_len\": 1}, {\"context_len\": 7, \"query_len\": 1}]")
function(stage1_fixture name expect)
  file(WRITE ${S1GEN}/${name}.json "{\"name\": \"${name}\", ${S1_BATCH}, \"expect\": ${expect}}")
endfunction()
stage1_fixture(stage1-expected "{\"run\": \"passed\", \"stage1\": {\"kernel\": \"wgmma\", \"schedule\": \"rows-64\", \"precision\": \"p-split\"}}")
stage1_fixture(stage1-unknown-kernel "{\"run\": \"passed\", \"stage1\": {\"kernel\": \"wgmm\"}}")
stage1_fixture(stage1-automatic "{\"run\": \"passed\", \"stage1\": {\"kernel\": \"automatic\"}}")
stage1_fixture(stage1-unknown-schedule "{\"run\": \"passed\", \"stage1\": {\"kernel\": \"mma\", \"schedule\": \"m16\"}}")
stage1_fixture(stage1-unknown-precision "{\"run\": \"passed\", \"stage1\": {\"precision\": \"bf16\"}}")
stage1_fixture(stage1-unknown-key "{\"run\": \"passed\", \"stage1\": {\"kernal\": \"wgmma\"}}")
stage1_fixture(stage1-empty "{\"run\": \"passed\", \"stage1\": {}}")
stage1_fixture(stage1-without-run "{\"route\": \"gluon_decode\", \"stage1\": {\"kernel\": \"wgmma\"}}")

# ---- run: the report names what ran ----
mlactl_cli_test(stage1-run-cpu-text RC 0 ARGS run ${S1GEN}/stage1-expected.json --backend cpu TIMEOUT 60
                STDOUT "\nexecutor: +cpu\nstage 1: +cpu executor \\(fp32 contract\\)\nposition audit: ")
mlactl_cli_test(stage1-run-cpu-json RC 0 ARGS --format json --compact run ${S1GEN}/stage1-expected.json --backend cpu TIMEOUT 60
                STDOUT ",\"executor\":\"cpu\",\"stage1\":null,\"reduce\":null,")
mlactl_cli_test(stage1-run-external-text RC 0 ARGS run ${S1GEN}/stage1-expected.json --executor "'${S1_PY} adapters/numpy_ref.py'" TIMEOUT 120
                STDOUT "\nexecutor: +external:numpy-reference\nstage 1: +external executor \\(--executor; it reports no kernel\\)\n")
mlactl_cli_test(stage1-run-external-json RC 0 ARGS --format json --compact run ${S1GEN}/stage1-expected.json --executor "'${S1_PY} adapters/numpy_ref.py'"
                TIMEOUT 120 STDOUT ",\"executor\":\"external:numpy-reference\",\"stage1\":null,\"reduce\":null,")

# ---- check: expect.stage1 on the CPU executor is not checked (never passed, never failed) ----
set(S1_NOT_CHECKED "stage1 not checked: the cpu executor ran \\(the fp32 contract, no GPU kernel\\)")
mlactl_cli_test(stage1-check-cpu-not-checked RC 0 ARGS check ${S1GEN}/stage1-expected.json --backend cpu TIMEOUT 60
                STDOUT "^passed +stage1-expected  \\(run=passed\\)\n +${S1_NOT_CHECKED}\n1 passed, 0 failed, 0 errors, 0 skipped, 0 refused\n$")
# the same through a --timeout child (the record crosses the pipe)
mlactl_cli_test(stage1-check-cpu-child RC 0 ARGS check ${S1GEN}/stage1-expected.json --backend cpu --timeout 60 TIMEOUT 60
                STDOUT "^passed +stage1-expected  \\(run=passed\\)\n +${S1_NOT_CHECKED}\n1 passed, 0 failed, 0 errors, 0 skipped, 0 refused\n$")
mlactl_cli_test(stage1-check-cpu-json RC 0 ARGS --format jsonl check ${S1GEN}/stage1-expected.json --backend cpu -j 2 TIMEOUT 60
                STDOUT "^{\"type\":\"case\",\"id\":\"stage1-expected\",[^\n]*\"status\":\"passed\",\"checks\":\\[\"run=passed\"\\],\"failures\":\\[\\],\"not_checked\":\\[\"${S1_NOT_CHECKED}\"\\],\"known_faults\":\\[\\],\"finding_in_modelled_stack\":false,\"stack_findings\":\\[\\],\"seconds\":[^\n]*,\"executor\":\"cpu\",\"stage1\":null,\"reduce\":null}\n")
mlactl_cli_test(stage1-check-cpu-junit RC 0 ARGS check ${S1GEN}/stage1-expected.json --backend cpu --junit ${S1GEN}/junit.xml TIMEOUT 60
                FILE ${S1GEN}/junit.xml
                FILE_RE "name=\"stage1-expected\" [^\n]*><properties><property name=\"executor\" value=\"cpu\"/><property name=\"not_checked\" value=\"${S1_NOT_CHECKED}\"/></properties></testcase>\n")
mlactl_cli_test(stage1-check-external-not-checked RC 0 ARGS check ${S1GEN}/stage1-expected.json --executor "'${S1_PY} adapters/numpy_ref.py'" TIMEOUT 120
                STDOUT "^passed +stage1-expected  \\(run=passed\\)\n +stage1 not checked: an external executor ran \\(--executor; it reports no kernel\\)\n")

# ---- check: a bad expect.stage1 is that case's invalid input (exit 3), naming the field ----
mlactl_cli_test(stage1-check-unknown-kernel RC 3 ARGS check ${S1GEN}/stage1-unknown-kernel.json
                STDOUT "/expect/stage1/kernel: unknown kernel \"wgmm\": must be one of wgmma, mma, cuda_core\n")
mlactl_cli_test(stage1-check-automatic RC 3 ARGS check ${S1GEN}/stage1-automatic.json
                STDOUT "/expect/stage1/kernel: unknown kernel \"automatic\": must be one of wgmma, mma, cuda_core \\(automatic is what a caller asks, never what ran\\)")
mlactl_cli_test(stage1-check-unknown-schedule RC 3 ARGS check ${S1GEN}/stage1-unknown-schedule.json
                STDOUT "/expect/stage1/schedule: unknown schedule \"m16\": must be one of rows-64, transposed-64, mma-m16, cuda-core\n")
mlactl_cli_test(stage1-check-unknown-precision RC 3 ARGS check ${S1GEN}/stage1-unknown-precision.json
                STDOUT "/expect/stage1/precision: unknown precision \"bf16\": must be one of fp32, p-split, p-once, qk-e4m3, ")
mlactl_cli_test(stage1-check-unknown-key RC 3 ARGS check ${S1GEN}/stage1-unknown-key.json
                STDOUT "/expect/stage1/kernal: unknown key \\(expect.stage1 takes kernel, schedule, precision\\)")
mlactl_cli_test(stage1-check-empty RC 3 ARGS check ${S1GEN}/stage1-empty.json STDOUT "/expect/stage1: names no field: give any of kernel, schedule, precision")
mlactl_cli_test(stage1-check-without-run RC 3 ARGS check ${S1GEN}/stage1-without-run.json
                STDOUT "/expect/stage1: needs a `run` expectation: the kernel expected is the one that run reports")
