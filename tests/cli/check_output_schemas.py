#!/usr/bin/env python3
"""Every verb's --format json output validates against `mlactl schema --output VERB`.

  check_output_schemas.py MLACTL WORKDIR

The validator is python3-jsonschema (Debian), not mlactl's code: the schemas are checked
against the draft 2020-12 meta-schema, then the JSON of every verb, over every fixture and
a set of inline batches chosen to reach each optional member (captured diffs, probes, the
vLLM CUDA stack's own arrays, refusals, errors, check --list and its JSON Lines), is
validated against its verb's schema. A member a printer adds without its schema fails here,
since the schemas' objects are closed (cli/output_schema.cpp).
"""
import atexit
import concurrent.futures
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile

try:
    import jsonschema
except ImportError:
    sys.exit("check_output_schemas: python3-jsonschema is missing (scripts/deps.sh installs it)")

MLACTL, WORKDIR = sys.argv[1], sys.argv[2]
NAMES = ["validate", "metadata", "windows", "route", "schedule", "run", "check", "defects", "bench", "check-jsonl", "error"]


def mlactl(args, fmt="json"):
    p = subprocess.run([MLACTL, "--format", fmt] + args, cwd=WORKDIR, capture_output=True, timeout=300)
    return p.returncode, p.stdout.decode("utf-8")


def load_schema(name):
    rc, out = mlactl(["schema", "--output", name])
    if rc != 0:
        sys.exit(f"schema --output {name}: exit {rc}")
    s = json.loads(out)
    jsonschema.Draft202012Validator.check_schema(s)
    return jsonschema.Draft202012Validator(s)


validators = {n: load_schema(n) for n in NAMES}
# a name schema does not know is a usage error (exit 2)
rc, _ = mlactl(["schema", "--output", "nonsense"])
assert rc == 2, f"schema --output nonsense: exit {rc}, want 2"

# a fixture expecting a stage-1 kernel (expect.stage1): on the CPU executor not checked, so its
# case record has a not_checked entry beside executor, stage1 and reduce (null)
STAGE1_DIR = tempfile.mkdtemp(prefix="mlactl-schemas-")
atexit.register(shutil.rmtree, STAGE1_DIR, True)
STAGE1_FIXTURE = os.path.join(STAGE1_DIR, "stage1-expected.json")
with open(STAGE1_FIXTURE, "w") as f:
    json.dump({"schema": 1, "name": "stage1-expected", "model": {"num_heads": 16}, "requests": [{"context_len": 100, "query_len": 1}],
               "expect": {"run": "passed", "stage1": {"kernel": "wgmma", "schedule": "rows-64", "precision": "p-split"}}}, f)

fixtures = sorted(os.path.relpath(f, WORKDIR) for f in glob.glob(os.path.join(WORKDIR, "fixtures", "*.json")))
C64 = ",".join(["300"] * 64)
jobs = []  # (verb whose schema applies, args, format)
for f in fixtures:
    for verb in ["validate", "metadata", "windows", "route", "schedule"]:
        jobs.append((verb, [verb, f], "json"))
    jobs.append(("run", ["run", f, "--backend", "cpu"], "json"))
jobs += [
    ("run", ["run", "fixtures/seed000-verify-causal.json", "--backend", "cpu", "--probe", "windows"], "json"),
    ("run", ["run", "fixtures/seed000-verify-causal.json", "--backend", "cpu", "--inject", "verify-window-broadcast"], "json"),
    ("run", ["run", "fixtures/worklist-kv-end-shifted.json", "--backend", "cpu"], "json"),
    ("run", ["run", "fixtures/seed000-verify-causal.json", "--backend", "gpu"], "json"),  # skipped without a GPU
    ("run", ["run", "--arch", "sm90", "--heads", "128", "--qlen", "2", "--context", C64, "--backend", "cpu"], "json"),
    ("schedule", ["schedule", "--arch", "sm90", "--heads", "128", "--qlen", "1", "--context", C64, "--attention-backend", "flashmla"], "json"),
    ("schedule", ["schedule", "--heads", "16", "--qlen", "1", "--context", "100,700,40", "--num-cu", "4", "--planner", ",".join([
        "aiter", "gluon", "gluon-split", "triton", "nonpersistent"])], "json"),
    ("metadata", ["metadata", "--arch", "sm90", "--heads", "64", "--qlen", "2", "--context", "10,2000", "--kv-dtype", "fp8",
                  "--attention-backend", "flashmla"], "json"),
    ("windows", ["windows", "fixtures/seed000-verify-causal.json", "--inject", "verify-window-broadcast"], "json"),
    ("route", ["route", "--heads", "12", "--qlen", "2", "--context", "100,200", "--kv-dtype", "fp8", "--non-causal"], "json"),
    ("check", ["check", "fixtures", "--backend", "cpu", "-j", "2"], "json"),
    ("check", ["check", "fixtures", "--list"], "json"),
    ("check", ["check", "fixtures/seed000-verify-causal.json", "--backend", "gpu"], "json"),
    ("check", ["check", STAGE1_FIXTURE, "--backend", "cpu"], "json"),
    ("defects", ["defects"], "json"),
    ("defects", ["defects", "verify-window-broadcast"], "json"),
    ("bench", ["bench", "fixtures/noncausal-draft-block.json", "--iters", "5"], "json"),
    # errors: each verb's schema admits the error document
    ("run", ["run", "fixtures/does-not-exist.json"], "json"),
    ("metadata", ["metadata", "--heads", "0", "--context", "10"], "json"),
    ("schedule", ["schedule", "--no-such-option"], "json"),
    ("error", ["no-such-verb"], "json"),
    ("error", ["validate", "tests/cli/bad/" + sorted(os.listdir(os.path.join(WORKDIR, "tests/cli/bad")))[0]], "json"),
    ("check", ["check", "fixtures", "--filter", "matches-nothing-at-all"], "json"),
    # JSON Lines: every line against check-jsonl
    ("check-jsonl", ["check", "fixtures", "--backend", "cpu"], "jsonl"),
    ("check-jsonl", ["check", "fixtures", "--list"], "jsonl"),
    ("check-jsonl", ["check", STAGE1_FIXTURE, "--backend", "cpu"], "jsonl"),
    ("check-jsonl", ["check", "fixtures", "--filter", "matches-nothing-at-all"], "jsonl"),
]


# members the jobs above must reach, so the optional parts of the schemas are exercised
MUST_SEE = {
    "run": {"position_probe", "captured", "compare", "reason", "position_audit", "repro", "executor", "stage1", "reduce"},
    "schedule": {"captured", "plans.buffers", "plans.num_splits", "plans.schedule_words"},
    "windows": {"captured", "rows.metadata_begin"},
    "metadata": {"r0_verify_flatten", "tile_scheduler_metadata"},
    "check": {"results", "cases", "results.not_checked", "results.executor", "results.stage1", "results.reduce"},
    "defects": {"defects", "explanation"},
    "route": {"route.error_type", "route.backend", "route.aiter_kernel"},
}
seen = {v: set() for v in MUST_SEE}


def collect(name, inst):
    if name not in seen or not isinstance(inst, dict):
        return
    for k, v in inst.items():
        seen[name].add(k)
        items = v if isinstance(v, list) else [v]
        for x in items:
            if isinstance(x, dict):
                for k2 in x:
                    seen[name].add(f"{k}.{k2}")


def validate(job):
    name, args, fmt = job
    rc, out = mlactl(args, fmt)
    where = f"mlactl --format {fmt} {' '.join(args)[:160]} (exit {rc})"
    docs = [out] if fmt == "json" else [l for l in out.splitlines() if l]
    if not docs or not docs[0].strip():
        return [f"{where}: printed no JSON"]
    problems = []
    for d in docs:
        try:
            inst = json.loads(d)
        except json.JSONDecodeError as e:
            return [f"{where}: not JSON: {e}"]
        collect(name, inst)
        for err in validators[name].iter_errors(inst):
            # the deepest cause says which member is wrong
            best = jsonschema.exceptions.best_match([err])
            problems.append(f"{where}: {name} schema: at /{'/'.join(str(p) for p in best.absolute_path)}: {best.message[:300]}")
            if len(problems) > 3:
                break
    return problems


failures = 0
with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
    for job, problems in zip(jobs, pool.map(validate, jobs)):
        for p in problems:
            print("FAIL ", p)
        failures += len(problems) > 0
for verb, want in MUST_SEE.items():
    for m in sorted(want - seen[verb]):
        print(f"FAIL  no job printed {verb}'s member {m}: the schema's part for it went untested")
        failures += 1
print(f"{len(jobs)} outputs validated against {len(NAMES)} schemas, {failures} failed")
sys.exit(1 if failures else 0)
