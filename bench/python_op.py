#!/usr/bin/python3
"""The Python op's round time next to `agmm bench` at the same shape
(issue 12: within 3% at the seed shape).

usage: /usr/bin/python3 bench/python_op.py [--agmm build/agmm]
           [--m-local 2048] [--k 4096] [--n 4096] [--dtype fp16]
           [--rounds 10] [--warmup 2] [--pairs 3] [--schedule fused]
(PYTHONPATH=build/python.)

Each pair runs, one after the other on the same host:
  py-op    2 ranks started as torchrun would (RANK, WORLD_SIZE,
           MASTER_ADDR, MASTER_PORT), each calling
           agmm.torch.fused_all_gather_matmul(A_shard, [B], return_A=False)
           on torch tensors (the default group from the environment);
  py-op-A  the same with return_A=True (the gathered A returned too);
  py-plan  the same ranks calling plan.run(a) directly on NumPy arrays;
  bench    `agmm bench --mode <schedule> --json` at the same shape.
A round's time is the slowest rank's (every rank times its own call after
a barrier and writes its times to a file), as agmm bench reports it.
The report is the median over every round of every pair per mode, the
per-pair medians (the spread), the ratio of the medians to bench's, and
the paired ratios (each pair's median over the same pair's bench median:
robust to load that changes between pairs). The
plans use the tool's default core split and tiles, so the configurations
are the same.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

RANK_CODE = r"""
import json, os, sys, time
import numpy as np, torch
import agmm, agmm.torch as at
cfg = json.loads(sys.argv[1])
m, k, n, dt = cfg["m_local"], cfg["k"], cfg["n"], cfg["dtype"]
tdt = {"fp16": torch.float16, "bf16": torch.bfloat16, "fp32": torch.float32}[dt]
world = agmm.World.from_env(timeout=300)
at.register_group("default", world, schedule=cfg["schedule"])
g = torch.Generator().manual_seed(world.rank)
A = (torch.rand(m, k, generator=g) - 0.5).to(tdt)
B = (torch.rand(k, n, generator=torch.Generator().manual_seed(99)) - 0.5).to(tdt)
times = {}
def timed(name, fn):
    t = []
    for i in range(cfg["warmup"] + cfg["rounds"]):
        world.barrier()
        t0 = time.perf_counter()
        fn()
        dt_us = (time.perf_counter() - t0) * 1e6
        if i >= cfg["warmup"]:
            t.append(dt_us)
    times[name] = t
if cfg["mode"] == "py-op":
    timed("py-op", lambda: at.fused_all_gather_matmul(A, [B], return_A=False))
elif cfg["mode"] == "py-op-A":
    timed("py-op-A", lambda: at.fused_all_gather_matmul(A, [B], return_A=True))
else:
    plan = world.plan(m_local=[m] * world.size, k=k, n=n, dtype=dt)
    a = A.view(torch.int16).numpy().view(np.uint16) if dt == "bf16" else A.numpy()
    plan.set_weight(B.view(torch.int16).numpy().view(np.uint16) if dt == "bf16"
                    else B.numpy())
    out = np.empty((m * world.size, n), np.float32)
    timed("py-plan", lambda: plan.run(a, out=out, schedule=cfg["schedule"]))
with open(cfg["out"] % world.rank, "w") as f:
    json.dump(times[cfg["mode"]], f)
world.close()
"""


def run_python(mode, args, port, tmp):
    cfg = dict(m_local=args.m_local, k=args.k, n=args.n, dtype=args.dtype,
               rounds=args.rounds, warmup=args.warmup, schedule=args.schedule,
               mode=mode, out=os.path.join(tmp, mode + "-%d.json"))
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, "-c", RANK_CODE,
                                       json.dumps(cfg)], env=env,
                                      stdout=subprocess.PIPE, text=True))
    outs = [p.communicate(timeout=1800)[0] for p in procs]
    if any(p.returncode for p in procs):
        sys.exit("%s: a rank failed:\n%s" % (mode, "\n".join(outs)))
    per_rank = []
    for r in range(2):
        with open(cfg["out"] % r) as f:
            per_rank.append(json.load(f))
    return [max(t) for t in zip(*per_rank)]  # the slowest rank, per round


def run_bench(args):
    cmd = [args.agmm, "bench", "--ranks", "2", "--m-local", str(args.m_local),
           "--k", str(args.k), "--n", str(args.n), "--dtype", args.dtype,
           "--rounds", str(args.rounds), "--warmup", str(args.warmup),
           "--mode", args.schedule, "--json"]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return json.loads(out)["modes"][args.schedule]["samples_us"], " ".join(cmd)


def busy_others():
    """Other processes (not this script or its descendants) using more than
    20% of a core now, by ps."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,pcpu,comm", "--no-headers"],
                         capture_output=True, text=True).stdout
    rows = [l.split(None, 3) for l in out.splitlines()]
    parent = {int(r[0]): int(r[1]) for r in rows}
    me = os.getpid()

    def ours(pid):
        while pid > 1:
            if pid == me:
                return True
            pid = parent.get(pid, 0)
        return False
    return [r[3] for r in rows if float(r[2]) > 20 and not ours(int(r[0]))]


class Watch(threading.Thread):
    """Samples busy_others() every second while a pair runs."""

    def __init__(self):
        super().__init__(daemon=True)
        self.seen, self.stop = set(), threading.Event()

    def run(self):
        while not self.stop.wait(1.0):
            self.seen.update(busy_others())


def wait_quiet(limit_s):
    """Wait (up to limit_s) until the load average is under 2.5 and no
    other process is busy; True if it got quiet."""
    t0 = time.time()
    while time.time() - t0 < limit_s:
        if os.getloadavg()[0] < 2.5 and not busy_others():
            return True
        time.sleep(5)
    return False


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--agmm", default="build/agmm")
    ap.add_argument("--m-local", type=int, default=2048)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--dtype", default="fp16")
    ap.add_argument("--rounds", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--pairs", type=int, default=3)
    ap.add_argument("--schedule", default="fused", choices=["fused", "baseline"])
    ap.add_argument("--wait-quiet", type=float, default=0,
                    help="before each pair, wait up to this many seconds for "
                         "a quiet host (load < 2.5, no other busy process)")
    args = ap.parse_args()
    modes = ("bench", "py-op", "py-op-A", "py-plan")
    samples = {m: [] for m in modes}
    medians = {k: [] for k in samples}
    from agmm.launch import free_port
    port = free_port()  # a job name for agmm (nothing listens on it)
    bench_cmd = ""
    tmp = tempfile.mkdtemp(prefix="agmm_pyop.")
    quiet = []
    for pair in range(args.pairs):
        if args.wait_quiet > 0:
            wait_quiet(args.wait_quiet)
        watch = Watch()
        watch.start()
        for mode in modes:
            if mode == "bench":
                s, bench_cmd = run_bench(args)
            else:
                port += 1
                s = run_python(mode, args, port, tmp)
            samples[mode] += s
            medians[mode].append(statistics.median(s))
            print("pair %d %-8s median %10.1f us" % (pair + 1, mode, medians[mode][-1]),
                  flush=True)
        watch.stop.set()
        watch.join()
        quiet.append(not watch.seen)
        print("pair %d: %s" % (pair + 1, "no other busy process seen" if quiet[-1]
                               else "other busy processes: " + ", ".join(sorted(watch.seen))),
              flush=True)
    print("\nshape: 2 ranks, m_local %d, k %d, n %d, %s, schedule %s; %d pairs x %d "
          "rounds (+%d warmup)" % (args.m_local, args.k, args.n, args.dtype,
                                   args.schedule, args.pairs, args.rounds, args.warmup))
    print("bench: %s" % bench_cmd)
    base = statistics.median(samples["bench"])
    for mode in modes:
        med = statistics.median(samples[mode])
        print("%-8s median %10.1f us  min %10.1f us  (pair medians %s)  ratio to bench %.4f"
              % (mode, med, min(samples[mode]),
                 " ".join("%.0f" % m for m in medians[mode]), med / base))
    for mode in modes[1:]:
        paired = [m / b for m, b in zip(medians[mode], medians["bench"])]
        print("%-8s paired ratio to bench (per-pair medians): median %.4f, "
              "min %.4f, max %.4f" % (mode, statistics.median(paired),
                                      min(paired), max(paired)))
    q = [i for i, v in enumerate(quiet) if v]
    if q:
        for mode in modes[1:]:
            paired = [medians[mode][i] / medians["bench"][i] for i in q]
            print("%-8s paired ratio, undisturbed pairs (%s): median %.4f, "
                  "min %.4f, max %.4f" % (mode, ",".join(str(i + 1) for i in q),
                                          statistics.median(paired), min(paired),
                                          max(paired)))
    print("load average at the end: %s" % " ".join(
        "%.2f" % v for v in os.getloadavg()))


if __name__ == "__main__":
    t0 = time.time()
    main()
    print("took %.0f s" % (time.time() - t0))
