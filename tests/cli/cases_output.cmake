# --compact and --output FILE (issue 18 item 2, issue 15 item 5): one-line JSON; the report
# written through a temporary file renamed over a regular file only.
set(OUTGEN ${CMAKE_CURRENT_BINARY_DIR}/output-generated)
file(MAKE_DIRECTORY ${OUTGEN})
mlactl_cli_test(compact-json RC 0 ARGS --format json --compact route --heads 16 --context 100
                STDOUT "^\\{\"schema_version\":1,\"tool\":\\{[^\n]*\"route\":\\{\"route\":\"asm_persistent\"[^\n]*\\}\n$")
mlactl_cli_test(compact-metadata-golden RC 0 ARGS --compact --format json metadata fixtures/seed000-verify-causal.json GOLDEN metadata-seed000.json)
mlactl_cli_test(compact-needs-json RC 2 ARGS --compact route --heads 16 --context 100 STDOUT "^$" STDERR "--compact applies to --format json")
mlactl_cli_test(compact-error-json RC 3 ARGS --format json --compact validate fixtures/does-not-exist.json
                STDOUT "^\\{[^\n]*\"status\":\"invalid input\",\"exit_code\":3,[^\n]*\\}\n$")
mlactl_cli_test(output-file RC 1 ARGS --format json --output ${OUTGEN}/windows.json windows fixtures/seed000-verify-causal.json --inject verify-window-broadcast
                STDOUT "^$" FILE ${OUTGEN}/windows.json FILE_RE "\"command\": \"windows\",.*\"mismatched_rows\": 28,")
mlactl_cli_test(output-file-golden RC 0 ARGS --format json -o ${OUTGEN}/metadata.json metadata fixtures/seed000-verify-causal.json
                STDOUT "^$" FILE ${OUTGEN}/metadata.json FILE_RE "\"paged_kv_indices\": \\[")
mlactl_cli_test(output-table RC 0 ARGS route --heads 16 --context 100 --output ${OUTGEN}/route.txt STDOUT "^$" FILE ${OUTGEN}/route.txt FILE_RE "^case: +inline\n")
mlactl_cli_test(output-error-json RC 3 ARGS --format json --output ${OUTGEN}/error.json validate fixtures/does-not-exist.json
                STDOUT "^$" FILE ${OUTGEN}/error.json FILE_RE "\"status\": \"invalid input\"")
mlactl_cli_test(output-dash-stdout RC 0 ARGS --output - route --heads 16 --context 100 STDOUT "^case: +inline\n")
mlactl_cli_test(output-device-refused RC 2 ARGS --output /dev/null route --heads 16 --context 100 STDOUT "^$"
                STDERR "/dev/null: exists and is not a regular file")
mlactl_cli_test(output-directory-refused RC 2 ARGS --output ${OUTGEN} route --heads 16 --context 100 STDERR "output-generated: exists and is not a regular file")
mlactl_cli_test(output-write-error RC 4 ARGS --output /proc/self/no-such-dir/x route --heads 16 --context 100 STDERR "cannot write /proc/self/no-such-dir/x")
if(EXISTS /dev/full)
  # a link to a device is refused, not replaced by a regular file
  file(CREATE_LINK /dev/full ${OUTGEN}/full-link SYMBOLIC)
  mlactl_cli_test(output-symlink-to-device RC 2 ARGS --output ${OUTGEN}/full-link route --heads 16 --context 100
                  STDERR "full-link: links to /dev/full, which is not a regular file")
endif()
