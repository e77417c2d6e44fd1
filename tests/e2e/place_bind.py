#!/usr/bin/env python3
"""Real binding on this machine (issue 24): every thread of every rank runs
on the CPUs it was given, read back from /proc/<pid>/task/*/status
(Cpus_allowed_list) while the ranks run.

- forked ranks (agmm bench): --bind auto gives 2 ranks a CPU each, in rank
  order (the launcher forks rank 0 first: the lower pid); --bind 1|0 the
  reverse; --bind none leaves every thread on the launcher's CPUs;
- one rank with 2 GEMM workers on CPUs 0-1: each worker is seen on its
  own CPU (worker 0 on 0, worker 1 on 1) and no thread ever outside 0-1;
- agmm launch: each rank process (and its threads) on its CPU, also a
  Python rank (World.from_env) whose agmm workers run on that CPU.

Needs CPUs 0 and 1 in this process's affinity (else it says so and
passes: nothing to bind on one CPU).

usage: place_bind.py AGMM_BINARY [PYTHONPATH_OF_THE_PACKAGE [PYTHON]]
                     [--no-launch]
"""
import os
import signal
import subprocess
import sys
import time

AGMM = sys.argv[1]
NO_LAUNCH = "--no-launch" in sys.argv  # forked ranks only
args = [a for a in sys.argv[2:] if a != "--no-launch"]
PYPATH = args[0] if args else None
PYTHON = args[1] if len(args) > 1 else "/usr/bin/python3"  # has numpy
fails = []
passed = [0]


def check(ok, what):
    if ok:
        passed[0] += 1
    else:
        fails.append(what)
        print("FAILED:", what, flush=True)


def cpus_of(tid_status):
    for line in tid_status.splitlines():
        if line.startswith("Cpus_allowed_list:"):
            return line.split(":", 1)[1].strip()
    return None


def threads(pid):
    """{tid: Cpus_allowed_list} of a live process ({} once it is gone)."""
    out = {}
    try:
        tids = os.listdir("/proc/%d/task" % pid)
    except OSError:
        return out
    for t in tids:
        try:
            with open("/proc/%d/task/%s/status" % (pid, t)) as f:
                c = cpus_of(f.read())
        except OSError:
            continue
        if c is not None:
            out[int(t)] = c
    return out


def comm(pid):
    try:
        with open("/proc/%d/comm" % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return sorted(int(x) for x in f.read().split())
    except OSError:
        return []


def wait_children(pid, n, timeout=30):
    end = time.time() + timeout
    while time.time() < end:
        c = children(pid)
        if len(c) >= n:
            return c
        time.sleep(0.05)
    return children(pid)


BENCH = ["bench", "--m-local", "256", "--k", "256", "--n", "256",
         "--rounds", "1000000", "--warmup", "0", "--timeout", "30"]


def stop(p):
    p.send_signal(signal.SIGTERM)
    try:
        p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()


def forked(bind, want, extra=()):
    """agmm bench --ranks 2 --bind BIND: rank r's threads all on want[r]."""
    args = [AGMM] + BENCH + ["--ranks", "2", "--gemm-cores", "1",
                             "--comm-cores", "0", *extra]
    if bind:
        args += ["--bind", bind]
    p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    ranks = wait_children(p.pid, 2)
    check(len(ranks) == 2, "bind %s: 2 ranks started (%s)" % (bind, ranks))
    time.sleep(1.0)  # into the rounds: workers come and go every round
    seen = [set(), set()]
    for _ in range(50):
        for r, pid in enumerate(ranks[:2]):
            seen[r] |= set(threads(pid).values())
        time.sleep(0.02)
    stop(p)
    for r in range(min(2, len(ranks))):
        check(seen[r] == {want[r]},
              "bind %s: rank %d's threads on %s, want only %s"
              % (bind, r, sorted(seen[r]), want[r]))


def one_rank_two_workers():
    p = subprocess.Popen([AGMM] + BENCH + ["--ranks", "1", "--gemm-cores", "2",
                                           "--comm-cores", "0"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    ranks = wait_children(p.pid, 1)
    check(len(ranks) == 1, "1 rank started")
    seen = set()
    end = time.time() + 20
    while ranks and time.time() < end and not {"0", "1"} <= seen:
        seen |= set(threads(ranks[0]).values())
    stop(p)
    check({"0", "1"} <= seen,
          "2 workers of one rank each seen on its own CPU: %s" % sorted(seen))
    check(seen <= {"0", "1", "0-1"}, "no thread outside 0-1: %s" % sorted(seen))


def launched():
    """agmm launch -n 2 -- sleep: each rank process on its CPU."""
    p = subprocess.Popen([AGMM, "launch", "-n", "2", "--", "sleep", "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    ranks = wait_children(p.pid, 2)
    end = time.time() + 20  # until both have exec'd sleep (bound before)
    while time.time() < end and not all(comm(pid) == "sleep" for pid in ranks):
        time.sleep(0.02)
    got = [sorted(set(threads(pid).values())) for pid in ranks]
    check(got == [["0"], ["1"]], "agmm launch: ranks on %s" % got)
    stop(p)
    check(p.returncode == 143, "agmm launch after SIGTERM: %s" % p.returncode)


PY_RANK = r"""
import os, sys, time
import numpy as np
import agmm
w = agmm.World.from_env()
plan = w.plan(m_local=256, k=256, n=256, dtype="fp32")
plan.set_weight(np.ones((256, 256), np.float32))
a = np.ones((256, 256), np.float32)
end = time.time() + 120  # until the test has seen enough (sys.argv[1])
rounds = 0
stop = False
while not stop:
    plan.run(a)
    rounds += 1
    if rounds == 1:
        print("running", flush=True)
    if rounds % 20 == 0:  # the ranks agree when to stop (runs are collective)
        mine = b"1" if os.path.exists(sys.argv[1]) or time.time() > end else b"0"
        stop = b"1" in w.allgather(mine)
print("rank", w.rank, "rounds", rounds, flush=True)
w.close()
"""


def python_launched(n, bind, want):
    """agmm launch -n N --bind BIND -- python (World.from_env, a plan run
    in a loop): the CPU lists seen on rank r's threads are want[r]."""
    if not PYPATH:
        return
    env = dict(os.environ, PYTHONPATH=PYPATH)
    stop = "/tmp/agmm_place_bind_stop.%d" % os.getpid()
    if os.path.exists(stop):
        os.unlink(stop)
    p = subprocess.Popen([AGMM, "launch", "-n", str(n), "--bind", bind,
                          "--job", "placebind%d" % os.getpid(),
                          "--tag-output", "--",  # whole lines from each rank
                          PYTHON, "-c", PY_RANK, stop],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=env)
    ranks = wait_children(p.pid, n)
    # Once every rank has run a round (the import and the join take a while
    # on a loaded machine): at least 1 s of rounds, and until every rank
    # was seen as wanted, at most 60 s.
    running = 0
    while running < n and p.stdout.readline().endswith("] running\n"):
        running += 1
    check(running == n, "python ranks under --bind %s: %d of %d ran a round"
          % (bind, running, n))
    seen = [set() for _ in range(n)]
    start = time.time()
    while time.time() - start < 60 and p.poll() is None and (
            time.time() - start < 1 or
            any(seen[r] != want[r] for r in range(n))):
        for r, pid in enumerate(ranks[:n]):
            seen[r] |= set(threads(pid).values())
    open(stop, "w").close()  # the ranks leave their loop together
    try:
        out, err = p.communicate(timeout=60)
    finally:
        os.unlink(stop)
    check(p.returncode == 0, "python ranks under agmm launch --bind %s: exit "
          "%s\n%s%s" % (bind, p.returncode, out, err))
    for r in range(min(n, len(ranks))):
        check(seen[r] == want[r],
              "python rank %d under agmm launch --bind %s: threads on %s, "
              "want %s" % (r, bind, sorted(seen[r]), sorted(want[r])))


def cpu_list(cpus):
    """{0, 1, 2, 5} -> "0-2,5", as the kernel prints Cpus_allowed_list."""
    out, cpus = [], sorted(cpus)
    i = 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else "%d-%d" % (cpus[i], cpus[j]))
        i = j + 1
    return ",".join(out)


def main():
    mine = os.sched_getaffinity(0)
    if not {0, 1} <= mine:
        print("place_bind: CPUs 0 and 1 are not both ours (%s): nothing to "
              "check" % sorted(mine))
        return 0
    forked(None, ["0", "1"])
    forked("1|0", ["1", "0"])
    forked("none", [cpu_list(mine)] * 2)
    one_rank_two_workers()
    if not NO_LAUNCH:
        launched()
        # A rank a CPU: every thread there.
        python_launched(2, "auto", [{"0"}, {"1"}])
        # One rank on 0-1 (1 comm + 1 GEMM worker by default): each worker
        # on its own CPU while a round runs, the rest on 0-1.
        python_launched(1, "0-1", [{"0", "1", "0-1"}])
    print("place_bind: %d passed, %d failed" % (passed[0], len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
