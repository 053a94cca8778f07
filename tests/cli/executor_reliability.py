"""--executor ends with mlactl and never touches what mlactl did not create (issue 39), its
text is escaped where printed; and a report that cannot be written is not a success.

usage: executor_reliability.py MLACTL SOURCE_DIR WORK_DIR
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import time

from cli_checks import check, finish

MLACTL, SRC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
BATCH = os.path.join(SRC, "fixtures", "seed000-verify-causal.json")


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def run(args, **kw):
    return subprocess.run([MLACTL] + args, capture_output=True, text=True, timeout=120, **kw)


def ended(pid):
    """True once pid is gone or a zombie (ended, not yet reaped by its new parent), within 5 s;
    a survivor is killed so the test leaves nothing behind."""
    for _ in range(100):
        try:
            os.kill(pid, 0)
            with open("/proc/%d/stat" % pid) as f:
                if f.read().rsplit(")", 1)[1].split()[0] == "Z":
                    return True
        except (ProcessLookupError, FileNotFoundError):
            return True
        time.sleep(0.05)
    os.kill(pid, signal.SIGKILL)
    return False


def wait_pid(path):
    for _ in range(600):
        if os.path.exists(path) and open(path).read().strip():
            return int(open(path).read().strip())
        time.sleep(0.05)
    return None


def setsid_child(pidfile):
    """An executor command whose child leaves the process group and session (setsid) and
    writes its pid; the executor itself goes on with what follows (which ends in `:`, the
    case folder's argument being appended)."""
    return "setsid sh -c 'echo $$ > %s; exec sleep 300' & while [ ! -s %s ]; do sleep 0.01; done; " % (pidfile, pidfile)


# 1. --executor-keep DIR refuses a DIR/case it did not create, and leaves it as it was
d = fresh("keep-existing")
os.makedirs(os.path.join(d, "case"))
with open(os.path.join(d, "case", "precious.txt"), "w") as f:
    f.write("mine")
r = run(["run", BATCH, "--executor", "true", "--executor-keep", d])
check(r.returncode == 4, "keep over an existing DIR/case exits 4, got %d: %s" % (r.returncode, r.stderr))
check("already exists and mlactl did not create it" in r.stdout + r.stderr, "keep names the existing DIR/case: " + r.stdout + r.stderr)
check(os.path.exists(os.path.join(d, "case", "precious.txt")), "keep deleted a file it did not create")

# 2. its log files are never written through a symlink
d = fresh("keep-symlink")
victim = os.path.join(d, "victim.txt")
with open(victim, "w") as f:
    f.write("untouched")
os.symlink(victim, os.path.join(d, "executor.stderr"))
r = run(["run", BATCH, "--executor", "echo hi >&2; false", "--executor-keep", d])
check(r.returncode == 4, "keep with a symlinked log exits 4, got %d" % r.returncode)
check(open(victim).read() == "untouched", "a log was written through a symlink")

# 3. a DIR/case mlactl made is replaced by the next run (the same folder twice works)
d = fresh("keep-twice")
for i in range(2):
    r = run(["run", BATCH, "--executor", "true", "--executor-keep", d])
    check("did not create it" not in r.stdout + r.stderr, "run %d refused mlactl's own DIR/case: %s" % (i, r.stdout + r.stderr))
check(os.path.isdir(os.path.join(d, "case")), "keep left no DIR/case")

# 4. SIGTERM ends the executor and what it started, not only mlactl
d = fresh("sigterm")
pidfile = os.path.join(d, "child.pid")
cmd = "sh -c 'sleep 300 & echo $! > %s; wait' x" % pidfile
p = subprocess.Popen([MLACTL, "run", BATCH, "--executor", cmd], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(600):
    if os.path.exists(pidfile) and open(pidfile).read().strip():
        break
    time.sleep(0.05)
child = int(open(pidfile).read().strip())
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=60)
check(rc in (143, -15), "run under SIGTERM exits 143, got %d" % rc)
check(ended(child), "the executor's child %d survived mlactl's SIGTERM" % child)

# 5. --executor-timeout takes finite positive numbers only
for bad in ("inf", "nan", "0", "-1"):
    r = run(["run", BATCH, "--executor", "true", "--executor-timeout", bad])
    check(r.returncode == 2, "--executor-timeout %s exits 2, got %d" % (bad, r.returncode))

# 6. files mlactl reads are regular files, refused at once otherwise (a FIFO blocked forever)
d = fresh("fifo")
fifo = os.path.join(d, "batch.json")
os.mkfifo(fifo)
r = run(["validate", fifo])
check(r.returncode == 3 and "is not a regular file" in r.stderr, "a FIFO batch is exit 3, got %d: %s" % (r.returncode, r.stderr))
os.makedirs(os.path.join(d, "inputs"))
os.mkfifo(os.path.join(d, "inputs", "inputs.json"))
r = run(["run", BATCH, "--backend", "cpu", "--inputs", os.path.join(d, "inputs")])
check(r.returncode == 3 and "inputs.json: is not a regular file" in r.stderr, "a FIFO inputs.json is exit 3, got %d: %s" % (r.returncode, r.stderr))
r = run(["run", BATCH, "--executor", "mkfifo \"$1/result.json\"; :"])
check(r.returncode == 4 and "result.json cannot be used" in r.stdout + r.stderr and "is not a regular file" in r.stdout + r.stderr,
      "a FIFO result.json is exit 4, got %d: %s" % (r.returncode, r.stdout + r.stderr))
# the executor's stderr tail is read from the end: 64 MiB of it costs no memory
r = run(["run", BATCH, "--executor", "head -c 67108864 /dev/zero | tr '\\0' x >&2; echo LAST >&2; false"])
check(r.returncode == 4 and "LAST" in r.stdout + r.stderr, "the stderr tail ends with its last line, got %d" % r.returncode)

# 7. an executor's setsid'd child ends with mlactl: when the executor exits, on SIGTERM, and
# at --executor-timeout (mlactl is their subreaper: cli/interrupt.hpp)
d = fresh("setsid-exit")
pidfile = os.path.join(d, "child.pid")
r = run(["run", BATCH, "--executor", setsid_child(pidfile) + ":"])
check(r.returncode == 4, "an executor that writes nothing exits 4, got %d" % r.returncode)
pid = wait_pid(pidfile)
check(pid is not None and ended(pid), "the setsid'd child of an executor that exited survived mlactl")

d = fresh("setsid-sigterm")
pidfile = os.path.join(d, "child.pid")
p = subprocess.Popen([MLACTL, "run", BATCH, "--executor", setsid_child(pidfile) + "sleep 300; :"], stdout=subprocess.DEVNULL,
                     stderr=subprocess.DEVNULL)
pid = wait_pid(pidfile)
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=60)
check(rc in (143, -15), "run under SIGTERM exits 143, got %d" % rc)
check(pid is not None and ended(pid), "the setsid'd child survived mlactl's SIGTERM")

d = fresh("setsid-timeout")
pidfile = os.path.join(d, "child.pid")
r = run(["run", BATCH, "--executor", setsid_child(pidfile) + "sleep 300; :", "--executor-timeout", "2"])
check(r.returncode == 4 and "timed out after 2 s" in r.stdout + r.stderr, "--executor-timeout 2 exits 4 naming it, got %d: %s" % (r.returncode, r.stdout + r.stderr))
pid = wait_pid(pidfile)
check(pid is not None and ended(pid), "the setsid'd child survived --executor-timeout")

d = fresh("setsid-check-timeout")
pidfile = os.path.join(d, "child.pid")
with open(BATCH) as f:
    case = json.load(f)
case["expect"] = {"run": "passed"}  # check runs the executor only for a `run` expectation
with open(os.path.join(d, "case.json"), "w") as f:
    json.dump(case, f)
r = run(["check", os.path.join(d, "case.json"), "--executor", setsid_child(pidfile) + "sleep 300; :", "--timeout", "3"])
check(r.returncode == 4, "check --timeout 3 on a hung executor exits 4, got %d: %s" % (r.returncode, r.stdout + r.stderr))
pid = wait_pid(pidfile)
check(pid is not None and ended(pid), "the setsid'd child survived check --timeout")

# 8. --executor-keep: a signal removes DIR/case and the logs mlactl made, never DIR or
# what else is in it
d = fresh("keep-signal")
keep = os.path.join(d, "keep")
os.makedirs(keep)
with open(os.path.join(keep, "mine.txt"), "w") as f:
    f.write("mine")
started = os.path.join(d, "started")
p = subprocess.Popen([MLACTL, "run", BATCH, "--executor", "touch %s; sleep 300; :" % started, "--executor-keep", keep],
                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
for _ in range(600):
    if os.path.exists(started):
        break
    time.sleep(0.05)
check(os.path.isdir(os.path.join(keep, "case")), "--executor-keep: DIR/case exists while the executor runs")
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=60)
check(rc in (143, -15), "run --executor-keep under SIGTERM exits 143, got %d" % rc)
check(sorted(os.listdir(keep)) == ["mine.txt"], "--executor-keep after SIGTERM leaves DIR as it was: %s" % sorted(os.listdir(keep)))

# 9. the executor's stderr and result.json text are escaped wherever they are printed: a C1
# control (raw 0x9b, or U+009B as UTF-8) would be a CSI to the terminal
for fmt in ([], ["--format", "json"]):
    r = subprocess.run([MLACTL] + fmt + ["run", BATCH, "--executor", r"printf 'A\233[31mB\302\233[32mC' >&2; false"], capture_output=True, timeout=120)
    out = r.stdout + r.stderr
    check(r.returncode == 4, "an executor that fails exits 4 (%s), got %d" % (fmt, r.returncode))
    check(b"\x9b" not in out, "a C1 control of the executor's stderr reached the terminal (%s): %r" % (fmt, out[-300:]))
    check(b"A\\x9b[31mB\\u009b[32mC" in out if not fmt else b"\\u009b[32mC" in out, "the executor's stderr is shown escaped (%s): %r" % (fmt, out[-300:]))
r = subprocess.run([MLACTL, "run", BATCH, "--executor",
                    "f() { printf '{\"executor\": \"n\\\\u009bm\", \"status\": \"unsupported\", \"message\": \"m\\\\u009bx\"}' > \"$1/result.json\"; }; f"],
                   capture_output=True, timeout=120)
out = r.stdout + r.stderr
check(b"\xc2\x9b" not in out, "a C1 control of result.json reached the terminal: %r" % out[-400:])
check(b"executor:       external:n\\u009bm" in out and b"m\\u009bx" in out, "result.json's executor and message are shown escaped: %r" % out[-400:])

# 10. a report that cannot be written (stdout is /dev/full) is exit 4, never 0 after printing
if os.path.exists("/dev/full"):
    for args in (["metadata", BATCH], ["--format", "json", "metadata", BATCH], ["validate", BATCH]):
        with open("/dev/full", "w") as full:
            r = subprocess.run([MLACTL] + args, stdout=full, stderr=subprocess.PIPE, text=True, timeout=120)
        check(r.returncode == 4 and "standard output: the report could not be written" in r.stderr,
              "%s to /dev/full exits 4, got %d: %s" % (" ".join(args), r.returncode, r.stderr))

finish("executor reliability ok")
