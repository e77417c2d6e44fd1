"""One rank of a tensor-parallel-layer test world (issue 23; started N
times by conftest.run_world with torchrun's variables): agmm.torch's three
fp ops, forward and backward, against the same layer built from
torch.distributed (gloo) collectives in the same processes.

usage: tp_worker.py SCENARIO JSON_ARGS

Every rank makes every rank's inputs from the same seeds. The gloo
reference is differentiable through small autograd Functions with the
same conventions as agmm's (all-gather <-> reduce-scatter; all-reduce's
backward the identity: its output's gradient is the same on every rank).
gloo has no reduce-scatter, and its all-gather takes equal sizes: the
reference all-reduces and slices, and pads uneven shards. Prints "RANK r
OK" when every check passed.
"""
import json
import os
import sys

import torch
import torch.distributed as dist

import agmm
import agmm.torch as at

DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
ACT = {None: lambda z: z, "relu": torch.relu, "silu": torch.nn.functional.silu,
       "gelu-tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
       "gelu-erf": torch.nn.functional.gelu}


def rnd(seed, shape, dtype):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(shape, generator=g) * 0.5).to(dtype)


def split(rows, P):
    return [rows // P + (1 if r < rows % P else 0) for r in range(P)]


def _gather_rows(x, rows):
    """cat of every rank's x ([rows[r], c]) with gloo (padded; in float32:
    gloo has no bfloat16)."""
    top = max(rows)
    pad = torch.zeros((top,) + tuple(x.shape[1:]), dtype=torch.float32)
    pad[:x.shape[0]] = x
    parts = [torch.empty_like(pad) for _ in rows]
    dist.all_gather(parts, pad)
    return torch.cat([p[:r] for p, r in zip(parts, rows)]).to(x.dtype)


def _my_rows(x, rows):
    me = dist.get_rank()
    r0 = sum(rows[:me])
    return x[r0:r0 + rows[me]].contiguous()


def _sum(x):
    y = x.to(torch.float32, copy=True)
    dist.all_reduce(y)
    return y.to(x.dtype)


class GAllGather(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rows):
        ctx.rows = rows
        return _gather_rows(x, rows)

    @staticmethod
    def backward(ctx, g):
        return _my_rows(_sum(g), ctx.rows), None


class GReduceScatter(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x, rows):
        ctx.rows = rows
        return _my_rows(_sum(x), rows)

    @staticmethod
    def backward(ctx, g):
        return _gather_rows(g.contiguous(), ctx.rows), None


class GAllReduce(torch.autograd.Function):
    @staticmethod
    def forward(ctx, x):
        return _sum(x)

    @staticmethod
    def backward(ctx, g):
        return g


class GCopy(torch.autograd.Function):
    """Megatron's f: the identity forward, the all-reduce backward (a
    replicated input's whole gradient on every rank)."""
    @staticmethod
    def forward(ctx, x):
        return x.view_as(x)

    @staticmethod
    def backward(ctx, g):
        return _sum(g)


def leaves(*ts):
    return [t.detach().clone().requires_grad_(True) if t is not None else None
            for t in ts]


def grads(out, G, inputs):
    loss = (out.float() * G).sum()
    live = [t for t in inputs if t is not None]
    gs = iter(torch.autograd.grad(loss, live))
    return [next(gs) if t is not None else None for t in inputs]


def close(got, ref, tol, what):
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    assert got.dtype == ref.dtype, (what, got.dtype, ref.dtype)
    if ref.numel() == 0:
        return
    err = (got.float() - ref.float()).abs().max().item()
    scale = max(1.0, ref.float().abs().max().item())
    assert err <= tol * scale, "%s: max |diff| %.3g (tolerance %.3g x %.3g)" % (
        what, err, tol, scale)


def check_all(got, ref, tol, names):
    for g, r, n in zip(got, ref, names):
        if r is not None:
            assert g is not None, n
            close(g, r, tol, n)


def case_ag(P, me, c, dtype, tol):
    """Column-parallel: C_r = act(gather(A) @ B_r + b_r), two weights from
    one gather with their own activations."""
    m, k, ns = c["m"], c["k"], c["n"]
    gd = c.get("gather_dim", 0)  # 1: A_shard [2, m_r, k], gathered along 1
    A = rnd(10 + me, (m[me], k) if gd == 0 else (2, m[me], k), dtype)
    Bs = [rnd(100 * i + me, (k, n), dtype) for i, n in enumerate(ns)]
    bs = [rnd(200 * i + me, (n,), dtype) if c["bias"] else None
          for i, n in enumerate(ns)]
    acts = c["acts"]
    Gs = [rnd(300 * i + me, (sum(m), n) if gd == 0 else (2, sum(m), n),
              torch.float32) for i, n in enumerate(ns)]
    nw = len(ns)
    x = leaves(A, *Bs, *bs)
    Ag, Cs = at.fused_all_gather_matmul(x[0], x[1:1 + nw], gather_dim=gd,
                                        group_name="tp", return_A=True,
                                        bias=x[1 + nw:] if c["bias"] else None,
                                        activation=acts)

    def gather(a):  # the reference: along gd, through row-major rows
        if gd == 0:
            return GAllGather.apply(a, m)
        rows = GAllGather.apply(a.movedim(1, 0).reshape(-1, k), [2 * r for r in m])
        return rows.view(sum(m), 2, k).movedim(0, 1)
    assert torch.equal(Ag, gather(A)) and not Ag.requires_grad
    loss = sum((C * G).sum() for C, G in zip(Cs, Gs))
    live = [t for t in x if t is not None]
    got = iter(torch.autograd.grad(loss, live))
    got = [next(got) if t is not None else None for t in x]
    y = leaves(A, *Bs, *bs)
    full = gather(y[0])
    refs = []
    for i in range(nw):
        z = full @ y[1 + i]
        if y[1 + nw + i] is not None:
            z = z + y[1 + nw + i]
        # A's dtype, as the op's default (and torch's) output
        refs.append(ACT[acts[i]](z.float()).to(dtype))
    for C, R in zip(Cs, refs):
        close(C, R.detach(), tol, "ag forward")
    loss = sum((R * G).sum() for R, G in zip(refs, Gs))
    live = [t for t in y if t is not None]
    ref = iter(torch.autograd.grad(loss, live))
    ref = [next(ref) if t is not None else None for t in y]
    check_all(got, ref, tol, ["dA_shard"] + ["dB%d" % i for i in range(nw)] +
              ["dbias%d" % i for i in range(nw)])


def case_rs(P, me, c, dtype, tol):
    """Row-parallel + reduce-scatter: C = my rows of act(sum_r A_r @ B_r + b)."""
    M, kl, n = c["M"], c["k_local"], c["n"]
    sd = c.get("scatter_dim", 0)  # 1: A_r [2, M, k_r], scattered along 1
    A = rnd(20 + me, (M, kl[me]) if sd == 0 else (2, M, kl[me]), dtype)
    B = rnd(30 + me, (kl[me], n), dtype)
    b = rnd(40, (n,), dtype) if c["bias"] else None
    rows = split(M, P)
    G = rnd(50 + me, (rows[me], n) if sd == 0 else (2, rows[me], n), torch.float32)
    if c.get("no_grad"):  # the plain calls (python/agmm/torch/kernels/plain.py)
        with torch.no_grad():
            C = at.fused_matmul_reduce_scatter(A, B, scatter_dim=sd,
                                               group_name="tp", bias=b,
                                               activation=c["act"])
        part = (A @ B).float() if sd == 0 else \
            (A @ B).float().movedim(1, 0).reshape(-1, n)
        z = GReduceScatter.apply(part, rows if sd == 0 else [2 * r for r in rows])
        if sd:
            z = z.view(rows[me], 2, n).movedim(0, 1)
        R = ACT[c["act"]](z + b.float() if b is not None else z).to(dtype)
        close(C, R, tol, "rs plain forward")
        return
    x = leaves(A, B, b)
    C = at.fused_matmul_reduce_scatter(x[0], x[1], scatter_dim=sd, group_name="tp",
                                       bias=x[2], activation=c["act"])
    got = grads(C, G, x)
    y = leaves(A, B, b)
    if sd == 0:
        z = GReduceScatter.apply((y[0] @ y[1]).float(), rows)
    else:
        part = (y[0] @ y[1]).float().movedim(1, 0).reshape(-1, n)
        z = GReduceScatter.apply(part, [2 * r for r in rows])
        z = z.view(rows[me], 2, n).movedim(0, 1)
    R = ACT[c["act"]](z + y[2].float() if y[2] is not None else z).to(dtype)
    close(C, R.detach(), tol, "rs forward")
    check_all(got, grads(R, G, y), tol, ["dA", "dB", "dbias"])


def case_ar(P, me, c, dtype, tol):
    """Row-parallel + all-reduce: C = act(sum_r A_r @ B_r + b) everywhere;
    the loss's gradient G is the same on every rank."""
    M, kl, n = c["M"], c["k_local"], c["n"]
    A = rnd(60 + me, (M, kl[me]), dtype)
    B = rnd(70 + me, (kl[me], n), dtype)
    b = rnd(80, (n,), dtype) if c["bias"] else None
    G = rnd(90, (M, n), torch.float32)
    if c.get("no_grad"):  # the plain calls (python/agmm/torch/kernels/plain.py)
        with torch.no_grad():
            C = at.fused_matmul_all_reduce(A, B, group_name="tp", bias=b,
                                           activation=c["act"])
        z = GAllReduce.apply((A @ B).float())
        R = ACT[c["act"]](z + b.float() if b is not None else z).to(dtype)
        close(C, R, tol, "ar plain forward")
        return
    x = leaves(A, B, b)
    C = at.fused_matmul_all_reduce(x[0], x[1], group_name="tp", bias=x[2],
                                   activation=c["act"])
    got = grads(C, G, x)
    y = leaves(A, B, b)
    z = GAllReduce.apply((y[0] @ y[1]).float())
    R = ACT[c["act"]](z + y[2].float() if y[2] is not None else z).to(dtype)
    close(C, R.detach(), tol, "ar forward")
    check_all(got, grads(R, G, y), tol, ["dA", "dB", "dbias"])


def case_cp(P, me, c, dtype, tol):
    """Column-parallel on a replicated input: C_i = A @ B_i locally, dA
    summed over the ranks (one gemm-ar round), dB_i local; the loss uses
    the outputs in c["use"] (a gradient of None for the others)."""
    lead, k, ns = c["lead"], c["k"], c["n"][me]
    A = rnd(110, tuple(lead) + (k,), dtype)  # the same on every rank
    Bs = [rnd(120 + 10 * i + me, (k, n), dtype) for i, n in enumerate(ns)]
    Gs = [rnd(130 + 10 * i + me, tuple(lead) + (n,), torch.float32)
          for i, n in enumerate(ns)]
    want_a = c.get("a_grad", True)

    def run(outs, x):
        loss = sum((outs[i].float() * Gs[i]).sum() for i in c["use"])
        live = [t for t in x if t.requires_grad]
        gs = iter(torch.autograd.grad(loss, live, allow_unused=True))
        out = [next(gs) if t.requires_grad else None for t in x]
        # A weight whose output the loss leaves out: a gradient of zeros.
        return [torch.zeros_like(t) if g is None and t.requires_grad else g
                for g, t in zip(out, x)]

    x = leaves(A, *Bs)
    x[0].requires_grad_(want_a)
    Cs = at.column_parallel_matmul(x[0], x[1:], group_name="tp")
    assert isinstance(Cs, list) and len(Cs) == len(ns)
    got = run(Cs, x)
    y = leaves(A, *Bs)
    y[0].requires_grad_(want_a)
    a = GCopy.apply(y[0]) if want_a else y[0]
    R = [a @ B for B in y[1:]]
    for i in range(len(ns)):  # torch's matmul at these sizes (local_mm's
        # bounds): the same bits
        assert torch.equal(Cs[i], R[i]), "cp forward %d" % i
    ref = run(R, y)
    check_all(got, ref, tol, ["dA"] + ["dB%d" % i for i in range(len(ns))])
    if not want_a:
        assert got[0] is None


CASES = {"ag": case_ag, "rs": case_rs, "ar": case_ar, "cp": case_cp}


def scenario_grads(world, args):
    P, me = world.size, world.rank
    at.register_group("tp", world, **args.get("options", {}))
    try:
        for c in args["cases"]:
            dtype = DT[c.get("dtype", "fp32")]
            tol = {torch.float32: 2e-5, torch.bfloat16: 4e-2,
                   torch.float16: 5e-3}[dtype]
            for _ in range(c.get("repeat", 1)):
                CASES[c["op"]](P, me, c, dtype, tol)
        ops = {p.op for p in at.group_plans("tp")}
        want = set()
        for c in args["cases"]:
            want |= {"ag": {"ag-gemm", "gemm-rs"}, "rs": {"ag-gemm", "gemm-rs"},
                     "ar": {"gemm-ar"},
                     "cp": {"gemm-ar"} if c.get("a_grad", True) else set()}[c["op"]]
        assert want <= ops, "the backward's rounds are agmm's: plans %s" % ops
    finally:
        at.unregister_group("tp")


def scenario_trace(world, args):
    """agmm.Trace on a plan: rounds recorded, summaries of every rank,
    the JSON written on rank 0; plan.close() closes a trace left open."""
    import numpy as np
    P, me = world.size, world.rank
    plan = world.plan(m_local=[16] * P, k=32, n=24, dtype="fp32", tile_m=8)
    plan.set_weight(np.ones((32, 24), np.float32))
    with agmm.Trace(plan, max_rounds=4) as trace:
        for _ in range(3):
            plan.run(np.ones((16, 32), np.float32), schedule="fused")
        trace.gather()
        if me == 0:
            assert trace.rounds() == 3, trace.rounds()
            sums = trace.summaries()
            assert len(sums) == 3 * P and {s.rank for s in sums} == set(range(P))
            assert all(s.round_us > 0 and s.gemm_busy_us > 0 and
                       s.schedule == "fused" for s in sums), sums
            assert trace.counts()[0] > 0
            trace.write(args["json"] % me)
            assert os.path.getsize(args["json"] % me) > 0
        else:
            assert trace.rounds() == 0
    agmm.Trace(plan, max_rounds=1)  # left open: plan.close() destroys it first
    plan.close()


def scenario_steps(world, args):
    """Training steps of a sequence-parallel MLP (one gather for gate and
    up, then GEMM + reduce-scatter), the weights updated in place by SGD
    after each backward: every step's output and gradients match the gloo
    layer's given the same updates, and after the first step no plan is
    made (the cached plans and backward weights are refilled, not
    replaced)."""
    P, me = world.size, world.rank
    h, i, m = args["h"], args["i"], args["m"]
    dtype = DT[args.get("dtype", "fp32")]
    tol = 2e-5 if dtype == torch.float32 else 4e-2
    at.register_group("tp", world)
    try:
        w = [rnd(1 + me, (h, i), dtype), rnd(2 + me, (h, i), dtype),
             rnd(3 + me, (i, h), dtype)]
        mine, ref = leaves(*w), leaves(*w)
        rows = [m] * P
        made = None
        for step in range(args["steps"]):
            x = rnd(100 + step * P + me, (m, h), dtype)
            G = rnd(200 + step * P + me, (m, h), torch.float32)
            _, (g, u) = at.fused_all_gather_matmul(
                x, [mine[0], mine[1]], group_name="tp", return_A=False,
                activation=["silu", None], out_dtype=torch.float32)
            out = at.fused_matmul_reduce_scatter((g * u).to(dtype), mine[2],
                                                 group_name="tp")
            got = grads(out, G, mine)
            full = GAllGather.apply(x, rows)
            act = (ACT["silu"]((full @ ref[0]).float()) *
                   (full @ ref[1]).float()).to(dtype)
            R = GReduceScatter.apply((act @ ref[2]).float(), rows).to(dtype)
            close(out, R.detach(), tol, "step %d forward" % step)
            want = grads(R, G, ref)
            check_all(got, want, tol, ["dW_gate", "dW_up", "dW_down"])
            with torch.no_grad():
                for p_, g_ in zip(mine, got):
                    p_.sub_(0.1 * g_)
                for p_, g_ in zip(ref, want):
                    p_.sub_(0.1 * g_)
            serials = [e.serial for e in __import__(
                "agmm.torch.distributed.groups",
                fromlist=["_groups"])._groups["tp"].plans]
            if made is None:
                made = serials
            assert serials == made, "step %d made plans: %s -> %s" % (
                step, made, serials)
    finally:
        at.unregister_group("tp")


def scenario_plain(world, args):
    """The plain calls (python/agmm/torch/kernels/plain.py: no grad, no
    epilogue) against the CPU kernels called by hand, bit for bit, over a
    sequence that takes each of their paths: repeated arguments (the
    checks and the plan lookup skipped), rows that change per call,
    gather/scatter dimension 1 of 3-D tensors, the gathered A, two
    weights, a weight changed in place and a new weight tensor; a rank
    disagreeing after hits fails on every rank, and the next call works;
    repeats make no plan."""
    from agmm.torch.kernels import fp as F
    from agmm.torch.distributed.groups import _groups
    P, me = world.size, world.rank
    dtype = DT[args.get("dtype", "fp32")]
    # The baseline schedule: a round's GEMM calls are then the same
    # whatever order the rows arrive in. The fused all-gather schedule's
    # calls follow the arrivals, and an engine may round a row by its
    # call's row count (OpenBLAS's Haswell kernel on a Zen 5 does, in the
    # last bit), which would make two runs of one plan differ.
    at.register_group("tp", world, schedule="baseline")

    def same(got, want, what):
        for x, y in zip(got if isinstance(got, (list, tuple)) else [got],
                        want if isinstance(want, (list, tuple)) else [want]):
            if isinstance(x, list):
                same(x, y, what)
            elif x is None or y is None:
                assert x is None and y is None, what
            else:
                assert x.shape == y.shape and x.dtype == y.dtype and \
                    torch.equal(x, y), "%s: %s vs %s" % (what, x.shape, y.shape)

    def serials():
        return [e.serial for e in _groups["tp"].plans]
    # Plan lookups of the plain calls: a repeat must not make one.
    import agmm.torch.kernels.plain as TP
    lookups = [0]
    real_lookup = TP.ag_plan

    def counted(*a, **kw):
        lookups[0] += 1
        return real_lookup(*a, **kw)
    TP.ag_plan = counted
    try:
        k, n = 24, 16
        B1, B2 = rnd(7, (k, n), dtype), rnd(8, (k, 8), dtype)
        for step, rows in enumerate([5, 5, 5, 3, 3, 6, 6]):
            A = rnd(10 + step * P + me, (rows + me, k), dtype)
            for ra in (False, True):
                same(at.fused_all_gather_matmul(A, [B1], group_name="tp",
                                                return_A=ra),
                     F.ag_kernel(A, [B1], 0, "tp", ra), "ag step %d" % step)
            if step == 1:
                made, seen = serials(), lookups[0]
            if step == 2:
                assert serials() == made, "an ag repeat made a plan"
                assert lookups[0] == seen, "an ag repeat looked its plan up"
        A3 = rnd(30 + me, (2, 3 + me, k), dtype)
        for _ in range(2):
            same(at.fused_all_gather_matmul(A3, [B1, B2], gather_dim=1,
                                            group_name="tp"),
                 F.ag_kernel(A3, [B1, B2], 1, "tp", True), "ag dim 1")
        bias = [rnd(31, (n,), dtype), None]
        for _ in range(2):  # epilogues: per weight, and the same for both
            same(at.fused_all_gather_matmul(A3, [B1, B2], gather_dim=1,
                                            group_name="tp", bias=bias,
                                            activation=["silu", None],
                                            out_dtype=[torch.bfloat16, None]),
                 F.ag_kernel(A3, [B1, B2], 1, "tp", True, bias, ["silu", ""],
                             [torch.bfloat16, None]), "ag epilogue")
            same(at.fused_all_gather_matmul(A3, [B1, B1], gather_dim=1,
                                            group_name="tp", activation="relu"),
                 F.ag_kernel(A3, [B1, B1], 1, "tp", True, None, ["relu"] * 2),
                 "ag relu")
        # No bias and one out dtype: the plan's own epilogue, inside the
        # round (plain and kernel alike), within a bf16 rounding of torch's
        # epilogue on the float32 product.
        for _ in range(2):
            got = at.fused_all_gather_matmul(A3, [B1, B2], gather_dim=1,
                                             group_name="tp",
                                             activation=["silu", None],
                                             out_dtype=torch.bfloat16)
            same(got, F.ag_kernel(A3, [B1, B2], 1, "tp", True, None,
                                  ["silu", None], [torch.bfloat16] * 2),
                 "ag plan's epilogue")
        assert any(p.activation == ["silu", "none"] and p.out_dtype == "bf16"
                   for p in at.group_plans("tp")), "no plan with the epilogue"
        _, prods = at.fused_all_gather_matmul(A3, [B1, B2], gather_dim=1,
                                              group_name="tp")
        for c, z, act in zip(got[1], prods, (ACT["silu"], ACT[None])):
            want = act(z).to(torch.bfloat16).float()
            assert c.dtype == torch.bfloat16, c.dtype
            off = (c.float() - want).abs() > 2 ** -7 * want.abs() + 1e-30
            assert not off.any(), "the plan's epilogue: %d off, e.g. %r vs %r" % (
                int(off.sum()), c.float()[off][0].item(), want[off][0].item())
        B1.mul_(2)  # in place: its version moves, the plan's weight is set again
        A = rnd(40 + me, (4, k), dtype)
        same(at.fused_all_gather_matmul(A, [B1], group_name="tp", return_A=False),
             F.ag_kernel(A, [B1], 0, "tp", False), "ag after B1 *= 2")
        B3 = B1.clone()
        same(at.fused_all_gather_matmul(A, [B3], group_name="tp", return_A=False),
             F.ag_kernel(A, [B3], 0, "tp", False), "ag new weight")
        # A rank that disagrees after hits: every rank raises, then goes on.
        bad = rnd(50, (4, k + 1), dtype) if me == P - 1 else A
        Bb = rnd(51, (k + 1, n), dtype) if me == P - 1 else B3
        try:
            at.fused_all_gather_matmul(bad, [Bb], group_name="tp")
            raise AssertionError("a disagreeing rank passed")
        except agmm.InvalidArgument as e:
            assert "ranks must agree" in str(e), str(e)
        same(at.fused_all_gather_matmul(A, [B3], group_name="tp", return_A=False),
             F.ag_kernel(A, [B3], 0, "tp", False), "ag after the error")
        for op, fn, kern in (("rs", at.fused_matmul_reduce_scatter, F.rs_kernel),
                             ("ar", at.fused_matmul_all_reduce, F.ar_kernel)):
            kr = 4 + 2 * me
            W = rnd(60 + me, (kr, n), dtype)
            # (shape, scatter_dim): repeats, then leading dims around rows
            calls = [((2 * P + 1, kr), 0)] * 3 + [((2 * P, 3, kr), 0)] + \
                ([((3, 2 * P, kr), 1)] if op == "rs" else [])
            for step, (shape, sd) in enumerate(calls):
                A = rnd(70 + step * P + me, shape, dtype)
                if op == "rs":
                    got = fn(A, W, scatter_dim=sd, group_name="tp")
                    want = kern(A, W, "sum", sd, "tp")
                else:
                    got, want = fn(A, W, group_name="tp"), kern(A, W, "sum", "tp")
                same(got, want, "%s step %d" % (op, step))
                if step == 1:
                    made = serials()
                if step == 2:
                    assert serials() == made, "a %s repeat made a plan" % op
            b = rnd(80, (n,), torch.float32)
            for _ in range(2):
                A = rnd(81 + me, (2 * P + 1, kr), dtype)
                epi = dict(bias=b, activation="gelu-tanh", out_dtype=torch.bfloat16)
                got = fn(A, W, group_name="tp", **epi)
                want = kern(A, W, "sum", 0, "tp", **epi) if op == "rs" else \
                    kern(A, W, "sum", "tp", **epi)
                same(got, want, "%s epilogue" % op)
            W.add_(1)
            A = rnd(90 + me, (2 * P, kr), dtype)
            got = fn(A, W, group_name="tp")
            want = kern(A, W, "sum", 0, "tp") if op == "rs" else \
                kern(A, W, "sum", "tp")
            same(got, want, "%s after W += 1" % op)
    finally:
        TP.ag_plan = real_lookup
        at.unregister_group("tp")


def scenario_decode(world, args):
    """A decode step's calls (issue 48): rows that change every call (the
    same sequence on every rank, uneven shards for the all-gather) through
    the three fused ops, bf16 tensors bit for bit against the CPU kernels
    and int4 QuantizedWeights against the dequantized product; once each
    op's plan holds the largest rows, no call makes or looks up a plan
    (the reduce ops take their rows per call, as the all-gather does); a
    rank whose rows disagree after the fast path's hits raises
    InvalidArgument on every rank, and the next call works."""
    import random
    from agmm.torch.kernels import fp as F
    from agmm.torch.distributed import plan_cache as TG
    P, me = world.size, world.rank
    dt = torch.bfloat16
    at.register_group("tp", world, schedule="baseline")
    made = [0]
    real_make = TG.PlanCache.make

    def counted(self, *a, **kw):
        made[0] += 1
        return real_make(self, *a, **kw)
    TG.PlanCache.make = counted
    try:
        k, n, hi = 64, 32, 9
        kr = 32  # each rank's k of the reduce ops
        Wag = rnd(7, (k, n), dt)
        Wred = rnd(8 + me, (kr, n), dt)
        Qag = agmm.quantize_weight(Wag.float(), bits=4, group_size=32)
        Qred = agmm.quantize_weight(Wred.float(), bits=4, group_size=32)
        seq = [hi] + [random.Random(3).randint(1, hi) for _ in range(24)]
        for W, quant in ((Wag, False), (Qag, True)):
            for i, rows in enumerate(seq):
                A = rnd(100 + i * P + me, (rows + me, k), dt)
                _, (got,) = at.fused_all_gather_matmul(A, [W], group_name="tp",
                                                       return_A=False)
                if quant:  # every rank's A, made here as its rank made it
                    full = torch.cat([rnd(100 + i * P + r, (rows + r, k), dt)
                                      for r in range(P)], 0).float()
                    want = full @ torch.from_numpy(Qag.dequantize())
                    close(got.float(), want, 2e-2, "ag int4 rows %d" % rows)
                else:
                    _, (want,) = F.ag_kernel(A, [W], 0, "tp", False)
                    assert torch.equal(got, want), "ag rows %d" % rows
                if i == 0:
                    before = made[0]
            assert made[0] == before, \
                "ag (%s): %d plans made for rows within the first call's" \
                % ("int4" if quant else "bf16", made[0] - before)
        for op, fn, kern in (("rs", at.fused_matmul_reduce_scatter, F.rs_kernel),
                             ("ar", at.fused_matmul_all_reduce, F.ar_kernel)):
            for W, quant in ((Wred, False), (Qred, True)):
                for i, rows in enumerate(seq):
                    A = rnd(200 + i * P + me, (P * rows, kr), dt)
                    got = fn(A, W, group_name="tp")
                    if quant:  # every rank's product, made here
                        full = sum(
                            rnd(200 + i * P + r, (P * rows, kr), dt).float() @
                            torch.from_numpy(agmm.quantize_weight(
                                rnd(8 + r, (kr, n), dt).float(), bits=4,
                                group_size=32).dequantize())
                            for r in range(P))
                        if op == "rs":
                            full = full[me * rows:(me + 1) * rows]
                        close(got.float(), full, 2e-2, "%s int4 rows %d" % (op, rows))
                    else:
                        want = kern(A, W, "sum", 0, "tp") if op == "rs" else \
                            kern(A, W, "sum", "tp")
                        assert got.dtype == dt and torch.equal(got, want), \
                            "%s rows %d" % (op, rows)
                    if i == 0:
                        before = made[0]
                made_now = made[0] - before
                # (the kernels' own float32 plan is another key: made once)
                assert made_now <= (0 if quant else 1), \
                    "%s (%s): %d plans made for rows within the first call's" \
                    % (op, "int4" if quant else "bf16", made_now)
                # A rank with other rows after the hits: every rank raises.
                A = rnd(300 + me, (P * (2 + (me == P - 1)), kr), dt)
                try:
                    fn(A, W, group_name="tp")
                    raise AssertionError("%s: disagreeing rows passed" % op)
                except agmm.InvalidArgument as e:
                    assert "ranks must agree" in str(e), str(e)
                A = rnd(301 + me, (P * 2, kr), dt)
                got = fn(A, W, group_name="tp")
                assert got.shape[0] == (2 if op == "rs" else 2 * P), got.shape
    finally:
        TG.PlanCache.make = real_make
        at.unregister_group("tp")


def scenario_layers(world, args):
    """A model deeper than any small plan cache (issue 48's per-call cost):
    12 layers' weights (int4 QuantizedWeights through gemm-ar, bf16 tensors
    through the all-gather op), called in turn step after step, make their
    plans in the first step and none after; weights dropped on every rank
    have their plans closed at the next creation; a group with
    plan_cache_size=3 keeps at most 3 plans (and remakes them: correct,
    but made again); a bad plan_cache_size is refused by name."""
    import gc
    from agmm.torch.distributed import plan_cache as TG
    P, me = world.size, world.rank
    dt = torch.bfloat16
    made = [0]
    real_make = TG.PlanCache.make

    def counted(self, *a, **kw):
        made[0] += 1
        return real_make(self, *a, **kw)

    def layer_calls(Qs, Ws, rows, seed):
        for i, (Q, W) in enumerate(zip(Qs, Ws)):
            A = rnd(seed + 10 * i + me, (P * rows, kr), dt)
            got = at.fused_matmul_all_reduce(A, Q, group_name="tp")
            full = sum(rnd(seed + 10 * i + r, (P * rows, kr), dt).float() @
                       torch.from_numpy(qs_of[r][i].dequantize())
                       for r in range(P))
            close(got.float(), full, 2e-2, "ar int4 layer %d rows %d" % (i, rows))
            X = rnd(seed + 500 + 10 * i + me, (rows, k), dt)
            _, (c,) = at.fused_all_gather_matmul(X, [W], group_name="tp",
                                                 return_A=False)
            xs = torch.cat([rnd(seed + 500 + 10 * i + r, (rows, k), dt)
                            for r in range(P)]).float()
            close(c.float(), xs @ W.float(), 2e-2, "ag bf16 layer %d" % i)

    TG.PlanCache.make = counted
    try:
        k, n, kr, L = 48, 16, 32, 12
        # every rank's int4 weights, made here as their ranks make them
        qs_of = [[agmm.quantize_weight(rnd(4000 + 100 * r + i, (kr, n), dt).float(),
                                       bits=4, group_size=32) for i in range(L)]
                 for r in range(P)]
        Qs = qs_of[me]
        Ws = [rnd(6000 + i, (k, n), dt) for i in range(L)]
        at.register_group("tp", world)
        layer_calls(Qs, Ws, 2, 100)
        first = made[0]
        assert first >= 2 * L, "%d plans for %d layers x 2 ops" % (first, L)
        for step, rows in enumerate([1, 2, 1]):
            layer_calls(Qs, Ws, rows, 200 + 1000 * step)
        assert made[0] == first, \
            "%d plans made after the first step (%d layers)" % (made[0] - first, L)
        held = len(at.group_plans("tp"))
        assert held >= 2 * L, "%d plans held for %d layers x 2 ops" % (held, L)
        # half the layers dropped on every rank: closed at the next creation
        del Qs[L // 2:], Ws[L // 2:]
        for r in range(P):
            del qs_of[r][L // 2:]
        gc.collect()
        Wnew = rnd(7000, (k, n), dt)
        X = rnd(7100 + me, (1, k), dt)
        at.fused_all_gather_matmul(X, [Wnew], group_name="tp", return_A=False)
        now = len(at.group_plans("tp"))
        assert now == held - L + 1, \
            "%d plans after dropping %d layers' weights (held %d)" % (now, L // 2, held)
        at.unregister_group("tp")
        # a bound: at most 3 plans, each call still right
        at.register_group("tp", world, plan_cache_size=3)
        for rows in (1, 2):
            layer_calls(Qs[:3], Ws[:3], rows, 300 + rows)
            assert len(at.group_plans("tp")) <= 3, len(at.group_plans("tp"))
        at.unregister_group("tp")
        for bad in (0, -1, 2.5, "8"):
            try:
                at.register_group("bad", world, plan_cache_size=bad)
                raise AssertionError("plan_cache_size=%r accepted" % (bad,))
            except agmm.InvalidArgument as e:
                assert "plan_cache_size" in str(e), str(e)
    finally:
        TG.PlanCache.make = real_make


SCENARIOS = {"grads": scenario_grads, "trace": scenario_trace, "decode": scenario_decode,
             "layers": scenario_layers,
             "steps": scenario_steps, "plain": scenario_plain}


def main():
    import faulthandler; faulthandler.dump_traceback_later(20, exit=True)
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method="env://",
                            rank=int(os.environ["RANK"]),
                            world_size=int(os.environ["WORLD_SIZE"]))
    try:
        with agmm.World.from_env(timeout=args.get("timeout", 30)) as world:
            SCENARIOS[scenario](world, args)
            world.barrier()
            rank = world.rank
    except BaseException:
        dist.destroy_process_group()
        raise
    # torch 2.6's gloo (Debian 13): destroy_process_group hangs about one
    # run in 20 on one rank, with the other rank alive and waiting, after
    # every collective has returned (seen in python_tp_layer). This worker
    # checks agmm, not gloo's teardown: it closes agmm's worlds itself (the
    # with above; the local GEMMs' one-rank world and any other by their
    # exit hooks, run here) and leaves by os._exit, skipping the group's.
    import multiprocessing.util
    from agmm.world import _close_open_worlds
    multiprocessing.util._run_finalizers(0)
    _close_open_worlds()
    print("RANK %d OK" % rank, flush=True)
    sys.stderr.flush()
    os._exit(0)


if __name__ == "__main__":
    main()
