#!/usr/bin/python3
"""The Python op's round time next to `agmm bench` at the same shape
(issue 12: within 3% at the seed shape).

usage: /usr/bin/python3 bench/python_op.py [--agmm build/agmm]
           [--m-local 2048] [--k 4096] [--n 4096] [--dtype fp16]
           [--rounds 10] [--warmup 2] [--pairs 3] [--schedule fused]
       /usr/bin/python3 bench/python_op.py --decode [--formats bf16,int4]
           [--ops ag,rs,ar,cp] [--rows-lo 1] [--rows-hi 32] [--rounds 300]
(PYTHONPATH=build/python.)

Each pair runs, one after the other on the same host:
  py-op    2 ranks started as torchrun would (RANK, WORLD_SIZE,
           MASTER_ADDR, MASTER_PORT), each calling
           agmm.torch.fused_all_gather_matmul(A_shard, [B], return_A=False)
           on torch tensors (the default group from the environment);
  py-op-A  the same with return_A=True (the gathered A returned too);
  py-plan  the same ranks calling plan.run(a) directly on NumPy arrays;
  bench    `agmm bench --mode <schedule> --json` at the same shape.
--decode measures instead the ops' cost per call at decode (issue 48):
the three fused ops and column_parallel_matmul, bf16 weights and int4
QuantizedWeights (--formats), A's rows drawn at random in --rows-lo ..
--rows-hi every call (the same sequence on both ranks), k --k, n --n
(defaults 512 x 256; the reduce ops' A is [rows, k / 2]). Each call is
followed, after a barrier, by the C round alone at the same rows: the
op's cached plan run through agmm_plan_run_args on an argument block
built beforehand (column_parallel_matmul: its one-rank plan for int4, and
torch's matmul, which it calls at these rows, for bf16). Per op the report
gives the op's and the C round's median and p90 and the op's cost above
the C round (the per-call difference; median, p90), the slowest rank's
per call, and the op's time outside its plan's run (its Python and its
shape all-gather: the plan's run methods are timed inside each call).

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


DECODE_CODE = r"""
import ctypes, json, random, sys, time
import torch
import agmm, agmm.torch as at
from agmm import _lib
cfg = json.loads(sys.argv[1])
k, n, dt = cfg["k"], cfg["n"], torch.bfloat16
world = agmm.World.from_env(timeout=300)
at.register_group("default", world, schedule=cfg["schedule"])
P, rank = world.size, world.rank
torch.manual_seed(1 + rank)
rng = random.Random(cfg["seed"])
seq = [rng.randint(cfg["lo"], cfg["hi"]) for _ in range(cfg["warmup"] + cfg["calls"])]
Ws = {"ag": (torch.randn(k, n) * 0.05).to(dt),
      "rs": (torch.randn(k // P, n) * 0.05).to(dt),
      "cp": (torch.randn(k, n // P) * 0.05).to(dt)}
Ws["ar"] = Ws["rs"]
A_ag = {r: torch.randn(r, k).to(dt) for r in range(cfg["hi"] + 1)}
A_red = {r: torch.randn(r, k // P).to(dt) for r in range(P * cfg["hi"] + 1)}
SCHED = _lib.SCHEDULES[cfg["schedule"]]


def c_round(plan, a2, cs, rows, local=False):
    # agmm_plan_run_args on a block built before the clock starts
    args = _lib.RunArgsC()
    cp = (ctypes.c_void_p * len(cs))(*[c.data_ptr() for c in cs])
    args.schedule = _lib.SCHEDULES["fused"] if local else SCHED
    args.a_local = a2.data_ptr()
    args.c = ctypes.cast(cp, ctypes.POINTER(ctypes.c_void_p))
    rc = (ctypes.c_int64 * len(rows))(*rows)
    args.m_rows = ctypes.cast(rc, ctypes.POINTER(ctypes.c_int64))
    f, h, ref = _lib.fn.agmm_plan_run_args, plan.handle, ctypes.byref(args)
    if not local:
        world.barrier()
    t0 = time.perf_counter_ns()
    st = f(h, ref)
    t = (time.perf_counter_ns() - t0) / 1e3
    assert st == 0, st
    return t


def split(rows):
    q, r = divmod(rows, P)
    return [q + 1 if i < r else q for i in range(P)]


def call(op, W, r):
    if op == "ag":
        return lambda: at.fused_all_gather_matmul(A_ag[r], [W], return_A=False)
    if op == "rs":
        return lambda: at.fused_matmul_reduce_scatter(A_red[r * P], W)
    if op == "ar":
        return lambda: at.fused_matmul_all_reduce(A_red[r], W)
    return lambda: at.column_parallel_matmul(A_ag[r], [W])


def reference(op, W, r, out):
    # the C round (or torch's matmul) at the call's rows
    od = out.dtype
    if op == "cp":
        if isinstance(W, torch.Tensor):
            t0 = time.perf_counter_ns()
            A_ag[r] @ W
            return (time.perf_counter_ns() - t0) / 1e3
        from agmm.torch.kernels import wq_colpar as wc
        plan = [p for refs, p in wc._local_plans.values() if refs[0]() is W][0]
        return c_round(plan, A_ag[r], [torch.empty((r, W.n), dtype=od)], [r], True)
    plan = at.group_plans()[-1]
    if op == "ag":
        return c_round(plan, A_ag[r], [torch.empty((r * P, n), dtype=od)], [r] * P)
    if op == "rs":
        return c_round(plan, A_red[r * P], [torch.empty((r, n), dtype=torch.float32)],
                       [r] * P)
    return c_round(plan, A_red[r], [torch.empty((r, n), dtype=torch.float32)],
                   split(r))


# The time each op call spends inside its plan's run (the round, the
# collective waits included), so that the rest, the op's own Python, is
# read per call apart from the waits: the plan's run methods timed
# (outermost call only).
from agmm import plan as _plan_mod
inside = [0, 0]  # ns inside, depth


def _timed(f):
    def run(self, *a, **kw):
        inside[1] += 1
        t0 = time.perf_counter_ns()
        try:
            return f(self, *a, **kw)
        finally:
            inside[1] -= 1
            if inside[1] == 0:
                inside[0] += time.perf_counter_ns() - t0
    return run


for _name in ("run", "_run_args", "_run_tensor", "_run_args_tensor"):
    if hasattr(_plan_mod.Plan, _name):
        setattr(_plan_mod.Plan, _name, _timed(getattr(_plan_mod.Plan, _name)))
res = {}
for fmt in cfg["formats"]:
    for op in cfg["ops"]:
        W = Ws[op]
        if fmt != "bf16":
            W = agmm.quantize_weight(W.float(), bits=int(fmt[3:]), group_size=128)
        got = []
        for i, r in enumerate(seq):
            fn = call(op, W, r)
            world.barrier()
            inside[0] = 0
            t0 = time.perf_counter_ns()
            out = fn()
            t = (time.perf_counter_ns() - t0) / 1e3
            py = t - inside[0] / 1e3
            out = out[1][0] if op == "ag" else out[0] if op == "cp" else out
            ref = reference(op, W, r, out)
            if i >= cfg["warmup"]:
                got.append((r, t, ref, py))
        res["%s/%s" % (op, fmt)] = got
with open(cfg["out"] % rank, "w") as f:
    json.dump(res, f)
at.unregister_group("default")
world.close()
"""


def run_decode(args, port, tmp):
    cfg = dict(k=args.k, n=args.n, calls=args.rounds, warmup=args.warmup,
               lo=args.rows_lo, hi=args.rows_hi, seed=args.seed,
               schedule=args.schedule, formats=args.formats.split(","),
               ops=args.ops.split(","), out=os.path.join(tmp, "decode-%d.json"))
    procs = []
    for r in range(2):
        env = dict(os.environ, RANK=str(r), WORLD_SIZE="2", LOCAL_RANK=str(r),
                   LOCAL_WORLD_SIZE="2", MASTER_ADDR="127.0.0.1",
                   MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, "-c", DECODE_CODE,
                                       json.dumps(cfg)], env=env))
    if any(p.wait(timeout=1800) for p in procs):
        sys.exit("decode: a rank failed")
    per_rank = []
    for r in range(2):
        with open(cfg["out"] % r) as f:
            per_rank.append(json.load(f))
    print("decode calls: 2 ranks, k %d, n %d (reduce ops: A [rows, k/2]), rows "
          "at random in %d..%d every call, %d calls (+%d warmup), schedule %s"
          % (args.k, args.n, args.rows_lo, args.rows_hi, args.rounds,
             args.warmup, args.schedule))
    print("%-9s %21s %21s %23s %21s" % ("op/weight", "op median  p90 (us)",
                                         "C round median  p90", "above C median  p90",
                                         "Python median  p90"))

    def q(v, f):
        v = sorted(v)
        return v[min(len(v) - 1, int(f * len(v)))]
    for key in per_rank[0]:
        rows = list(zip(per_rank[0][key], per_rank[1][key]))
        op = [max(a[1], b[1]) for a, b in rows]
        ref = [max(a[2], b[2]) for a, b in rows]
        above = [o - c for o, c in zip(op, ref)]
        py = [max(a[3], b[3]) for a, b in rows]
        name = "torch mm" if key == "cp/bf16" else "C round"
        print("%-9s %10.1f %10.1f %10.1f %10.1f %11.1f %11.1f %10.1f %10.1f%s"
              % (key, statistics.median(op), q(op, .9), statistics.median(ref),
                 q(ref, .9), statistics.median(above), q(above, .9),
                 statistics.median(py), q(py, .9),
                 "" if name == "C round" else "  (reference: torch's matmul)"))
    print("above C: the op's time minus the C round's, per call; Python: the "
          "op's time outside its plan's run, per call (its Python and its "
          "shape all-gather); both the slowest rank's")


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
    ap.add_argument("--decode", action="store_true",
                    help="the ops' cost per call at decode (module doc)")
    ap.add_argument("--rows-lo", type=int, default=1)
    ap.add_argument("--rows-hi", type=int, default=32)
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--formats", default="bf16,int4")
    ap.add_argument("--ops", default="ag,rs,ar,cp")
    args = ap.parse_args()
    if args.decode:
        from agmm.launch import free_port
        if "--k" not in sys.argv:
            args.k, args.n = 512, 256
        if "--rounds" not in sys.argv:
            args.rounds, args.warmup = 300, 50
        run_decode(args, free_port(), tempfile.mkdtemp(prefix="agmm_pyop."))
        return
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
