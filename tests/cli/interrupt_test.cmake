# `check` killed by a CI timeout (SIGTERM) after a few cases leaves a valid JUnit file with
# the cases done so far, the running case reported as interrupted, and exits 128 + 15.
#   -DMLACTL=... -DWORKDIR=<source dir> -DOUTDIR=<dir> -DPYTHON=<python3> -DJOBS=<n>
set(dir ${OUTDIR}/interrupt-j${JOBS})
file(REMOVE_RECURSE ${dir})
file(MAKE_DIRECTORY ${dir}/cases)
# two quick cases, then one that runs for many seconds (2 x 200k tokens x 128 heads x q_len 8 on the CPU)
file(COPY ${WORKDIR}/fixtures/aiter-vector-a.json ${WORKDIR}/fixtures/seed000-verify-causal.json DESTINATION ${dir}/cases)
file(WRITE ${dir}/cases/zz-slow.json
     "{\"schema\": 1, \"name\": \"zz-slow\", \"model\": {\"num_heads\": 128}, \"requests\": [{\"context_len\": 200000, \"query_len\": 8}, {\"context_len\": 200000, \"query_len\": 8}], \"expect\": {\"run\": \"passed\"}}")
set(junit ${dir}/junit.xml)
# start it, wait until the JUnit file holds the two quick cases, then SIGTERM it
execute_process(
  COMMAND sh -c "\"$1\" check \"$2/cases\" --backend cpu --timeout 600 -j \"$4\" --junit \"$3\" >\"$2/out.txt\" 2>\"$2/err.txt\" & pid=$!
i=0
while [ $i -lt 1200 ]; do grep -q 'tests=\"2\"' \"$3\" 2>/dev/null && break; sleep 0.1; i=$((i+1)); done
kill -TERM $pid
wait $pid
echo $? >\"$2/rc.txt\"" sh ${MLACTL} ${dir} ${junit} ${JOBS}
  TIMEOUT 180 RESULT_VARIABLE shell_rc)
file(READ ${dir}/rc.txt rc)
string(STRIP "${rc}" rc)
file(READ ${dir}/out.txt out)
if(NOT rc EQUAL 143)
  message(FATAL_ERROR "check interrupted by SIGTERM exited ${rc} (expected 143):\n${out}")
endif()
if(NOT out MATCHES "passed +aiter-vector-a.*passed +seed000-verify-causal.*skipped +zz-slow\n +interrupted by signal 15 before it finished\n.*2 passed, 0 failed, 0 errors, 1 skipped, 0 refused \\(interrupted by signal 15 after 2 of 3 cases\\)\n$")
  message(FATAL_ERROR "check interrupted by SIGTERM printed:\n${out}")
endif()
# the JUnit file parses as XML and holds what ran
execute_process(COMMAND ${PYTHON} -c "
import sys, xml.etree.ElementTree as E
s = E.parse(sys.argv[1]).getroot()
assert s.tag == 'testsuite' and s.get('tests') == '3' and s.get('failures') == '0' and s.get('errors') == '0' and s.get('skipped') == '1', s.attrib
cases = {c.get('name'): c for c in s.iter('testcase')}
assert sorted(cases) == ['aiter-vector-a', 'seed000-verify-causal', 'zz-slow'], sorted(cases)
# passed: no failure, error or skipped; a case with a `run` expectation (aiter-vector-a) has the
# executor it ran as a property (cli/kernel_ran.hpp), one without (seed000-verify-causal) nothing
assert [c.tag for c in cases['aiter-vector-a']] == ['properties'], E.tostring(cases['aiter-vector-a'])
props = {p.get('name'): p.get('value') for p in cases['aiter-vector-a'].iter('property')}
assert props == {'executor': 'cpu'}, props
assert len(cases['seed000-verify-causal']) == 0, E.tostring(cases['seed000-verify-causal'])
sk = cases['zz-slow'].find('skipped')
assert sk is not None and sk.get('message') == 'interrupted by signal 15 before it finished', E.tostring(cases['zz-slow'])
print('junit ok')
" ${junit} RESULT_VARIABLE py_rc OUTPUT_VARIABLE py_out ERROR_VARIABLE py_err)
if(NOT py_rc EQUAL 0)
  file(READ ${junit} xml)
  message(FATAL_ERROR "the JUnit file of the interrupted run is not what ran: ${py_err}\n${xml}")
endif()
