"""The pass/fail bookkeeping of the CLI test scripts that drive mlactl as a process
(interrupts.py, executor_reliability.py): each check prints what failed and goes on, and
finish() exits 1 if any did, so one run shows every failure."""
import sys

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
        print("FAIL: " + what)


def finish(ok_message):
    if failures:
        print(f"{len(failures)} failed")
        sys.exit(1)
    print(ok_message)
    sys.exit(0)
