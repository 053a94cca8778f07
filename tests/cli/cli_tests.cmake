# CLI tests through the real binary: exit codes, error texts, golden JSON.
add_executable(json_golden ${CMAKE_CURRENT_LIST_DIR}/json_golden.cpp)
target_link_libraries(json_golden PRIVATE nlohmann_json::nlohmann_json)

set(MLACTL_FIXTURES ${CMAKE_SOURCE_DIR}/fixtures)
set(MLACTL_GOLDEN ${CMAKE_CURRENT_LIST_DIR}/golden)

# peak-memory bounds: the command runs under run_bounded (tests/common/run_bounded.cpp)
add_executable(run_bounded ${CMAKE_SOURCE_DIR}/tests/common/run_bounded.cpp)
# sanitizer builds carry shadow memory and a quarantine: their bounds are 4x as loose
if(MLACTL_SANITIZE)
  set(MLACTL_RSS_FACTOR 4)
else()
  set(MLACTL_RSS_FACTOR 1)
endif()

# mlactl_cli_test(NAME RC <rc> ARGS <args...> [STDOUT <regex>] [STDERR <regex>] [GOLDEN <file>] [ENV VAR=value]
#                 [TIMEOUT <seconds>] [MAXRSS <MiB>] [FILE <path> FILE_RE <regex>])
# TIMEOUT: the time bound the test asserts (ctest fails it when exceeded); MAXRSS: the peak
# resident memory bound it asserts (exit 125 from run_bounded when exceeded); FILE/FILE_RE:
# a file the command wrote must match the regex.
function(mlactl_cli_test name)
  cmake_parse_arguments(T "" "RC;STDOUT;STDERR;GOLDEN;ENV;TIMEOUT;MAXRSS;FILE;FILE_RE" "ARGS" ${ARGN})
  # a file of cases may set defaults for its rows (tests/cli/cases_reliability.cmake does)
  if(NOT T_MAXRSS AND MLACTL_CLI_DEFAULT_MAXRSS)
    set(T_MAXRSS ${MLACTL_CLI_DEFAULT_MAXRSS})
  endif()
  if(NOT T_TIMEOUT AND MLACTL_CLI_DEFAULT_TIMEOUT)
    set(T_TIMEOUT ${MLACTL_CLI_DEFAULT_TIMEOUT})
  endif()
  set(bounded_args "")
  if(T_MAXRSS)
    math(EXPR rss "${T_MAXRSS} * ${MLACTL_RSS_FACTOR}")
    set(bounded_args -DRUN_BOUNDED=$<TARGET_FILE:run_bounded> -DMAXRSS=${rss})
  endif()
  string(REPLACE ";" " " args_str "${T_ARGS}")
  set(golden_args "")
  if(T_GOLDEN)
    set(golden_args -DGOLDEN=${MLACTL_GOLDEN}/${T_GOLDEN} -DJSON_GOLDEN=$<TARGET_FILE:json_golden>
                    -DOUTFILE=${CMAKE_CURRENT_BINARY_DIR}/cli_${name}.json)
  endif()
  add_test(NAME "cli: ${name}"
           COMMAND ${CMAKE_COMMAND} -DMLACTL=$<TARGET_FILE:mlactl> "-DARGS=${args_str}" -DRC=${T_RC}
                   "-DSTDOUT_RE=${T_STDOUT}" "-DSTDERR_RE=${T_STDERR}" ${golden_args} -DWORKDIR=${CMAKE_SOURCE_DIR}
                   "-DFILE=${T_FILE}" "-DFILE_RE=${T_FILE_RE}" ${bounded_args}
                   -P ${CMAKE_CURRENT_LIST_DIR}/expect.cmake)
  set_tests_properties("cli: ${name}" PROPERTIES LABELS cli)
  if(T_TIMEOUT)
    set_tests_properties("cli: ${name}" PROPERTIES TIMEOUT ${T_TIMEOUT})
  endif()
  if(T_ENV)
    set_tests_properties("cli: ${name}" PROPERTIES ENVIRONMENT "${T_ENV}")
  endif()
endfunction()

file(GLOB MLACTL_CLI_CASE_FILES ${CMAKE_CURRENT_LIST_DIR}/cases_*.cmake)
foreach(f ${MLACTL_CLI_CASE_FILES})
  include(${f})
endforeach()

# every verb x format: valid output or exit 2 (tests/cli/format_matrix.cpp)
add_executable(format_matrix ${CMAKE_CURRENT_LIST_DIR}/format_matrix.cpp)
target_link_libraries(format_matrix PRIVATE nlohmann_json::nlohmann_json)
add_test(NAME "cli: every verb x format is valid or refused" COMMAND format_matrix $<TARGET_FILE:mlactl> ${CMAKE_SOURCE_DIR})
set_tests_properties("cli: every verb x format is valid or refused" PROPERTIES LABELS cli)

# schedule --format svg: lanes, works and split partials as the JSON has them; the README's picture
find_program(MLACTL_RSVG rsvg-convert)
add_test(NAME "cli: schedule svg draws the plan"
         COMMAND ${CMAKE_COMMAND} -DMLACTL=$<TARGET_FILE:mlactl> -DWORKDIR=${CMAKE_SOURCE_DIR} -DOUTDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -DRSVG=${MLACTL_RSVG} -P ${CMAKE_CURRENT_LIST_DIR}/svg_test.cmake)
set_tests_properties("cli: schedule svg draws the plan" PROPERTIES LABELS cli)

# windows --format svg: rows and mismatches as the JSON has them, rendered red (rsvg-convert)
find_program(MLACTL_RSVG_REQUIRED rsvg-convert REQUIRED)
add_test(NAME "cli: windows svg draws mismatches red"
         COMMAND ${CMAKE_COMMAND} -DMLACTL=$<TARGET_FILE:mlactl> -DWORKDIR=${CMAKE_SOURCE_DIR} -DOUTDIR=${CMAKE_CURRENT_BINARY_DIR}
                 -DRSVG=${MLACTL_RSVG_REQUIRED} -DPYTHON=${MLACTL_PYTHON3} -P ${CMAKE_CURRENT_LIST_DIR}/windows_svg_test.cmake)
set_tests_properties("cli: windows svg draws mismatches red" PROPERTIES LABELS cli)

# a long run on a terminal shows a progress line (stderr), erased before the report
find_program(MLACTL_SCRIPT script)
if(MLACTL_SCRIPT)
  add_test(NAME "cli: run shows progress on a terminal"
           COMMAND ${CMAKE_COMMAND} -DMLACTL=$<TARGET_FILE:mlactl> -DSCRIPT=${MLACTL_SCRIPT} -DOUTDIR=${CMAKE_CURRENT_BINARY_DIR}
                   -P ${CMAKE_CURRENT_LIST_DIR}/progress_test.cmake)
  set_tests_properties("cli: run shows progress on a terminal" PROPERTIES LABELS cli)
endif()

# check killed by SIGTERM after two cases: a valid JUnit file with them (python3 reads it)
if(MLACTL_PYTHON3)
  foreach(jobs 1 2)
    add_test(NAME "cli: check interrupted by SIGTERM leaves a valid JUnit file (-j ${jobs})"
             COMMAND ${CMAKE_COMMAND} -DMLACTL=$<TARGET_FILE:mlactl> -DWORKDIR=${CMAKE_SOURCE_DIR} -DOUTDIR=${CMAKE_CURRENT_BINARY_DIR}
                     -DPYTHON=${MLACTL_PYTHON3} -DJOBS=${jobs} -P ${CMAKE_CURRENT_LIST_DIR}/interrupt_test.cmake)
    set_tests_properties("cli: check interrupted by SIGTERM leaves a valid JUnit file (-j ${jobs})" PROPERTIES LABELS cli TIMEOUT 200)
  endforeach()
endif()

# every verb's JSON against `schema --output VERB`, with python3-jsonschema (scripts/deps.sh)
add_test(NAME "cli: every verb's JSON validates against schema --output VERB"
         COMMAND ${MLACTL_PYTHON3} ${CMAKE_CURRENT_LIST_DIR}/check_output_schemas.py $<TARGET_FILE:mlactl> ${CMAKE_SOURCE_DIR})
set_tests_properties("cli: every verb's JSON validates against schema --output VERB" PROPERTIES LABELS cli TIMEOUT 600)
