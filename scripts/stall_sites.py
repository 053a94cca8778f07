#!/usr/bin/env python3
"""Where a kernel's warps wait, by SASS instruction, from an ncu source-page CSV.

Usage: stall_sites.py CSV [--top N]

CSV is what `ncu --section SourceCounters --section WarpStateStats --page source
--print-source sass --csv ...` prints (scripts/gpu_diag.sh's `source` step writes one per
run; ncu's own lines before the table are skipped). Printed, as shares of all warp stall
samples:
  by opcode   the samples of each opcode and its three largest stall reasons
  mbarrier    every SYNCS.PHASECHK try-wait with its address operand and the samples on
              the branch that loops back to it: ncu books an mbarrier wait there as a
              "long scoreboard" stall, not on the wait itself (docs/bench_notes.md step 48)
  top         the N instructions with the most samples (default 15)
Exit status: 0, or 2 when the file is missing or holds no source table.
Python's standard library only (CI and the device machine have no extra packages).
"""
import csv
import sys
from collections import defaultdict

SAMPLES = "Warp Stall Sampling (All Samples)"


def fail(msg):
    print("stall_sites.py: " + msg, file=sys.stderr)
    sys.exit(2)


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def read_rows(path):
    try:
        with open(path, newline="") as f:
            lines = f.read().splitlines()
    except OSError as e:
        fail(f"{path}: {e.strerror}")
    start = next((i for i, line in enumerate(lines) if line.startswith('"Address","Source"')), None)
    if start is None:
        fail(f"{path}: no ncu source table (a header starting \"Address\",\"Source\")")
    table = list(csv.reader(lines[start:]))
    header = table[0]
    if SAMPLES not in header:
        fail(f"{path}: the source table has no '{SAMPLES}' column (run ncu with --section WarpStateStats)")
    rows = [dict(zip(header, r)) for r in table[1:] if len(r) == len(header)]
    reasons = [h for h in header if h.startswith("stall_") and "(Not Issued)" not in h]
    return rows, reasons


def opcode(source):
    words = source.split()
    if words and words[0].startswith("@"):  # a predicate guard
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def main(argv):
    args = [a for a in argv if a != "--top"]
    top = 15
    if "--top" in argv:
        i = argv.index("--top")
        if i + 1 >= len(argv) or not argv[i + 1].isdigit() or int(argv[i + 1]) < 1:
            fail("--top needs a positive integer")
        top = int(argv[i + 1])
        args.remove(argv[i + 1])
    if len(args) != 1:
        fail("usage: stall_sites.py CSV [--top N]")
    rows, reasons = read_rows(args[0])
    total = sum(number(r[SAMPLES]) for r in rows)
    print(f"{len(rows)} instructions, {total:.0f} stall samples")
    if total == 0:
        return 0
    share = lambda x: 100.0 * x / total

    by_op, op_reasons = defaultdict(float), defaultdict(lambda: defaultdict(float))
    for r in rows:
        op = opcode(r["Source"])
        by_op[op] += number(r[SAMPLES])
        for h in reasons:
            op_reasons[op][h] += number(r[h])
    print("== by opcode (share of samples: the three largest reasons)")
    for op, s in sorted(by_op.items(), key=lambda kv: -kv[1])[:12]:
        most = sorted(op_reasons[op].items(), key=lambda kv: -kv[1])[:3]
        print(f"  {op:12s} {share(s):5.1f} %  " + ", ".join(f"{h[6:]} {share(v):.1f}" for h, v in most))

    print("== mbarrier waits (SYNCS.PHASECHK try-wait: address operand, samples on its loop's branch)")
    for i, r in enumerate(rows):
        if "SYNCS.PHASECHK" in r["Source"]:
            after = rows[i + 1] if i + 1 < len(rows) else None
            waited = number(after[SAMPLES]) if after and opcode(after["Source"]) == "BRA" else 0.0
            operand = r["Source"].split("[", 1)[1].split("]", 1)[0] if "[" in r["Source"] else "?"
            print(f"  {r['Address'][-6:]:>6s}  [{operand}]  {share(waited + number(r[SAMPLES])):5.1f} %")

    print(f"== top {top} instructions")
    for r in sorted(rows, key=lambda r: -number(r[SAMPLES]))[:top]:
        most = sorted(((h, number(r[h])) for h in reasons), key=lambda kv: -kv[1])[:2]
        print(f"  {r['Address'][-6:]:>6s} {share(number(r[SAMPLES])):5.1f} %  {r['Source'][:58]:58s} " +
              ", ".join(f"{h[6:]} {share(v):.1f}" for h, v in most))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
