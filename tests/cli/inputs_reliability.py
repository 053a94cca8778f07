"""run --inputs DIR as a hostile capture would have it (issue 39): every file is checked
(regular, bounded by the size its shape allows) before it is read, and a capture that makes
mlactl's reference not finite (a NaN in q, a scale past fp32) is the inputs' problem, exit 3,
never the executor's INCORRECT.

usage: inputs_reliability.py MLACTL SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import struct
import subprocess
import sys

from cli_checks import check, finish

MLACTL, SRC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
H, D = 16, 576  # the batch's heads and head_dim (kv_lora_rank 512 + rope 64)
BATCH = os.path.join(WORK, "batch.json")
os.makedirs(WORK, exist_ok=True)
with open(BATCH, "w") as f:
    json.dump({"schema": 1, "name": "inputs", "model": {"num_heads": H}, "kv_cache": {"block_size": 1, "layout": "sequential"},
               "requests": [{"context_len": 3, "query_len": 1}]}, f)


def npy(path, descr, shape, data):
    """A .npy 1.0 file, written without numpy."""
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, "".join("%d, " % s for s in shape))
    header += " " * (63 - (10 + len(header)) % 64) + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode() + data)


def capture(name, q_nan=False, q_scale=1):
    """A capture of BATCH (4 blocks of one bf16 row each, all 1.0) in WORK/name."""
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    q = bytearray(struct.pack("<H", 0x3F80) * (H * D))
    if q_nan:
        struct.pack_into("<H", q, 2 * (3 * D + 7), 0x7FC0)  # q[0][3][7]: bf16 NaN
    npy(os.path.join(d, "q.npy"), "<u2", (1, H, D), bytes(q))
    npy(os.path.join(d, "kv.npy"), "<u2", (4, 1, D), struct.pack("<H", 0x3F80) * (4 * D))
    npy(os.path.join(d, "ids.npy"), "<i4", (4,), struct.pack("<4i", 0, 1, 2, 3))
    with open(os.path.join(d, "inputs.json"), "w") as f:
        json.dump({"protocol": 1, "q": {"file": "q.npy", "encoding": "bf16", "scale": q_scale},
                   "kv_blocks": {"file": "kv.npy", "encoding": "bf16", "scale": 1, "block_ids": "ids.npy"}}, f)
    return d


def run(d):
    return subprocess.run([MLACTL, "run", BATCH, "--backend", "cpu", "--inputs", d], capture_output=True, text=True, timeout=120)


r = run(capture("good"))
check(r.returncode == 0 and "PASSED" in r.stdout, "the clean capture passes, got %d: %s" % (r.returncode, r.stdout + r.stderr))

# (7) a NaN in the captured q: the reference is not finite there; the inputs are named, exit 3
r = run(capture("q-nan", q_nan=True))
check(r.returncode == 3, "a NaN in q exits 3, got %d: %s" % (r.returncode, r.stdout + r.stderr))
check("q row 0 (request 0, token 0), head 3: q[0][3][7] is nan (the captured q: --inputs): mlactl's reference is not finite there, "
      "a problem of the inputs, not of any executor" in r.stderr, "a NaN in q is named: " + r.stderr)
check("INCORRECT" not in r.stdout, "a NaN in q is not the executor's INCORRECT: " + r.stdout)

# (7) a scale past fp32 (it became inf, and every value NaN)
r = run(capture("q-scale", q_scale=1e39))
check(r.returncode == 3 and "/q/scale: must be a number > 0 that fp32 holds" in r.stderr, "a q scale of 1e39 exits 3 naming it, got %d: %s" % (r.returncode, r.stderr))

# (4) every .npy of --inputs is a regular file, refused at once otherwise (a FIFO blocked)
for name in ("q.npy", "kv.npy", "ids.npy"):
    d = capture("fifo-" + name)
    os.remove(os.path.join(d, name))
    os.mkfifo(os.path.join(d, name))
    try:
        r = run(d)
        check(r.returncode == 3 and name + ": is not a regular file" in r.stderr, "a FIFO %s exits 3, got %d: %s" % (name, r.returncode, r.stderr))
    except subprocess.TimeoutExpired:
        check(False, "a FIFO %s blocked mlactl" % name)

# (4) bounded by the shape the batch allows, before the read: q may hold this batch's q, the
# block ids at most num_blocks of them
d = capture("q-huge")
with open(os.path.join(d, "q.npy"), "ab") as f:
    f.truncate(1 << 30)  # sparse: 1 GiB on paper
p = subprocess.Popen([MLACTL, "run", BATCH, "--backend", "cpu", "--inputs", d], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
err = p.stderr.read()
_, status, usage = os.wait4(p.pid, 0)
check(os.waitstatus_to_exitcode(status) == 3 and "q.npy: is 1073741824 bytes, more than the" in err, "a 1 GiB q.npy exits 3 before it is read: " + err)
check(usage.ru_maxrss < 64 * 1024, "a 1 GiB q.npy is refused within 64 MiB, took %d KiB" % usage.ru_maxrss)

finish("inputs reliability ok")
