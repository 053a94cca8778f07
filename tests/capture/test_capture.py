"""scripts/capture_vllm_batch.py on fake vLLM metadata objects: the files it writes
validate, and their captured arrays match what mlactl builds for the same batch.

    python3 test_capture.py MLACTL SOURCE_DIR OUT_DIR

The fakes are built from mlactl's own `metadata` and `validate` JSON for a batch, so a
correct capture of a correct stack must come back as "captured: matches"; the arrays
sit behind `.tolist()`, as torch tensors and numpy arrays do.
"""
import json
import os
import subprocess
import sys

MLACTL, SRC, OUT = sys.argv[1:4]
sys.path.insert(0, os.path.join(SRC, "scripts"))
from capture_vllm_batch import capture_mla_batch, mla_batch  # noqa: E402


class Tensor:
    def __init__(self, v):
        self.v = v

    def tolist(self):
        return self.v


class NS:
    def __init__(self, **kw):
        self.__dict__.update(kw)


def mlactl(*args, rc=0):
    p = subprocess.run([MLACTL, *args], cwd=SRC, capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit(f"mlactl {' '.join(args)}: exit {p.returncode}, expected {rc}\n{p.stdout}{p.stderr}")
    return p.stdout


def fake_metadata(batch_args, flatten=False):
    """The attention metadata vLLM would hand the kernel for a batch, from mlactl's JSON."""
    md = json.loads(mlactl("--format", "json", "metadata", *batch_args, "--flatten", "on" if flatten else "off"))
    b = json.loads(mlactl("--format", "json", "validate", *batch_args))["batch"]
    indptr, indices = md["paged_kv_indptr"], md["paged_kv_indices"]
    if flatten:
        indptr, indices = md["r0_verify_flatten"]["indptr"], md["r0_verify_flatten"]["indices"]
    # a persistent buffer is longer than its used prefix: the capture must cut it
    decode = NS(qo_indptr=Tensor(md["qo_indptr"]), paged_kv_indptr=Tensor(indptr),
                paged_kv_indices=Tensor(indices + [-1] * 7),
                paged_kv_last_page_len=Tensor(md["paged_kv_last_page_len"]),
                seq_lens=Tensor(md["seq_lens"]), block_table=Tensor(b["kv_cache"]["block_table"]),
                min_kv_seq_len=md["min_kv_seq_len"]["r0" if flatten else "r1"])
    real = sum(1 for r in b["requests"] if not r.get("padding"))
    return NS(decode=decode), b, real


def check(name, batch_args, flatten=False, **kw):
    meta, b, real = fake_metadata(batch_args, flatten)
    path = os.path.join(OUT, name + ".json")
    capture_mla_batch(meta, path, num_heads=b["model"]["num_heads"], block_size=b["kv_cache"]["block_size"],
                      num_reqs=real, arch=b["platform"]["arch"], num_cu=b["platform"]["num_cu"],
                      model_dtype=b["model"]["dtype"], kv_cache_dtype=b["kv_cache"]["dtype"],
                      mtp_qlen=b["decode"]["mtp_qlen"], causal=b["decode"]["causal"], name=name,
                      kv_cache=NS(shape=(b["kv_cache"]["num_blocks"], b["kv_cache"]["block_size"], 576)), **kw)
    v = json.loads(mlactl("--format", "json", "validate", path))
    got = v["batch"]
    for key in ("model", "kv_cache", "decode", "requests", "platform"):
        if got[key] != b[key]:
            sys.exit(f"{name}: {key} differs after the capture:\n captured {got[key]}\n batch    {b[key]}")
    w = json.loads(mlactl("--format", "json", "windows", path))
    if not w["captured"]["matches"] or w["mismatched_rows"] != 0:
        sys.exit(f"{name}: captured arrays do not match mlactl's: {w['captured']}")
    print(f"ok  {name}: {len(b['requests'])} slots, route {w['route']['route']}, captured matches")
    return path


# the seed-000 verify block with a cudagraph padding slot, per-request index pointers
check("capture-seed000-padding", ["fixtures/seed000-verify-causal.json"])
# the same block as the R0 small-head flatten hands Gluon: one indptr entry per query row
check("capture-seed000-flatten", ["fixtures/seed000-verify-causal.json"], flatten=True)
# fp8 KV cache (q stays bf16: the a16w8 path), block size 16, two padding slots
check("capture-fp8", ["--heads", "16", "--qlen", "2", "--context", "100,250,3", "--padding", "2",
                      "--kv-dtype", "fp8", "--block-size", "16", "--layout", "shuffled"])

# a wrong capture is seen: the defect's broadcast windows, captured, differ from mlactl's
meta, b, real = fake_metadata(["fixtures/seed000-verify-causal.json", "--inject", "verify-window-broadcast"], flatten=True)
path = os.path.join(OUT, "capture-broadcast.json")
capture_mla_batch(meta, path, num_heads=12, block_size=1, num_reqs=real, arch="gfx950", num_cu=256, mtp_qlen=8)
w = json.loads(mlactl("--format", "json", "windows", path, rc=1))
if w["captured"]["matches"] or w["mismatched_rows"] != 28:
    sys.exit(f"capture-broadcast: expected a captured difference and 28 mismatched rows, got {w['captured']}, {w['mismatched_rows']}")
print("ok  capture-broadcast: captured paged_kv_indptr differs, 28 rows mismatched")

# the size cap refuses a capture instead of writing a huge file
try:
    mla_batch(meta, num_heads=12, block_size=1, num_reqs=real, arch="gfx950", max_bytes=100)
    sys.exit("max_bytes=100 did not refuse")
except ValueError as e:
    print(f"ok  size cap: {e}")
