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
