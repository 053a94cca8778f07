# The external-executor protocol (docs/executor-protocol.md), the position probe and the
# planted faults, through the real binary and the adapters in adapters/, on the python3 with
# numpy that tests/CMakeLists.txt picked.
set(PY ${MLACTL_PYTHON3})  # imports numpy (tests/CMakeLists.txt checks)
set(NUMPY_REF "'${PY} adapters/numpy_ref.py'")
set(NUMPY_TRITON "'${PY} adapters/numpy_ref.py --mode triton'")
# a TRITON_MLA batch with causal MTP rows, two KV splits on the long rows and a padding slot
set(FAULT_BATCH --heads 16 --qlen 4 --context 0,37,1500,700 --padding 1 --kernel triton_mla --probe windows)
set(FAULT_ROWS "position probe: ok \\(256 heads of 16 rows\\)")

# ---- the numpy reference passes every fixture `run` passes (59 fixtures, as --backend cpu)
mlactl_cli_test(exec-numpy-fixtures RC 0 ARGS check fixtures --executor ${NUMPY_REF} STDOUT " passed, 0 failed, 0 errors, 0 skipped, [0-9]+ refused\n")
mlactl_cli_test(exec-numpy-run RC 0 ARGS run fixtures/seed000-verify-causal.json --executor ${NUMPY_REF}
                STDOUT "status: +PASSED.*executor: +external:numpy-reference.*numeric: +ok.*lse: +ok")
mlactl_cli_test(exec-numpy-defect RC 1 ARGS run fixtures/causal-flag-dropped.json --executor ${NUMPY_REF}
                STDOUT "status: +INCORRECT.*position audit: 21 rows read the wrong KV positions")

# ---- the probe: 0 findings on clean executors (CPU, numpy work list, numpy TRITON_MLA metadata)
mlactl_cli_test(probe-clean-cpu RC 0 ARGS run ${FAULT_BATCH} --backend cpu STDOUT "${FAULT_ROWS}.*numeric: +ok")
mlactl_cli_test(probe-clean-numpy-worklist RC 0 ARGS run ${FAULT_BATCH} --executor ${NUMPY_REF} STDOUT "${FAULT_ROWS}.*numeric: +ok")
mlactl_cli_test(probe-clean-numpy-triton RC 0 ARGS run ${FAULT_BATCH} --executor ${NUMPY_TRITON} STDOUT "${FAULT_ROWS}.*numeric: +ok.*lse: +ok")
mlactl_cli_test(probe-clean-faulty-off RC 0 ARGS run ${FAULT_BATCH} --executor "'${PY} adapters/faulty.py'" STDOUT "${FAULT_ROWS}")
# bf16 at 65,536 tokens (page 64), non-causal fp8 MTP (page 16), 128 heads on AITER's persistent route
mlactl_cli_test(probe-clean-64k RC 0 ARGS run --heads 16 --qlen 1 --context 65535,100 --block-size 64 --kernel triton_mla --probe windows
                --executor ${NUMPY_TRITON} STDOUT "position probe: ok \\(32 heads of 2 rows\\).*numeric: +ok")
mlactl_cli_test(probe-clean-noncausal-fp8 RC 0 ARGS run --heads 16 --qlen 4 --context 65532,3000 --non-causal --kv-dtype fp8 --block-size 16
                --kernel triton_mla --probe windows --executor ${NUMPY_TRITON} STDOUT "position probe: ok \\(128 heads of 8 rows\\).*numeric: +ok")
mlactl_cli_test(probe-clean-h128-persistent RC 0 ARGS run --heads 128 --qlen 2 --context 65534 --probe windows --backend cpu
                STDOUT "route: +asm_persistent.*position probe: ok \\(256 heads of 2 rows\\)")
# on mlactl's own executor it agrees with the position audit: the same rows
mlactl_cli_test(probe-agrees-broadcast RC 1 ARGS run fixtures/verify-window-broadcast.json --backend cpu --probe windows
                STDOUT "position audit: 28 of 32 rows read wrong KV positions\nposition probe: 72 findings in 28 of 32 rows\nprobe rows: +\\[0, 7\\), \\[8, 15\\), \\[16, 23\\), \\[24, 31\\)\n.*\n +0 +0 +0 +all +7 +0 +reads positions \\[1, 8\\) outside its window \\[0, 1\\)")
mlactl_cli_test(probe-agrees-causal-dropped RC 1 ARGS run fixtures/causal-flag-dropped.json --backend cpu --probe windows
                STDOUT "position audit: 21 of 24 rows read wrong KV positions\nposition probe: 98 findings in 21 of 24 rows\nprobe rows: +\\[0, 7\\), \\[8, 15\\), \\[16, 23\\)\n.* 0 +0 +0 +1 +12 +last allowed +missed +0")
mlactl_cli_test(probe-agrees-work-dropped RC 1 ARGS run fixtures/worklist-work-dropped.json --backend cpu --probe windows --use-captured
                STDOUT "position audit: 1 of 3 rows read wrong KV positions\nposition probe: 12 findings in 1 of 3 rows\nprobe rows: +2\n")
mlactl_cli_test(probe-agrees-read-twice RC 1 ARGS run fixtures/worklist-kv-end-shifted.json --backend cpu --probe windows --use-captured
                STDOUT "position probe: 1 findings in 1 of 3 rows\nprobe rows: +1\nprobe heads: +14\n.*reads 1 positions twice.* 1 +1 +0 +14 +48 +split first +read twice +1")
# beyond the audit: swapped partials (a reduce error, no position is wrong) show in the probe rows
mlactl_cli_test(probe-partials-swapped RC 1 ARGS run fixtures/worklist-partials-swapped.json --backend cpu --probe windows --use-captured
                STDOUT "position audit: ok \\(3 rows\\)\nposition probe: 16 findings in 2 of 3 rows\nprobe rows: +\\[0, 2\\)")
mlactl_cli_test(probe-bad-kind RC 2 ARGS run ${FAULT_BATCH} --probe edges STDERR "--probe: edges not in \\{windows\\}")

# ---- planted faults: each caught, the right rows named (request 0 = rows 0-3, 1 = 4-7, 2 = 8-11, 3 = 12-15; row 3, 7, 11, 15 are last tokens)
function(mlactl_fault_test fault rows)
  mlactl_cli_test(fault-${fault} RC 1 ARGS run ${FAULT_BATCH} --executor "'${PY} adapters/faulty.py --fault ${fault}'"
                  STDOUT "message: +position probe: .*\nprobe rows: +${rows}\n")
endfunction()
mlactl_fault_test(window-long "\\[0, 3\\), \\[4, 7\\), \\[8, 11\\), \\[12, 15\\)")
mlactl_fault_test(window-short "\\[0, 16\\)")
mlactl_fault_test(broadcast "\\[0, 3\\), \\[4, 7\\), \\[8, 11\\), \\[12, 15\\)")
mlactl_fault_test(drop-split "\\[1, 16\\)")
mlactl_fault_test(swap-partials "\\[1, 3\\)")
mlactl_fault_test(stale-metadata "\\[0, 16\\)")
mlactl_fault_test(pad-block "15")
mlactl_cli_test(fault-window-long-64k RC 1 ARGS run --heads 16 --qlen 4 --context 65532 --block-size 64 --kernel triton_mla --probe windows
                --executor "'${PY} adapters/faulty.py --fault window-long'"
                STDOUT "probe rows: +\\[0, 3\\)\nprobe heads: +\\[2, 5\\), \\[10, 13\\)\n.* 0 +0 +0 +2 +65533 +first forbidden +read +1")
mlactl_cli_test(fault-needs-triton RC 77 ARGS run --heads 16 --context 5 --executor "'${PY} adapters/faulty.py --fault window-long'"
                STDERR "skipped: executor 'numpy-reference' does not run route asm_persistent: planted faults act on TRITON_MLA metadata")

# ---- the probe's blind spots (issue 37 item 4), each planted in adapters/faulty.py: caught, the
# right rows and heads named, and no finding on the clean executors above and below
set(FAULTY "${PY} adapters/faulty.py --fault")
# global faults: a wrong softmax scale (FlashMLA without softmax_scale) shows on the control
# heads too, so it is a global numeric fault and no edge is named (no "probe rows" line)
mlactl_cli_test(fault-scale RC 1 ARGS run ${FAULT_BATCH} --executor "'${FAULTY} scale'"
                STDOUT "message: +global numeric fault: 48 of 48 probe control heads are wrong too \\(the softmax scale, a dtype, the layout or an ignored fp8 scale; no KV position is blamed\\)\n.*position probe: global numeric fault: 48 of 48 control heads wrong \\(heads \\[0, 16\\)\\); no edge is named\ntolerance:.*numeric: +[0-9]+ of 131072 elements fail\n.*probe numeric: +[0-9]+ of 131072 elements fail")
# numeric faults the probe's inputs hide: q's rope dims ignored; --probe also compares random inputs
mlactl_cli_test(fault-rope-q RC 1 ARGS run ${FAULT_BATCH} --executor "'${FAULTY} rope-q'"
                STDOUT "message: +numeric comparison failed on random inputs \\(the probe's inputs pass\\)\n.*${FAULT_ROWS}\n.*numeric: +[0-9]+ of 131072 elements fail .*probe numeric: +ok")
# one slot past the end: every request's last row (3, 7, 11, 15), as the placement maps the slot
mlactl_cli_test(fault-past-end RC 1 ARGS run ${FAULT_BATCH} --executor "'${FAULTY} past-end'"
                STDOUT "position probe: 16 findings in 4 of 16 rows\nprobe rows: +3, 7, 11, 15\nprobe heads: +\\[0, 3\\), \\[4, 7\\), \\[8, 11\\), \\[12, 15\\)\n.*\n +3 +0 +3 +4 +4 +past end: another request's key +read +1\n.*\n +11 +2 +3 +5 +1332 +past end: its own key +read twice +1\n")
mlactl_cli_test(probe-clean-page16 RC 0 ARGS run --heads 16 --qlen 4 --context 0,37,1500,700 --padding 1 --block-size 16 --kernel triton_mla --probe windows
                --executor ${NUMPY_TRITON} STDOUT "${FAULT_ROWS}.*numeric: +ok.*probe numeric: +ok\npadding rows: +ok \\(4, contract finite\\)")
mlactl_cli_test(fault-past-end-page16 RC 1 ARGS run --heads 16 --qlen 4 --context 0,37,1500,700 --padding 1 --block-size 16 --kernel triton_mla --probe windows
                --executor "'${FAULTY} past-end'"
                STDOUT "probe rows: +3, 7, 11, 15\n.*\n +3 +0 +3 +4 +4 +past end: next slot of the page +read +1\n.*\n +11 +2 +3 +5 +576 +past end: its own key +read twice +1\n.*\n +15 +3 +3 +1 +704 +past end: another request's key +read +1\n")
# a fault on heads [8, 16) only, in a row with more edges than heads (3000 tokens, page 16, many
# splits): every window edge is probed in both halves of the heads, so row 0's first forbidden
# position shows on head 10 (the edges used to go to heads in one fixed order: head 1 only)
set(MANY_EDGES --heads 16 --qlen 2 --context 3000,40 --block-size 16 --kernel triton_mla --probe windows)
mlactl_cli_test(probe-clean-many-edges RC 0 ARGS run ${MANY_EDGES} --executor ${NUMPY_TRITON} STDOUT "position probe: ok \\(64 heads of 4 rows\\).*numeric: +ok.*probe numeric: +ok")
mlactl_cli_test(fault-heads-long RC 1 ARGS run ${MANY_EDGES} --executor "'${FAULTY} heads-long'"
                STDOUT "probe rows: +0, 2\nprobe heads: +10, 12\n.*\n +0 +0 +0 +10 +3001 +first forbidden +read +1\n")
mlactl_cli_test(fault-heads-long-16rows RC 1 ARGS run ${FAULT_BATCH} --executor "'${FAULTY} heads-long'"
                STDOUT "probe rows: +\\[0, 3\\), \\[4, 7\\), \\[8, 11\\), \\[12, 15\\)\nprobe heads: +\\[8, 16\\)\n")
# padding rows: TRITON_MLA's are written, so they must be finite (vllm #57094); a route whose
# work list covers none leaves them untouched, and nothing is checked there
mlactl_cli_test(fault-pad-nan RC 1 ARGS run ${FAULT_BATCH} --executor "'${FAULTY} pad-nan'"
                STDOUT "message: +padding rows: 4 of 4 padding rows break the stack's contract \\(finite\\): NaN or inf in 65536 values\n.*${FAULT_ROWS}\n.*numeric: +ok\n.*padding rows: +4 of 4 break the contract finite: rows \\[16, 20\\)\n")
mlactl_cli_test(padding-clean-numpy-worklist RC 0 ARGS run ${FAULT_BATCH} --executor ${NUMPY_REF} STDOUT "padding rows: +ok \\(4, contract finite\\)")
mlactl_cli_test(padding-untouched-persistent RC 0 ARGS run --heads 16 --qlen 4 --context 0,37,1500,700 --padding 1 --executor ${NUMPY_REF}
                STDOUT "route: +asm_persistent.*padding rows: +4, contract untouched: not checked")
# NaN in every row (a read of the NaN-filled unused slots in each): named as such, probe or not
mlactl_cli_test(fault-read-poison RC 1 ARGS run ${FAULT_BATCH} --executor "'${FAULTY} read-poison'"
                STDOUT "message: +non-finite output: every row is NaN: the kernel reads poisoned \\(unused\\) slots, or wrote nothing\n")
mlactl_cli_test(fault-read-poison-noprobe RC 1 ARGS run --heads 16 --qlen 4 --context 0,37,1500,700 --padding 1 --kernel triton_mla
                --executor "'${FAULTY} read-poison'"
                STDOUT "message: +non-finite output: every row is NaN: the kernel reads poisoned \\(unused\\) slots, or wrote nothing\n.*unwritten \\(request, token, head\\) \\(first 20 of 256\\)")

# ---- bad executors: exit 4, a clear message naming the file
set(BAD_BATCH --heads 16 --qlen 1 --context 5,9)
function(mlactl_bad_exec_test what rc stderr)
  mlactl_cli_test(exec-bad-${what} RC ${rc} ARGS run ${BAD_BATCH} --executor "'${PY} adapters/faulty.py --misbehave ${what}'" ${ARGN}
                  STDERR "${stderr}")
endfunction()
mlactl_bad_exec_test(exit 4 "error: external executor `.*faulty.py --misbehave exit`: exited with status 3; its stderr ends:\nfaulty: CUDA error: an illegal memory access was encountered")
mlactl_bad_exec_test(crash 4 "faulty.py --misbehave crash`: was killed by signal 11 \\(Segmentation fault; exit status 139 from the shell\\)")
mlactl_bad_exec_test(shape 4 "--misbehave shape`: out.npy: shape \\(2, 16, 511\\), expected \\(2, 16, 512\\)")
mlactl_bad_exec_test(dtype 4 "--misbehave dtype`: out.npy: dtype '<f8', expected '<f4' \\(float32; the protocol takes float32 and rounds to bf16 itself\\)")
mlactl_bad_exec_test(nan 4 "--misbehave nan`: out.npy holds only NaN: the executor reads poisoned \\(unused\\) slots, or wrote nothing \\(mlactl's CPU executor writes finite values on the same work list\\)")
mlactl_bad_exec_test(missing 4 "--misbehave missing`: wrote no out.npy \\(expected float32 \\(2, 16, 512\\) in the case directory\\)")
mlactl_bad_exec_test(timeout 4 "--misbehave timeout`: timed out after 1 s \\(--executor-timeout\\) and was killed" --executor-timeout 1)
mlactl_cli_test(exec-bad-not-found RC 4 ARGS run ${BAD_BATCH} --executor /nonexistent/executor
                STDERR "external executor `/nonexistent/executor`: exited with status 127; its stderr ends:\n.*/nonexistent/executor: not found")
mlactl_cli_test(exec-bad-check RC 4 ARGS check fixtures/verify-window-broadcast-fixed.json --executor "'${PY} adapters/faulty.py --misbehave shape'"
                STDOUT "failed +verify-window-broadcast-fixed\n +run: external executor .*out.npy: shape \\(40, 12, 511\\), expected \\(40, 12, 512\\)")
mlactl_cli_test(exec-unsupported-route RC 77 ARGS run ${BAD_BATCH} --executor ${NUMPY_TRITON}
                STDERR "skipped: executor 'numpy-reference' does not run route asm_persistent: --mode triton runs route triton_mla only")
mlactl_cli_test(exec-timeout-bad RC 2 ARGS run ${BAD_BATCH} --executor /bin/true --executor-timeout 0 STDERR "--executor-timeout")
