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

What it writes: ``platform`` (arch and CU count, read from the device when not given),
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

__all__ = ["mla_batch", "capture_mla_batch"]

_DTYPES = {
    "bfloat16": "bf16", "bf16": "bf16",
    "float16": "fp16", "half": "fp16", "fp16": "fp16",
    "fp8": "fp8", "fp8_e4m3": "fp8", "float8_e4m3fn": "fp8", "float8_e4m3fnuz": "fp8",
    "auto": "auto",
}

_WORK_ARRAYS = ("work_indptr", "work_info_set", "reduce_indptr", "reduce_final_map", "reduce_partial_map")


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


def mla_batch(attn_metadata, *, num_heads, block_size, num_reqs=None, arch=None, num_cu=None,
              model_dtype="bf16", kv_cache_dtype="auto", kv_scale=None, q_dtype=None,
              mtp_qlen=None, num_decode_tokens=None, max_num_seqs=None, causal=True,
              small_head_mode=None, kv_cache=None, num_blocks=None, softmax_scale=None,
              name="captured", description="", max_bytes=256 << 20):
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
    qo = _ints(d.qo_indptr)
    seq = _ints(d.seq_lens)
    slots = len(qo) - 1
    if len(seq) < slots:
        raise ValueError(f"seq_lens has {len(seq)} entries for {slots} slots of qo_indptr")
    table = _rows(d.block_table)
    if arch is None or num_cu is None:
        dev_arch, dev_cu = _device_platform()
        arch = arch or dev_arch
        num_cu = num_cu or dev_cu
    if arch is None:
        raise ValueError("arch: give the modelled target (gfx942 or gfx950); no device to read it from")
    kv = _dtype(kv_cache_dtype, "kv_cache_dtype")
    requests, bt = [], []
    max_q = 1
    for i in range(slots):
        q = qo[i + 1] - qo[i]
        padding = (i >= num_reqs) if num_reqs is not None else seq[i] == 0
        if not padding:
            max_q = max(max_q, q)
    K = mtp_qlen or max_q
    for i in range(slots):
        q = qo[i + 1] - qo[i]
        padding = (i >= num_reqs) if num_reqs is not None else seq[i] == 0
        if padding:
            requests.append({"padding": True})
            need = K  # a padding slot's uniform-MTP rows read K entries of its row
        else:
            requests.append({"seq_len": seq[i], "query_len": q})
            need = seq[i]
        row = table[i] if i < len(table) else []
        used = math.ceil(need / block_size)
        if len(row) < used:
            raise ValueError(f"block_table row {i} has {len(row)} blocks, the slot needs {used}")
        bt.append(row[:used])
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
    doc["decode"] = dec
    doc["requests"] = requests
    doc["captured"] = cap
    size = len(json.dumps(doc))
    if size > max_bytes:
        raise ValueError(f"the batch would be {size} bytes, over max_bytes={max_bytes}")
    return doc


def capture_mla_batch(attn_metadata, path, **kw):
    """Write ``mla_batch(attn_metadata, **kw)`` to ``path`` (through a temporary file)."""
    doc = mla_batch(attn_metadata, **kw)
    tmp = f"{path}.partial"
    with open(tmp, "w") as f:
        json.dump(doc, f, separators=(",", ":"))
    os.replace(tmp, path)
    return path
