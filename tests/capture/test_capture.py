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
                      aiter=b["platform"].get("aiter"),
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


# --- vLLM CUDA (sm90): FlashMLA's and FA-MLA's decode metadata -------------------------
def check_cuda(name, batch_args, backend, varlen=False, **kw):
    """A capture of FLASHMLA's / FLASH_ATTN_MLA's decode metadata, built from mlactl's JSON."""
    md = json.loads(mlactl("--format", "json", "metadata", *batch_args))
    b = json.loads(mlactl("--format", "json", "validate", *batch_args))["batch"]
    real = sum(1 for r in b["requests"] if not r.get("padding"))
    fields = dict(block_table=Tensor(b["kv_cache"]["block_table"]),
                  seq_lens=Tensor(md["seq_lens"] + [0] * 3))  # a persistent buffer's stale tail
    if backend == "FLASHMLA":
        fields.update(tile_scheduler_metadata=Tensor(md["tile_scheduler_metadata"]), num_splits=Tensor(md["num_splits"]))
    if varlen:
        fields.update(query_start_loc=Tensor(md["qo_indptr"]))
    meta = NS(decode=NS(**fields), num_decode_tokens=md["qo_indptr"][-1])
    path = os.path.join(OUT, name + ".json")
    capture_mla_batch(meta, path, num_heads=b["model"]["num_heads"], block_size=b["kv_cache"]["block_size"],
                      num_reqs=real, arch="sm90", num_cu=b["platform"]["num_cu"], model_dtype=b["model"]["dtype"],
                      kv_cache_dtype=b["kv_cache"]["dtype"], kv_scale=b["kv_cache"]["scale"], attention_backend=backend,
                      max_num_seqs=b["decode"]["max_num_seqs"], name=name,
                      kv_cache=NS(shape=(b["kv_cache"]["num_blocks"], b["kv_cache"]["block_size"], 576)), **kw)
    got = json.loads(mlactl("--format", "json", "validate", path))["batch"]
    for key in ("kv_cache", "requests", "platform"):
        if got[key] != b[key]:
            sys.exit(f"{name}: {key} differs after the capture:\n captured {got[key]}\n batch    {b[key]}")
    if got["decode"]["attention_backend"] != backend:
        sys.exit(f"{name}: decode.attention_backend {got['decode'].get('attention_backend')}, want {backend}")
    s = json.loads(mlactl("--format", "json", "schedule", path))
    if "captured" not in s or not s["captured"]["matches"]:
        sys.exit(f"{name}: the captured arrays do not match mlactl's plan: {s.get('captured')}")
    print(f"ok  {name}: {len(b['requests'])} slots, route {s['route']['route']}, captured {', '.join(s['captured']['compared'])} match")
    return path


check_cuda("capture-cuda-flashmla-fp8", ["--arch", "sm90", "--heads", "16", "--qlen", "2", "--context", "100,2000,5",
                                         "--kv-dtype", "fp8", "--attention-backend", "FLASHMLA", "--block-size", "64"], "FLASHMLA")
check_cuda("capture-cuda-flashmla-bf16-padding", ["--arch", "sm90", "--heads", "128", "--qlen", "1", "--context", "700,64",
                                                  "--padding", "2", "--attention-backend", "FLASHMLA", "--block-size", "64"], "FLASHMLA")
varlen = os.path.join(OUT, "fa-varlen-batch.json")
with open(varlen, "w") as f:
    json.dump({"schema": 1, "name": "fa-varlen", "platform": {"arch": "sm90"}, "model": {"num_heads": 16},
               "kv_cache": {"block_size": 16},
               "decode": {"attention_backend": "FLASH_ATTN_MLA", "causal": True},
               "requests": [{"context_len": 300, "query_len": 1}, {"context_len": 40, "query_len": 3},
                            {"context_len": 1000, "query_len": 2}]}, f)
check_cuda("capture-cuda-fa-mla-varlen", [varlen], "FLASH_ATTN_MLA", varlen=True)

# a FlashMLA capture that lost a split is seen
md = json.loads(mlactl("--format", "json", "metadata", "--arch", "sm90", "--heads", "16", "--context", "100,2000",
                       "--attention-backend", "FLASHMLA", "--block-size", "64"))
bad = list(md["num_splits"])
bad[-1] -= 1
meta = NS(decode=NS(block_table=Tensor([[0, 1], list(range(2, 34))]), seq_lens=Tensor(md["seq_lens"]),
                    tile_scheduler_metadata=Tensor(md["tile_scheduler_metadata"]), num_splits=Tensor(bad)),
          num_decode_tokens=2)
path = os.path.join(OUT, "capture-cuda-bad.json")
capture_mla_batch(meta, path, num_heads=16, block_size=64, arch="sm90", num_cu=132, attention_backend="FLASHMLA",
                  kv_cache=NS(shape=(34, 64, 576)))
p = subprocess.run([MLACTL, "schedule", path], cwd=SRC, capture_output=True, text=True)
if p.returncode not in (1, 3) or "num_splits" not in p.stdout + p.stderr:
    sys.exit(f"capture-cuda-bad: want a finding naming num_splits, got exit {p.returncode}\n{p.stdout}{p.stderr}")
print(f"ok  capture-cuda-bad: exit {p.returncode}, num_splits named")

# --- the tensors: q and the used KV blocks, run with `run --inputs DIR` -----------------
import numpy as np  # noqa: E402

rng = np.random.default_rng(7)
for name, args in [("inputs-aiter-fp8", ["--heads", "16", "--qlen", "2", "--context", "100,250,3", "--padding", "1",
                                         "--kv-dtype", "fp8", "--block-size", "16", "--layout", "shuffled"]),
                   ("inputs-cuda-bf16", ["--arch", "sm90", "--heads", "16", "--qlen", "1", "--context", "300,77",
                                         "--attention-backend", "FLASHMLA", "--block-size", "64"])]:
    b = json.loads(mlactl("--format", "json", "validate", *args))["batch"]
    win = json.loads(mlactl("--format", "json", "windows", *args))
    rows = len(win["rows"])
    nb, bs = b["kv_cache"]["num_blocks"], b["kv_cache"]["block_size"]
    q = rng.standard_normal((rows, b["model"]["num_heads"], 576)).astype(np.float32)
    q_scale = 1.0

    def fp8_codes(shape):  # e4m3 codes, no NaN (0x7f/0xff)
        return rng.integers(0, 0x70, size=shape, dtype=np.uint8) | (rng.integers(0, 2, size=shape, dtype=np.uint8) << 7)
    if b["kv_cache"]["dtype"] == "fp8":
        kv = fp8_codes((nb, bs, 576))
        q, q_scale = fp8_codes(q.shape), 0.125  # mlactl's rule: decode q is fp8 with an fp8 cache
    else:
        kv = rng.uniform(-1, 1, size=(nb, bs, 576)).astype(np.float32)
    if "--arch" in args:
        md = json.loads(mlactl("--format", "json", "metadata", *args))
        meta = NS(decode=NS(block_table=Tensor(b["kv_cache"]["block_table"]), seq_lens=Tensor(md["seq_lens"]),
                            tile_scheduler_metadata=Tensor(md["tile_scheduler_metadata"]), num_splits=Tensor(md["num_splits"])),
                  num_decode_tokens=rows)
        extra = dict(arch="sm90", attention_backend="FLASHMLA")
    else:
        meta, _, _ = fake_metadata(args)
        extra = dict(arch=b["platform"]["arch"], mtp_qlen=b["decode"]["mtp_qlen"])
    real = sum(1 for r in b["requests"] if not r.get("padding"))
    path, idir = os.path.join(OUT, name + ".json"), os.path.join(OUT, name + "-inputs")
    # the cap refuses before anything is written
    try:
        capture_mla_batch(meta, path, num_heads=16, block_size=bs, num_reqs=real, num_cu=b["platform"]["num_cu"],
                          kv_cache_dtype=b["kv_cache"]["dtype"], kv_cache=kv, inputs_dir=idir, q=q, q_scale=q_scale, max_input_bytes=1000, **extra)
        sys.exit(f"{name}: max_input_bytes=1000 did not refuse")
    except ValueError as e:
        assert "max_input_bytes" in str(e), e
    capture_mla_batch(meta, path, num_heads=16, block_size=bs, num_reqs=real, num_cu=b["platform"]["num_cu"],
                      kv_cache_dtype=b["kv_cache"]["dtype"], kv_cache=kv, inputs_dir=idir, q=q, q_scale=q_scale, **extra)
    used = np.load(os.path.join(idir, "kv_block_ids.npy"))
    table_ids = sorted({blk for row in json.load(open(path))["kv_cache"]["block_table"] for blk in row})
    if sorted(used.tolist()) != table_ids:
        sys.exit(f"{name}: copied blocks {sorted(used.tolist())}, the block table uses {table_ids}")
    mine = json.loads(mlactl("--format", "json", "run", path, "--backend", "cpu"))
    theirs = json.loads(mlactl("--format", "json", "run", path, "--backend", "cpu", "--inputs", idir))
    if theirs["status"] != "passed":
        sys.exit(f"{name}: run --inputs: {theirs['status']} {theirs.get('message')}")
    if theirs["compare"]["max_abs_at"]["reference"] == mine["compare"]["max_abs_at"]["reference"]:
        sys.exit(f"{name}: run --inputs computed the same reference as the generated inputs: the captured tensors were not used")
    # a block the step reads, left out of the capture, is named
    np.save(os.path.join(idir, "kv_block_ids.npy"), used[1:].copy())
    blocks = np.load(os.path.join(idir, "kv_blocks.npy"))
    np.save(os.path.join(idir, "kv_blocks.npy"), blocks[1:].copy())
    p = subprocess.run([MLACTL, "run", path, "--backend", "cpu", "--inputs", idir], cwd=SRC, capture_output=True, text=True)
    if p.returncode != 3 or f"lacks block {int(used[0])}" not in p.stderr:
        sys.exit(f"{name}: a missing block: want exit 3 naming block {int(used[0])}, got {p.returncode}: {p.stderr}")
    print(f"ok  {name}: {rows} q rows, {len(used)} of {nb} blocks copied, run --inputs passed on the captured tensors; "
          f"a missing block is exit 3")
