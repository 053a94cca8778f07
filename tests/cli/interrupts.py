"""Interrupts as a user meets them (issue 40): the first SIGINT is acknowledged at once, the
second stops now with the summary and a valid JUnit file (exit 130), and no temporary file
(`.X.tmp.*`) survives an interrupt of any verb.

usage: interrupts.py MLACTL SOURCE_DIR WORK_DIR
"""
import glob
import os
import shutil
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET

from cli_checks import check, finish

MLACTL, SRC, WORK = sys.argv[1], sys.argv[2], sys.argv[3]
# many seconds on the CPU: 2 x 200k tokens x 128 heads x q_len 8
SLOW = ('{"schema": 1, "name": "zz-slow", "model": {"num_heads": 128}, "requests": [{"context_len": 200000, "query_len": 8}, '
        '{"context_len": 200000, "query_len": 8}], "expect": {"run": "passed"}}')


def fresh(name):
    d = os.path.join(WORK, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(os.path.join(d, "cases"))
    shutil.copy(os.path.join(SRC, "fixtures", "aiter-vector-a.json"), os.path.join(d, "cases"))
    with open(os.path.join(d, "cases", "zz-slow.json"), "w") as f:
        f.write(SLOW)
    return d


def start(d, args):
    err = open(os.path.join(d, "err.txt"), "w")
    out = open(os.path.join(d, "stdout.txt"), "w")
    # a fresh process group: the signals reach mlactl alone, as a terminal's ^C would
    return subprocess.Popen([MLACTL] + args, cwd=d, stdout=out, stderr=err, start_new_session=True), out, err


def wait_for(pred, seconds):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return True
        time.sleep(0.05)
    return pred()


def read(path):
    try:
        with open(path) as f:
            return f.read()
    except OSError:
        return ""


def temp_files(d):
    return sorted(glob.glob(os.path.join(d, "**", ".*.tmp.*"), recursive=True))


# ---- check, in-process: ^C once (acknowledged now), ^C again (stops now, summary, JUnit, 130)
d = fresh("check-twice")
p, out, err = start(d, ["check", "cases", "--backend", "cpu", "--junit", "j.xml", "-o", "report.txt"])
junit = os.path.join(d, "j.xml")
check(wait_for(lambda: 'tests="1"' in read(junit), 60), "check: the quick case finished")
check(wait_for(lambda: temp_files(d) != [], 5), "check -o: the report is being written to a temporary file")
p.send_signal(signal.SIGINT)
t0 = time.time()
check(wait_for(lambda: "stopping after the running case; ^C again to stop now" in read(os.path.join(d, "err.txt")), 1.0),
      "check: the first SIGINT is acknowledged within a second, while the slow case runs")
check(p.poll() is None, "check: still running after the first SIGINT (the running case goes on)")
p.send_signal(signal.SIGINT)
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
check(rc == 130, f"check: the second SIGINT exits 130 at once (got {rc} after {time.time() - t0:.1f} s)")
report = read(os.path.join(d, "report.txt"))
check("skipped             zz-slow\n                    interrupted by signal 2 before it finished\n" in report, "check: the running case is reported interrupted:\n" + report)
check(report.endswith("1 passed, 0 failed, 0 errors, 1 skipped, 0 refused (interrupted by signal 2 after 1 of 2 cases)\n"),
      "check: the summary is printed after the second SIGINT:\n" + report)
check("mlactl: stopping now" in read(os.path.join(d, "err.txt")), "check: the second SIGINT is acknowledged")
try:
    s = ET.parse(junit).getroot()
    check(s.get("tests") == "2" and s.get("skipped") == "1" and s.get("failures") == "0" and s.get("errors") == "0", f"junit counts {s.attrib}")
    sk = [c for c in s.iter("testcase") if c.get("name") == "zz-slow"]
    check(len(sk) == 1 and sk[0].find("skipped") is not None, "junit: zz-slow skipped (interrupted)")
except ET.ParseError as e:
    check(False, f"junit does not parse: {e}")
check(temp_files(d) == [], f"check: temporary files left: {temp_files(d)}")

# ---- check with --timeout (each case a child): one SIGTERM stops now, children included
d = fresh("check-children")
p, out, err = start(d, ["check", "cases", "--backend", "cpu", "--timeout", "600", "--junit", "j.xml", "-o", "report.txt"])
check(wait_for(lambda: 'tests="1"' in read(os.path.join(d, "j.xml")), 60), "check --timeout: the quick case finished")
time.sleep(0.3)
p.send_signal(signal.SIGTERM)
try:
    rc = p.wait(timeout=10)
except subprocess.TimeoutExpired:
    p.kill()
    rc = None
check(rc == 143, f"check --timeout: SIGTERM exits 143 (got {rc})")
check("stopping: the running cases are stopped and reported as interrupted" in read(os.path.join(d, "err.txt")), "check --timeout: acknowledged")
check(read(os.path.join(d, "report.txt")).endswith("(interrupted by signal 15 after 1 of 2 cases)\n"), "check --timeout: the summary")
check(temp_files(d) == [], f"check --timeout: temporary files left: {temp_files(d)}")

# ---- run -o, and run --dump-dir-free verbs: SIGINT or SIGTERM leaves no temporary file
for sig, name in ((signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")):
    d = fresh("run-" + name)
    p, out, err = start(d, ["run", "cases/zz-slow.json", "--backend", "cpu", "-o", "r.txt"])
    check(wait_for(lambda: temp_files(d) != [], 5), f"run -o ({name}): the temporary file exists while it runs")
    time.sleep(0.5)
    p.send_signal(sig)
    try:
        rc = p.wait(timeout=10)
    except subprocess.TimeoutExpired:
        p.kill()
        rc = None
    check(rc == -sig, f"run -o: {name} ends the process by the signal (got {rc})")
    check(temp_files(d) == [], f"run -o ({name}): temporary files left: {temp_files(d)}")
    check(not os.path.exists(os.path.join(d, "r.txt")), f"run -o ({name}): no partial report")

finish("interrupts ok")
