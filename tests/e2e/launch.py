#!/usr/bin/env python3
"""agmm launch (issue 24), end to end:

- exit codes: 0; the first failing rank's status, named; a rank killed by
  a signal (128 + N), named; a rank that never starts (no such program:
  127, named); a rank that hangs (--timeout: 124, the ranks still running
  named); Ctrl-C to the launcher's process group (130), every rank gone;
- --tag-output: every line (the last one without a newline too) behind
  "[rank N] ", stdout and stderr kept apart;
- the environment: AGMM_RANK/AGMM_WORLD_SIZE/AGMM_JOB, torchrun's RANK,
  LOCAL_RANK, WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR, MASTER_PORT (the
  same for every rank), AGMM_BIND_CPUS and OMP_NUM_THREADS (a user's
  OMP_NUM_THREADS kept); a torch program calling
  init_process_group("gloo") from them works (where torch imports);
- --dry-run under HWLOC_SYNTHETIC plans for that machine (the issue's
  target: 2 ranks on 2 packages x 2 nodes x 16 cores: a package's 32
  physical cores each; 4 ranks: a node each) and starts nothing; without
  --dry-run such a machine is refused;
- bad input: one line naming the option, exit 2; the same for agmm
  run's --bind, whose plan the header and --json show;
- nothing left behind: no process carrying this test's tag, and a
  segment a killed rank left in /dev/shm under the job's name is removed.

usage: launch.py AGMM_BINARY [PYTHON_WITH_TORCH]
"""
import os
import signal
import subprocess
import sys
import time

AGMM = sys.argv[1]
PYTHON = sys.argv[2] if len(sys.argv) > 2 else "/usr/bin/python3"
TAG = "agmm-test-%d-launch" % os.getpid()
ENV = dict(os.environ, AGMM_TEST_TAG=TAG)
ENV.pop("HWLOC_SYNTHETIC", None)
ENV.pop("HWLOC_XMLFILE", None)
ENV.pop("OMP_NUM_THREADS", None)
ENV.pop("USE_LIBUV", None)
fails = []
passed = [0]
NCPU = len(os.sched_getaffinity(0))


# The one line agmm launch says when it sets USE_LIBUV=0 for the ranks.
LIBUV = ("agmm launch: USE_LIBUV=0 for the ranks (torch.distributed's store "
         "without libuv; set USE_LIBUV to choose)")


def check(ok, what):
    if ok:
        passed[0] += 1
    else:
        fails.append(what)
        print("FAILED:", what, flush=True)


def launch(args, env=None, timeout=60):
    p = subprocess.run([AGMM, "launch"] + args, capture_output=True, text=True,
                       env=env or ENV, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def tagged_left():
    """Pids of processes (not this one) whose environment carries TAG."""
    left = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            with open("/proc/%s/environ" % d, "rb") as f:
                if ("AGMM_TEST_TAG=" + TAG).encode() in f.read():
                    left.append(int(d))
        except OSError:
            pass
    return left


def sleeping(pids):
    """Those of pids that run `sleep`."""
    out = []
    for d in pids:
        try:
            with open("/proc/%d/comm" % d) as f:
                if f.read().strip() == "sleep":
                    out.append(d)
        except OSError:
            pass
    return out


def nothing_left(what):
    end = time.time() + 5
    while tagged_left() and time.time() < end:
        time.sleep(0.05)
    check(not tagged_left(), "%s: processes left: %s" % (what, tagged_left()))


def exit_codes():
    rc, out, err = launch(["-n", "2", "--", "true"])
    check(rc == 0 and err == LIBUV + "\n", "true: rc %d err %r" % (rc, err))
    rc, out, err = launch(["-n", "3", "--bind", "none", "--",
                           "sh", "-c", "[ $RANK = 1 ] && exit 3; sleep 30"])
    check(rc == 3 and "agmm launch: rank 1 exited with status 3; stopping the "
          "other ranks" in err, "exit 3: rc %d err %r" % (rc, err))
    nothing_left("exit 3")
    rc, out, err = launch(["-n", "2", "--",
                           "sh", "-c", "[ $RANK = 1 ] && kill -9 $$; sleep 30"])
    check(rc == 137 and "rank 1 was killed by signal 9" in err,
          "killed: rc %d err %r" % (rc, err))
    nothing_left("killed")
    rc, out, err = launch(["-n", "2", "--", "/nonexistent/agmm-no-such-prog"])
    check(rc == 127 and "cannot start '/nonexistent/agmm-no-such-prog'" in err
          and "exited with status 127" in err,
          "never starts: rc %d err %r" % (rc, err))
    # 5 s: rank 0 must have exited and been reaped by then (a sanitized
    # launcher forks and execs slowly), rank 1 sleeps on.
    rc, out, err = launch(["-n", "2", "--timeout", "5", "--",
                           "sh", "-c", "[ $RANK = 0 ] && exit 0; sleep 30"])
    check(rc == 124 and "--timeout 5 s reached; still running: rank 1;"
          in err, "timeout: rc %d err %r" % (rc, err))
    nothing_left("timeout")
    # A rank that ignores SIGTERM is SIGKILLed after the grace period.
    rc, out, err = launch(["-n", "2", "--timeout", "0.5", "--",
                           "sh", "-c", "trap '' TERM; sleep 30 & wait; "
                           "sleep 30"])
    check(rc == 124, "timeout, SIGTERM ignored: rc %d err %r" % (rc, err))
    nothing_left("SIGTERM ignored")


def ctrl_c():
    p = subprocess.Popen([AGMM, "launch", "-n", "2", "--", "sleep", "30"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, env=ENV, start_new_session=True)
    # Up means both ranks are `sleep` already: a rank between fork and
    # exec carries the tag too, and while it execs its environ reads empty
    # (seen under TSan, where that is slow: the count went 3, 2, 3).
    end = time.time() + 20
    while len(sleeping(tagged_left())) < 2 and time.time() < end:
        time.sleep(0.05)
    up = tagged_left()
    check(len(up) == 3 and len(sleeping(up)) == 2,
          "launcher and 2 ranks up: %s (sleeping: %s)" % (up, sleeping(up)))
    os.killpg(p.pid, signal.SIGINT)  # what a terminal's Ctrl-C does
    out, err = p.communicate(timeout=30)
    check(p.returncode == 130 and "interrupted by signal 2" in err,
          "Ctrl-C: rc %d err %r" % (p.returncode, err))
    check("was killed" not in err, "Ctrl-C: no rank reported as failed: %r"
          % err)
    nothing_left("Ctrl-C")


def tag_output():
    rc, out, err = launch(["-n", "2", "--tag-output", "--", "sh", "-c",
                           "echo out$RANK; echo err$RANK >&2; "
                           "printf 'tail%s' $RANK"])
    lines = sorted(out.splitlines())
    check(rc == 0 and lines == ["[rank 0] out0", "[rank 0] tail0",
                                "[rank 1] out1", "[rank 1] tail1"],
          "tag-output stdout: %r" % out)
    check(sorted(err.splitlines()) == ["[rank 0] err0", "[rank 1] err1", LIBUV],
          "tag-output stderr: %r" % err)


def environment():
    names = ["AGMM_RANK", "AGMM_WORLD_SIZE", "AGMM_JOB", "RANK", "LOCAL_RANK",
             "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT",
             "AGMM_BIND_CPUS", "OMP_NUM_THREADS", "USE_LIBUV"]
    script = "echo " + " ".join("$" + n for n in names)
    rc, out, err = launch(["-n", "2", "--job", "envjob", "--tag-output", "--",
                           "sh", "-c", script])
    got = {}
    for line in out.splitlines():
        r, rest = line.split("] ", 1)
        got[int(r[len("[rank "):])] = dict(zip(names, rest.split(" ")))
    check(rc == 0 and sorted(got) == [0, 1], "env: rc %d out %r" % (rc, out))
    for r, e in got.items():
        for n in ("AGMM_RANK", "RANK", "LOCAL_RANK"):
            check(e.get(n) == str(r), "rank %d: %s=%s" % (r, n, e.get(n)))
        for n in ("AGMM_WORLD_SIZE", "WORLD_SIZE", "LOCAL_WORLD_SIZE"):
            check(e.get(n) == "2", "rank %d: %s=%s" % (r, n, e.get(n)))
        check(e.get("AGMM_JOB") == "envjob", "rank %d: job %s" % (r, e))
        check(e.get("MASTER_ADDR") == "127.0.0.1", "MASTER_ADDR %s" % e)
        check(e.get("MASTER_PORT", "").isdigit(), "MASTER_PORT %s" % e)
        check(e.get("USE_LIBUV") == "0", "USE_LIBUV %s" % e)
        if NCPU >= 2:
            check(e.get("AGMM_BIND_CPUS") == str(r) and
                  e.get("OMP_NUM_THREADS") == "1", "rank %d bound: %s" % (r, e))
    if len(got) == 2:
        check(got[0]["MASTER_PORT"] == got[1]["MASTER_PORT"], "one port")
    # The user's USE_LIBUV is kept, and nothing said about it.
    rc, out, err = launch(["-n", "1", "--", "sh", "-c", "echo $USE_LIBUV"],
                          env=dict(ENV, USE_LIBUV="1"))
    check(rc == 0 and out.strip() == "1" and "USE_LIBUV" not in err,
          "the user's USE_LIBUV: %r %r" % (out, err))
    env = dict(ENV, OMP_NUM_THREADS="7")
    rc, out, err = launch(["-n", "1", "--", "sh", "-c", "echo $OMP_NUM_THREADS"],
                          env=env)
    check(rc == 0 and out.strip() == "7", "the user's OMP_NUM_THREADS: %r"
          % out)
    rc, out, err = launch(["-n", "1", "--bind", "none", "--", "sh", "-c",
                           "echo x${AGMM_BIND_CPUS}x${OMP_NUM_THREADS}x"])
    check(rc == 0 and out.strip() == "xxx", "--bind none sets neither: %r"
          % out)


TORCH = r"""
import torch, torch.distributed as dist
dist.init_process_group("gloo")
t = torch.tensor([float(dist.get_rank() + 1)])
dist.all_reduce(t)
print("rank %d of %d: sum %g" % (dist.get_rank(), dist.get_world_size(),
                                 t.item()), flush=True)
dist.destroy_process_group()
"""


def torch_contract():
    has = subprocess.run([PYTHON, "-c", "import torch.distributed"],
                         capture_output=True).returncode == 0
    if not has:
        print("launch: %s has no torch: the gloo check skipped" % PYTHON)
        return
    rc, out, err = launch(["-n", "2", "--tag-output", "--", PYTHON, "-c",
                           TORCH], timeout=120)
    check(rc == 0 and sorted(out.splitlines()) ==
          ["[rank 0] rank 0 of 2: sum 3", "[rank 1] rank 1 of 2: sum 3"],
          "torch gloo: rc %d out %r err %r" % (rc, out, err))


def stride(first, count, step):
    return ",".join(str(first + i * step) for i in range(count))


def dry_run():
    env = dict(ENV, HWLOC_SYNTHETIC="pack:2 numa:2 core:16 pu:2")
    rc, out, err = launch(["-n", "2", "--dry-run", "--", "prog", "x"], env=env)
    check(rc == 0, "dry-run: rc %d err %r" % (rc, err))
    check("machine: 2 packages, 4 NUMA nodes, 64 cores, 128 hardware threads"
          in out, "dry-run machine: %r" % out)
    check("rank 0: cores %s (nodes 0-1), memory on nodes 0-1"
          % stride(0, 32, 2) in out and
          "rank 1: cores %s (nodes 2-3), memory on nodes 2-3"
          % stride(64, 32, 2) in out, "dry-run 2 ranks: %r" % out)
    check("AGMM_BIND_CPUS=%s OMP_NUM_THREADS=32" % stride(64, 32, 2) in out,
          "dry-run env: %r" % out)
    # 32 threads asked of 16-core ranks: both threads of each core.
    rc, out, err = launch(["-n", "4", "--dry-run", "--", "prog"],
                          env=dict(env, OMP_NUM_THREADS="32"))
    check("rank 1: cores 32-63 (node 1), memory on node 1" in out and
          "AGMM_BIND_CPUS=32-63" in out and "OMP_NUM_THREADS" not in out,
          "dry-run, OMP_NUM_THREADS=32 (the user's, kept) on 16 cores: %r"
          % out)
    rc, out, err = launch(["-n", "4", "--dry-run", "--", "prog"], env=env)
    for r in range(4):
        check("rank %d: cores %s (node %d), memory on node %d"
              % (r, stride(32 * r, 16, 2), r, r) in out,
              "dry-run 4 ranks, rank %d: %r" % (r, out))
    rc, out, err = launch(["-n", "2", "--dry-run", "--bind", "0-15|64-79",
                           "--", "prog"], env=env)
    check(rc == 0 and "rank 1: cores 64-79 (node 2), memory on node 2" in out,
          "dry-run list: %r %r" % (out, err))
    rc, out, err = launch(["-n", "2", "--", "true"], env=env)
    check(rc == 2 and "describe another machine" in err,
          "a described machine without --dry-run: rc %d %r" % (rc, err))
    check(not tagged_left(), "dry-run started nothing")


def bad_input():
    cases = [
        (["-n", "0", "--", "true"], "-n: ranks 1..1024 (got '0')"),
        (["-n", "x", "--", "true"], "-n: ranks 1..1024 (got 'x')"),
        (["--", "true"], "-n: give the number of ranks"),
        (["-n", "2"], "PROGRAM: nothing to start"),
        (["-n", "2", "--bind", "0|%d" % 1023, "--", "true"],
         "--bind: rank 1: CPU 1023 is not one this process may use"),
        (["-n", "2", "--bind", "0-1|1", "--", "true"],
         "--bind: ranks 0 and 1 both list CPU 1"),
        (["-n", "2", "--bind", "0", "--", "true"],
         "--bind: 1 CPU list for 2 ranks"),
        (["-n", "2", "--bind", "numa", "--", "true"], "--bind: 'numa'"),
        (["-n", "2", "--timeout", "-1", "--", "true"],
         "--timeout: seconds, a number > 0"),
        (["-n", "2", "--job", "a/b", "--", "true"], "--job: a job name"),
        (["-n", "2", "--frobnicate", "--", "true"],
         "--frobnicate: unknown option"),
        (["-n", "2", "--bind"], "--bind: needs a value"),
    ]
    for args, want in cases:
        rc, out, err = launch(args)
        lines = err.splitlines()
        check(rc == 2 and len(lines) == 1 and
              lines[0].startswith("agmm launch: " + want),
              "%s: rc %d err %r (want %r)" % (args, rc, err, want))
    check(not tagged_left(), "bad input started nothing")


def run_bind():
    """agmm run/bench --bind: refusals (one line naming --bind, exit 2) and
    the plan in --json (checked where CPUs 0 and 1 are ours)."""
    small = ["--m-local", "32", "--k", "32", "--n", "32", "--rounds", "1"]
    cases = [
        (["--bind", "0-1|1"], "agmm: --bind: ranks 0 and 1 both list CPU 1"),
        (["--bind", "0|1023"], "agmm: --bind: rank 1: CPU 1023 is not one "
         "this process may use"),
        (["--bind", "0"], "agmm: --bind: 1 CPU list for 2 ranks"),
        (["--bind", "numa"], "agmm: --bind: 'numa' (allowed: auto, none"),
    ]
    for args, want in cases:
        p = subprocess.run([AGMM, "run", "--ranks", "2"] + small + args,
                           capture_output=True, text=True, env=ENV, timeout=60)
        lines = p.stderr.splitlines()
        check(p.returncode == 2 and len(lines) == 1 and
              lines[0].startswith(want),
              "run %s: rc %d err %r" % (args, p.returncode, p.stderr))
    env = dict(ENV, HWLOC_SYNTHETIC="pack:2 numa:2 core:16 pu:2")
    p = subprocess.run([AGMM, "run", "--bind", "auto"] + small,
                       capture_output=True, text=True, env=env, timeout=60)
    check(p.returncode == 2 and "describe another machine" in p.stderr,
          "run --bind under HWLOC_SYNTHETIC: %d %r" % (p.returncode, p.stderr))
    p = subprocess.run([AGMM, "run"] + small, capture_output=True, text=True,
                       env=env, timeout=60)
    check(p.returncode == 0 and "placement: --bind auto: not binding: "
          "HWLOC_SYNTHETIC/HWLOC_XMLFILE describe another machine" in p.stdout,
          "run without --bind under HWLOC_SYNTHETIC: %d %r"
          % (p.returncode, p.stdout + p.stderr))
    if not {0, 1} <= os.sched_getaffinity(0):
        return
    import json
    p = subprocess.run([AGMM, "bench", "--ranks", "2", "--json",
                        "--bind", "1|0"] + small, capture_output=True,
                       text=True, env=ENV, timeout=60)
    try:
        pl = json.loads(p.stdout)["placement"]
    except (ValueError, KeyError):
        pl = None
    check(pl == {"bind": "1|0", "bound": True, "note": "the CPU lists given",
                 "ranks": [{"rank": 0, "cpus": "1", "cores": 1, "nodes": "0",
                            "memory_nodes": "0"},
                           {"rank": 1, "cpus": "0", "cores": 1, "nodes": "0",
                            "memory_nodes": "0"}]},
          "bench --json placement: %r (%r)" % (pl, p.stderr))
    p = subprocess.run([AGMM, "run", "--ranks", "2", "--bind", "1|0"] + small,
                       capture_output=True, text=True, env=ENV, timeout=60)
    check("placement: rank 0: cores 1 (node 0), memory on node 0\n"
          "placement: rank 1: cores 0 (node 0), memory on node 0\n"
          in p.stdout, "run header: %r" % p.stdout)


def shm_left():
    """A rank killed with a segment of the job in /dev/shm: removed."""
    job = "launchshm%d" % os.getpid()
    script = ("[ $RANK = 1 ] || exit 0; "
              "touch /dev/shm/agmm:%d:%s:$$:w0; chmod 600 /dev/shm/agmm:%d:%s:$$:w0; "
              "kill -9 $$" % (os.geteuid(), job, os.geteuid(), job))
    rc, out, err = launch(["-n", "2", "--job", job, "--", "sh", "-c", script])
    left = [f for f in os.listdir("/dev/shm") if (":%s:" % job) in f]
    check(rc == 137 and left == [], "segments of job %s left: %s (rc %d %r)"
          % (job, left, rc, err))


def main():
    exit_codes()
    ctrl_c()
    tag_output()
    environment()
    torch_contract()
    dry_run()
    bad_input()
    run_bind()
    shm_left()
    nothing_left("the end")
    print("launch: %d passed, %d failed" % (passed[0], len(fails)))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
