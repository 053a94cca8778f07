"""Imported before numpy by the adapters: when this python3 has no numpy (the first python3
on PATH is often a pyenv or conda one without it), exit 4 with one line that names the
interpreter, instead of an ImportError traceback. mlactl shows the line as the executor's
reason (docs/executor-protocol.md: a failing executor is exit 4)."""
import sys

try:
    import numpy  # noqa: F401
except ImportError as e:
    sys.stderr.write(
        f"numpy is missing from this python3 ({sys.executable}): {e}; run the adapter with a python3 that has numpy, "
        f"e.g. --executor \"/usr/bin/python3 {sys.argv[0] if sys.argv and sys.argv[0] else 'adapters/numpy_ref.py'}\"\n"
    )
    sys.exit(4)
