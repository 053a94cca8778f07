"""`metadata --format csv` carries every field of `metadata --format json` (issue 40; docs/design.md
§6): each JSON member (envelope aside) flattened to `field,index,value` records must come back
from the CSV with the same values, in the same order, and nothing else.

usage: metadata_csv_complete.py MLACTL SOURCE_DIR
"""
import csv
import io
import json
import subprocess
import sys

MLACTL, SRC = sys.argv[1], sys.argv[2]
BATCHES = [
    ["fixtures/seed000-verify-causal.json"],          # the R0 flatten, head padding 12 -> 16, notes
    ["fixtures/cuda-flashmla-worked.json"],           # a stack's arrays, rows of a table
    ["fixtures/aiter-vector-a.json"],
    ["--heads", "16", "--qlen", "1", "--context", "100,700,40"],
]
ENVELOPE = {"schema_version", "tool", "argv", "command"}


def flatten(j):
    rows = []
    for k, v in j.items():
        if k in ENVELOPE:
            continue
        if isinstance(v, dict):
            for k2, v2 in v.items():
                name = f"{k}.{k2}"
                if isinstance(v2, list):
                    rows += [(name, str(i), str(x)) for i, x in enumerate(v2)]
                else:
                    rows.append((name, "", str(v2)))
        elif isinstance(v, list):
            for i, x in enumerate(v):
                if isinstance(x, list):
                    rows += [(f"{k}[{i}]", str(c), str(y)) for c, y in enumerate(x)]
                else:
                    rows.append((k, str(i), str(x)))
        else:
            rows.append((k, "", str(v).lower() if isinstance(v, bool) else str(v)))
    return rows


bad = 0
for args in BATCHES:
    js = subprocess.run([MLACTL, "--format", "json", "metadata"] + args, cwd=SRC, capture_output=True, text=True, check=True).stdout
    cs = subprocess.run([MLACTL, "--format", "csv", "metadata"] + args, cwd=SRC, capture_output=True, text=True, check=True).stdout
    want = flatten(json.loads(js))
    rec = list(csv.reader(io.StringIO(cs)))
    if rec[0] != ["field", "index", "value"]:
        print(f"{args}: header {rec[0]}")
        bad += 1
        continue
    got = [tuple(r) for r in rec[1:]]
    if got != want:
        for i, (g, w) in enumerate(zip(got, want)):
            if g != w:
                print(f"{args}: record {i + 1}: CSV {g}, JSON {w}")
                break
        else:
            print(f"{args}: CSV has {len(got)} records, the JSON {len(want)} values")
        bad += 1
    else:
        print(f"ok {args}: {len(got)} records, every JSON field")
sys.exit(1 if bad else 0)
