"""Write one SGLang MLA decode step as an mlactl batch file (schema 1, docs/design.md §2,
``platform.stack: "sglang"``, docs/stacks/sglang.md).

Import it (or paste it) where the backend has just built its metadata, e.g. at the end of
``FlashAttentionBackend.init_forward_metadata(self, forward_batch)`` (fa3; likewise in
``FlashInferMLAAttnBackend``, ``FlashMLABackend``, ``TritonAttnBackend``,
``AiterAttnBackend``)::

    import sys; sys.path.insert(0, "/path/to/mlactl/scripts")
    from capture_sglang_batch import capture_sglang_batch
    capture_sglang_batch(forward_batch, self.forward_metadata, "/tmp/step.json",
                         attention_backend="fa3",        # the --attention-backend that ran
                         num_heads=16,                   # q heads per attention-TP rank
                         page_size=self.page_size,       # --page-size (flashmla: 64)
                         model_dtype="bf16", kv_cache_dtype=self.kv_cache_dtype,
                         arch="sm90", num_cu=132,
                         num_draft_tokens=self.speculative_num_draft_tokens)  # D, when speculating

then ``mlactl windows /tmp/step.json`` names the first wrong field and ``mlactl run
/tmp/step.json --use-captured`` runs what the stack built.

``backend_metadata`` is the backend's ``self.forward_metadata``: FA3's
``FlashAttentionMetadata``, Triton's and AITER's ``ForwardMetadata``, FlashMLA's
``FlashMLADecodeMetadata``, FlashInfer MLA's ``DecodeMetadata`` / ``PrefillMetadata`` (its
``decode_wrapper`` / ``prefill_wrapper`` is read: the wrapper keeps what ``plan`` got as
``_qo_indptr_buf``, ``_kv_indptr_buf``, ``_kv_indices_buf``); a dict of arrays under the
same upstream names works too. For FA3 with topk > 1 pass ``self.forward_metadata`` (the
prefix pass), not ``forward_metadata_spec_decode_expand``.

Under a CUDA graph the backend's ``init_forward_metadata_replay_cuda_graph(bs,
req_pool_indices, seq_lens, seq_lens_sum, encoder_lens, forward_mode, spec_info, ...)``
gets the padded buffers instead of a ForwardBatch: pass a namespace holding them
(``types.SimpleNamespace(forward_mode=forward_mode, batch_size=bs, seq_lens=seq_lens,
req_pool_indices=req_pool_indices, req_to_token_pool=self.req_to_token_pool,
spec_info=spec_info)``) and the runner's unpadded count as ``raw_batch_size=`` (the
CUDA-graph runner's ``raw_bs``): slots at index >= ``raw_batch_size`` become ``{"padding":
true}`` and ``sglang.cuda_graph`` is written true.

What it reads from the ForwardBatch (docs/stacks/sglang.md §S3):

* ``forward_mode``: a ``ForwardMode`` (its ``name``, else ``is_target_verify()``,
  ``is_draft_extend()``, ``is_decode()``) or a string (``"decode"``, ``"target_verify"``,
  ``"draft_extend"``, ``"ForwardMode.DECODE"``...); any other mode is a ValueError naming
  ``forward_mode``.
* ``batch_size`` (else ``len(seq_lens)``): the slots, padding included.
* ``seq_lens``: decode, the length with the token being decoded; target_verify, the
  committed prefix (the D drafts are added); draft_extend, the length after acceptance.
* ``req_pool_indices`` and ``req_to_token_pool.req_to_token`` (``[pool rows,
  max_context_len]``): only the used rows and, of each, only the positions the step reads
  are copied (``req_to_token[req_pool_indices[b]][:n]``).
* draft_extend: the accepted tokens per request, from ``extend_seq_lens`` or else
  ``spec_info.num_accept_tokens`` or ``spec_info.accept_length`` (taken as the token
  count, bonus token included, as ``generate_attn_arg_prefill``'s ``qo_indptr`` uses it).
* target_verify: D from ``num_draft_tokens=`` or ``spec_info.draft_token_num``; topk from
  ``speculative_topk=`` or ``spec_info.topk``; with topk > 1 each request's draft tree from
  ``draft_parents=`` (one parent list per request, token 0 the root with -1, or one list
  for every request) or else from ``spec_info.retrive_next_token`` /
  ``retrive_next_sibling`` (``build_tree_kernel_efficient``'s child / sibling links).

Requests: decode -> ``query_len`` 1, ``context_len`` = seq_len - 1; target_verify ->
``query_len`` D, ``context_len`` = seq_lens (the prefix); draft_extend -> ``query_len`` =
accepted tokens, ``context_len`` = seq_len - accepted.

The KV layout: with page size 1 every token slot is its own block (``kv_cache.block_size``
1) and block-table row b is ``req_to_token[req_pool_indices[b]][:kv_len]`` (kv_len: seq_lens,
or seq_lens + D in target_verify); with page size P > 1 (fa3 with --page-size, flashmla
64) a row is the page ``slot // P`` of each page's first token, and every token of the page
must sit in that page at its offset (else ValueError naming the request and position: the
pool is not page-contiguous). ``kv_cache.num_blocks`` is ``num_blocks=``, or the layer's KV
buffer ``kv_cache=`` (``[tokens, 1, 576]``: ``shape[0] // P``), or the largest block id + 1.
A CUDA-graph padding slot reads the stale row its ``req_pool_indices`` entry names; when
that row repeats a slot (a row never written: zeros) mlactl's block table cannot hold it,
so the slot gets fresh blocks past the pool, ``paged_kv_indices`` is not captured, and the
description says so.

Captured arrays: only where the backend's array means exactly what mlactl's captured key
means (core/captured.cpp), each cut to the used prefix of its persistent buffer
(``mlactl key <- SGLang array``):

* flashinfer, every mode (and flashmla's draft_extend, which defers to FlashInfer MLA):
  ``qo_indptr <- qo_indptr``, ``paged_kv_indptr <- kv_indptr`` (tokens),
  ``paged_kv_indices <- kv_indices[:kv_indptr[bs]]``.
* triton decode: ``paged_kv_indptr <- kv_indptr``, ``paged_kv_indices <- kv_indices``
  (int64). triton target_verify / draft_extend: ``qo_indptr <- qo_indptr`` only; their
  ``kv_indptr`` / ``kv_indices`` are what the extend kernel reads from the cache besides
  this forward's own K/V (§S7, §S16.1), not the KV each row attends.
* fa3: ``qo_indptr <- cu_seqlens_q``; ``paged_kv_indptr <- pad(cumsum(cache_seqlens_int32))``
  (= ``cu_seqlens_k``, read when ``cache_seqlens_int32`` is absent) at topk 1 only -- the
  topk > 1 prefix pass's lengths are the prefix alone.
* aiter: ``qo_indptr``, ``paged_kv_indptr <- kv_indptr``, ``paged_kv_indices <-
  kv_indices``, ``paged_kv_last_page_len <- kv_last_page_len``.
* flashmla decode / target_verify: nothing.

Not captured, because mlactl's SGLang batches take no such key (the parser refuses
unknown keys, and ``tile_scheduler_metadata`` / ``num_splits`` / ``seq_lens`` are vLLM
CUDA's): FA3's ``page_table``, FlashMLA's ``block_kv_indices``, ``flashmla_metadata`` and
``num_splits``, Triton's ``num_kv_splits`` / ``custom_mask`` / ``mask_indptr``, FlashInfer's
``kv_len_arr`` and AITER's work arrays (mlactl models no planner for SGLang's AITER
routes). ``mlactl metadata FILE`` prints what mlactl builds for them, under the same names.

Only the standard library: tensors are read through ``.tolist()``, so numpy arrays and
torch tensors both work (and the tests use plain fakes).
"""
import json
import os
import sys

# the readers and the atomic writer the vLLM helper already has (same folder)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from capture_vllm_batch import _dtype, _ints, _rows, _write_atomic  # noqa: E402

__all__ = ["sglang_batch", "capture_sglang_batch"]

_BACKENDS = ("fa3", "flashmla", "flashinfer", "triton", "aiter")
_MODES = ("decode", "target_verify", "draft_extend")
_FLASHMLA_PAGE = 64


def _field(obj, *names):
    """The first of ``names`` that ``obj`` (an object or a dict) holds and is not None."""
    if obj is None:
        return None
    for n in names:
        v = obj.get(n) if isinstance(obj, dict) else getattr(obj, n, None)
        if v is not None:
            return v
    return None


def _device_num_cu():
    try:
        import torch
        return torch.cuda.get_device_properties(torch.cuda.current_device()).multi_processor_count
    except Exception:
        return None


def _forward_mode(fm):
    """SGLang's ForwardMode (an enum, an object with is_* methods, or a string) as
    mlactl's sglang.forward_mode."""
    if fm is None:
        raise ValueError("forward_mode: the ForwardBatch has none")
    if isinstance(fm, str):
        name = fm
    elif getattr(fm, "name", None) is not None:
        name = fm.name
    else:
        name = None
        # is_extend() is true for TARGET_VERIFY and DRAFT_EXTEND too: ask the narrow ones first
        for method, mode in (("is_target_verify", "target_verify"), ("is_draft_extend", "draft_extend"), ("is_decode", "decode")):
            f = getattr(fm, method, None)
            if callable(f) and f():
                name = mode
                break
        if name is None:
            raise ValueError(f"forward_mode: {fm!r} is none of {', '.join(_MODES)} (mlactl models SGLang's decode paths only)")
    mode = str(name).split(".")[-1].lower()
    if mode not in _MODES:
        raise ValueError(f"forward_mode: {name!r} is not a mode mlactl models ({', '.join(_MODES)}); "
                         "capture a decode, target_verify or draft_extend (EAGLE v1) step")
    return mode


def _parents_from_links(next_token, next_sibling, d, b):
    """A draft tree's parent list from build_tree_kernel_efficient's retrive_next_token
    (first child) and retrive_next_sibling (next sibling) rows."""
    parents = [None] * d
    parents[0] = -1
    for i in range(d):
        c = next_token[i]
        seen = 0
        while c != -1:
            if not 0 < c < d or parents[c] is not None or seen > d:
                raise ValueError(f"spec_info.retrive_next_token/retrive_next_sibling: request {b}: node {c} is not a draft "
                                 f"of a {d}-token tree (or has two parents)")
            parents[c] = i
            c = next_sibling[c]
            seen += 1
    missing = [i for i in range(d) if parents[i] is None]
    if missing:
        raise ValueError(f"spec_info.retrive_next_token: request {b}: drafts {missing} are not reached from the root")
    return parents


def sglang_batch(forward_batch, backend_metadata=None, *, attention_backend, num_heads, page_size=None,
                 model_dtype, kv_cache_dtype, arch="sm90", num_cu=None, num_draft_tokens=None,
                 speculative_topk=None, draft_parents=None, raw_batch_size=None, kv_cache=None, num_blocks=None,
                 kv_scale=None, softmax_scale=None, q_dtype=None, kv_heads_per_rank=None, cuda_graph=None,
                 deterministic=None, max_context_len=None, name="captured", description="", max_bytes=256 << 20):
    """The batch document (a dict) for one SGLang MLA step.

    ``forward_batch``: SGLang's ForwardBatch (or a namespace with the same fields, see the
    module docstring); ``backend_metadata``: the backend's ``forward_metadata`` (an object
    or a dict of arrays under SGLang's names; FlashInfer's wrapper buffers
    ``_qo_indptr_buf``/``_kv_indptr_buf``/``_kv_indices_buf`` are read too), or None to
    capture no arrays. ``page_size`` defaults to 1 (64 for flashmla). ``speculative_topk``
    defaults to ``spec_info.topk`` in target_verify, else 1.
    """
    if attention_backend not in _BACKENDS:
        raise ValueError(f"attention_backend: {attention_backend!r} is not an SGLang backend mlactl models ({', '.join(_BACKENDS)})")
    if page_size is None:
        page_size = _FLASHMLA_PAGE if attention_backend == "flashmla" else 1
    P = int(page_size)
    if P < 1:
        raise ValueError(f"page_size: {page_size} must be >= 1")
    if attention_backend == "flashmla" and P != _FLASHMLA_PAGE:
        raise ValueError(f"page_size: {P}, but SGLang's flashmla runs page_size 64 (server_args.py)")
    mode = _forward_mode(getattr(forward_batch, "forward_mode", None))
    spec = getattr(forward_batch, "spec_info", None)

    seq_all = _ints(forward_batch.seq_lens)
    bs = getattr(forward_batch, "batch_size", None)
    slots = int(bs) if bs is not None else len(seq_all)
    if len(seq_all) < slots:
        raise ValueError(f"seq_lens: {len(seq_all)} entries for batch_size {slots}")
    seq = seq_all[:slots]
    pool_idx = _ints(forward_batch.req_pool_indices)
    if len(pool_idx) < slots:
        raise ValueError(f"req_pool_indices: {len(pool_idx)} entries for batch_size {slots}")
    pool_idx = pool_idx[:slots]
    real = slots if raw_batch_size is None else int(raw_batch_size)
    if not 0 <= real <= slots:
        raise ValueError(f"raw_batch_size: {raw_batch_size} is not within the {slots} slots")

    # what each slot schedules (docs/stacks/sglang.md §S3): query tokens and KV read
    D = num_draft_tokens
    if D is None and mode == "target_verify":
        D = _field(spec, "draft_token_num")
        if D is None:
            raise ValueError("num_draft_tokens: target_verify needs D (speculative_num_draft_tokens); "
                             "the ForwardBatch's spec_info has no draft_token_num")
    if mode == "decode":
        qlen = [1] * slots
        kv_len = list(seq)
    elif mode == "target_verify":
        D = int(D)
        qlen = [D] * slots
        kv_len = [s + D for s in seq]
    else:
        acc = _field(forward_batch, "extend_seq_lens")
        src = "extend_seq_lens"
        if acc is None:
            acc, src = _field(spec, "num_accept_tokens"), "spec_info.num_accept_tokens"
        if acc is None:
            acc, src = _field(spec, "accept_length"), "spec_info.accept_length"
        if acc is None:
            raise ValueError("extend_seq_lens: draft_extend needs the accepted tokens per request "
                             "(ForwardBatch.extend_seq_lens, spec_info.num_accept_tokens or spec_info.accept_length)")
        acc = _ints(acc)
        if len(acc) < real:
            raise ValueError(f"{src}: {len(acc)} entries for {real} requests")
        # padding slots: the draft-extend graph runner fills them with steps + 1 (= D)
        if D is None and len(acc) >= slots and slots > real:
            D = acc[real]
        pad_q = int(D) if D is not None else max(acc[:real] or [1])
        qlen = [acc[b] if b < len(acc) else pad_q for b in range(slots)]
        kv_len = list(seq)
    for b in range(real):
        if qlen[b] < 1:
            raise ValueError(f"{'extend_seq_lens' if mode == 'draft_extend' else 'seq_lens'}: request {b} schedules {qlen[b]} query tokens")
        if mode != "target_verify" and seq[b] < qlen[b]:
            raise ValueError(f"seq_lens: request {b} has seq_len {seq[b]}, fewer than its {qlen[b]} query tokens "
                             f"({'post-accept length expected' if mode == 'draft_extend' else 'the decoded token is counted'})")

    # the block table, from the request-to-token pool (§S3): only the used rows and prefixes
    pool = forward_batch.req_to_token_pool.req_to_token
    table, fresh_rows = [], []
    notes = []
    max_id = -1
    for b in range(slots):
        n = kv_len[b]
        slots_b = _ints(pool[pool_idx[b]][:n]) if n > 0 else []
        if len(slots_b) < n:
            raise ValueError(f"req_to_token: row {pool_idx[b]} (req_pool_indices[{b}]) has {len(slots_b)} positions, "
                             f"slot {b} reads {n}")
        pages = (n + P - 1) // P
        row = [s // P for s in slots_b[::P]] if P > 1 else list(slots_b)
        padding = b >= real
        if not padding:
            for t, s in enumerate(slots_b):
                if s < 0:
                    raise ValueError(f"req_to_token: request {b} (req_to_token row {pool_idx[b]}), position {t}: slot {s} is negative")
                if P > 1 and s != row[t // P] * P + t % P:
                    raise ValueError(f"req_to_token: request {b} (req_to_token row {pool_idx[b]}), position {t}: slot {s} is not "
                                     f"in page {row[t // P]} at offset {t % P} (the request's page {t // P} starts at slot {slots_b[(t // P) * P]}): "
                                     f"the slots are not page-contiguous at page_size {P}")
            if len(set(row)) != len(row):
                dup = next(x for x in row if row.count(x) > 1)
                raise ValueError(f"req_to_token: request {b} (req_to_token row {pool_idx[b]}) reads {'page' if P > 1 else 'slot'} "
                                 f"{dup} twice: two KV positions would share it")
        elif len(set(row)) != len(row) or any(x < 0 for x in row):
            fresh_rows.append(b)  # a stale, never-written pool row: filled below
            row = [None] * pages
        table.append(row)
        max_id = max([max_id] + [x for x in row if x is not None])
    if num_blocks is None and kv_cache is not None:
        num_blocks = int(kv_cache.shape[0]) // P
    if num_blocks is not None and max_id >= int(num_blocks):
        raise ValueError(f"num_blocks: block id {max_id} is outside the pool's {num_blocks} blocks of {P} tokens")
    pool_blocks = int(num_blocks) if num_blocks is not None else max_id + 1
    if fresh_rows:
        nxt = pool_blocks
        for b in fresh_rows:
            table[b] = list(range(nxt, nxt + len(table[b])))
            nxt += len(table[b])
        pool_blocks = nxt
        notes.append(f"padding slots {fresh_rows} read a stale req_to_token row that repeats a slot; mlactl's block table "
                     "cannot hold that, so they were given fresh blocks past the pool and paged_kv_indices is not captured")

    # the sglang section
    topk = speculative_topk
    if topk is None:
        topk = int(_field(spec, "topk") or 1) if mode == "target_verify" else 1
    topk = int(topk)
    sg = {"attention_backend": attention_backend, "forward_mode": mode}
    if D is not None:
        sg["num_draft_tokens"] = int(D)
    trees = None
    if draft_parents is not None and topk == 1:
        raise ValueError("draft_parents: a draft tree is a topk > 1 verify's; speculative_topk is 1 (the drafts are a chain)")
    if topk > 1:
        if mode != "target_verify":
            raise ValueError(f"speculative_topk: {topk}, but a draft tree is verified in target_verify, not {mode}")
        sg["speculative_topk"] = topk
        if draft_parents is not None:
            dp = draft_parents.tolist() if hasattr(draft_parents, "tolist") else list(draft_parents)
            if dp and dp[0] is not None and not hasattr(dp[0], "__len__"):
                per = [[int(x) for x in dp]] * real  # one tree for every request
            else:
                per = [None if p is None else _ints(p) for p in dp]
            if len(per) not in (real, slots):
                raise ValueError(f"draft_parents: {len(per)} parent lists for {real} requests")
            trees = [({"parents": per[b]} if b < real else None) for b in range(slots)]
        else:
            nt = _field(spec, "retrive_next_token", "retrieve_next_token")
            ns = _field(spec, "retrive_next_sibling", "retrieve_next_sibling")
            if nt is None or ns is None:
                raise ValueError("draft_parents: topk > 1 needs each request's draft tree: pass draft_parents= or a spec_info "
                                 "with retrive_next_token and retrive_next_sibling")
            nt, ns = _rows(nt), _rows(ns)
            trees = [({"parents": _parents_from_links(nt[b][:D], ns[b][:D], D, b)} if b < real else None) for b in range(slots)]
        for b in range(real):
            if len(trees[b]["parents"]) != D:
                raise ValueError(f"draft_parents: request {b} has {len(trees[b]['parents'])} parents for its {D} verify tokens")
        sg["draft_trees"] = trees
    if kv_heads_per_rank is not None:
        sg["kv_heads_per_rank"] = int(kv_heads_per_rank)
    if cuda_graph or real < slots:
        sg["cuda_graph"] = True
    elif cuda_graph is not None:
        sg["cuda_graph"] = False
    if deterministic is not None:
        sg["deterministic"] = bool(deterministic)
    if max_context_len is not None:
        sg["max_context_len"] = int(max_context_len)

    # the captured arrays: the used prefix of each buffer, where the meaning is mlactl's
    cap, used = {}, []
    md = backend_metadata

    def take(key, names, n):
        v = _field(md, *names)
        if v is None:
            return None
        v = _ints(v)
        if len(v) < n:
            raise ValueError(f"{names[0]}: {len(v)} entries, the step uses {n}")
        cap[key] = v[:n]
        used.append(names[0])
        return cap[key]

    def index_lists(qo_names, with_qo):
        if with_qo:
            take("qo_indptr", qo_names, slots + 1)
        ip = take("paged_kv_indptr", ("kv_indptr", "_kv_indptr_buf"), slots + 1)
        if ip is not None:
            take("paged_kv_indices", ("kv_indices", "_kv_indices_buf"), ip[-1])
        elif _field(md, "kv_indices", "_kv_indices_buf") is not None:
            raise ValueError("kv_indices: captured without kv_indptr, its used prefix is unknown")

    backend_arrays = attention_backend
    if attention_backend == "flashmla" and mode == "draft_extend":
        backend_arrays = "flashinfer"  # flashmla_backend.py: draft_extend defers to FlashInfer MLA (§S5)
    if md is not None:
        if backend_arrays == "flashinfer":
            # FlashInfer MLA's forward_metadata holds the planned wrapper; the wrapper keeps
            # what plan() was given as _qo_indptr_buf, _kv_indptr_buf, _kv_indices_buf
            md = _field(md, "decode_wrapper" if mode == "decode" else "prefill_wrapper") or md
            index_lists(("qo_indptr", "q_indptr", "_qo_indptr_buf"), True)
        elif backend_arrays == "triton":
            if mode == "decode":
                index_lists((), False)
            else:
                take("qo_indptr", ("qo_indptr",), slots + 1)
        elif backend_arrays == "aiter":
            index_lists(("qo_indptr",), True)
            take("paged_kv_last_page_len", ("kv_last_page_len",), slots)
        elif backend_arrays == "fa3":
            take("qo_indptr", ("cu_seqlens_q",), slots + 1)
            if topk == 1:
                cs = _field(md, "cache_seqlens_int32", "cache_seqlens")
                if cs is None:
                    take("paged_kv_indptr", ("cu_seqlens_k",), slots + 1)
                else:
                    cs = _ints(cs)
                    if len(cs) < slots:
                        raise ValueError(f"cache_seqlens_int32: {len(cs)} entries, the step uses {slots}")
                    ip = [0]
                    for x in cs[:slots]:
                        ip.append(ip[-1] + x)
                    cap["paged_kv_indptr"] = ip
                    used.append("cache_seqlens_int32")
        # flashmla decode / target_verify: block_kv_indices, flashmla_metadata, num_splits only
    if fresh_rows:
        cap.pop("paged_kv_indices", None)

    kv = _dtype(kv_cache_dtype, "kv_cache_dtype")
    requests = []
    for b in range(slots):
        if b >= real:
            requests.append({"padding": True})
        elif mode == "target_verify":
            requests.append({"context_len": seq[b], "query_len": qlen[b]})
        else:
            requests.append({"context_len": seq[b] - qlen[b], "query_len": qlen[b]})

    doc = {"schema": 1, "name": name}
    desc = description or (f"SGLang {attention_backend} {mode} captured by scripts/capture_sglang_batch.py"
                           + (f"; captured from {', '.join(used)}" if used else "; no captured arrays"))
    if notes:
        desc += "; " + "; ".join(notes)
    doc["description"] = desc
    if num_cu is None:
        num_cu = _device_num_cu()
    doc["platform"] = {"stack": "sglang", "arch": arch}
    if num_cu:
        doc["platform"]["num_cu"] = int(num_cu)
    doc["model"] = {"num_heads": int(num_heads), "dtype": _dtype(model_dtype, "model_dtype")}
    if softmax_scale is not None:
        doc["model"]["softmax_scale"] = float(softmax_scale)
    doc["kv_cache"] = {"dtype": kv, "block_size": P, "block_table": table, "num_blocks": max(1, pool_blocks)}
    if kv_scale is not None:
        doc["kv_cache"]["scale"] = float(kv_scale)
    if q_dtype is not None:
        doc["decode"] = {"q_dtype": "fp8" if _dtype(q_dtype, "q_dtype") == "fp8" else "model"}
    doc["sglang"] = sg
    doc["requests"] = requests
    if cap:
        doc["captured"] = cap
    size = len(json.dumps(doc))
    if size > max_bytes:
        raise ValueError(f"the batch would be {size} bytes, over max_bytes={max_bytes}")
    return doc


def capture_sglang_batch(forward_batch, backend_metadata, path, **kw):
    """Write ``sglang_batch(forward_batch, backend_metadata, **kw)`` to ``path`` (atomically:
    a temporary file in its folder, renamed over it) and return ``path``."""
    doc = sglang_batch(forward_batch, backend_metadata, **kw)
    _write_atomic(path, json.dumps(doc, separators=(",", ":")).encode())
    return path
