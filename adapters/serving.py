"""The adapters' serve mode (docs/executor-protocol.md, Adapters): one process, one torch
import and one kernel build or JIT cache for a whole grid. adapters/via_socket.py sends a
case directory per line; the answer is "ok" or "error <traceback with \\n for newlines>".
"QUIT" ends the server."""
import os
import socket
import sys
import traceback


def serve(path, run, name):
    """Answers case directories on the Unix socket `path` with `run(case_dir)`."""
    if os.path.exists(path):
        os.unlink(path)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(path)
    s.listen(4)
    sys.stderr.write(f"{name}: serving on {path}\n")
    try:
        while True:
            conn, _ = s.accept()
            with conn:
                d = conn.makefile("r").readline().strip()
                if d == "QUIT":
                    conn.sendall(b"ok\n")
                    break
                try:
                    run(d)
                    conn.sendall(b"ok\n")
                except Exception:
                    conn.sendall(("error " + traceback.format_exc().replace("\n", "\\n") + "\n").encode())
    finally:
        s.close()
        if os.path.exists(path):
            os.unlink(path)
    return 0


def time_calls(torch, call, bench):
    """The manifest's bench section: `warmup` untimed calls, then `iters` calls each timed with
    CUDA events; call(i) runs the kernel on KV copy i % kv_copies (the caller's rotation).
    Returns the milliseconds of the timed calls (result.json timing_ms)."""
    warmup, iters = int(bench["warmup"]), int(bench["iters"])
    for i in range(warmup):
        call(i)
    torch.cuda.synchronize()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i, (a, b) in enumerate(ev):
        a.record()
        call(warmup + i)
        b.record()
    torch.cuda.synchronize()
    return [a.elapsed_time(b) for a, b in ev]


def kv_copies(torch, kv, bench):
    """kv and bench["kv_copies"] - 1 more copies of it on the device (mlactl's L2 rotation)."""
    n = max(1, int(bench.get("kv_copies", 1))) if bench else 1
    return [kv] + [kv.clone() for _ in range(n - 1)]
