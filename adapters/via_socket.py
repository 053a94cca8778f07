#!/usr/bin/env python3
"""Hands one mlactl case directory to an adapter serving on a Unix socket
(e.g. `adapters/vllm_triton_mla.py --serve SOCK`), so the adapter imports torch and
compiles its kernels once for a whole grid. Usage: --executor "python3 adapters/via_socket.py SOCK"
Exit 0 when the server answered "ok"; 1 with its traceback on stderr otherwise."""
import os
import socket
import sys


def main(argv):
    if len(argv) != 2:
        sys.stderr.write(__doc__ + "\n")
        return 2
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(argv[0])
    s.sendall(((argv[1] if argv[1] == "QUIT" else os.path.abspath(argv[1])) + "\n").encode())
    reply = s.makefile("r").readline().strip()
    if reply == "ok":
        return 0
    sys.stderr.write(reply.replace("\\n", "\n") + "\n")
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
