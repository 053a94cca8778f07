"""Write one vLLM MLA decode step as an mlactl batch file (schema 1, docs/design.md §2).

Import it (or paste it) where the stack's MLA decode metadata has just been built, e.g.
at the top of vLLM's ``AiterMLAImpl.forward_mqa`` on ROCm::

    import sys; sys.path.insert(0, "/path/to/mlactl/scripts")
    from capture_vllm_batch import capture_mla_batch
    capture_mla_batch(attn_metadata, "/tmp/step.json",
                      num_heads=self.num_heads, block_size=kv_cache.shape[1],
                      num_reqs=num_actual_reqs,            # the unpadded count
                      kv_cache=kv_cache,                   # for num_blocks
                      model_dtype=q.dtype, kv_cache_dtype=self.kv_cache_dtype,
                      mtp_qlen=1 + num_speculative_tokens, causal=True)

then ``mlactl windows /tmp/step.json`` names the first wrong field and ``mlactl run
/tmp/step.json --use-captured`` runs exactly what the stack ran.

On CUDA (vLLM's FLASHMLA, FLASH_ATTN_MLA or TRITON_MLA on Hopper), the same call in the
backend's ``forward_mqa`` with ``arch="sm90"`` and ``attention_backend="FLASHMLA"`` (or
``"FLASH_ATTN_MLA"``, ``"TRITON_MLA"``) reads the decode metadata those backends build:
``block_table`` and ``seq_lens``; FlashMLA's ``tile_scheduler_metadata`` and
``num_splits``; FA-MLA's ``query_start_loc`` and ``max_num_splits``. FlashMLA's queries
are uniform: give ``num_decode_tokens`` (the q rows) when the metadata has no
``query_start_loc``.

With ``inputs_dir=`` and ``q=`` (the ``[tokens, heads, 576]`` tensor the kernel gets:
``torch.cat([ql_nope, q_pe], -1)``) and ``kv_cache=``, it also writes q and the KV blocks
the step reads (only those) as ``.npy`` next to an ``inputs.json`` -- the encodings of the
external-executor protocol (docs/executor-protocol.md) -- so ``mlactl run /tmp/step.json
--inputs DIR`` runs the captured tensors instead of generated ones. ``max_input_bytes``
caps what it copies off the device.

What it writes: ``platform`` (arch and CU count, read from the device when not given;
``aiter=`` names the AITER rule set the installed AITER matches, e.g. "2026.08", else
mlactl's default, the newest),
``model`` and ``kv_cache`` dtypes, the ``decode`` fields mlactl's builder needs
(``causal``, ``mtp_qlen``, ``num_decode_tokens`` of the cudagraph-padded step,
``max_num_seqs``, ``q_dtype``), one request per slot with cudagraph padding slots as
``{"padding": true}``, the used prefix of every block-table row, and every captured
array under its vLLM/AITER name (``qo_indptr``, ``paged_kv_indptr`` -- per request, or
one entry per query row for the R0 verify flatten --, ``paged_kv_indices``,
``paged_kv_last_page_len``, ``min_kv_seq_len``, ``work_indptr``, ``work_info_set``,
``reduce_indptr``, ``reduce_final_map``, ``reduce_partial_map``).

Only the standard library: tensors are read through ``.tolist()``, so numpy arrays and
torch tensors both work (and the tests use plain fakes).
"""
import json
import math
import os

import tempfile

__all__ = ["mla_batch", "capture_mla_batch", "write_inputs"]

_DTYPES = {
    "bfloat16": "bf16", "bf16": "bf16",
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "fp8": "fp8", "fp8_e4m3": "fp8", "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8",
    "auto": "auto",
}

_WORK_ARRAYS = ("work_indptr", "work_info_set", "reduce_indptr", "reduce_final_map", "reduce_partial_map")
_CUDA_BACKENDS = ("FLASHMLA", "FLASH_ATTN_MLA", "TRITON_MLA")


def _dtype(x, what):
    name = str(x).replace("torch.", "")
    if name not in _DTYPES:
        raise ValueError(f"{what}: {x!r} is not a dtype mlactl models ({', '.join(sorted(set(_DTYPES.values())))})")
    return _DTYPES[name]


def _ints(x):
    """A tensor, array or list as a flat list of Python ints."""
    v = x.tolist() if hasattr(x, "tolist") else list(x)
    out = []
    stack = [v]
    while stack:  # flatten nested lists in order
        top = stack.pop()
        if isinstance(top, (list, tuple)):
            stack.extend(reversed(top))
        else:
            out.append(int(top))
    return out


def _rows(x):
    """A 2-D tensor (block table) as a list of lists of ints."""
    v = x.tolist() if hasattr(x, "tolist") else [list(r) for r in x]
    return [[int(e) for e in row] for row in v]


def _device_platform():
    try:  # ROCm torch: gcnArchName "gfx950:sramecc+:xnack-"
        import torch
        p = torch.cuda.get_device_properties(torch.cuda.current_device())
        return getattr(p, "gcnArchName", "").split(":")[0] or None, p.multi_processor_count
    except Exception:
        return None, None


def _query_lens(attn_metadata, d, slots, num_decode_tokens, num_reqs):
    """Per-slot q lengths: qo_indptr (AITER), query_start_loc (FA-MLA), else uniform."""
    for src in (d, attn_metadata):
        for name in ("qo_indptr", "query_start_loc"):
            t = getattr(src, name, None)
            if t is not None:
                v = _ints(t)
                if len(v) < slots + 1:
                    raise ValueError(f"{name} has {len(v)} entries for {slots} slots")
                return [v[i + 1] - v[i] for i in range(slots)], v[:slots + 1]
    tokens = num_decode_tokens if num_decode_tokens is not None else getattr(attn_metadata, "num_decode_tokens", None)
    if tokens is None:
        raise ValueError("no qo_indptr or query_start_loc in the metadata: give num_decode_tokens (the q rows)")
    # FlashMLA's queries are uniform: the q rows over all slots (a cudagraph-padded q), or
    # over the real requests when the padding slots carry no rows
    for n in (slots, num_reqs):
        if n and tokens % n == 0:
            q = tokens // n
            return [q] * slots, [min(i, n) * q for i in range(slots + 1)]
    raise ValueError(f"num_decode_tokens {tokens} is not a multiple of the {slots} decode slots (FlashMLA's queries are uniform)")


def mla_batch(attn_metadata, *, num_heads, block_size, num_reqs=None, arch=None, num_cu=None,
              model_dtype="bf16", kv_cache_dtype="auto", kv_scale=None, q_dtype=None,
              mtp_qlen=None, num_decode_tokens=None, max_num_seqs=None, causal=True,
              small_head_mode=None, kv_cache=None, num_blocks=None, softmax_scale=None,
              attention_backend=None, aiter=None, name="captured", description="", max_bytes=256 << 20):
    """The batch document (a dict) for one decode step's MLA metadata.

    ``attn_metadata.decode`` must carry ``qo_indptr``, ``paged_kv_indptr``,
    ``paged_kv_indices``, ``paged_kv_last_page_len``, ``seq_lens`` and ``block_table``
    (and may carry ``min_kv_seq_len``); the AITER work arrays are read from
    ``attn_metadata`` or its ``decode`` when present. Slots at index >= ``num_reqs``
    (or, without ``num_reqs``, slots with ``seq_len`` 0) are cudagraph padding.
    ``kv_cache`` (the layer's cache tensor, blocks first) gives ``num_blocks`` when it
    is not passed: the per-layer cache size is what Gluon's 2 GiB bound reads.
    """
    d = attn_metadata.decode
    if arch is None or num_cu is None:
        dev_arch, dev_cu = _device_platform()
        arch = arch or dev_arch
        num_cu = num_cu or dev_cu
    if arch is None:
        raise ValueError("arch: give the modelled target (gfx942, gfx950 or sm90); no device to read it from")
    cuda = arch == "sm90"
    if cuda and attention_backend not in _CUDA_BACKENDS:
        raise ValueError(f"attention_backend: give the vLLM CUDA backend that ran ({', '.join(_CUDA_BACKENDS)})")
    if not cuda and attention_backend is not None:
        raise ValueError(f"attention_backend applies to arch sm90 (vLLM CUDA), not {arch}")
    seq = _ints(d.seq_lens)
    table = _rows(d.block_table)
    if cuda:
        slots = len(table)
        qlens, qo = _query_lens(attn_metadata, d, slots, num_decode_tokens, num_reqs)
    else:
        qo = _ints(d.qo_indptr)
        slots = len(qo) - 1
        qlens = [qo[i + 1] - qo[i] for i in range(slots)]
    if len(seq) < slots:
        raise ValueError(f"seq_lens has {len(seq)} entries for {slots} slots")
    kv = _dtype(kv_cache_dtype, "kv_cache_dtype")
    requests, bt = [], []
    max_q = 1
    for i in range(slots):
        q = qlens[i]
        padding = (i >= num_reqs) if num_reqs is not None else seq[i] == 0
        if not padding:
            max_q = max(max_q, q)
    K = mtp_qlen or max_q
    for i in range(slots):
        q = qlens[i]
        padding = (i >= num_reqs) if num_reqs is not None else seq[i] == 0
        if padding:
            requests.append({"padding": True})
            # AITER: a padding slot's uniform-MTP rows read K entries of its row; vLLM
            # CUDA pads with seq_len 0 and block id -1 (docs/stacks/vllm-cuda.md §C9)
            need = 0 if cuda else K
        else:
            requests.append({"seq_len": seq[i], "query_len": q})
            need = seq[i]
        row = table[i] if i < len(table) else []
        used = math.ceil(need / block_size)
        if len(row) < used:
            raise ValueError(f"block_table row {i} has {len(row)} blocks, the slot needs {used}")
        bt.append(row[:used])
    if cuda:
        # vLLM CUDA's decode metadata (docs/stacks/vllm-cuda.md §C4): seq_lens, and
        # FlashMLA's scheduler arrays under their upstream names
        cap = {"seq_lens": seq[:slots]}
        if attention_backend == "FLASHMLA":
            for k in ("tile_scheduler_metadata", "num_splits"):
                t = getattr(d, k, None)
                if t is None:
                    raise ValueError(f"FLASHMLA decode metadata without {k}")
                v = _ints(t)
                cap[k] = [v[j:j + 8] for j in range(0, len(v), 8)] if k == "tile_scheduler_metadata" else v
    else:
        indptr = _ints(d.paged_kv_indptr)
        cap = {
            "qo_indptr": qo,
            "paged_kv_indptr": indptr,
            "paged_kv_indices": _ints(d.paged_kv_indices)[: indptr[-1]],
            "paged_kv_last_page_len": _ints(d.paged_kv_last_page_len),
        }
        if getattr(d, "min_kv_seq_len", None) is not None:
            cap["min_kv_seq_len"] = int(d.min_kv_seq_len)
        for k in _WORK_ARRAYS:
            t = getattr(attn_metadata, k, None)
            if t is None:
                t = getattr(d, k, None)
            if t is not None:
                v = _ints(t)
                cap[k] = [v[j:j + 8] for j in range(0, len(v), 8)] if k == "work_info_set" else v
    doc = {"schema": 1, "name": name}
    if description:
        doc["description"] = description
    doc["platform"] = {"arch": arch}
    if num_cu:
        doc["platform"]["num_cu"] = int(num_cu)
    if aiter:
        doc["platform"]["aiter"] = str(aiter)
    doc["model"] = {"num_heads": int(num_heads), "dtype": _dtype(model_dtype, "model_dtype")}
    if softmax_scale is not None:
        doc["model"]["softmax_scale"] = float(softmax_scale)
    doc["kv_cache"] = {"dtype": kv, "block_size": int(block_size), "block_table": bt}
    if kv_scale is not None:
        doc["kv_cache"]["scale"] = float(kv_scale)
    if num_blocks is None and kv_cache is not None:
        num_blocks = kv_cache.shape[0]
    if num_blocks is not None:
        doc["kv_cache"]["num_blocks"] = int(num_blocks)
    dec = {"causal": bool(causal), "mtp_qlen": int(K),
           "num_decode_tokens": int(num_decode_tokens if num_decode_tokens is not None else qo[-1]),
           "max_num_seqs": int(max_num_seqs or slots)}
    if q_dtype is not None:
        dec["q_dtype"] = "fp8" if _dtype(q_dtype, "q_dtype") == "fp8" else "model"
    if small_head_mode is not None:
        dec["small_head_mode"] = small_head_mode
    if cuda:
        dec["attention_backend"] = attention_backend
        mns = getattr(d, "max_num_splits", None)
        if attention_backend == "FLASH_ATTN_MLA" and mns:
            dec["max_num_splits"] = int(mns)
    doc["decode"] = dec
    doc["requests"] = requests
    doc["captured"] = cap
    size = len(json.dumps(doc))
    if size > max_bytes:
        raise ValueError(f"the batch would be {size} bytes, over max_bytes={max_bytes}")
    return doc


def _write_atomic(path, data):
    """``data`` (bytes) to ``path`` through a unique temporary file in its folder."""
    folder = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".capture-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _bits(t, encoding, what):
    """A tensor as a numpy array of its storage bits in ``encoding`` (bf16/fp16: uint16,
    fp8: uint8), as the external-executor protocol stores them."""
    import numpy as np
    if hasattr(t, "detach"):  # torch: reinterpret on the device, copy only the bits
        import torch
        t = t.detach().contiguous()
        if encoding.startswith("fp8"):
            return t.view(torch.uint8).cpu().numpy()
        return t.view(torch.int16).cpu().numpy().view(np.uint16)
    a = np.ascontiguousarray(t)
    if encoding.startswith("fp8"):
        if a.dtype != np.uint8:
            raise ValueError(f"{what}: an fp8 tensor must come as its uint8 codes, got {a.dtype}")
        return a
    if a.dtype == np.uint16:
        return a
    if encoding == "fp16" and a.dtype == np.float16:
        return a.view(np.uint16)
    if encoding == "bf16" and a.dtype == np.float32:  # round to nearest even
        u = a.view(np.uint32).astype(np.uint64)
        return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    raise ValueError(f"{what}: cannot store a {a.dtype} array as {encoding}")


def write_inputs(doc, inputs_dir, q, kv_cache, *, q_scale=1.0, max_input_bytes=1 << 30):
    """q and the KV blocks the batch ``doc`` reads, for ``mlactl run --inputs DIR``.

    ``q``: ``[rows, heads, 576]`` (the q rows of the step, padding rows included), fp8
    when the KV cache is (unless the batch's ``decode.q_dtype`` is "model"), with its
    per-tensor ``q_scale`` (FlashMLA's ``descale_q``);
    ``kv_cache``: the layer's cache, blocks first (``[num_blocks, block_size, 576]`` or
    FlashMLA's ``[num_blocks, 64, 1, 576]``). Only the blocks in ``doc``'s block table are
    copied. Refuses (ValueError) more than ``max_input_bytes``.
    """
    import numpy as np
    arch = doc["platform"]["arch"]
    fp8_name = "fp8_e4m3fnuz" if arch == "gfx942" else "fp8_e4m3fn"
    model = doc["model"]["dtype"]
    # mlactl's rule (core/batch.cpp): decode q is fp8 when the KV cache is, unless
    # decode.q_dtype says "model"
    kv_fp8 = doc["kv_cache"]["dtype"] == "fp8"
    q_fp8 = doc["decode"].get("q_dtype", "fp8" if kv_fp8 else "model") == "fp8"
    q_enc = fp8_name if q_fp8 else model
    kv = doc["kv_cache"]["dtype"]
    kv_enc = fp8_name if kv == "fp8" else (model if kv == "auto" else kv)
    block_size = doc["kv_cache"]["block_size"]
    ids = []
    seen = set()
    for row in doc["kv_cache"]["block_table"]:
        for blk in row:
            if blk not in seen:
                seen.add(blk)
                ids.append(blk)
    head_dim = q.shape[-1]
    item = lambda enc: 1 if enc.startswith("fp8") else 2  # noqa: E731
    need = int(np.prod(q.shape)) * item(q_enc) + len(ids) * block_size * head_dim * item(kv_enc)
    if need > max_input_bytes:
        raise ValueError(f"q and the {len(ids)} KV blocks the step reads are {need} bytes, over max_input_bytes={max_input_bytes}")
    if hasattr(kv_cache, "index_select"):  # torch: gather the used blocks on the device
        import torch
        blocks = kv_cache.index_select(0, torch.tensor(ids, dtype=torch.long, device=kv_cache.device))
    else:
        blocks = np.asarray(kv_cache)[np.asarray(ids, dtype=np.int64)] if ids else np.asarray(kv_cache)[:0]
    blocks = blocks.reshape(len(ids), block_size, head_dim)
    os.makedirs(inputs_dir, exist_ok=True)

    def save(name, arr):
        import io
        buf = io.BytesIO()
        np.save(buf, np.ascontiguousarray(arr), allow_pickle=False)
        _write_atomic(os.path.join(inputs_dir, name), buf.getvalue())

    save("q.npy", _bits(q, q_enc, "q"))
    save("kv_blocks.npy", _bits(blocks, kv_enc, "kv_cache"))
    save("kv_block_ids.npy", np.asarray(ids, dtype=np.int64))
    manifest = {"protocol": 1,
                "q": {"file": "q.npy", "encoding": q_enc, "scale": float(q_scale)},
                "kv_blocks": {"file": "kv_blocks.npy", "encoding": kv_enc,
                              "scale": float(doc["kv_cache"].get("scale", 1.0)), "block_ids": "kv_block_ids.npy"}}
    _write_atomic(os.path.join(inputs_dir, "inputs.json"), (json.dumps(manifest, indent=1) + "\n").encode())
    return inputs_dir


def capture_mla_batch(attn_metadata, path, *, inputs_dir=None, q=None, q_scale=1.0, max_input_bytes=1 << 30, **kw):
    """Write ``mla_batch(attn_metadata, **kw)`` to ``path`` (through a temporary file);
    with ``inputs_dir`` and ``q`` (and ``kv_cache`` in ``kw``), also ``write_inputs``."""
    doc = mla_batch(attn_metadata, **kw)
    if inputs_dir is not None:
        if q is None or kw.get("kv_cache") is None:
            raise ValueError("inputs_dir needs q and kv_cache")
        write_inputs(doc, inputs_dir, q, kw["kv_cache"], q_scale=q_scale, max_input_bytes=max_input_bytes)
    _write_atomic(path, json.dumps(doc, separators=(",", ":")).encode())
    return path
