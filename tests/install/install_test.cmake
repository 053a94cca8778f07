# `cmake --install` into a fresh prefix, then the installed binary, man page and shell
# completions work as a user would find them (docs/design.md §6).
#   -DBUILD_DIR=<build> -DPREFIX=<empty dir to create> -DSOURCE_DIR=<source>
file(REMOVE_RECURSE "${PREFIX}")
execute_process(COMMAND ${CMAKE_COMMAND} --install "${BUILD_DIR}" --prefix "${PREFIX}" RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "cmake --install failed (${rc}):\n${out}${err}")
endif()
set(installed bin/mlactl share/man/man1/mlactl.1 share/bash-completion/completions/mlactl share/zsh/site-functions/_mlactl
              share/fish/vendor_completions.d/mlactl.fish)
foreach(f ${installed})
  if(NOT EXISTS "${PREFIX}/${f}")
    message(FATAL_ERROR "cmake --install did not install ${f}")
  endif()
endforeach()
set(MLACTL "${PREFIX}/bin/mlactl")

# --version: version, commit, backends, stacks
execute_process(COMMAND ${MLACTL} --version RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "^mlactl [0-9]+\\.[0-9]+\\.[0-9]+\ncommit:   ([0-9a-f]+(-dirty)?|unknown)\nbackends: cpu[^\n]*\nstacks:   vllm-rocm-aiter \\(")
  message(FATAL_ERROR "installed mlactl --version (exit ${rc}) prints:\n${out}")
endif()
message(STATUS "installed: ${out}")

# the installed binary answers from any directory (a fixture given by absolute path)
execute_process(COMMAND ${MLACTL} windows "${SOURCE_DIR}/fixtures/seed000-verify-causal.json" --inject verify-window-broadcast
                WORKING_DIRECTORY "${PREFIX}" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 1 OR NOT out MATCHES "40 rows, 28 mismatched")
  message(FATAL_ERROR "installed mlactl windows: exit ${rc}, expected 1 and 28 mismatches:\n${out}")
endif()

# the fixtures are installed, and `defects ID`'s "try:" line works from another folder
# with the installed binary (issue 40): it names the installed fixtures by absolute path
if(NOT EXISTS "${PREFIX}/share/mlactl/fixtures/verify-window-broadcast-fixed.json")
  message(FATAL_ERROR "cmake --install did not install the fixtures under share/mlactl/fixtures")
endif()
file(MAKE_DIRECTORY "${PREFIX}/elsewhere")
execute_process(COMMAND ${MLACTL} defects verify-window-broadcast WORKING_DIRECTORY "${PREFIX}/elsewhere" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
string(REGEX MATCH "\ntry: mlactl ([^\n]*)\n" try_line "${out}")
if(NOT rc EQUAL 0 OR NOT CMAKE_MATCH_1 STREQUAL "check ${PREFIX}/share/mlactl/fixtures/verify-window-broadcast.json ${PREFIX}/share/mlactl/fixtures/verify-window-broadcast-fixed.json")
  message(FATAL_ERROR "installed mlactl defects ID: exit ${rc}, its try: line does not name the installed fixtures:\n${out}")
endif()
separate_arguments(try_args UNIX_COMMAND "${CMAKE_MATCH_1}")
execute_process(COMMAND ${MLACTL} ${try_args} --backend cpu WORKING_DIRECTORY "${PREFIX}/elsewhere" RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES "2 passed, 0 failed")
  message(FATAL_ERROR "the installed try: line, run from another folder: exit ${rc}\n${out}")
endif()
execute_process(COMMAND ${MLACTL} check "${PREFIX}/share/mlactl/fixtures" --backend cpu --filter "^seed00" WORKING_DIRECTORY "${PREFIX}/elsewhere"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(NOT rc EQUAL 0 OR NOT out MATCHES " passed, 0 failed, 0 errors")
  message(FATAL_ERROR "the installed fixtures, checked from another folder: exit ${rc}\n${out}")
endif()

# every subcommand of `mlactl --help` is completed by every shell's script
execute_process(COMMAND ${MLACTL} --help OUTPUT_VARIABLE help)
string(REGEX MATCH "(Subcommands|SUBCOMMANDS):.*" subs "${help}")
string(REGEX MATCHALL "\n  [a-z]+" subs "${subs}")
list(LENGTH subs n)
if(n LESS 10)
  message(FATAL_ERROR "expected 10 subcommands in mlactl --help, found ${n}:\n${help}")
endif()
foreach(f share/bash-completion/completions/mlactl share/zsh/site-functions/_mlactl share/fish/vendor_completions.d/mlactl.fish)
  file(READ "${PREFIX}/${f}" script)
  foreach(s ${subs})
    string(STRIP "${s}" s)
    if(NOT script MATCHES "[ (\"]${s}[ )\n\"]")
      message(FATAL_ERROR "${f} does not complete the subcommand ${s}")
    endif()
  endforeach()
endforeach()

# bash: complete a subcommand, an option of it (from the binary's --help), a defect id
find_program(BASH bash)
if(BASH)
  set(comp "${PREFIX}/share/bash-completion/completions/mlactl")
  foreach(case "mlactl win|windows" "mlactl windows --inj|--inject" "mlactl run --inject verify-w|verify-window-broadcast"
               "mlactl --form|--format")
    string(REPLACE "|" ";" parts "${case}")
    list(GET parts 0 words)
    list(GET parts 1 want)
    execute_process(COMMAND ${BASH} -c "PATH='${PREFIX}/bin':$PATH; source '${comp}'; COMP_WORDS=(${words}); COMP_CWORD=$((\${#COMP_WORDS[@]} - 1)); _mlactl; echo \"\${COMPREPLY[*]}\""
                    OUTPUT_VARIABLE got OUTPUT_STRIP_TRAILING_WHITESPACE)
    if(NOT got STREQUAL want)
      message(FATAL_ERROR "bash completion of '${words}': got '${got}', expected '${want}'")
    endif()
  endforeach()
endif()

# `man mlactl` finds the installed page
find_program(MAN man)
if(MAN)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env "MANPATH=${PREFIX}/share/man" MANPAGER=cat MANWIDTH=80 ${MAN} mlactl
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0 OR NOT out MATCHES "MLA decode metadata")
    message(FATAL_ERROR "man mlactl with MANPATH=${PREFIX}/share/man: exit ${rc}\n${out}${err}")
  endif()
else()
  message(STATUS "no man program: the page is installed, `man mlactl` not tried")
endif()
