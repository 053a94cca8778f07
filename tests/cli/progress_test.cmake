# A long `run` on a terminal shows its stage on stderr, and erases it before the report
# (docs/design.md §6); `script` (util-linux) gives the run a terminal.
#   -DMLACTL=... -DSCRIPT=<script> -DOUTDIR=<dir>
cmake_policy(SET CMP0053 NEW)
string(ASCII 27 ESC)
set(log ${OUTDIR}/progress-tty.log)
execute_process(COMMAND ${SCRIPT} -qec "${MLACTL} run --heads 128 --qlen 1 --context 60000,60000 --backend cpu --threads 1" ${log}
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_QUIET TIMEOUT 300)
file(READ ${log} out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "\r${ESC}\\[Kmlactl run: \\[[1-6]/6\\] [a-z ]+ \\([0-9]+\\.[0-9] s\\)")
  message(FATAL_ERROR "run on a terminal (exit ${rc}) shows no progress line:\n${out}")
endif()
if(NOT out MATCHES "\r${ESC}\\[Kcase: +inline")
  message(FATAL_ERROR "the progress line is not erased before the report:\n${out}")
endif()
