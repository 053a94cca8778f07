#!/bin/sh
# CI extras (docs/design.md §9), run by .ci/run after the README test command:
#   1. one lean clang build (build-asan): -O1, -fsanitize=address,undefined
#      (-fno-sanitize-recover=undefined), no GPU sources; targets unit_tests, mlactl,
#      run_grid, json_golden and the libFuzzer target fuzz_batch, with -Werror
#      (clang's warnings, as the README build has gcc's);
#   2. the unit tests and the CLI tests (labels unit, cli) under the sanitizers;
#   3. the CPU run grid, fewer cases, under the sanitizers;
#   4. fuzz_batch: the regression inputs (fuzz/regressions/) once each, then
#      FUZZ_SECONDS of fuzzing from fixtures/*.json + fuzz/corpus/ (copied at run time).
# Any crash, sanitizer report, leak, timeout or test failure fails the script.
# Prints one "ci-extra: <step> ... <s> s" line per step and "ci-extra: passed" or
# "ci-extra: FAILED" at the end.
# Knobs: JOBS (default nproc), FUZZ_SECONDS (90), GRID_CASES (40), ASAN_BUILD (build-asan).
set -u
cd "$(dirname "$0")/.."
ROOT="$(pwd)"
JOBS="${JOBS:-$(nproc)}"
BUILD="${ASAN_BUILD:-build-asan}"
FUZZ_SECONDS="${FUZZ_SECONDS:-90}"
GRID_CASES="${GRID_CASES:-40}"
CXX_CLANG="${CXX_CLANG:-clang++}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=""
summary=""
# step NAME COMMAND...: runs it, times it, records the verdict
step() {
  name="$1"
  shift
  echo "==== ci-extra: $name"
  t0=$(date +%s)
  if "$@"; then verdict=ok; else verdict=FAILED; failed="$failed $name"; fi
  dt=$(( $(date +%s) - t0 ))
  line="ci-extra: $(printf '%-10s %-6s %5s s' "$name" "$verdict" "$dt")"
  echo "$line"
  summary="$summary
$line"
  [ "$verdict" = ok ]
}

configure() {
  if ! command -v "$CXX_CLANG" >/dev/null 2>&1; then
    echo "ci-extra: $CXX_CLANG not found (apt-get install clang libclang-rt-14-dev)" >&2
    return 1
  fi
  cmake -S . -B "$BUILD" -G Ninja -DCMAKE_CXX_COMPILER="$CXX_CLANG" -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -gline-tables-only" \
    -DMLACTL_SANITIZE=ON -DMLACTL_FUZZ=ON -DMLACTL_WERROR=ON \
    -DMLACTL_GPU=none -DMLACTL_HIP_CHECK=OFF >"$TMP/configure.log" 2>&1 || { cat "$TMP/configure.log"; return 1; }
}

build() {
  cmake --build "$BUILD" -j "$JOBS" --target unit_tests mlactl run_grid json_golden format_matrix readme_examples fuzz_batch
}

tests() {
  # catch_discover_tests lists the unit tests when unit_tests is built; the gpu label
  # needs binaries this lean build skips
  (cd "$BUILD" && ctest -L '^(unit|cli)$' -LE gpu -j "$JOBS" --output-on-failure --timeout 900) >"$TMP/ctest.log" 2>&1
  rc=$?
  grep -E "tests passed|tests failed|\*\*\*Failed|\(Failed\)|Not Run|\*\*\*Timeout|\*\*\*Exception|Total Test time" "$TMP/ctest.log"
  if [ $rc -ne 0 ]; then
    # the failing tests' output (sanitizer reports included)
    sed -n '/The following tests FAILED/,$p' "$TMP/ctest.log"
    grep -B2 -A40 -E "ERROR: AddressSanitizer|runtime error:|ERROR: LeakSanitizer" "$TMP/ctest.log" | head -200
  fi
  return $rc
}

grid() {
  "$BUILD/tests/run_grid" --backend cpu --cases "$GRID_CASES" --seed 2026 >"$TMP/grid.log" 2>&1
  rc=$?
  tail -5 "$TMP/grid.log"
  [ $rc -ne 0 ] && head -200 "$TMP/grid.log"
  return $rc
}

fuzz() {
  fz="$BUILD/fuzz/fuzz_batch"
  mkdir -p "$TMP/corpus" "$TMP/artifacts"
  cp fixtures/*.json fuzz/corpus/* "$TMP/corpus/"
  # 1. every kept regression input once (the crashes fuzzing found, fixed since)
  set -- fuzz/regressions/*
  if [ -e "$1" ]; then
    "$fz" -runs=1 "$@" >"$TMP/regressions.log" 2>&1 || { cat "$TMP/regressions.log"; return 1; }
    echo "ci-extra: fuzz regressions: $# inputs ok"
  fi
  # 2. bounded fuzzing: small inputs, 10 s per input, 2 GB RSS, 1 GB per malloc
  "$fz" -max_total_time="$FUZZ_SECONDS" -max_len=4096 -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -dict=fuzz/batch.dict -print_final_stats=1 -artifact_prefix="$TMP/artifacts/" "$TMP/corpus" >"$TMP/fuzz.log" 2>&1
  rc=$?
  grep -E "^Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb" "$TMP/fuzz.log"
  if [ $rc -ne 0 ]; then
    grep -A60 -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz_batch: unexpected|ALARM|out-of-memory" "$TMP/fuzz.log" | head -150
    for a in "$TMP"/artifacts/*; do
      [ -e "$a" ] || continue
      echo "---- reproducer $(basename "$a") ($(wc -c <"$a") bytes; keep it under fuzz/regressions/):"
      head -c 4096 "$a" | od -An -c | head -60
    done
  fi
  return $rc
}

start=$(date +%s)
if step configure configure && step build build; then
  step tests tests
  step grid grid
  step fuzz fuzz
fi
echo "---- ci-extra summary ----$summary"
echo "ci-extra: total $(( $(date +%s) - start )) s"
if [ -n "$failed" ]; then
  echo "ci-extra: FAILED:$failed" >&2
  echo "ci-extra: FAILED"
  exit 1
fi
echo "ci-extra: passed"
