"""The int8 (W8A8) scenarios for rank_worker.py: ag-gemm and gemm-rs int8
rounds against an exact integer oracle, float inputs quantized on their
rank, bad scales named, agmm.torch's scaled ops, and the refusals of plans
and engines without int8."""
import numpy as np

import agmm
from worker_common import to_numpy32


# The oracle: exact integer dot products (int64), the scales applied in
# float64; the library's fp32 result may differ by its roundings (int32 to
# fp32 is exact at these sizes, then two products): |diff| <= 4 * 2^-24 *
# |ref| + a tiny absolute term.
REL8, TINY8 = 4 * 2.0 ** -24, 1e-30


def i8(seed, shape, lo=-127, hi=128):
    return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(np.int8)


def pos_scales(seed, count):
    return np.random.default_rng(seed).uniform(2.0 ** -10, 0.1, count).astype(np.float32)


def oracle8(aq, a_s, wq, w_s):
    acc = aq.astype(np.int64) @ wq.astype(np.int64)
    a_s = np.broadcast_to(np.asarray(a_s, np.float64).reshape(-1), (aq.shape[0],))
    w_s = np.broadcast_to(np.asarray(w_s, np.float64).reshape(-1), (wq.shape[1],))
    return acc.astype(np.float64) * a_s[:, None] * w_s[None, :]


def check8(got, ref, what):
    got = np.asarray(to_numpy32(got), np.float64)
    assert got.shape == ref.shape, (what, got.shape, ref.shape)
    bad = np.abs(got - ref) > REL8 * np.abs(ref) + TINY8
    assert not bad.any(), "%s: %d of %d outside the bound, worst %r vs %r" % (
        what, int(bad.sum()), bad.size, got[bad][0], ref[bad][0])


def _kind(x, kind):
    if kind == "torch":
        import torch
        return torch.from_numpy(np.ascontiguousarray(x))
    return x


def scenario_int8_gemm(world, args):
    """ag-gemm int8: every (a_scale, w_scale) layout, numpy and torch, two
    weights, uneven shards, rows per call, return_A (the int8 rows and the
    gathered scales, a per-tensor one repeated over its rank's rows), a
    zero scale, the extreme values."""
    P, me = world.size, world.rank
    m, k, ns = args["m_local"], args["k"], args["n"]
    for a_mode in ("channel", "tensor"):
        for w_mode in ("channel", "tensor"):
            for kind in args["kinds"]:
                wq = [i8(900 + i, (k, n)) for i, n in enumerate(ns)]
                wq[0][0, :] = 127
                wq[0][1, :] = -127
                w_s = [pos_scales(950 + i, 1 if w_mode == "tensor" else n)
                       for i, n in enumerate(ns)]
                with world.plan(m_local=m, k=k, n=ns, dtype="int8", tile_m=args["tile_m"],
                                tile_n=args["tile_n"], a_scale=a_mode,
                                w_scale=w_mode) as plan:
                    assert (plan.a_scale, plan.w_scale) == (a_mode, w_mode)
                    plan.set_weights([_kind(w, kind) for w in wq],
                                     [_kind(s, kind) for s in w_s])
                    for rnd in range(args["rounds"]):
                        rows = m if rnd % 2 == 0 else [max(0, r - rnd) for r in m]
                        shards = [i8(rnd * 100 + r, (rows[r], k)) for r in range(P)]
                        scales = [pos_scales(rnd * 100 + 50 + r,
                                             1 if a_mode == "tensor" else rows[r])
                                  for r in range(P)]
                        if rows[0] and a_mode == "channel":
                            scales[0][0] = 0.0  # allowed: >= 0
                        (A, S), Cs = plan.run(_kind(shards[me], kind),
                                              a_scale=_kind(scales[me], kind),
                                              m_rows=None if rows == m else rows,
                                              a_gathered=True)
                        full = np.concatenate(shards)
                        full_s = np.concatenate([np.broadcast_to(s, (rows[r],))
                                                 for r, s in enumerate(scales)])
                        assert np.array_equal(to_numpy32(A), full)
                        assert to_numpy32(A).dtype == np.int8
                        assert np.array_equal(to_numpy32(S), full_s.astype(np.float32))
                        for i, c in enumerate(Cs):
                            check8(c, oracle8(full, full_s, wq[i], w_s[i]),
                                   "%s/%s %s round %d C%d" % (a_mode, w_mode, kind, rnd, i))
                    # a tensor scale may be a number
                    if a_mode == "tensor" and kind == "numpy":
                        shards = [i8(7 + r, (m[r], k)) for r in range(P)]
                        Cs = plan.run(shards[me], a_scale=0.03125)
                        full = np.concatenate(shards)
                        for i, c in enumerate(Cs):
                            check8(c, oracle8(full, np.float32(0.03125), wq[i], w_s[i]),
                                   "number a_scale")


def scenario_int8_float_in(world, args):
    """The convenience: float A and W given to an int8 plan are quantized on
    their rank by agmm.quantize (rows / cols, or tensor, as the plan's
    layout says); the result equals quantize-then-run bit for bit, and the
    oracle on the quantized values. float32, float16 and bf16 (numpy bits
    and torch)."""
    import torch
    P, me = world.size, world.rank
    m, k, n = args["m_local"], args["k"], args["n"]
    rng = np.random.default_rng(5)
    w32 = rng.standard_normal((k, n)).astype(np.float32)
    a32 = [np.random.default_rng(60 + r).standard_normal((m[r], k)).astype(np.float32)
           for r in range(P)]
    forms = [("fp32", lambda x: x), ("fp16", lambda x: x.astype(np.float16)),
             ("bf16", agmm.bf16_from_float32),
             ("torch-bf16", lambda x: torch.from_numpy(x).to(torch.bfloat16))]
    for a_mode, w_mode in (("channel", "channel"), ("tensor", "tensor"),
                           ("channel", "tensor")):
        for name, conv in forms:
            with world.plan(m_local=m, k=k, n=n, dtype="int8", a_scale=a_mode,
                            w_scale=w_mode) as plan:
                plan.set_weight(conv(w32))
                c_conv = to_numpy32(plan.run(conv(a32[me])))
                wq, ws = agmm.quantize(conv(w32), "tensor" if w_mode == "tensor" else "cols")
                plan.set_weight(wq, scale=ws)
                aq, as_ = agmm.quantize(conv(a32[me]),
                                        "tensor" if a_mode == "tensor" else "rows")
                (A, S), c = plan.run(aq, a_scale=as_, a_gathered=True)
                c = to_numpy32(c)
                assert c_conv.tobytes() == c.tobytes(), \
                    "%s %s/%s: the float path differs from quantize-then-run" % (
                        name, a_mode, w_mode)
                check8(c, oracle8(to_numpy32(A), to_numpy32(S), to_numpy32(wq),
                                  to_numpy32(ws)), "float %s" % name)


def scenario_int8_rs(world, args):
    """gemm-rs int8: C = sum_r scaled(A_r @ W_r), each rank its rows, uneven
    k_local, per-row and per-tensor A scales, per-column and per-tensor W."""
    P, me = world.size, world.rank
    m, kl, n = args["m_local"], args["k_local"], args["n"]
    M, offs = sum(m), [sum(kl[:r]) for r in range(P)]
    for a_mode, w_mode in (("channel", "channel"), ("tensor", "tensor"),
                           ("tensor", "channel")):
        with world.plan(m_local=m, k=sum(kl), n=n, dtype="int8", op="gemm-rs",
                        k_local=kl, a_scale=a_mode, w_scale=w_mode) as plan:
            A = [i8(40 + r, (M, kl[r])) for r in range(P)]
            W = [i8(50 + r, (kl[r], n)) for r in range(P)]
            As = [pos_scales(60 + r, 1 if a_mode == "tensor" else M) for r in range(P)]
            Ws = [pos_scales(70 + r, 1 if w_mode == "tensor" else n) for r in range(P)]
            plan.set_weight(W[me], scale=Ws[me])
            for _ in range(args["rounds"]):
                c = plan.run(A[me], a_scale=As[me])
                ref = sum(oracle8(A[r], As[r], W[r], Ws[r]) for r in range(P))
                r0 = sum(m[:me])
                # the sum of P fp32 partials: P more roundings
                got = np.asarray(c, np.float64)
                part = sum(np.abs(oracle8(A[r], As[r], W[r], Ws[r])) for r in range(P))
                bad = np.abs(got - ref[r0:r0 + m[me]]) > \
                    (REL8 + P * 2.0 ** -24) * part[r0:r0 + m[me]] + TINY8
                assert not bad.any(), "gemm-rs %s/%s: %d off" % (a_mode, w_mode, bad.sum())


def _raises(fn, cls, *words):
    try:
        fn()
    except cls as e:
        for w in words:
            assert w in str(e), "%r not in %r" % (w, str(e))
        return e
    raise AssertionError("accepted, expected %s naming %s" % (cls.__name__, words))


def scenario_int8_errors(world, args):
    """Bad scales and inputs of an int8 plan: Python exceptions
    (InvalidArgument, a ValueError) naming the argument, raised before any
    collective call, so every rank raises and the plan stays usable."""
    import torch
    P, me = world.size, world.rank
    m, k, n = 16, 8, 6
    E = agmm.InvalidArgument
    with world.plan(m_local=m, k=k, n=n, dtype="int8") as plan:
        w, ws = i8(1, (k, n)), pos_scales(2, n)
        a, s = i8(3, (m, k)), pos_scales(4, m)
        _raises(lambda: plan.set_weight(w), E, "scale", "required")
        _raises(lambda: plan.set_weight(w, scale=ws[:3]), E,
                "scale: expected float32 of shape (6,)", "got shape (3,)")
        _raises(lambda: plan.set_weight(w, scale=ws.astype(np.float64)), E,
                "scale: expected float32", "float64")
        _raises(lambda: plan.set_weight(w, scale=0.5), E, "scale", "number")
        bad = ws.copy()
        bad[2] = -1
        _raises(lambda: plan.set_weight(w, scale=bad), E, "scale[2]", ">= 0")
        bad[2] = np.nan
        _raises(lambda: plan.set_weight(w, scale=bad), E, "scale[2]")
        low = w.copy()
        low[1, 2] = -128  # accepted (computed exactly), as in C
        plan.set_weight(low, scale=ws)
        _raises(lambda: plan.set_weight(w.astype(np.int16), scale=ws), E, "weight", "dtype")
        _raises(lambda: plan.set_weight(np.zeros((k, n), np.float32), scale=ws), E,
                "scale", "float")
        _raises(lambda: plan.set_weight(np.zeros((k + 1, n), np.float32)), E,
                "weight", "shape")
        plan.set_weight(torch.from_numpy(w), scale=torch.from_numpy(ws))
        _raises(lambda: plan.run(a), E, "a_scale", "required")
        _raises(lambda: plan.run(a, a_scale=s[:8]), E,
                "a_scale: expected float32 of shape (16,), got shape (8,)")
        _raises(lambda: plan.run(a, a_scale=s.astype(np.float16)), E, "a_scale", "float16")
        _raises(lambda: plan.run(a, a_scale=1.0), E, "a_scale", "number")
        _raises(lambda: plan.run(torch.from_numpy(a), a_scale=torch.from_numpy(s).double()),
                E, "a_scale", "torch.float64")
        _raises(lambda: plan.run(a.astype(np.float32), a_scale=s), E, "a_scale", "float")
        _raises(lambda: plan.run(a.astype(np.int16), a_scale=s), E, "a", "dtype")
        _raises(lambda: plan.run(a, a_scale=s, a_gathered=np.empty((m * P, k), np.int8)),
                E, "a_gathered", "pair")
        _raises(lambda: plan.run(a, a_scale=s, a_gathered=(np.empty((m * P, k), np.int8),
                                                          np.empty(3, np.float32))),
                E, "a_gathered scales")
        c = plan.run(a, a_scale=s)  # still usable: nothing reached the library
        assert c.shape == (m * P, n)
    with world.plan(m_local=m, k=k, n=n, dtype="int8", a_scale="tensor",
                    w_scale="tensor") as plan:
        _raises(lambda: plan.set_weight(i8(1, (k, n)), scale=np.ones(2, np.float32)),
                E, "scale: expected float32 of shape (1,) or a number")
        plan.set_weight(i8(1, (k, n)), scale=np.float32(0.5))  # 0-d, a number: fine
        _raises(lambda: plan.run(i8(3, (m, k)), a_scale=np.ones(m, np.float32)),
                E, "a_scale: expected float32 of shape (1,)")
    _raises(lambda: world.plan(m_local=m, k=k, n=n, dtype="int8", a_scale="row"),
            E, "a_scale", "channel", "tensor")
    _raises(lambda: world.plan(m_local=m, k=k, n=n, dtype="int8", w_scale=None,
                               a_scale="tensor", gemm_engine="nope"), E, "gemm_engine")


def scenario_int8_op(world, args):
    """agmm.torch's scaled ops against the oracle: the all-gather one with
    per-row and per-tensor A scales, [1, n] and one-element B scales, two
    weights, 3-D shards, return_A, bf16 outputs, a B_scale changed in place;
    the reduce-scatter one; their refusals naming the argument."""
    import torch
    import agmm.torch as at
    P, me = world.size, world.rank
    at.register_group("tp8", world)
    k, ns = 24, [8, 5]
    E = agmm.InvalidArgument
    Bq = [torch.from_numpy(i8(500 + i, (k, n))) for i, n in enumerate(ns)]
    for a_mode, b_mode in (("row", "col"), ("tensor", "tensor"), ("row", "tensor")):
        Bs_ = [torch.from_numpy(pos_scales(600 + i, n)).reshape(1, n) if b_mode == "col"
               else torch.tensor(0.0625) for i, n in enumerate(ns)]
        for call in range(args["calls"]):
            three_d = call % 2 == 1
            rows = [2 + r + call for r in range(P)]
            shapes = [(rows[r], 2, k) if three_d else (rows[r], k) for r in range(P)]
            A = [torch.from_numpy(i8(call * 10 + r, s)) for r, s in enumerate(shapes)]
            if a_mode == "row":
                As = [torch.from_numpy(pos_scales(call * 10 + 5 + r,
                                                  int(np.prod(s[:-1])))).reshape(*s[:-1], 1)
                      for r, s in enumerate(shapes)]
            else:
                As = [torch.tensor(float(0.01 * (r + 1))) for r in range(P)]
            if call == 2:
                Bs_[0].mul_(2)  # in place: the weight is set again
            outs = [torch.float32, torch.bfloat16] if call == 3 else None
            Ag, Cs = at.fused_all_gather_scaled_matmul(A[me], Bq, As[me], Bs_,
                                                       group_name="tp8", out_dtypes=outs)
            full = torch.cat(A)
            assert Ag.dtype == torch.int8 and torch.equal(Ag, full)
            f2 = full.reshape(-1, k).numpy()
            fs = np.concatenate([np.broadcast_to(a.reshape(-1).numpy(),
                                                 (int(np.prod(s[:-1])),))
                                 for a, s in zip(As, shapes)])
            for i, C in enumerate(Cs):
                ref = oracle8(f2, fs, Bq[i].numpy(), Bs_[i].numpy())
                assert list(C.shape) == list(full.shape[:-1]) + [ns[i]]
                if outs and outs[i] == torch.bfloat16:
                    assert C.dtype == torch.bfloat16
                    got = C.float().reshape(-1, ns[i]).numpy()
                    assert np.all(np.abs(got - ref) <= 2.0 ** -8 * np.abs(ref) + TINY8)
                else:
                    assert C.dtype == torch.float32
                    check8(C.reshape(-1, ns[i]).numpy(), ref, "op %s/%s call %d C%d"
                           % (a_mode, b_mode, call, i))
    none, Cs = at.fused_all_gather_scaled_matmul(A[me], Bq[:1], As[me], Bs_[:1],
                                                 group_name="tp8", return_A=False)
    assert none is None and len(Cs) == 1
    # through torch.ops, as registered
    Ag, (C,) = torch.ops.agmm.fused_all_gather_scaled_matmul(
        A[me], Bq[:1], As[me], Bs_[:1], 0, "tp8", [None])
    assert torch.equal(Ag, torch.cat(A)) and C.dtype == torch.float32
    # refusals (every rank, before any collective)
    a, s = A[me], As[me]
    _raises(lambda: at.fused_all_gather_scaled_matmul(a, Bq, s, Bs_, gather_dim=1,
                                                      group_name="tp8"), E, "gather_dim")
    _raises(lambda: at.fused_all_gather_scaled_matmul(a, Bq, s, Bs_, group_name="tp8",
                                                      out_dtypes=torch.float16),
            E, "out_dtypes[0]", "float16")
    _raises(lambda: at.fused_all_gather_scaled_matmul(a.float(), Bq, s, Bs_,
                                                      group_name="tp8"), E, "A_shard", "int8")
    _raises(lambda: at.fused_all_gather_scaled_matmul(a, Bq, s, Bs_[:1],
                                                      group_name="tp8"), E, "B_scales")
    _raises(lambda: at.fused_all_gather_scaled_matmul(a, Bq, s.double(), Bs_,
                                                      group_name="tp8"), E, "A_scale", "float32")
    _raises(lambda: at.fused_all_gather_scaled_matmul(a, Bq, torch.ones(3, 3), Bs_,
                                                      group_name="tp8"), E, "A_scale", "shape")
    _raises(lambda: at.fused_all_gather_scaled_matmul(a, Bq, s, [torch.ones(2, 2)] * 2,
                                                      group_name="tp8"), E, "B_scales[0]")

    # reduce-scatter: rank r holds A_r [M, k_r] and B_r [k_r, n]; then again
    # with rank 1 holding none of k
    M, n = 4 * P + 2, 7  # not a multiple of P: the first ranks one more row
    for kl in ([5 + 3 * r for r in range(P)],
               [0 if r == 1 else 5 + 3 * r for r in range(P)]):
        Ar = [torch.from_numpy(i8(700 + r, (M, kl[r]))) for r in range(P)]
        Br = [torch.from_numpy(i8(710 + r, (kl[r], n))) for r in range(P)]
        for a_mode in ("row", "tensor"):
            Asr = [torch.from_numpy(pos_scales(720 + r, M)).reshape(M, 1) if a_mode == "row"
                   else torch.tensor(0.02 * (r + 1)) for r in range(P)]
            Bsr = [torch.from_numpy(pos_scales(730 + r, n)).reshape(1, n) for r in range(P)]
            for out_dtype in (None, torch.bfloat16):
                C = at.fused_scaled_matmul_reduce_scatter(Ar[me], Br[me], Asr[me], Bsr[me],
                                                          group_name="tp8", out_dtype=out_dtype)
                parts = [oracle8(Ar[r].numpy(), Asr[r].numpy(), Br[r].numpy(), Bsr[r].numpy())
                         for r in range(P)]
                ref, mag = sum(parts), sum(np.abs(p) for p in parts)
                split = [M // P + (1 if r < M % P else 0) for r in range(P)]
                r0 = sum(split[:me])
                assert tuple(C.shape) == (split[me], n), C.shape
                tol = 2.0 ** -8 if out_dtype == torch.bfloat16 else REL8 + P * 2.0 ** -24
                assert C.dtype == (out_dtype or torch.float32)
                got = C.float().numpy().astype(np.float64)
                assert np.all(np.abs(got - ref[r0:r0 + split[me]]) <=
                              tol * mag[r0:r0 + split[me]] + TINY8), (a_mode, out_dtype)
    a, b, s_, t_ = Ar[me], Br[me], Asr[me], Bsr[me]
    _raises(lambda: at.fused_scaled_matmul_reduce_scatter(a, b, s_, t_, reduce_op="avg",
                                                          group_name="tp8"), E, "reduce_op")
    _raises(lambda: at.fused_scaled_matmul_reduce_scatter(a, b, s_, t_, scatter_dim=1,
                                                          group_name="tp8"), E, "scatter_dim")
    _raises(lambda: at.fused_scaled_matmul_reduce_scatter(a, b, s_, t_, group_name="tp8",
                                                          out_dtype=torch.float16),
            E, "out_dtype", "float16")
    _raises(lambda: at.fused_scaled_matmul_reduce_scatter(a, b, s_, torch.ones(3),
                                                          group_name="tp8"), E, "B_scale")
    at.unregister_group("tp8")


def scenario_int8_float_plan_refuses_scales(world, args):
    """Scales belong to int8 plans: a float plan refuses each, naming it."""
    E = agmm.InvalidArgument
    for what in ("a_scale", "w_scale"):
        _raises(lambda: world.plan(m_local=4, k=8, n=8, dtype="fp32", **{what: "tensor"}),
                E, what, "int8")
    with world.plan(m_local=4, k=8, n=8, dtype="fp32") as plan:
        w = np.ones((8, 8), np.float32)
        _raises(lambda: plan.set_weight(w, scale=np.ones(8, np.float32)), E, "scale", "int8")
        plan.set_weight(w)
        a = np.ones((4 * world.size, 8), np.float32)[:4]
        _raises(lambda: plan.run(a, a_scale=np.ones(4, np.float32)), E, "a_scale", "int8")
        assert np.array_equal(plan.run(a), a @ w)


def scenario_int8_unavailable(world, args):
    """An engine without int8 refuses an int8 plan: agmm.Unsupported."""
    for engine in args["engines"]:
        _raises(lambda: world.plan(m_local=4, k=8, n=8, dtype="int8", gemm_engine=engine),
                agmm.Unsupported)


SCENARIOS = {"int8_gemm": scenario_int8_gemm, "int8_float_in": scenario_int8_float_in,
             "int8_rs": scenario_int8_rs, "int8_errors": scenario_int8_errors,
             "int8_op": scenario_int8_op,
             "int8_float_plan_refuses_scales": scenario_int8_float_plan_refuses_scales,
             "int8_unavailable": scenario_int8_unavailable}
