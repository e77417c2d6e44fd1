#!/usr/bin/env python3
"""Output as it happens (issue 14), by ordering, not by durations.

1. Piped stdout is line-buffered: `agmm run` with 25 rounds whose whole
   output fits one stdio buffer (< 4 KiB) is read line by line; as soon as
   "round 1:" arrives the run is stopped (SIGTERM). Line-buffered, the
   first line arrives while most rounds are still to run, so fewer than 25
   round lines are ever seen; block-buffered, nothing arrives before exit
   and all 25 are. Every line received ends with a newline (a stopped run's
   log never ends mid-line).
2. With stderr a terminal (a pty), `agmm bench` draws a "\\r"-updated
   progress line (rounds done, elapsed, left) and clears it at the end;
   with stderr a pipe, no progress text at all.

usage: tool_progress.py AGMM_BINARY
"""
import os
import pty
import signal
import subprocess
import sys

AGMM = sys.argv[1]
fails = []


def check(ok, what):
    if not ok:
        fails.append(what)
        print("FAIL:", what)


ROUNDS = 25
p = subprocess.Popen(
    # Rounds of 8.6 GFLOP (tens of ms each): the 24 after the first take
    # seconds, time enough for this reader to be scheduled and stop it.
    [AGMM, "run", "--ranks", "1", "--m-local", "1024", "--k", "2048", "--n", "2048",
     "--rounds", str(ROUNDS), "--no-check", "--schedule", "fused", "--timeout", "60"],
    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, stdin=subprocess.DEVNULL)
lines = []
stopped = False
for raw in p.stdout:
    lines.append(raw)
    if raw.startswith(b"round 1:") and not stopped:
        p.send_signal(signal.SIGTERM)
        stopped = True
p.wait(timeout=60)
rounds_seen = sum(1 for l in lines if l.startswith(b"round "))
check(stopped, "a 'round 1:' line arrived (saw %r)" % lines[-3:])
check(rounds_seen < ROUNDS,
      "round lines arrive as they happen: the run was stopped at round 1, "
      "yet all %d round lines arrived (block-buffered pipe?)" % rounds_seen)
check(all(l.endswith(b"\n") for l in lines), "every line complete: %r" % lines[-1:])

# 2. progress on a terminal
pid, fd = pty.fork()
if pid == 0:
    os.execv(AGMM, [AGMM, "bench", "--ranks", "1", "--m-local", "256", "--k", "256",
                    "--n", "256", "--mode", "fused", "--rounds", "30", "--warmup", "2",
                    "--timeout", "60"])
out = b""
while True:
    try:
        chunk = os.read(fd, 4096)
    except OSError:
        break
    if not chunk:
        break
    out += chunk
_, status = os.waitpid(pid, 0)
check(os.WEXITSTATUS(status) == 0, "bench on a pty exits 0")
check(b"\ragmm: bench round" in out and b"s elapsed" in out and b"s left" in out,
      "a \\r-updated progress line on the terminal: %r" % out[-400:])
check(b"\r\x1b[K" in out, "the progress line is cleared at the end")

r = subprocess.run([AGMM, "bench", "--ranks", "1", "--m-local", "256", "--k", "256",
                    "--n", "256", "--mode", "fused", "--rounds", "30", "--warmup", "2",
                    "--timeout", "60"], capture_output=True, stdin=subprocess.DEVNULL)
check(r.returncode == 0, "piped bench exits 0")
check(b"elapsed" not in r.stderr and b"\r" not in r.stderr and b"\r" not in r.stdout,
      "no progress text when stderr is not a terminal: %r" % r.stderr[-200:])

print("tool_progress: %d failed" % len(fails))
sys.exit(1 if fails else 0)
