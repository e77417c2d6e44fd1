#!/usr/bin/python3
"""Times the tensor-parallel Llama MLP (examples/tp_mlp.py's TPMLP) over
agmm's ops against the same module written with torch.distributed (gloo)
collectives and torch matmuls: forward, and forward + backward, at prefill
(--tokens rows per rank) and decode (--decode-rows rows in all), in both
forms (sp: all-gather + GEMM, GEMM + reduce-scatter; tp: local GEMMs,
GEMM + all-reduce, and in the backward the all-reduce of dx, which need
agmm's op gemm-ar).

usage: PYTHONPATH=build/python /usr/bin/python3 bench/tp_layer.py [--ranks 2] [--hidden H] [--inter I] [--tokens T] [--reps R] ...

The ranks: started by the script (agmm.launch.spawn: torchrun's variables
RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT, a free port where rank 0 hosts
gloo's store; Debian 12's torchrun fails before it starts a worker), or by
a launcher that sets them (then it runs as one rank). Same
torch threads per rank (torch.set_num_threads(--threads)) and agmm GEMM
workers (gemm_workers=--threads; comm workers by agmm's default core
split), same dtype (bf16 default). gloo has no bfloat16: the gloo module
all-gathers bf16 bits viewed as float16 (data movement only) and reduces in
float32 (agmm's rounds also sum float32); it has no reduce-scatter either,
so it all-reduces and keeps its rows (what torch's gloo users do).

Prints per configuration the layer time (the slowest rank, per repeat:
median, min, max, spread = (p75 - p25) / median), agmm/gloo ratios, and,
from agmm's traces (agmm.Trace on the group's plans, extra traced
repeats), where the time of each agmm op goes: its round, its GEMM workers'
work and waits, its communication and the share of it hidden behind GEMM.
Then the ops' own cost per call at a tiny shape (--tiny, 64 x 128 x 128)
against plan.run's. --json FILE writes every number. Do not read timings
from a shared or busy host.

--malloc reuse starts the ranks with glibc told to keep freed memory for
the next allocation (GLIBC_TUNABLES mmap_max=0, trim_threshold 16 GiB:
what jemalloc or tcmalloc give PyTorch users) instead of glibc's default
(fresh pages from the kernel for every tensor over 32 MiB, touched anew:
on a VM that can cost 11 us a 4 KiB page, more than the elementwise op
itself). Both modules run under the same setting; agmm's own outputs are
advised for huge pages under either (docs/history/, "Zen 5").
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch
import torch.distributed as dist
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

DTYPES = {"bf16": torch.bfloat16, "fp32": torch.float32}
# --malloc reuse: glibc keeps freed memory for the next allocation.
MALLOC_REUSE = "glibc.malloc.mmap_max=0:glibc.malloc.trim_threshold=17179869184"


def split(n, P):
    sizes = [n // P + (1 if r < n % P else 0) for r in range(P)]
    return sizes, [sum(sizes[:r]) for r in range(P)]


# ------------------------------------------------ the gloo module
def _gather(x, rows):
    """cat of every rank's x ([rows[r], h]): gloo all_gather, padded to the
    most rows; bf16 moved as float16 bits."""
    top = max(rows)
    wire = x.view(torch.float16) if x.dtype == torch.bfloat16 else x
    pad = wire.new_zeros((top,) + tuple(x.shape[1:]))
    pad[:x.shape[0]] = wire
    parts = [torch.empty_like(pad) for _ in rows]
    dist.all_gather(parts, pad)
    out = torch.cat([p[:r] for p, r in zip(parts, rows)])
    return out.view(x.dtype) if x.dtype == torch.bfloat16 else out


def _sum(x):
    y = x.to(torch.float32, copy=True)
    dist.all_reduce(y)
    return y


def _mine(x, rows):
    me = dist.get_rank()
    r0 = sum(rows[:me])
    return x[r0:r0 + rows[me]]


class _AllGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rows):
        ctx.rows = rows
        return _gather(x, rows)

    @staticmethod
    def backward(ctx, g):
        return _mine(_sum(g), ctx.rows).to(g.dtype), None


class _ReduceScatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rows):
        ctx.rows = rows
        return _mine(_sum(x), rows).contiguous()

    @staticmethod
    def backward(ctx, g):
        return _gather(g.contiguous(), ctx.rows), None


class _AllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _sum(x)

    @staticmethod
    def backward(ctx, g):
        return g


class _Copy(torch.autograd.Function):
    """Megatron's f on the tp form's replicated input: the identity
    forward, dx all-reduced in the backward (agmm's TPMLP makes that sum in
    column_parallel_matmul's backward)."""
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return _sum(g).to(g.dtype)


class GlooMLP(torch.nn.Module):
    """TPMLP's layer with gloo collectives and torch matmuls (the same
    parameters: copy them from a TPMLP)."""

    def __init__(self, agmm_mlp, rows_of_rank):
        super().__init__()
        self.mode, self.rows = agmm_mlp.mode, rows_of_rank
        self.w_gate = torch.nn.Parameter(agmm_mlp.w_gate.detach().clone())
        self.w_up = torch.nn.Parameter(agmm_mlp.w_up.detach().clone())
        self.w_down = torch.nn.Parameter(agmm_mlp.w_down.detach().clone())

    def forward(self, x):
        dt = self.w_gate.dtype
        x = _AllGather.apply(x, self.rows) if self.mode == "sp" else _Copy.apply(x)
        act = (F.silu((x @ self.w_gate).float()) * (x @ self.w_up).float()).to(dt)
        part = act @ self.w_down
        if self.mode == "sp":
            return _ReduceScatter.apply(part, self.rows)
        return _AllReduce.apply(part)


# ------------------------------------------------------------ timing
def slowest(world, seconds):
    """Every rank's time of one repeat; the slowest (the layer's time)."""
    import struct
    return max(struct.unpack("<d", b)[0]
               for b in world.allgather(struct.pack("<d", seconds)))


def time_reps(world, fn, reps, warmup):
    for _ in range(warmup):
        fn()
    out = []
    for _ in range(reps):
        world.barrier()
        t0 = time.perf_counter()
        fn()
        out.append(slowest(world, time.perf_counter() - t0))
    return out


def stats(ts):
    ts = sorted(ts)
    med = statistics.median(ts)
    q = statistics.quantiles(ts, n=4) if len(ts) > 1 else [med, med, med]
    return {"median_ms": med * 1e3, "min_ms": ts[0] * 1e3, "max_ms": ts[-1] * 1e3,
            "spread": (q[2] - q[0]) / med if med > 0 else 0.0}


def step(mlp, x, G, backward):
    def run():
        xx = x.detach().requires_grad_(backward)
        if backward:
            for p in mlp.parameters():
                p.grad = None
            (mlp(xx).float() * G).sum().backward()
        else:
            with torch.no_grad():
                mlp(xx)
    return run


def traced(world, at, fn, reps):
    """Run fn reps times with a trace on each of the group's plans; rank 0
    gets, per plan op, the mean per round over its rounds and ranks."""
    import agmm
    plans = at.group_plans("tp")
    traces = [agmm.Trace(p, max_rounds=max(1, 4 * reps)) for p in plans]
    for _ in range(reps):
        fn()
    split_by_op = {}
    for p, t in zip(plans, traces):
        t.gather()
        if world.rank == 0:
            for s in t.summaries():
                acc = split_by_op.setdefault(p.op, {"rounds": 0, "round_us": 0.0,
                                                    "gemm_busy_us": 0.0,
                                                    "gemm_wait_us": 0.0,
                                                    "comm_busy_us": 0.0,
                                                    "comm_hidden_us": 0.0})
                acc["rounds"] += 1
                for f in ("round_us", "gemm_busy_us", "gemm_wait_us",
                          "comm_busy_us", "comm_hidden_us"):
                    acc[f] += getattr(s, f)
        t.close()
    for acc in split_by_op.values():
        n = acc.pop("rounds")
        for f in list(acc):
            acc[f] /= max(1, n)
        acc["rounds_per_rank"] = n // world.size
    return split_by_op


def run_config(world, at, args, form, label, rows_total, backward):
    from tp_mlp import TPMLP
    P, me = world.size, world.rank
    dt = DTYPES[args.dtype]
    rows, offs = split(rows_total, P)
    mlp = TPMLP(args.hidden, args.inter, me, P, mode=form, dtype=dt)
    ref = GlooMLP(mlp, rows)
    g = torch.Generator().manual_seed(5)
    X = torch.randn(rows_total, args.hidden, generator=g).to(dt)
    Gall = torch.randn(rows_total, args.hidden, generator=g)
    if form == "sp":
        x, G = X[offs[me]:offs[me] + rows[me]].contiguous(), \
            Gall[offs[me]:offs[me] + rows[me]]
    else:
        x, G = X, Gall
    res = {"form": form, "case": label, "rows": rows_total,
           "pass": "fwd+bwd" if backward else "fwd"}
    a = step(mlp, x, G, backward)
    b = step(ref, x, G, backward)
    ta, tb = [], []
    for _ in range(args.pairs):  # alternate, so drift hits both alike
        ta += time_reps(world, a, args.reps, args.warmup)
        tb += time_reps(world, b, args.reps, args.warmup)
    res["agmm"], res["gloo"] = stats(ta), stats(tb)
    res["ratio"] = res["agmm"]["median_ms"] / res["gloo"]["median_ms"]
    res["agmm_ops"] = traced(world, at, a, args.trace_reps) if args.trace_reps else {}
    at.unregister_group("tp")  # this configuration's plans, closed
    at.register_group("tp", world, **group_options(args, P))
    return res


def tiny_cost(world, at, args):
    """The ops' own cost per call against plan.run's at a tiny shape: the
    all-gather op of [m, k] shards, the reduce ops of [m * P, k / P]."""
    P = world.size
    m, k, n = args.tiny
    dt = DTYPES[args.dtype]
    name = {torch.bfloat16: "bf16", torch.float32: "fp32"}[dt]
    A = torch.randn(m, k).to(dt)
    B = torch.randn(k, n).to(dt)
    out = {}
    reps = max(20, args.reps * 10)

    def per_call(fn):
        return statistics.median(time_reps(world, fn, reps, 5)) * 1e6

    out["ag op"] = per_call(lambda: at.fused_all_gather_matmul(
        A, [B], group_name="tp", return_A=False))
    with world.plan(m_local=[m] * P, k=k, n=n, dtype=name,
                    **group_options(args, P)) as plan:
        plan.set_weight(B)
        c = torch.empty(m * P, n)
        out["ag plan.run"] = per_call(lambda: plan.run(A, out=c))
    kl = [k // P] * P
    Ar = torch.randn(m * P, k // P).to(dt)
    Br = torch.randn(k // P, n).to(dt)
    out["rs op"] = per_call(lambda: at.fused_matmul_reduce_scatter(
        Ar, Br, group_name="tp"))
    with world.plan(m_local=[m] * P, k=sum(kl), n=n, dtype=name, op="gemm-rs",
                    k_local=kl, **group_options(args, P)) as plan:
        plan.set_weight(Br)
        out["rs plan.run"] = per_call(lambda: plan.run(Ar))
    if at.plan_op_available("gemm-ar"):
        out["ar op"] = per_call(lambda: at.fused_matmul_all_reduce(
            Ar, Br, group_name="tp"))
        with world.plan(m_local=split(m * P, P)[0], k=sum(kl), n=n, dtype=name,
                        op="gemm-ar", k_local=kl,
                        **group_options(args, P)) as plan:
            plan.set_weight(Br)
            out["ar plan.run"] = per_call(lambda: plan.run(Ar))
    return out


def group_options(args, P):
    """agmm's workers: --threads GEMM workers, comm workers by the default
    split."""
    from agmm.plan import default_workers
    return {"comm_workers": default_workers(P)[0], "gemm_workers": args.threads}


def report(results, tiny, args, P):
    print("tp_layer: %d ranks, h %d, i %d, %s, %d thread(s) per rank, %d x %d "
          "repeats, malloc %s" % (P, args.hidden, args.inter, args.dtype,
                                  args.threads, args.pairs, args.reps,
                                  malloc_setting()))
    print("%-4s %-8s %6s %-8s %11s %9s %7s %11s %9s %7s %6s" % (
        "form", "case", "rows", "pass", "agmm_ms", "min", "spread", "gloo_ms",
        "min", "spread", "ratio"))
    for r in results:
        a, g = r["agmm"], r["gloo"]
        print("%-4s %-8s %6d %-8s %11.3f %9.3f %7.2f %11.3f %9.3f %7.2f %6.3f" % (
            r["form"], r["case"], r["rows"], r["pass"], a["median_ms"],
            a["min_ms"], a["spread"], g["median_ms"], g["min_ms"], g["spread"],
            r["ratio"]))
        if r["agmm_ops"]:
            rounds_ms = sum(s["round_us"] * s["rounds_per_rank"]
                            for s in r["agmm_ops"].values()) / \
                max(1, args.trace_reps) / 1e3
            print("      agmm rounds %.3f ms of the layer's %.3f (the rest: torch "
                  "between them)" % (rounds_ms, a["median_ms"]))
        for op, s in sorted(r["agmm_ops"].items()):
            hid = s["comm_hidden_us"] / s["comm_busy_us"] if s["comm_busy_us"] else 0
            print("      %-8s %d round(s)/rep: round %.1f us = GEMM work %.1f + "
                  "GEMM wait %.1f; comm %.1f us, %.0f%% hidden" % (
                      op, s["rounds_per_rank"] // max(1, args.trace_reps),
                      s["round_us"], s["gemm_busy_us"], s["gemm_wait_us"],
                      s["comm_busy_us"], 100 * hid))
    if tiny:
        print("per call at %s (median us): %s" % (
            "x".join(map(str, args.tiny)),
            ", ".join("%s %.1f" % kv for kv in tiny.items())))


def malloc_setting():
    """How this rank's glibc allocates (what --malloc set, as it arrived)."""
    t = os.environ.get("GLIBC_TUNABLES", "")
    return "reuse (GLIBC_TUNABLES %s)" % t if MALLOC_REUSE in t else \
        "glibc default" + (" (GLIBC_TUNABLES %s)" % t if t else "")


def run_rank(args):
    import agmm
    import agmm.torch as at
    torch.set_num_threads(args.threads)
    P = int(os.environ["WORLD_SIZE"])
    import datetime
    dist.init_process_group("gloo", init_method="env://",
        rank=int(os.environ["RANK"]), world_size=P,
        timeout=datetime.timedelta(seconds=args.timeout))
    results, tiny = [], {}
    with agmm.World.from_env(timeout=args.timeout) as world:
        at.register_group("tp", world, **group_options(args, P))
        cases = [("prefill", args.tokens * P)] + \
            [("decode", r) for r in args.decode_rows]
        for form in args.forms:
            if form == "tp" and not at.plan_op_available("gemm-ar"):
                if world.rank == 0:
                    print("tp form skipped: this agmm has no op gemm-ar", flush=True)
                continue
            if form == "sp" and args.inter % P:
                raise SystemExit("--inter %d: the sp form needs a multiple of "
                                 "the ranks (%d)" % (args.inter, P))
            for label, rows in cases:
                for backward in args.passes:
                    results.append(run_config(world, at, args, form, label, rows,
                                              backward))
        if args.tiny:
            tiny = tiny_cost(world, at, args)
        at.unregister_group("tp")
        if world.rank == 0:
            report(results, tiny, args, P)
            if args.json:
                with open(args.json, "w") as f:
                    json.dump({"ranks": P, "args": vars(args), "results": results,
                               "tiny_us": tiny}, f, indent=1)
    dist.destroy_process_group()
    return 0


def spawn(args):
    import agmm.launch
    env = dict(os.environ)
    if args.malloc == "reuse":
        old = env.get("GLIBC_TUNABLES")
        env["GLIBC_TUNABLES"] = old + ":" + MALLOC_REUSE if old else MALLOC_REUSE
    return agmm.launch.spawn(args.ranks, [sys.executable] + sys.argv, env=env)


def ints(text, what, p):
    try:
        vals = [int(v) for v in text.split(",") if v != ""]
    except ValueError:
        p.error("%s: %r (a comma-separated list of integers)" % (what, text))
    if any(v < 0 for v in vals):
        p.error("%s: %r (integers >= 0)" % (what, text))
    return vals


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--inter", type=int, default=11008)
    p.add_argument("--tokens", type=int, default=2048, help="prefill rows per rank")
    p.add_argument("--decode-rows", default="1,8,32",
                   help="decode cases: rows of the layer (in all); '' for none")
    p.add_argument("--forms", default="sp,tp")
    p.add_argument("--passes", default="fwd,fwd+bwd")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--pairs", type=int, default=2,
                   help="agmm/gloo alternations of --reps repeats each")
    p.add_argument("--trace-reps", type=int, default=3,
                   help="traced agmm repeats per configuration (0: none)")
    p.add_argument("--tiny", default="64,128,128",
                   help="M,K,N of the per-call cost ('' to skip)")
    p.add_argument("--timeout", type=float, default=300)
    p.add_argument("--json", default=None)
    p.add_argument("--malloc", choices=["default", "reuse"], default="default",
                   help="glibc's allocation for every rank (see above)")
    args = p.parse_args()
    args.decode_rows = ints(args.decode_rows, "--decode-rows", p)
    args.tiny = ints(args.tiny, "--tiny", p) or None
    if args.tiny is not None and (len(args.tiny) != 3 or min(args.tiny) < 1
                                  or args.tiny[1] % args.ranks):
        p.error("--tiny: %s (M,K,N, each >= 1, K a multiple of --ranks)"
                % args.tiny)
    args.forms = args.forms.split(",")
    if not set(args.forms) <= {"sp", "tp"}:
        p.error("--forms: %s (allowed: sp, tp)" % ",".join(args.forms))
    passes = args.passes.split(",")
    if not set(passes) <= {"fwd", "fwd+bwd"}:
        p.error("--passes: %s (allowed: fwd, fwd+bwd)" % args.passes)
    args.passes = [x == "fwd+bwd" for x in passes]
    for name in ("ranks", "hidden", "inter", "tokens", "threads", "reps", "pairs"):
        if getattr(args, name) < 1:
            p.error("--%s: %d (at least 1)" % (name, getattr(args, name)))
    if "RANK" not in os.environ:
        return spawn(args)
    return run_rank(args)


if __name__ == "__main__":
    sys.exit(main())
