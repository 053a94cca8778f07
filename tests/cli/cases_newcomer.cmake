# Issue 40, "a newcomer's first hour": each trap a new user met has a case here.
set(NCGEN ${CMAKE_CURRENT_BINARY_DIR}/newcomer-generated)
file(REMOVE_RECURSE ${NCGEN})
file(MAKE_DIRECTORY ${NCGEN}/mixed ${NCGEN}/with-report ${NCGEN}/no-numpy/numpy)
# a saved `run --format json` report, as `-o cases/r.json` leaves it beside the fixtures
set(NC_REPORT "{\"schema_version\": 1, \"tool\": {\"name\": \"mlactl\", \"version\": \"0.1.0\", \"commit\": \"unknown\"}, \"argv\": [\"mlactl\", \"run\"], \"command\": \"run\", \"case\": \"seed000-verify-causal\", \"status\": \"passed\", \"exit_code\": 0}")
# every summary word once or more: passed (2, one a refusal), failed, errors, skipped (2)
file(COPY ${CMAKE_SOURCE_DIR}/fixtures/seed000-verify-causal.json ${CMAKE_SOURCE_DIR}/fixtures/gluon-arch-ungated.json DESTINATION ${NCGEN}/mixed)
file(READ ${CMAKE_SOURCE_DIR}/fixtures/seed000-verify-causal.json nc_doc)
string(JSON nc_wrong SET "${nc_doc}" name "\"wrong-route\"")
string(JSON nc_wrong SET "${nc_wrong}" expect "{\"route\": \"asm_persistent\"}")
file(WRITE ${NCGEN}/mixed/wrong-route.json "${nc_wrong}")
string(JSON nc_bad SET "${nc_doc}" name "\"bad-expect\"")
string(JSON nc_bad SET "${nc_bad}" expect "{\"invariants\": 1}")
file(WRITE ${NCGEN}/mixed/bad-expect.json "${nc_bad}")
file(WRITE ${NCGEN}/mixed/no-expect.json "{\"schema\": 1, \"name\": \"no-expect\", \"model\": {\"num_heads\": 16}, \"requests\": [{\"context_len\": 4, \"query_len\": 1}]}")
file(WRITE ${NCGEN}/mixed/report.json "${NC_REPORT}")
file(COPY ${CMAKE_SOURCE_DIR}/fixtures/seed000-verify-causal.json DESTINATION ${NCGEN}/with-report)
file(WRITE ${NCGEN}/with-report/report.json "${NC_REPORT}")
# a python3 whose numpy import fails, as under a pyenv or conda python3 without it
file(WRITE ${NCGEN}/no-numpy/numpy/__init__.py "raise ImportError(\"No module named 'numpy'\")\n")

# ---- 1. global options before or after the verb; a verb's option before it is named
mlactl_cli_test(nc-backend-before-verb RC 2 ARGS --backend cpu run fixtures/seed000-verify-causal.json
                STDERR "^mlactl: --backend is an option of run, not a global option; put it after the verb: mlactl run --backend \\.\\.\\.\n")
mlactl_cli_test(nc-inject-before-verb RC 2 ARGS --inject verify-window-broadcast windows fixtures/seed000-verify-causal.json
                STDERR "^mlactl: --inject is an option of windows, not a global option; put it after the verb: mlactl windows --inject")
mlactl_cli_test(nc-option-of-other-verbs RC 2 ARGS --kernel triton_mla metadata fixtures/seed000-verify-causal.json
                STDERR "--kernel is an option of windows, route, schedule, run and bench, not a global option; put it after the verb \\(`metadata` has no --kernel\\)")
mlactl_cli_test(nc-globals-before-verb RC 0 ARGS -q --format json -o ${NCGEN}/before.json route --heads 16 --context 100,700,40
                FILE ${NCGEN}/before.json FILE_RE "\"command\": \"route\"")
mlactl_cli_test(nc-globals-after-verb RC 0 ARGS route --heads 16 --context 100,700,40 -q --format json -o ${NCGEN}/after.json
                FILE ${NCGEN}/after.json FILE_RE "\"command\": \"route\"")

# ---- 3. check DIR: a saved report is no case (skipped, with the reason); a missing path is exit 3 everywhere
mlactl_cli_test(nc-check-skips-report RC 0 ARGS check ${NCGEN}/with-report --backend cpu
                STDOUT "skipped +report\n +not a batch file: an mlactl report \\(`run --format json`: schema_version, tool and command, no schema\\)\npassed +seed000-verify-causal .*\n1 passed, 0 failed, 0 errors, 1 skipped, 0 refused\n$")
mlactl_cli_test(nc-check-missing-path RC 3 ARGS check fixtures/does-not-exist.json STDERR "fixtures/does-not-exist.json: no such file or directory")
mlactl_cli_test(nc-run-missing-path RC 3 ARGS run fixtures/does-not-exist.json STDERR "fixtures/does-not-exist.json: cannot open batch file")

# ---- 4. one summary vocabulary in the table, JSON, JSON Lines and JUnit
mlactl_cli_test(nc-summary-table RC 3 ARGS check ${NCGEN}/mixed --backend cpu --junit ${NCGEN}/mixed.xml
                STDOUT "\n2 passed, 1 failed, 1 errors, 2 skipped, 1 refused\n$"
                FILE ${NCGEN}/mixed.xml
                FILE_RE "<testsuite name=\"mlactl check\" tests=\"6\" failures=\"1\" errors=\"1\" skipped=\"2\" time=\"[0-9.]+\">\n  <properties><property name=\"passed\" value=\"2\"/><property name=\"refused\" value=\"1\"/></properties>")
mlactl_cli_test(nc-summary-json RC 3 ARGS --format json check ${NCGEN}/mixed --backend cpu
                STDOUT "\"summary\": {\n *\"passed\": 2,\n *\"failed\": 1,\n *\"errors\": 1,\n *\"skipped\": 2,\n *\"refused\": 1,\n *\"total\": 6,")
mlactl_cli_test(nc-summary-jsonl RC 3 ARGS --format jsonl check ${NCGEN}/mixed --backend cpu
                STDOUT "{\"type\":\"summary\",\"passed\":2,\"failed\":1,\"errors\":1,\"skipped\":2,\"refused\":1,\"total\":6,")

# ---- 5. one batch read the same way by every verb
foreach(verb metadata route)
  mlactl_cli_test(nc-head-padding-${verb} RC 0 ARGS ${verb} --heads 12 --qlen 2 --context 100,200
                  STDOUT "\nhead padding: +12 -> 16 \\(tile_slice\\); the routed kernel gluon_verify runs 12 heads, not the builder's map\n")
endforeach()
mlactl_cli_test(nc-schedule-views-causality RC 0 ARGS schedule fixtures/seed000-verify-causal.json
                STDOUT "\nplanned view: +[^\n]*non-causal[^\n]*\nkernel view: +[^\n]*, causal,[^\n]*\nviews: +planned non-causal, kernel causal: the planner lays out each flattened row as a one-token query")
mlactl_cli_test(nc-numeric-rule RC 0 ARGS run fixtures/aiter-vector-a.json --backend cpu
                STDOUT "\nmax rel err: +[^\n]*\n[^\n]*\nnumeric: +ok \\(every element: \\|d\\| <= atol 0\\.0008 or \\|d\\|/\\|ref\\| <= rtol 0\\.01562; cos diff <= 5e-06\\)\n")
# a max abs err above atol and a max rel err above rtol beside "ok": each line says which
# bound those elements passed on
mlactl_cli_test(nc-numeric-rel-above-rtol RC 0 ARGS run fixtures/seed000-verify-causal.json --backend cpu
                STDOUT "\ntolerance: +atol 0\.0008, rtol 0\.01562, [^\n]*\nmax abs err: +[^\n]* \\(above atol: such elements pass on \\|d\\|/\\|ref\\| <= rtol\\)\nmax rel err: +0\.0[0-9]+ \\(above rtol: such elements pass on \\|d\\| <= atol\\)\n[^\n]*\nnumeric: +ok \\(every element: ")
mlactl_cli_test(nc-schedule-balance-units RC 0 ARGS schedule --heads 16 --qlen 1 --context 100,700,40 --num-cu 4
                STDOUT "\nbalance: +max load [0-9.]+, mean [0-9.]+, efficiency [0-9.]+ \\(load: the planner's cost, 16-entry KV blocks \\+ 16 per work\\)\n")

# ---- 6. metadata --format csv carries every field of its JSON
if(MLACTL_PYTHON3)
  add_test(NAME "cli: metadata csv carries every field of its JSON"
           COMMAND ${MLACTL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/metadata_csv_complete.py $<TARGET_FILE:mlactl> ${CMAKE_SOURCE_DIR})
  set_tests_properties("cli: metadata csv carries every field of its JSON" PROPERTIES LABELS cli TIMEOUT 120)
endif()

# ---- 7. `defects ID`'s try: line names the fixtures by absolute path (installed: tests/install)
mlactl_cli_test(nc-defects-try-absolute RC 0 ARGS defects verify-window-broadcast
                STDOUT "\ntry: mlactl check /[^ \n]*/fixtures/verify-window-broadcast\\.json /[^ \n]*/fixtures/verify-window-broadcast-fixed\\.json\n$")

# ---- 8. an adapter on a python3 without numpy: one line, exit 4; executor errors shown as lines
if(MLACTL_PYTHON3)
  mlactl_cli_test(nc-adapter-no-numpy-run RC 4 ARGS run fixtures/seed000-verify-causal.json --executor "'${MLACTL_PYTHON3} adapters/numpy_ref.py'"
                  ENV PYTHONPATH=${NCGEN}/no-numpy
                  STDERR "exited with status 4; its stderr ends:\n  numpy is missing from this python3 \\([^)]*\\): No module named 'numpy'; run the adapter with a python3 that has numpy")
  mlactl_cli_test(nc-adapter-no-numpy-check RC 4 ARGS check fixtures/aiter-vector-a.json --executor "'${MLACTL_PYTHON3} adapters/numpy_ref.py'"
                  ENV PYTHONPATH=${NCGEN}/no-numpy
                  STDOUT "failed +aiter-vector-a\n +run: external executor [^\n]*exited with status 4; its stderr ends:\n +numpy is missing from this python3")
endif()

# ---- 9. the schedule SVG's legend matches its colouring and states its units
mlactl_cli_test(nc-svg-legend-flattened RC 0 ARGS --format svg schedule fixtures/seed000-verify-causal.json
                STDOUT "colour: q row \\(legend below\\).*<g class=\"legend\"><text [^>]*>flattened q row \\(batch_idx: one per query token\\):</text><rect class=\"swatch\".*units: the bars count KV index-list entries; the schedule table's balance line counts the planner's cost")
mlactl_cli_test(nc-svg-legend-requests RC 0 ARGS --format svg schedule --heads 16 --qlen 1 --context 100,700,40 --num-cu 4
                STDOUT "colour: request \\(legend below\\).*<g class=\"legend\"><text [^>]*>request \\(batch_idx\\):</text>")

# ---- 10. small: verb help names the global options; usage lines name mlactl; suggestions; booleans
mlactl_cli_test(nc-verb-help-globals RC 0 ARGS run --help
                STDOUT "^[^\n]*\nUsage: mlactl run \\[OPTIONS\\] \\[batch\\]\n.*\nGlobal options \\(before or after the verb\\):\n  --format [^\n]*\n.*  -o,--output FILE +write the report")
mlactl_cli_test(nc-usage-names-mlactl RC 0 ARGS --help STDOUT "\nUsage: mlactl \\[OPTIONS\\] SUBCOMMAND\n")
mlactl_cli_test(nc-inject-did-you-mean RC 3 ARGS windows fixtures/seed000-verify-causal.json --inject verify-window-broadcst
                STDERR "/inject/0: unknown defect id \"verify-window-broadcst\"; did you mean \"verify-window-broadcast\"\\?")
mlactl_cli_test(nc-defects-did-you-mean RC 2 ARGS defects verify-window-broadcst STDERR "unknown defect id \"verify-window-broadcst\"; did you mean \"verify-window-broadcast\"\\?")
mlactl_cli_test(nc-route-json-booleans RC 0 ARGS --format json route --heads 12 --qlen 2 --context 100,200 --kv-dtype fp8 --non-causal
                STDOUT "\"name\": \"mla_decode_supports_non_causal\",\n *\"value\": true,.*\"name\": \"has_fp8_non_causal_qlen2_kernel\",\n *\"value\": false,")

# ---- 2. interrupts: ^C once acknowledged at once, twice stops now with the summary and JUnit;
# no temporary file survives (check in-process and in children, run -o under SIGINT and SIGTERM)
# --qlen and --padding shape an inline batch; with a file they were dropped in silence
mlactl_cli_test(file-with-padding RC 2 ARGS run fixtures/sglang-default-fa3-decode.json --padding 2
                STDERR "error: --padding shapes an inline batch's requests; a batch file gives each request's query_len and padding itself")
mlactl_cli_test(file-with-qlen RC 2 ARGS validate fixtures/sglang-default-fa3-decode.json --qlen 4 STDERR "error: --qlen shapes an inline batch's requests")
mlactl_cli_test(inline-qlen-padding RC 0 ARGS validate --heads 16 --context 10,20 --qlen 3 --padding 1 STDOUT "requests: 3 \\(1 padding\\), 6 query rows")

if(MLACTL_PYTHON3)
  add_test(NAME "cli: interrupts: ^C acknowledged, ^C twice stops with the summary, no temporary file left"
           COMMAND ${MLACTL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/interrupts.py $<TARGET_FILE:mlactl> ${CMAKE_SOURCE_DIR} ${NCGEN}/interrupts)
  set_tests_properties("cli: interrupts: ^C acknowledged, ^C twice stops with the summary, no temporary file left" PROPERTIES LABELS cli TIMEOUT 180)
endif()
