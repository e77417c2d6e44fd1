"""Scenarios of the plans' epilogue (bias, activation, out_dtype) for
rank_worker.py: C = out(act(A @ W + bias)) against NumPy in float64, for
ag-gemm, gemm-rs and gemm-ar, NumPy and torch, every activation and out dtype."""
import math

import numpy as np

import agmm
from worker_common import ints as _ints


def _act(name, x):
    if name == "relu":
        return np.maximum(x, 0)
    if name == "gelu-tanh":
        return 0.5 * x * (1 + np.tanh(math.sqrt(2 / math.pi) * (x + 0.044715 * x ** 3)))
    if name == "gelu-erf":
        return 0.5 * x * (1 + np.vectorize(math.erf)(x / math.sqrt(2)))
    if name == "silu":
        return x / (1 + np.exp(-x))
    return x


def _as32(c, out_dtype):
    """C of out_dtype (numpy: bf16 as uint16 bits; or torch) as float32."""
    if not isinstance(c, np.ndarray):  # torch
        return c.float().numpy()
    if out_dtype == "bf16":
        assert c.dtype == np.uint16, c.dtype
        return agmm.bf16_to_float32(c)
    assert c.dtype == {"fp16": np.float16, "fp32": np.float32}[out_dtype], c.dtype
    return c.astype(np.float32)


def _close(got, ref, out_dtype, what):
    h = {"fp32": 0.0, "bf16": 2.0 ** -8, "fp16": 2.0 ** -11}[out_dtype]
    bound = (h + 1e-5) * np.abs(ref) + 1e-4
    bad = np.abs(got - ref) > bound
    assert not bad.any(), "%s: %d off, e.g. got %r want %r" % (
        what, int(bad.sum()), float(got[bad][0]), float(ref[bad][0]))


def scenario_epilogue(world, args):
    """Every activation x out dtype, bias on/off, both operations, numpy
    and torch; a new bias between rounds; set_bias's refusals."""
    P, me = world.size, world.rank
    m, k, n = args["m_local"], args["k"], args["n"]
    M = sum(m)
    kinds = ["numpy"] + (["torch"] if args.get("torch") else [])
    for op in ("ag-gemm", "gemm-rs", "gemm-ar"):
        kl = [k // P + (r < k % P) for r in range(P)] if op != "ag-gemm" else None
        for act in ("none", "relu", "gelu-tanh", "gelu-erf", "silu"):
            for out in ("fp32", "bf16", "fp16"):
                for bias in (False, True):
                    kind = kinds[(len(act) + len(out)) % len(kinds)]
                    _one(world, op, kl, act, out, bias, kind, m, k, n, M, P, me)
    # refusals: no bias asked, a NaN, a wrong shape
    with world.plan(m_local=m, k=k, n=n, dtype="fp32") as plan:
        try:
            plan.set_bias(np.zeros(n, np.float32))
        except agmm.InvalidArgument as e:
            assert "bias=True" in str(e), str(e)
        else:
            raise AssertionError("set_bias on a plan without bias=True")
    with world.plan(m_local=m, k=k, n=n, dtype="fp32", bias=True) as plan:
        b = np.zeros(n, np.float32)
        b[3] = np.nan
        try:
            plan.set_bias(b)
        except agmm.InvalidArgument as e:
            assert "bias[3]" in str(e), str(e)
        else:
            raise AssertionError("a NaN bias was taken")
        try:
            plan.set_bias(np.zeros(n + 1, np.float32))
        except agmm.InvalidArgument as e:
            assert "bias" in str(e), str(e)
        else:
            raise AssertionError("a bias of n + 1 values was taken")
    try:
        world.plan(m_local=m, k=k, n=n, dtype="fp32", activation="gelu")
    except agmm.InvalidArgument as e:
        assert "activation" in str(e), str(e)
    else:
        raise AssertionError("activation 'gelu' was taken")


def _one(world, op, kl, act, out, bias, kind, m, k, n, M, P, me):
    rs = op != "ag-gemm"  # k split over the ranks, partials summed
    row0 = sum(m[:me])
    a_all = [_ints(100 + r, (M, kl[r]) if rs else (m[r], k)) for r in range(P)]
    w_all = [_ints(200 + r, (kl[r], n), -2, 3) for r in range(P)] if rs else \
        [_ints(200, (k, n), -2, 3)]
    b = (np.random.default_rng(7).standard_normal(n) * 0.5).astype(np.float32)
    if rs:
        prod = sum(a_all[r].astype(np.float64) @ w_all[r] for r in range(P))
        if op == "gemm-rs":  # gemm-ar: every rank has all of C
            prod = prod[row0:row0 + m[me]]
    else:
        prod = np.concatenate(a_all).astype(np.float64) @ w_all[0]
    with world.plan(m_local=m, k=k, n=n, dtype="bf16", op=op, k_local=kl,
                    tile_m=4, tile_n=8, bias=bias, activation=act,
                    out_dtype=out) as plan:
        assert plan.out_dtype == out
        info = plan.gemm_info()
        assert info.epilogue in (("none",) if not bias and act == "none" and
                                 out == "fp32" else ("engine", "pass", "mixed")), info
        assert info.epilogue_isa in ("x86-64-v4", "x86-64-v3", "x86-64"), info
        w = w_all[me if rs else 0]
        a = a_all[me]
        if kind == "torch":
            import torch
            w = torch.from_numpy(w).to(torch.bfloat16)
            a = torch.from_numpy(a).to(torch.bfloat16)
            bb = torch.from_numpy(b)
        else:
            w = agmm.bf16_from_float32(w)
            a = agmm.bf16_from_float32(a)
            bb = b
        plan.set_weight(w)
        for rnd, sched in enumerate(("fused", "baseline", "fused")):
            if bias and rnd == 2:  # a new bias between rounds
                b = (-2 * b + 0.25).astype(np.float32)
                bb = b if kind == "numpy" else __import__("torch").from_numpy(b)
            if bias and rnd in (0, 2):
                plan.set_bias(bb)
            c = plan.run(a, schedule=sched)
            ref = _act(act, prod + (b.astype(np.float64) if bias else 0))
            _close(_as32(c, out), ref, out, "%s %s %s bias %s %s round %d" % (
                op, act, out, bias, kind, rnd))


def scenario_glu(world, args):
    """The gated activations (silu-mul, gelu-tanh-mul): W [k, 2i] = [gate |
    up], C [M, i] = act(A @ W_gate + b_gate) * (A @ W_up + b_up), against
    torch's F.silu(x @ Wg) * (x @ Wu) in float64; both schedules, bias
    on/off, fp32 and bf16 C; odd n and gemm-rs refused."""
    import torch
    import torch.nn.functional as F
    P, me = world.size, world.rank
    m, k, i = args["m_local"], args["k"], args["i"]
    n = 2 * i
    acts = {"silu-mul": F.silu,
            "gelu-tanh-mul": lambda z: F.gelu(z, approximate="tanh")}
    a_all = [_ints(100 + r, (m[r], k)) for r in range(P)]
    w = _ints(200, (k, n), -2, 3)
    x = torch.from_numpy(np.concatenate(a_all)).double() / 4
    wt = torch.from_numpy(w).double() / 4
    b = torch.from_numpy(
        (np.random.default_rng(7).standard_normal(n) * 0.5).astype(np.float32))
    for act, fn in acts.items():
        for out in ("fp32", "bf16"):
            for bias in (False, True):
                with world.plan(m_local=m, k=k, n=n, dtype="bf16", tile_m=4,
                                tile_n=8, bias=bias, activation=act,
                                out_dtype=out) as plan:
                    assert plan.c_shape == (sum(m), i), plan.c_shape
                    plan.set_weight((torch.from_numpy(w) / 4).to(torch.bfloat16))
                    if bias:
                        plan.set_bias(b)
                    a = (torch.from_numpy(a_all[me]) / 4).to(torch.bfloat16)
                    bd = b.double() if bias else torch.zeros(n, dtype=torch.float64)
                    ref = (fn(x @ wt[:, :i] + bd[:i]) *
                           (x @ wt[:, i:] + bd[i:])).numpy()
                    for sched in ("fused", "baseline"):
                        c = plan.run(a, schedule=sched)
                        assert tuple(c.shape) == (sum(m), i), c.shape
                        _close(_as32(c, out), ref, out, "%s %s bias %s %s" % (
                            act, out, bias, sched))
    for bad, what in ((dict(n=n + 1), "even"), (dict(n=n, op="gemm-rs"),
                                                 "ag-gemm")):
        try:
            world.plan(m_local=m, k=k, dtype="bf16", activation="silu-mul", **bad)
        except agmm.Error as e:
            assert what in str(e), str(e)
        else:
            raise AssertionError("a gated plan with %r was taken" % bad)


def scenario_glu_torch(world, args):
    """agmm.torch.fused_all_gather_matmul(..., activation="silu_mul"): C
    [M, i] = F.silu(x @ Wg + bg) * (x @ Wu + bu), against torch in float64
    in inference (the plan's epilogue; with a bias, after the round) and
    with autograd (dA, dW, db against torch's own backward); the reduce
    ops refuse it."""
    import torch
    import torch.nn.functional as F
    import agmm.torch as at
    P, me = world.size, world.rank
    m, k, i = args["m"], args["k"], args["i"]
    x_all = [torch.from_numpy(_ints(100 + r, (m, k))) / 4 for r in range(P)]
    w = torch.from_numpy(_ints(200, (k, 2 * i), -2, 3)) / 4
    b = torch.from_numpy(
        (np.random.default_rng(7).standard_normal(2 * i) * 0.5).astype(np.float32))
    G = torch.from_numpy(_ints(300, (P * m, i))) / 8  # dLoss/dC, every row
    at.register_group("glu", world)
    try:
        for name, fn in (("silu_mul", F.silu), ("gelu-tanh-mul",
                                                lambda z: F.gelu(z, approximate="tanh"))):
            for bias in (None, b):
                xf = torch.cat(x_all).double().requires_grad_(True)
                wf = w.double().requires_grad_(True)
                bf = (bias.double() if bias is not None else
                      torch.zeros(2 * i, dtype=torch.float64)).requires_grad_(True)
                z = xf @ wf + bf
                ref = fn(z[:, :i]) * z[:, i:]
                ref.backward(G.double())
                what = "%s bias %s" % (name, bias is not None)
                # inference: the plan's epilogue (no bias) or after the round
                with torch.no_grad():
                    _, (c,) = at.fused_all_gather_matmul(
                        x_all[me], [w], group_name="glu", return_A=False,
                        bias=bias, activation=name, out_dtype=torch.float32)
                assert tuple(c.shape) == (P * m, i), (what, c.shape)
                _close(c.numpy(), ref.detach().numpy(), "fp32", what)
                # autograd: every rank's C is the whole [M, i] with the same
                # G, so this rank's dA rows are the reduce-scatter's sum of P
                # equal parts (P x the reference's); dW and db are its own
                # (the gathered A's), the reference's
                xr = x_all[me].clone().requires_grad_(True)
                wr = w.clone().requires_grad_(True)
                br = bias.clone().requires_grad_(True) if bias is not None else None
                _, (c,) = at.fused_all_gather_matmul(
                    xr, [wr], group_name="glu", return_A=False, bias=br,
                    activation=name, out_dtype=torch.float32)
                _close(c.detach().numpy(), ref.detach().numpy(), "fp32", what + " fwd")
                c.backward(G)
                _close(xr.grad.numpy(), P * xf.grad[me * m:(me + 1) * m].numpy(),
                       "fp32", what + " dA")
                _close(wr.grad.numpy(), wf.grad.numpy(), "fp32", what + " dW")
                if bias is not None:
                    _close(br.grad.numpy(), bf.grad.numpy(), "fp32", what + " db")
        for op in (lambda: at.fused_matmul_reduce_scatter(
                       x_all[me], w, group_name="glu", activation="silu_mul"),
                   lambda: at.fused_matmul_all_reduce(
                       x_all[me], w, group_name="glu", activation="silu-mul")):
            try:
                op()
            except agmm.InvalidArgument as e:
                assert "gated" in str(e), str(e)
            else:
                raise AssertionError("a reduce op took a gated activation")
    finally:
        at.unregister_group("glu")


SCENARIOS = {"epilogue": scenario_epilogue, "glu": scenario_glu,
             "glu_torch": scenario_glu_torch}
