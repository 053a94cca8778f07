"""scripts/capture_sglang_batch.py on fake SGLang ForwardBatches and backend metadata: the
files it writes validate, `mlactl check` passes on them with the route and (where arrays
were captured) "captured": "matches", and `mlactl run --use-captured` passes.

    python3 test_capture_sglang.py MLACTL SOURCE_DIR OUT_DIR

The fakes are built from mlactl's own `validate` and `metadata` JSON for an SGLang batch,
laid out as SGLang lays them out: a `req_to_token` pool with more rows than requests, the
requests' rows in a shuffled order (`req_pool_indices` is not 0..B-1), positions past a
request's length holding junk, persistent buffers longer than their used prefix, and the
backend's arrays under their upstream names (Triton's kv_indices int64). The pool refuses
to be copied whole: the capture may read only the rows and prefixes the step uses.
"""
import json
import os
import random
import subprocess
import sys

import numpy as np

MLACTL, SRC, OUT = sys.argv[1:4]
sys.path.insert(0, os.path.join(SRC, "scripts"))
from capture_sglang_batch import capture_sglang_batch, sglang_batch  # noqa: E402

JUNK = -7  # req_to_token past a request's length: never a slot mlactl takes


class Tensor:
    def __init__(self, v):
        self.v = v

    def tolist(self):
        return self.v

    def __getitem__(self, k):
        return Tensor(self.v[k])


class Pool:
    """req_to_token [rows, width]: rows are read one at a time, never copied whole."""

    def __init__(self, rows):
        self.rows = rows
        self.read = set()

    def __getitem__(self, r):
        self.read.add(r)
        return Tensor(self.rows[r])

    def tolist(self):
        raise AssertionError("the capture copied the whole req_to_token pool")

    @property
    def shape(self):
        return (len(self.rows), len(self.rows[0]))


class NS:
    def __init__(self, **kw):
        self.__dict__.update(kw)


class Mode:
    """A ForwardMode without a name: only its is_* predicates (is_extend is true for the
    speculative modes, as upstream)."""

    def __init__(self, mode):
        self.mode = mode

    def is_decode(self):
        return self.mode == "decode"

    def is_target_verify(self):
        return self.mode == "target_verify"

    def is_draft_extend(self):
        return self.mode == "draft_extend"

    def is_extend(self):
        return self.mode != "decode"


def mlactl(*args, rc=0):
    p = subprocess.run([MLACTL, *args], cwd=SRC, capture_output=True, text=True)
    if p.returncode != rc:
        sys.exit(f"mlactl {' '.join(args)}: exit {p.returncode}, expected {rc}\n{p.stdout}{p.stderr}")
    return p.stdout


def write_json(name, doc):
    path = os.path.join(OUT, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    return path


def source(name, backend, requests, *, arch="sm90", heads=16, sglang=None, **extra):
    doc = {"schema": 1, "name": name, "platform": {"stack": "sglang", "arch": arch}, "model": {"num_heads": heads},
           "sglang": dict(attention_backend=backend, **(sglang or {})), "requests": requests, "data": {"seed": 36}}
    for k, v in extra.items():
        doc[k] = v
    return write_json(name + "-source", doc)


def reqs(contexts, q=1):
    qs = q if isinstance(q, list) else [q] * len(contexts)
    return [{"context_len": c, "query_len": x} for c, x in zip(contexts, qs)]


def fake_step(src, mode, *, stale=None, zero_rows=(), seed=5):
    """SGLang's ForwardBatch for batch file `src`, from mlactl's JSON: (forward_batch,
    metadata JSON, validated batch, kv_indices as create_flashinfer_kv_indices_triton
    builds them, the per-slot KV lengths). stale: padding slot -> the slot whose pool row
    it still names (CUDA-graph runner); zero_rows: padding slots naming a row never written."""
    md = json.loads(mlactl("--format", "json", "metadata", src))
    b = json.loads(mlactl("--format", "json", "validate", src))["batch"]
    B = len(b["requests"])
    P = b["kv_cache"]["block_size"]
    table = b["kv_cache"]["block_table"]
    kv_len = md["seq_lens"]  # what each slot attends (verify: prefix + D)
    rng = random.Random(seed)
    width = max(len(r) * P for r in table) + 9
    nrows = B + 6
    order = rng.sample(range(nrows), nrows)
    rows = [[0] * width for _ in range(nrows)]  # a row never written holds zeros
    idx = [None] * B
    free = iter(order)
    stale = stale or {}
    for s in range(B):
        if s in stale:
            continue
        r = next(free)
        idx[s] = r
        if s in zero_rows:
            continue
        rows[r] = [table[s][t // P] * P + t % P if t < len(table[s]) * P else JUNK for t in range(width)]
    for s, owner in stale.items():
        idx[s] = idx[owner]
    pool = Pool(rows)
    # create_flashinfer_kv_indices_triton (docs/stacks/sglang.md §S3)
    kv_indices = [rows[idx[s]][t] for s in range(B) for t in range(kv_len[s])]
    fb = NS(forward_mode=mode, batch_size=B, seq_lens=Tensor(md["forward_batch_seq_lens"] + [11, 12, 13]),
            req_pool_indices=Tensor(idx + [0, 0, 0]), req_to_token_pool=NS(req_to_token=pool), spec_info=None)
    return fb, md, b, kv_indices, kv_len


def capture(name, src, fb, meta, b, **kw):
    path = os.path.join(OUT, name + ".json")
    sg = b.get("sglang", {})
    args = dict(attention_backend=sg.get("attention_backend"), num_heads=b["model"]["num_heads"],
                page_size=b["kv_cache"]["block_size"], model_dtype=b["model"]["dtype"], kv_cache_dtype=b["kv_cache"]["dtype"],
                arch=b["platform"]["arch"], num_cu=b["platform"]["num_cu"], name=name,
                num_draft_tokens=sg.get("num_draft_tokens"),
                kv_cache=NS(shape=(b["kv_cache"]["num_blocks"] * b["kv_cache"]["block_size"], 1, 576)))
    args.update(kw)
    capture_sglang_batch(fb, meta, path, **args)
    return path


def verify(name, path, src, b, *, same_table=True, want_captured=None, run=True):
    """The capture validates, reads as the source batch does, and passes `check` (route,
    captured matches) and `run --use-captured`."""
    got = json.loads(mlactl("--format", "json", "validate", path))["batch"]
    keys = ["requests", "platform", "model"] + (["kv_cache"] if same_table else [])
    for key in keys:
        if got[key] != b[key]:
            sys.exit(f"{name}: {key} differs after the capture:\n captured {got[key]}\n batch    {b[key]}")
    for key in ("forward_mode", "speculative_topk", "draft_trees", "num_draft_tokens", "attention_backend"):
        if key in b["sglang"] and got["sglang"].get(key) != b["sglang"][key]:
            sys.exit(f"{name}: sglang.{key} is {got['sglang'].get(key)}, the batch has {b['sglang'][key]}")
    doc = json.load(open(path))
    cap = sorted(doc.get("captured", {}))
    if want_captured is not None and cap != sorted(want_captured):
        sys.exit(f"{name}: captured {cap}, want {sorted(want_captured)}")
    route = json.loads(mlactl("--format", "json", "route", src))["route"]["route"]
    doc["expect"] = {"route": route}
    if cap:
        doc["expect"]["captured"] = "matches"
    with open(path, "w") as f:
        json.dump(doc, f)
    mlactl("check", path)
    if cap:
        w = json.loads(mlactl("--format", "json", "windows", path))
        if not w["captured"]["matches"] or w["mismatched_rows"] != 0:
            sys.exit(f"{name}: windows: captured arrays do not match mlactl's: {w['captured']}")
    ran = ""
    if run and cap:
        r = json.loads(mlactl("--format", "json", "run", path, "--use-captured", "--backend", "cpu"))
        if r["status"] != "passed":
            sys.exit(f"{name}: run --use-captured: {r['status']} {r.get('message')}")
        ran = ", run --use-captured passed"
    print(f"ok  {name}: {len(b['requests'])} slots, route {route}, captured {cap or 'nothing'}{ran}")
    return doc


def stale_buf(v, n=4, fill=-1):
    return Tensor(list(v) + [fill] * n)


# --- flashinfer decode: qo_indptr, kv_indptr, kv_indices -------------------------------
src = source("sg-flashinfer-decode", "flashinfer", reqs([99, 299, 6]))
fb, md, b, kvi, _ = fake_step(src, NS(name="DECODE"))  # an enum: read by its name
assert kvi == md["paged_kv_indices"], "the fake pool does not give mlactl's slots"
# FlashInfer MLA's DecodeMetadata: the planned wrapper, its buffers longer than the step
meta = NS(decode_wrapper=NS(_qo_indptr_buf=stale_buf(md["qo_indptr"]), _kv_indptr_buf=stale_buf(md["kv_indptr"]),
                            _kv_indices_buf=stale_buf(kvi, 7), _kv_len_arr_buf=stale_buf(md["kv_len_arr"])))
path = capture("sg-flashinfer-decode", src, fb, meta, b)
verify("sg-flashinfer-decode", path, src, b, want_captured=["qo_indptr", "paged_kv_indptr", "paged_kv_indices"])
used = {fb.req_pool_indices.v[s] for s in range(3)}
if fb.req_to_token_pool.req_to_token.read != used:
    sys.exit(f"sg-flashinfer-decode: read pool rows {fb.req_to_token_pool.req_to_token.read}, the step uses {used}")

# --- flashinfer target_verify (topk 1): seq_lens is the prefix, KV = prefix + D ---------
src = source("sg-flashinfer-verify", "flashinfer", reqs([50, 200], 3), sglang={"forward_mode": "target_verify", "num_draft_tokens": 3})
fb, md, b, kvi, _ = fake_step(src, Mode("target_verify"))
assert kvi == md["paged_kv_indices"]
fb.spec_info = NS(draft_token_num=3, topk=1)
meta = NS(prefill_wrapper=NS(_qo_indptr_buf=stale_buf(md["qo_indptr"]), _kv_indptr_buf=stale_buf(md["kv_indptr"]),
                             _kv_indices_buf=stale_buf(kvi, 7)), use_ragged=False)
path = capture("sg-flashinfer-verify", src, fb, meta, b, num_draft_tokens=None)  # D from spec_info.draft_token_num
verify("sg-flashinfer-verify", path, src, b, want_captured=["qo_indptr", "paged_kv_indptr", "paged_kv_indices"])

# a wrong capture is seen: kv_indptr/kv_indices over the prefix only (the drafts dropped)
pre = md["forward_batch_seq_lens"]
bad_ip = [0]
for s in pre:
    bad_ip.append(bad_ip[-1] + s)
bad_idx = [fb.req_to_token_pool.req_to_token.rows[fb.req_pool_indices.v[r]][t] for r in range(2) for t in range(pre[r])]
meta_bad = NS(qo_indptr=Tensor(md["qo_indptr"]), kv_indptr=Tensor(bad_ip), kv_indices=Tensor(bad_idx))
path = capture("sg-flashinfer-verify-bad", src, fb, meta_bad, b)
w = json.loads(mlactl("--format", "json", "windows", path, rc=1))
if w["captured"]["matches"] or w["captured"]["field"] != "paged_kv_indptr":
    sys.exit(f"sg-flashinfer-verify-bad: expected a paged_kv_indptr difference, got {w['captured']}")
print(f"ok  sg-flashinfer-verify-bad: {w['captured']['message']}")

# --- fa3 draft_extend, ragged accept lengths: cu_seqlens_q, cumsum(cache_seqlens) -------
src = source("sg-fa3-draft-extend", "fa3", reqs([700, 20, 3000], [1, 3, 2]), sglang={"forward_mode": "draft_extend", "num_draft_tokens": 3})
fb, md, b, _, _ = fake_step(src, "draft_extend")  # a plain string
fb.extend_seq_lens = Tensor([1, 3, 2])
meta = NS(cache_seqlens_int32=stale_buf(md["cache_seqlens"], fill=0), cu_seqlens_q=stale_buf(md["cu_seqlens_q"]),
          cu_seqlens_k=stale_buf(md["cu_seqlens_k"]), page_table=Tensor(md["page_table"]), max_seq_len_q=md["max_seqlen_q"])
path = capture("sg-fa3-draft-extend", src, fb, meta, b)
verify("sg-fa3-draft-extend", path, src, b, want_captured=["qo_indptr", "paged_kv_indptr"])

# under a CUDA graph: the padding slot (seq_lens 1) names request 0's stale row; D is read
# from its num_accept_tokens (the draft-extend graph runner fills steps + 1)
src = source("sg-fa3-draft-extend-padding", "fa3", reqs([700, 20], [1, 3]) + [{"padding": True}],
             sglang={"forward_mode": "draft_extend", "num_draft_tokens": 4})
fb, md, b, _, _ = fake_step(src, "ForwardMode.DRAFT_EXTEND", stale={2: 0})
fb.spec_info = NS(num_accept_tokens=Tensor([1, 3, 4, 4]))
meta = NS(cache_seqlens_int32=stale_buf(md["cache_seqlens"], fill=0), cu_seqlens_q=stale_buf(md["cu_seqlens_q"]))
path = capture("sg-fa3-draft-extend-padding", src, fb, meta, b, raw_batch_size=2, num_draft_tokens=None)
doc = verify("sg-fa3-draft-extend-padding", path, src, b, same_table=False, want_captured=["qo_indptr", "paged_kv_indptr"])
bt = doc["kv_cache"]["block_table"]
assert bt[2] == bt[0][:1] and doc["sglang"]["num_draft_tokens"] == 4 and doc["sglang"]["cuda_graph"] is True, (bt[2], doc["sglang"])

# --- flashmla, page size 64, fp8 cache: the block table in pages; nothing captured ------
src = source("sg-flashmla-decode", "flashmla", reqs([99, 1999, 4]), heads=16, kv_cache={"block_size": 64, "dtype": "fp8"})
fb, md, b, _, _ = fake_step(src, NS(name="DECODE"))
meta = NS(block_kv_indices=Tensor(md["block_kv_indices"]), flashmla_metadata=Tensor(md["tile_scheduler_metadata"]),
          num_splits=Tensor(md["num_splits"]))
path = capture("sg-flashmla-decode", src, fb, meta, b)
verify("sg-flashmla-decode", path, src, b, want_captured=[])
r = json.loads(mlactl("--format", "json", "run", path, "--backend", "cpu"))
if r["status"] != "passed":
    sys.exit(f"sg-flashmla-decode: run: {r['status']} {r.get('message')}")
print("ok  sg-flashmla-decode: run passed")

# flashmla draft_extend falls back to FlashInfer MLA: its token-granular arrays at page 64;
# the accepted tokens from spec_info.accept_length
src = source("sg-flashmla-draft-extend", "flashmla", reqs([700, 20, 3000], [1, 3, 2]), heads=32,
             sglang={"forward_mode": "draft_extend", "num_draft_tokens": 3}, kv_cache={"block_size": 64})
fb, md, b, kvi, _ = fake_step(src, Mode("draft_extend"))
assert kvi == md["paged_kv_indices"]
fb.spec_info = NS(accept_length=Tensor([1, 3, 2]))
meta = {"qo_indptr": stale_buf(md["qo_indptr"]), "kv_indptr": stale_buf(md["kv_indptr"]), "kv_indices": stale_buf(kvi, 7)}  # a dict
path = capture("sg-flashmla-draft-extend", src, fb, meta, b)
verify("sg-flashmla-draft-extend", path, src, b, want_captured=["qo_indptr", "paged_kv_indptr", "paged_kv_indices"])

# --- triton decode: kv_indptr, int64 kv_indices (numpy) ---------------------------------
src = source("sg-triton-decode", "triton", reqs([100, 30, 1000]))
fb, md, b, kvi, _ = fake_step(src, NS(name="DECODE"))
assert kvi == md["paged_kv_indices"]
meta = NS(kv_indptr=np.array(md["kv_indptr"] + [0, 0], dtype=np.int32), kv_indices=np.array(kvi + [0] * 5, dtype=np.int64),
          num_kv_splits=np.array([8, 8, 8, 8], dtype=np.int32), qo_indptr=None)
path = capture("sg-triton-decode", src, fb, meta, b)
verify("sg-triton-decode", path, src, b, want_captured=["paged_kv_indptr", "paged_kv_indices"])

# triton target_verify: only qo_indptr (kv_indptr is the prefix the extend kernel reads)
src = source("sg-triton-verify", "triton", reqs([333, 0], 4), sglang={"forward_mode": "target_verify"})
fb, md, b, _, _ = fake_step(src, Mode("target_verify"))
fb.spec_info = NS(draft_token_num=4, topk=1)
meta = NS(qo_indptr=np.array(md["qo_indptr"] + [0], dtype=np.int32), kv_indptr=np.array(md["kv_indptr"], dtype=np.int32),
          kv_indices=np.arange(333, dtype=np.int64), max_extend_len=4)
path = capture("sg-triton-verify", src, fb, meta, b, num_draft_tokens=None)
verify("sg-triton-verify", path, src, b, want_captured=["qo_indptr"])

# triton draft_extend: only qo_indptr (kv_indptr is what the extend kernel reads from the
# cache, docs/stacks/sglang.md §S7, §S16.1); accepted tokens from spec_info.num_accept_tokens
src = source("sg-triton-draft-extend", "triton", reqs([500, 9], [2, 1]), sglang={"forward_mode": "draft_extend", "num_draft_tokens": 2})
fb, md, b, _, _ = fake_step(src, Mode("draft_extend"))
fb.spec_info = NS(num_accept_tokens=Tensor([2, 1]))
meta = NS(qo_indptr=np.array(md["qo_indptr"], dtype=np.int32), kv_indptr=np.array([0, 502, 512], dtype=np.int32),
          kv_indices=np.arange(512, dtype=np.int64))
path = capture("sg-triton-draft-extend", src, fb, meta, b)
verify("sg-triton-draft-extend", path, src, b, want_captured=["qo_indptr"])

# --- CUDA-graph padding: slots past raw_batch_size read the stale pool rows they name ----
# slot 2 still names request 0's row; slot 3 a finished request's row (distinct slots)
pad_src = {"schema": 1, "name": "sg-padding", "platform": {"stack": "sglang", "arch": "sm90"}, "model": {"num_heads": 16},
           "sglang": {"attention_backend": "flashinfer"},
           "kv_cache": {"block_size": 1, "num_blocks": 4000,
                        "block_table": [[(37 * t + 11) % 4000 for t in range(101)], [3001 + 5 * t for t in range(6)], [11], [3999]]},
           "requests": reqs([100, 5]) + [{"padding": True}, {"padding": True}], "data": {"seed": 3}}
src = write_json("sg-padding-source", pad_src)
fb, md, b, kvi, _ = fake_step(src, NS(name="DECODE"), stale={2: 0})
assert kvi == md["paged_kv_indices"]
meta = NS(qo_indptr=stale_buf(md["qo_indptr"]), kv_indptr=stale_buf(md["kv_indptr"]), kv_indices=stale_buf(kvi, 7))
path = capture("sg-padding", src, fb, meta, b, raw_batch_size=2)
doc = verify("sg-padding", path, src, b, want_captured=["qo_indptr", "paged_kv_indptr", "paged_kv_indices"])
assert doc["sglang"]["cuda_graph"] is True and doc["requests"][2:] == [{"padding": True}] * 2

# a padding slot naming a row never written reads slot 0 three times (verify: fill 1 + D 2):
# fresh blocks for it, paged_kv_indices left out, the rest still compared
src = source("sg-padding-zero-row", "flashinfer", reqs([40], 2) + [{"padding": True}], sglang={"forward_mode": "target_verify"})
fb, md, b, kvi, _ = fake_step(src, NS(name="TARGET_VERIFY"), zero_rows=(1,))
meta = NS(qo_indptr=stale_buf(md["qo_indptr"]), kv_indptr=stale_buf(md["kv_indptr"]), kv_indices=stale_buf(kvi, 7))
path = capture("sg-padding-zero-row", src, fb, meta, b, raw_batch_size=1, num_draft_tokens=2)
doc = verify("sg-padding-zero-row", path, src, b, same_table=False, want_captured=["qo_indptr", "paged_kv_indptr"])
assert "fresh blocks" in doc["description"], doc["description"]

# --- topk 2 tree: draft_parents passed through to sglang.draft_trees (fa3) ---------------
src = os.path.join(SRC, "fixtures", "sglang-fa3-tree-verify.json")
fb, md, b, _, _ = fake_step(src, NS(name="TARGET_VERIFY"))
fb.spec_info = NS(draft_token_num=5, topk=2)
parents = [t["parents"] for t in b["sglang"]["draft_trees"]]
meta = NS(cache_seqlens_int32=Tensor([400, 0]), cu_seqlens_q=stale_buf(md["cu_seqlens_q"]), page_table=Tensor(md["page_table"]))
path = capture("sg-fa3-tree", src, fb, meta, b, attention_backend="fa3", num_draft_tokens=5, draft_parents=parents)
verify("sg-fa3-tree", path, src, b, want_captured=["qo_indptr"])

# topk 3 (triton): the tree read from spec_info's retrive_next_token / retrive_next_sibling
src = os.path.join(SRC, "fixtures", "sglang-triton-tree-verify.json")
fb, md, b, _, _ = fake_step(src, Mode("target_verify"))
D = 7
nxt, sib = [[-1] * D for _ in range(2)], [[-1] * D for _ in range(2)]  # a padded [max_bs, D] buffer
for i, p in enumerate(b["sglang"]["draft_trees"][0]["parents"]):
    if p < 0:
        continue
    if nxt[0][p] == -1:
        nxt[0][p] = i
    else:
        c = nxt[0][p]
        while sib[0][c] != -1:
            c = sib[0][c]
        sib[0][c] = i
fb.spec_info = NS(draft_token_num=D, topk=3, retrive_next_token=Tensor(nxt), retrive_next_sibling=Tensor(sib))
meta = NS(qo_indptr=Tensor(md["qo_indptr"] + [7, 7]), kv_indptr=Tensor(md["kv_indptr"]))
path = capture("sg-triton-tree", src, fb, meta, b, attention_backend="triton", num_draft_tokens=None)
verify("sg-triton-tree", path, src, b, want_captured=["qo_indptr"])

# --- AITER (gfx950): qo_indptr, kv_indptr, kv_indices, kv_last_page_len -----------------
src = source("sg-aiter-decode", "aiter", reqs([99, 1000]), arch="gfx950", heads=16)
fb, md, b, kvi, _ = fake_step(src, NS(name="DECODE"))
assert kvi == md["paged_kv_indices"]
meta = NS(qo_indptr=stale_buf(md["qo_indptr"]), kv_indptr=stale_buf(md["kv_indptr"]), kv_indices=stale_buf(kvi, 7),
          kv_last_page_len=Tensor([1] * 8))
path = capture("sg-aiter-decode", src, fb, meta, b)
# SGLang's AITER routes have no planner in mlactl yet: no run
verify("sg-aiter-decode", path, src, b, want_captured=["qo_indptr", "paged_kv_indptr", "paged_kv_indices", "paged_kv_last_page_len"], run=False)


# --- errors name the field -----------------------------------------------------------
def refuses(what, want, fn):
    try:
        fn()
    except ValueError as e:
        if not all(w in str(e) for w in want):
            sys.exit(f"{what}: the ValueError does not name {want}: {e}")
        print(f"ok  {what}: {e}")
        return
    sys.exit(f"{what}: no ValueError")


src = source("sg-flashmla-err", "flashmla", reqs([99, 199]), kv_cache={"block_size": 64})
fb, md, b, _, _ = fake_step(src, NS(name="DECODE"))
row = fb.req_to_token_pool.req_to_token.rows[fb.req_pool_indices.v[1]]
row[70], row[71] = row[71], row[70]  # two tokens of request 1's second page swapped
base = dict(attention_backend="flashmla", num_heads=16, model_dtype="bf16", kv_cache_dtype="auto", num_cu=132)
refuses("non-page-contiguous pool", ["req_to_token", "request 1", "position 70", "page-contiguous"], lambda: sglang_batch(fb, None, **base))
row[70], row[71] = row[71], row[70]
sglang_batch(fb, None, **base)  # restored: accepted
fb.forward_mode = NS(name="IDLE")
refuses("unknown forward mode (enum)", ["forward_mode", "IDLE"], lambda: sglang_batch(fb, None, **base))
fb.forward_mode = "extend"
refuses("unknown forward mode (string)", ["forward_mode", "extend"], lambda: sglang_batch(fb, None, **base))
fb.forward_mode = NS(is_decode=lambda: False, is_target_verify=lambda: False, is_draft_extend=lambda: False)
refuses("unknown forward mode (predicates)", ["forward_mode"], lambda: sglang_batch(fb, None, **base))
fb.forward_mode = "decode"
refuses("flashmla at page size 1", ["page_size", "64"], lambda: sglang_batch(fb, None, **dict(base, page_size=1)))
refuses("unknown backend", ["attention_backend", "cutlass_mla"], lambda: sglang_batch(fb, None, **dict(base, attention_backend="cutlass_mla")))
fb.forward_mode = "target_verify"
refuses("verify without D", ["num_draft_tokens"], lambda: sglang_batch(fb, None, **base))
refuses("a tree at topk 1", ["draft_parents"], lambda: sglang_batch(fb, None, **dict(base, num_draft_tokens=2, draft_parents=[-1, 0])))
fb.forward_mode = "decode"
refuses("size cap", ["max_bytes"], lambda: sglang_batch(fb, None, **dict(base, max_bytes=100)))
