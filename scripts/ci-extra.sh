#!/bin/sh
# CI extras (docs/design.md §9), run by .ci/run after the README test command:
#   1. one lean clang build (build-asan): -O1, -fsanitize=address,undefined
#      (-fno-sanitize-recover=undefined), no GPU sources; targets unit_tests, mlactl,
#      run_grid, json_golden and the libFuzzer target fuzz_batch, with -Werror
#      (clang's warnings, as the README build has gcc's);
#   2. the unit tests and the CLI tests (labels unit, cli) under the sanitizers;
#   3. the CPU run grid, fewer cases, under the sanitizers;
#   4. the fuzzers, each: its regression inputs once, then FUZZ_SECONDS of fuzzing
#      (FUZZ_SECONDS_EXTRA for the three newer ones) from its corpus (copied at run time):
#      fuzz_batch (fixtures/*.json + fuzz/corpus/, regressions fuzz/regressions/),
#      fuzz_captured (fuzz/corpus_captured/, fuzz/regressions_captured/),
#      fuzz_expect (fuzz/corpus_expect/, fuzz/regressions_expect/),
#      fuzz_argv (fuzz/corpus_argv/, fuzz/regressions_argv/).
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
FUZZ_SECONDS_EXTRA="${FUZZ_SECONDS_EXTRA:-60}"
GRID_CASES="${GRID_CASES:-40}"
CXX_CLANG="${CXX_CLANG:-clang++}"
TMP="$(mktemp -d)"
trap 'rm -rf "$TMP"' EXIT

export ASAN_OPTIONS="${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=0:check_initialization_order=1:strict_init_order=1}"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"

failed=""
summary=""
# step NAME COMMAND...: runs it, times it, records the verdict
# (step_name, not name: the steps' own functions set variables of their own)
step() {
  step_name="$1"
  shift
  echo "==== ci-extra: $step_name"
  t0=$(date +%s)
  if "$@"; then verdict=ok; else verdict=FAILED; failed="$failed $step_name"; fi
  dt=$(( $(date +%s) - t0 ))
  line="ci-extra: $(printf '%-10s %-6s %5s s' "$step_name" "$verdict" "$dt")"
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
    -DMLACTL_GPU=none -DMLACTL_HIP_CHECK=OFF -DMLACTL_CDNA_CHECK=OFF >"$TMP/configure.log" 2>&1 || { cat "$TMP/configure.log"; return 1; }
}

build() {
  cmake --build "$BUILD" -j "$JOBS" --target unit_tests mlactl run_grid json_golden format_matrix readme_examples run_bounded fuzz_batch fuzz_captured fuzz_expect fuzz_argv
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

# fuzz_one TARGET SECONDS CORPUS_DIR... : regressions/<suffix> once, then bounded fuzzing
fuzz_one() {
  name="$1"; secs="$2"; regs="$3"; shift 3
  fz="$BUILD/fuzz/$name"
  corpus="$TMP/corpus-$name"
  mkdir -p "$corpus" "$TMP/artifacts-$name"
  for d in "$@"; do cp $d "$corpus/" 2>/dev/null; done
  # 1. every kept regression input once (the crashes fuzzing found, fixed since)
  if [ -d "$regs" ] && [ -n "$(ls "$regs")" ]; then
    "$fz" -runs=1 "$regs"/* >"$TMP/regressions-$name.log" 2>&1 || { cat "$TMP/regressions-$name.log"; return 1; }
    echo "ci-extra: $name regressions: $(ls "$regs" | wc -l) inputs ok"
  fi
  # 2. bounded fuzzing: small inputs, 10 s per input (fuzz_argv 30), 2 GB RSS, 1 GB per malloc
  dict=""
  [ "$name" = fuzz_batch ] && dict="-dict=fuzz/batch.dict"
  # fuzz_argv runs whole verbs (a `run` on a fixture under ASan takes seconds): 30 s per input
  per_input=10
  [ "$name" = fuzz_argv ] && per_input=30
  "$fz" -max_total_time="$secs" -max_len=4096 -timeout="$per_input" -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    $dict -print_final_stats=1 -artifact_prefix="$TMP/artifacts-$name/" "$corpus" >"$TMP/fuzz-$name.log" 2>&1
  rc=$?
  echo "ci-extra: $name:"
  grep -E "^Done|stat::number_of_executed_units|stat::average_exec_per_sec|stat::new_units_added|stat::peak_rss_mb" "$TMP/fuzz-$name.log"
  if [ $rc -ne 0 ]; then
    grep -A60 -E "ERROR: (AddressSanitizer|LeakSanitizer|libFuzzer)|runtime error:|fuzz_[a-z]*: |ALARM|out-of-memory" "$TMP/fuzz-$name.log" | head -150
    for a in "$TMP"/artifacts-$name/*; do
      [ -e "$a" ] || continue
      echo "---- reproducer $(basename "$a") ($(wc -c <"$a") bytes; keep it under $regs/):"
      head -c 4096 "$a" | od -An -c | head -60
    done
  fi
  return $rc
}

fuzz() {
  r=0
  fuzz_failed=""
  fuzz_one fuzz_batch "$FUZZ_SECONDS" fuzz/regressions "fixtures/*.json" "fuzz/corpus/*" || { r=1; fuzz_failed="$fuzz_failed fuzz_batch"; }
  fuzz_one fuzz_captured "$FUZZ_SECONDS_EXTRA" fuzz/regressions_captured "fuzz/corpus_captured/*" || { r=1; fuzz_failed="$fuzz_failed fuzz_captured"; }
  fuzz_one fuzz_expect "$FUZZ_SECONDS_EXTRA" fuzz/regressions_expect "fuzz/corpus_expect/*" || { r=1; fuzz_failed="$fuzz_failed fuzz_expect"; }
  fuzz_one fuzz_argv "$FUZZ_SECONDS_EXTRA" fuzz/regressions_argv "fuzz/corpus_argv/*" || { r=1; fuzz_failed="$fuzz_failed fuzz_argv"; }
  [ -n "$fuzz_failed" ] && echo "ci-extra: fuzz targets with findings:$fuzz_failed"
  return $r
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
