#!/bin/bash
# scripts/gpu_ab.sh on fake builds (no GPU needed): the summary's medians and ratio, the
# exit status of each outcome (0, 1 when gpu_tests fails, 2 on bad usage, 77 without a
# card), and the AB_SHAPES / AB_FORMS overrides. Usage: test_gpu_ab.sh SOURCE_DIR
set -u
SRC=$1
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
. "$(dirname "$0")/check.sh"  # check NAME CONDITION...; $fails
# A fake mlactl: µs by option (P once 300, block size 64 500, else 400) plus the build's
# offset; 77 when FAKE_NO_GPU is set, as bench says when there is no card; a repeated
# --block-size and --heads 0 fail with a message on stderr, as bench's parser does.
fake() {  # fake DIR OFFSET GPU_TESTS_RC
  mkdir -p "$1"
  cat > "$1/mlactl" <<EOS
#!/bin/sh
if [ "\$1" = --version ]; then echo mlactl; echo "commit: fake"; exit 0; fi
[ -n "\${FAKE_NO_GPU:-}" ] && exit 77
[ "\$(printf '%s\\n' "\$@" | grep -c -- '^--block-size\$')" -gt 1 ] && { echo "--block-size: given twice" >&2; exit 106; }
case "\$*" in *"--heads 0"*) echo "bench: --heads: must be at least 1" >&2; exit 2;; esac
case "\$*" in *once*) v=300;; *"--block-size 64"*) v=500;; *) v=400;; esac
echo "{\"results\":[{\"kernels_us\":{\"median\":\$((v + $2)).0}}]}"
EOS
  printf '#!/bin/sh\necho "gpu_tests: 10 checks"\nexit %s\n' "$3" > "$1/gpu_tests"
  chmod +x "$1/mlactl" "$1/gpu_tests"
}
fake "$T/old" 0 0
fake "$T/new" 4 0
fake "$T/bad" 0 1
export OUT=$T

out=$(bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/new" 2); rc=$?
check "exit 0 when gpu_tests passes" [ $rc -eq 0 ]
check "C1 default: both rounds and +1.0 %" grep -q "^C1   default  *old 400.0, 400.0  *new 404.0, 404.0  *new/old +1.0 %" <<< "$out"
check "M2 P once: +1.3 %" grep -q "^M2   --pv-precision once  *old 300.0, 300.0  *new 304.0, 304.0  *new/old +1.3 %" <<< "$out"
check "two forms a shape (default, P once)" [ "$(grep -c '^M2  ' <<< "$out")" -eq 2 ]
check "alternated: new right after old in a round" [ "$(grep -A1 '^1 old C1 default' <<< "$out" | tail -1)" = "1 new C1 default: 404.0" ]
check "gpu_tests log in OUT" grep -q "10 checks" "$T/gpu_ab_tests.txt"

out=$(bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/bad" 1); rc=$?
check "exit 1 when gpu_tests fails, timings still run" [ $rc -eq 1 ]
check "  and the summary is printed" grep -q "^C1   default " <<< "$out"

out=$(AB_SHAPES="X|--heads 16" AB_FORMS="--pv-precision once|" bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/new" 1); rc=$?
check "AB_SHAPES / AB_FORMS: two rows of shape X" [ "$(grep -c '^X  ' <<< "$out")" -eq 2 ]
check "  a trailing empty form is the default" grep -q "^X    default " <<< "$out"

out=$(AB_SHAPES="F2|--block-size 64 --arch sm90" AB_FORMS="" bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/new" 1); rc=$?
check "a shape's own --block-size replaces the default 16" grep -q "^F2   default  *old 500.0  *new 504.0 " <<< "$out"
out=$(AB_SHAPES="Z|--heads 0" AB_FORMS="" bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/new" 1); rc=$?
check "a failed run names bench's error" grep -q "^1 old Z default: error (exit 2: bench: --heads: must be at least 1)" <<< "$out"
check "  and its summary row has no ratio" grep -q "^Z    default  *old error  *new error  *new/old n/a" <<< "$out"

out=$(FAKE_NO_GPU=1 bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/new" 1); rc=$?
check "exit 77 without a card" [ $rc -eq 77 ]

bash "$SRC/scripts/gpu_ab.sh" "$T/old" 2>/dev/null; rc=$?
check "exit 2 without NEW_DIR" [ $rc -eq 2 ]
err=$(bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/new" 0 2>&1); rc=$?
grep -q "ROUNDS must be a positive integer, not '0'" <<< "$err"; named=$?
check "exit 2 on ROUNDS 0, naming it" [ $rc -eq 2 -a $named -eq 0 ]
err=$(bash "$SRC/scripts/gpu_ab.sh" "$T/old" "$T/nowhere" 2>&1); rc=$?
grep -q "nowhere/mlactl is missing" <<< "$err"; named=$?
check "exit 2 on a missing build, naming it" [ $rc -eq 2 -a $named -eq 0 ]

[ $fails -eq 0 ] && echo "test_gpu_ab: all passed" || echo "test_gpu_ab: $fails failed"
[ $fails -eq 0 ]
