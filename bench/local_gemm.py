#!/usr/bin/env python3
"""agmm.torch's local GEMMs (python/agmm/torch/kernels/local.py: the backward's
weight gradients through a one-rank agmm plan) against torch's matmul, side
by side (docs/history/, "Zen 4 again"):

    PYTHONPATH=build/python bench/local_gemm.py [--procs P] [--reps N]
        [--dtype bf16|fp16] [--shape MxKxN[,N...]]... [--rows M1,M2,...]
        [--keep] [--inner K1,K2,...]

P processes (default 2, as the layer benchmark's ranks), each on its own
CPU when there are enough, run at the same time, each alternating the two
paths per repeat: `local_mm(x, ys)` and `[x @ y for y in ys]` (fp16: in
float32, as torch 1.13 must), with x [M, K] and ys [K, N_i], at any
size (local_mm's bounds, which this measures, are lifted).
--rows: every repeat runs each shape at each of these row counts in
turn (its M ignored), as a prefill whose token count changes every call
(after one warm call per row count, agmm's plans as they come out of
them). --keep: local_mm(..., keep=True), the call of
column_parallel_matmul's forward, whose ys are a layer's weights, kept
prepared (a tree whose local_mm has no keep runs without it, and says
so: for a side by side of two trees). --inner: every repeat j runs each
shape at each of these inner sizes plus j in turn (its K ignored; new
operands every call), so that no size comes twice, as the backward's
weight gradients (x^T @ dC) whose inner size is a token count that
changes every step; local_mm's rules for making plans as they are
(elsewhere a plan is made at a shape's first call, the warm one).
Default
shapes: the Llama MLP's (h 4096, i 11008, 2 ranks, 2048 tokens each)
weight gradients: gate and up (4096x4096x5504,5504) and down
(5504x4096x4096). Prints per shape the median ms and GF/s of each path
over every process's repeats, the spread ((p75 - p25) / median), the paired
ratio agmm / torch (median of each repeat's own ratio) and the largest
difference between the two results. Exit 0 unless a process fails (1,
as soon as one has ended without its results), 2 for bad arguments."""
import argparse
import os
import statistics
import sys
import time


def run_proc(idx, args, q):
    import torch
    import agmm.torch.kernels.local as L
    L.LOCAL_MIN_FLOP = L.LOCAL_MIN_DIM = 0  # both paths at every size: what sets the bounds
    if not args.inner:  # a plan from the warm call (a shape's first): its path is what is timed
        L.LOCAL_SIGHTINGS = 1
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) >= args.procs:
        os.sched_setaffinity(0, {cpus[idx]})
    torch.set_num_threads(1)
    dt = {"bf16": torch.bfloat16, "fp16": torch.float16}[args.dtype]
    g = torch.Generator().manual_seed(idx)
    out = []
    kw = {"keep": True} if args.keep and takes_keep(L) else {}
    for m, k, ns in args.shapes:
        if args.inner:
            out.append(inner_sizes(L, m, ns, args, dt, g, kw))
            continue
        ms = args.rows or [m]
        xs = [torch.randn(mi, k, generator=g).to(dt) for mi in ms]
        ys = [torch.randn(k, n, generator=g).to(dt) for n in ns]

        def ag(x):
            return L.local_mm(x, ys, dt, **kw)

        def th(x):
            return L._torch_mm(x, ys, dt)

        diff = 0.0
        for x in xs:  # warm: plans made, pages touched
            a, t = ag(x), th(x)
            diff = max([diff] + [(u.float() - v.float()).abs().max().item()
                                 for u, v in zip(a, t)])
        rows = []
        for _ in range(args.reps):
            for x in xs:
                r = []
                for fn in (ag, th):
                    t0 = time.perf_counter()
                    fn(x)
                    r.append(time.perf_counter() - t0)
                rows.append(r)
        flop = 2.0 * k * sum(ns) * sum(ms) / len(ms)  # a call's, on average
        out.append((m if not args.rows else "/".join(map(str, ms)), k, ns,
                    rows, diff, flop))
    q.put(out)


def inner_sizes(L, m, ns, args, dt, g, kw):
    """--inner: shape (m, ns) at inner sizes K_i + j in repeat j (each call
    new operands; no size comes twice, as a backward's token count that
    changes every step), local_mm as it is (its plan rules untouched)
    against torch's matmul; one warm call of each path first, at another
    size (the process's world and torch's first call)."""
    import torch
    ks = args.inner
    x = torch.randn(m, max(ks) + args.reps + 1, generator=g).to(dt)
    ys = [torch.randn(max(ks) + args.reps + 1, n, generator=g).to(dt)
          for n in ns]
    w = max(ks) + args.reps  # a size no timed call has
    L.local_mm(x[:, :w], [y[:w] for y in ys], dt, **kw)
    L._torch_mm(x[:, :w], [y[:w] for y in ys], dt)
    rows, diff = [], 0.0
    for j in range(args.reps):
        for k in ks:
            # fresh operands, as a step's: contiguous copies of the slices
            xk = x[:, :k + j].contiguous()
            yk = [y[:k + j].contiguous() for y in ys]
            r, res = [], []
            for fn in (L.local_mm, L._torch_mm):
                t0 = time.perf_counter()
                res.append(fn(xk, yk, dt))
                r.append(time.perf_counter() - t0)
            rows.append(r)
            diff = max([diff] + [(u.float() - v.float()).abs().max().item()
                                 for u, v in zip(*res)])
    kmean = sum(ks) / len(ks) + (args.reps - 1) / 2.0
    return (m, "/".join(map(str, ks)) + "+j", ns, rows, diff,
            2.0 * m * kmean * sum(ns))


def takes_keep(L):
    import inspect
    return "keep" in inspect.signature(L.local_mm).parameters


def collect(q, procs):
    """Every process's results, or None as soon as one has ended without
    putting them (never waits on a process that is gone)."""
    import queue
    results = []
    while len(results) < len(procs):
        try:
            results.append(q.get(timeout=1))
        except queue.Empty:
            if sum(pr.exitcode is not None for pr in procs) > len(results):
                try:  # its results may have landed just before it ended
                    results.append(q.get(timeout=1))
                except queue.Empty:
                    return None
    return results


def shape(text):
    try:
        m, k, n = text.split("x")
        return int(m), int(k), [int(v) for v in n.split(",")]
    except ValueError:
        raise argparse.ArgumentTypeError("%r (allowed: MxKxN or MxKxN1,N2...)" % text)


def row_list(text):
    try:
        ms = [int(v) for v in text.split(",")]
    except ValueError:
        ms = []
    if not ms or min(ms) < 1:
        raise argparse.ArgumentTypeError("%r (allowed: N1,N2,... each >= 1)" % text)
    return ms


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--procs", type=int, default=2)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dtype", choices=["bf16", "fp16"], default="bf16")
    p.add_argument("--shape", type=shape, action="append", dest="shapes")
    p.add_argument("--rows", type=row_list, default=None)
    p.add_argument("--keep", action="store_true")
    p.add_argument("--inner", type=row_list, default=None)
    args = p.parse_args()
    if args.procs < 1 or args.reps < 1:
        print("local_gemm: --procs and --reps must be >= 1", file=sys.stderr)
        return 2
    if args.rows and args.inner:
        print("local_gemm: --rows and --inner: one of them at most",
              file=sys.stderr)
        return 2
    args.shapes = args.shapes or [(4096, 4096, [5504, 5504]), (5504, 4096, [4096])]
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    procs = [ctx.Process(target=run_proc, args=(i, args, q)) for i in range(args.procs)]
    for pr in procs:
        pr.start()
    results = collect(q, procs)
    if results is None:
        for pr in procs:
            pr.kill()
        print("local_gemm: a process ended without its results (exit codes %s)"
              % [pr.exitcode for pr in procs], file=sys.stderr)
        return 1
    for pr in procs:
        pr.join()
    import agmm.torch.kernels.local as L
    import torch
    torch.set_num_threads(1)
    L.LOCAL_MIN_FLOP, L.LOCAL_SIGHTINGS = 0, 1
    if L.engine_available():
        x = torch.zeros(256, 256, dtype=torch.bfloat16)
        L.local_mm(x, [x], torch.bfloat16)
        info = L._state["plans"][-1][1].gemm_info()
        engine = "agmm engine %s %s (%s path)" % (info.engine, info.impl, info.path)
    else:
        engine = "libagmm without oneDNN: local_mm is torch's matmul on both sides"
    keep = ""
    if args.keep:
        keep = ", keep=True" if takes_keep(L) else \
            ", keep asked but this tree's local_mm has none"
    print("local_gemm: %d process(es) x %d repeats, %s, %s%s"
          % (args.procs, args.reps, args.dtype, engine, keep))
    print("%-22s %10s %8s %7s %10s %8s %7s %8s %9s" % (
        "shape", "agmm_ms", "GF/s", "spread", "torch_ms", "GF/s", "spread",
        "ratio", "max_diff"))
    for s, (m, k, ns, _, _, flop) in enumerate(results[0]):
        rows = [r for res in results for r in res[s][3]]
        diff = max(res[s][4] for res in results)
        cols = []
        for j in (0, 1):
            v = sorted(r[j] for r in rows)
            med = statistics.median(v)
            q4 = statistics.quantiles(v, n=4) if len(v) > 1 else [med] * 3
            cols.append((med * 1e3, flop / med / 1e9, (q4[2] - q4[0]) / med))
        ratio = statistics.median(r[0] / r[1] for r in rows)
        print("%-22s %10.1f %8.1f %7.2f %10.1f %8.1f %7.2f %8.3f %9.3g" % (
            "%sx%sx%s" % (m, k, ",".join(map(str, ns))), *cols[0], *cols[1],
            ratio, diff))
    return 0


if __name__ == "__main__":
    sys.exit(main())
