#!/usr/bin/env python3
"""Ctrl-C and SIGTERM end the job cleanly (issue 14).

- Ctrl-C (SIGINT to the whole process group, as a terminal sends it) to a
  running `agmm bench` exits 130; SIGTERM to the launcher alone exits 143.
- bench prints the statistics of the rounds done ("interrupted by signal",
  then the table with a fused row).
- No "was killed by signal" line for the signal agmm itself sent its ranks.
- Nothing left behind: no process carrying this test's tag in its
  environment (as tests/e2e/proc_tag.sh checks), no /dev/shm segment of
  the run (agmm:<uid>:fork-<launcher pid>:...).
- `agmm run` stopped by SIGTERM also exits 143, its log ends with a newline.

usage: tool_signals.py AGMM_BINARY
"""
import os
import signal
import subprocess
import sys
import time

AGMM = sys.argv[1]
TAG = "agmm-test-%d-signals" % os.getpid()
env = dict(os.environ, AGMM_TEST_TAG=TAG)
fails = []
last_pid = [0]  # the launcher of the last run (its segments' job name)


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL:", what)


def tagged_pids():
    out = []
    for p in os.listdir("/proc"):
        if not p.isdigit() or int(p) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % p, "rb") as f:
                if ("AGMM_TEST_TAG=" + TAG).encode() in f.read().split(b"\0"):
                    out.append(p)
        except OSError:
            pass
    return out


def stop(cmd, sig, group, wait_for):
    """Start agmm, wait until stdout has `wait_for`, send sig; return
    (exit code, stdout, stderr)."""
    p = subprocess.Popen([AGMM] + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env, start_new_session=True)
    last_pid[0] = p.pid
    out = b""
    while wait_for not in out:
        line = p.stdout.readline()
        if not line:
            break
        out += line
    time.sleep(3)  # some timed rounds, even on a loaded machine
    if group:
        os.killpg(p.pid, sig)
    else:
        p.send_signal(sig)
    rest, err = p.communicate(timeout=60)
    return p.returncode, out + rest, err


BENCH = ["bench", "--ranks", "2", "--m-local", "256", "--k", "256", "--n", "256",
         "--rounds", "1000000", "--warmup", "1", "--mode", "fused,baseline", "--timeout", "60"]
for name, sig, group, want in (("Ctrl-C", signal.SIGINT, True, 130),
                               ("SIGTERM", signal.SIGTERM, False, 143)):
    rc, out, err = stop(BENCH, sig, group, b"rounds:")
    check(rc == want, "bench %s: exit %d, want %d; stderr %r" % (name, rc, want, err[-300:]))
    check(b"was killed by signal" not in err,
          "bench %s: no 'killed by signal' line for agmm's own signal: %r" % (name, err))
    check(b"interrupted: statistics of the" in out and b"\nfused " in out,
          "bench %s: partial statistics printed: %r" % (name, out[-400:]))
    check(tagged_pids() == [], "bench %s: no agmm process left: %s" % (name, tagged_pids()))
    # This run's segments carry the job fork-<launcher pid> (other sessions
    # on the machine may have agmm segments of their own).
    shm = [f for f in os.listdir("/dev/shm") if ":fork-%d:" % last_pid[0] in f]
    check(shm == [], "bench %s: /dev/shm clean: %s" % (name, shm))

rc, out, err = stop(["run", "--ranks", "2", "--m-local", "128", "--k", "128", "--n", "128",
                     "--rounds", "1000000", "--timeout", "60"], signal.SIGTERM, False,
                    b"round 1:")
check(rc == 143, "run SIGTERM: exit %d, want 143" % rc)
check(out.endswith(b"\n"), "run SIGTERM: the log ends with a whole line: %r" % out[-100:])
check(b"was killed by signal" not in err, "run SIGTERM: no 'killed by signal': %r" % err)
check(tagged_pids() == [], "run: no agmm process left: %s" % tagged_pids())

print("tool_signals: %d failed" % len(fails))
sys.exit(1 if fails else 0)
