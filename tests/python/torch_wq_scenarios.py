"""agmm.torch's ops with agmm.QuantizedWeight weights (issue 48 item 5),
run by rank_worker.py: every rank builds every rank's weights and inputs
from seeds, so each checks its own result against float64 references
computed with torch:

  forward   C against A @ W (W the weight dequantized exactly, float64),
            within check_wq.h's bound (the wq kernels' fp32 group sums,
            zero term and scaling, P partials) plus one rounding to C's
            dtype (bf16: 2^-8 relative);
  gradient  dA against torch autograd (float64) of the same product with
            the same output gradient, within the backward GEMM's bound:
            W rounded once to A's dtype (bf16 2^-8, fp32 2^-24), fp32
            sums of sum n_i * P terms, dA rounded once to A's dtype;
  refusals  by name (agmm.InvalidArgument / agmm.Unsupported);
  a_quant   QuantizedWeights with a_quant="int8" (W4A8): against A
            quantized per row as the library does (_quant_rows), within
            the A8 kernels' tighter bound, and off A unquantized's product.
"""
import numpy as np
import torch

import agmm
import agmm.torch as at

U = 2.0 ** -24
OUT_U = {torch.float32: 2.0 ** -24, torch.bfloat16: 2.0 ** -8}
DT = {"bf16": torch.bfloat16, "fp32": torch.float32}


def _gamma(n):
    return n * U / (1 - n * U)


def _qw(seed, k, n, bits, gs, sym):
    w = np.random.default_rng(seed).standard_normal((k, n)).astype(np.float32)
    return agmm.quantize_weight(w, bits=bits, group_size=gs, symmetric=sym)


def _mag_weight(q):
    """|s| (|q - z| + 2|z| + 16 + O) per weight element, float64 [k, n]
    (O = 256 for int4: its kernels may sum u + 128 and zero + 128)."""
    G = q.group_size
    s = np.repeat(np.abs(q.scales.astype(np.float64)), G, axis=0)[:q.k]
    z = np.repeat(q.zero_points().astype(np.float64), G, axis=0)[:q.k]
    v = q.values().astype(np.float64)
    off = 256.0 if q.bits == 4 else 0.0
    return s * (np.abs(v - z) + 2 * np.abs(z) + 16 + off)


def _acts(seed, rows, k, dtype):
    x = torch.from_numpy(np.random.default_rng(seed).standard_normal(
        (rows, k)).astype(np.float32))
    return x.to(dtype)


def _check(got, ref, bound, what):
    got = got.detach().double()
    assert got.shape == ref.shape, "%s: shape %s, want %s" % (
        what, list(got.shape), list(ref.shape))
    diff = (got - ref).abs()
    bad = diff > bound
    assert not bool(bad.any()), "%s: %d of %d off, max diff %g, max diff/bound %g" % (
        what, int(bad.sum()), bad.numel(), float(diff.max()),
        float((diff / bound).max()))


def _fwd_bound(a64, q_parts, ref, P, out_dt):
    """check_wq.h's bound of C [rows, n] from A's rows a64 [rows, K] and the
    weight's parts (each a QuantizedWeight of its rows of K, in order),
    plus C's rounding to out_dt."""
    K = a64.shape[1]
    G = max(q.group_size for q in q_parts)
    mw = torch.from_numpy(np.concatenate([_mag_weight(q) for q in q_parts]))
    e = _gamma(2 * max(G, K) + 16 + P) * (a64.abs() @ mw) + U * ref.abs()
    return e + OUT_U[out_dt] * (ref.abs() + e)


def _bwd_bound(gz64, w64, ref, nsum, dt):
    """dA = gz @ W^T: W rounded to dt, fp32 sums of nsum terms, one rounding
    to dt; twice the first-order terms."""
    e = (OUT_U[dt] + _gamma(nsum + 4)) * (gz64.abs() @ w64.abs().t())
    return 2 * (e + OUT_U[dt] * ref.abs()) + 1e-30


FORMATS = [(4, 32, True), (8, None, False)]  # int4 G 32 sym; int8 all of k asym


def _ag(world, dtname, fmt, m_local, grad, k=80, n=24):
    P, me = world.size, world.rank
    dt = DT[dtname]
    bits, gs, sym = fmt
    qs = [_qw(100 + r, k, n, bits, gs, sym) for r in range(P)]  # rank r's columns
    shards = [_acts(10 * r + sum(m_local), m_local[r], k, dt) for r in range(P)]
    full64 = torch.cat(shards).double()
    ws = [torch.from_numpy(q.dequantize(np.float64)) for q in qs]
    a = shards[me].clone().requires_grad_(grad)
    A_g, (C,) = at.fused_all_gather_matmul(a, [qs[me]], group_name="tp",
                                           return_A=True)
    what = "ag %s %s rows %s" % (dtname, fmt, m_local)
    assert torch.equal(A_g, torch.cat(shards)), what + ": A_gathered"
    assert C.dtype == dt and C.requires_grad == grad, (what, C.dtype, C.requires_grad)
    ref = full64 @ ws[me]
    _check(C, ref, _fwd_bound(full64, [qs[me]], ref, 1, dt), what + " C")
    if not grad:
        return
    gys = [_acts(900 + r, sum(m_local), n, dt) for r in range(P)]
    C.backward(gys[me])
    # torch autograd in float64 of the same layer: every rank's columns
    a64 = torch.cat(shards).double().requires_grad_(True)
    loss = sum(((a64 @ w) * gy.double()).sum() for w, gy in zip(ws, gys))
    loss.backward()
    off = sum(m_local[:me])
    ref = a64.grad[off:off + m_local[me]]
    gz = torch.cat([gy.double() for gy in gys], 1)[off:off + m_local[me]]
    wcat = torch.cat(ws, 1)
    assert a.grad is not None and a.grad.dtype == dt, what
    _check(a.grad, ref, _bwd_bound(gz, wcat, ref, n * P, dt), what + " dA")


def _reduce(world, op, dtname, fmt, M, grad, k_local=(64, 48), n=24):
    P, me = world.size, world.rank
    dt = DT[dtname]
    bits, gs, sym = fmt
    K = sum(k_local)
    offs = [sum(k_local[:r]) for r in range(P + 1)]
    qs = [_qw(200 + r, k_local[r], n, bits, gs, sym) for r in range(P)]
    w64 = torch.cat([torch.from_numpy(q.dequantize(np.float64)) for q in qs])
    A_full = _acts(300 + M, M, K, dt)
    a = A_full[:, offs[me]:offs[me + 1]].clone().requires_grad_(grad)
    what = "%s %s %s rows %d" % (op, dtname, fmt, M)
    if op == "gemm-rs":
        C = at.fused_matmul_reduce_scatter(a, qs[me], group_name="tp")
        split = [M // P + (r < M % P) for r in range(P)]
        rows = slice(sum(split[:me]), sum(split[:me + 1]))
    else:
        C = at.fused_matmul_all_reduce(a, qs[me], group_name="tp")
        rows = slice(0, M)
    assert C.dtype == dt and C.requires_grad == grad, (what, C.dtype, C.requires_grad)
    a64_all = A_full.double()
    ref = a64_all[rows] @ w64
    _check(C, ref, _fwd_bound(a64_all[rows], qs, ref, P, dt), what + " C")
    if not grad:
        return
    # the output gradient: every rank's rows (gemm-ar: the same on every
    # rank, as the op's backward takes it)
    gy_full = _acts(950 + M, M, n, dt)
    C.backward(gy_full[rows])
    a64 = a64_all.clone().requires_grad_(True)
    ((a64 @ w64) * gy_full.double()).sum().backward()
    ref = a64.grad[:, offs[me]:offs[me + 1]]
    _check(a.grad, ref, _bwd_bound(gy_full.double(), w64[offs[me]:offs[me + 1]], ref,
                                   n, dt), what + " dA")


def _colpar(world, dtname, fmt, m, grad, k=80, ns=(24, 16)):
    """column_parallel_matmul: A the same on every rank, rank r's weights
    its own columns; C_i local, dA all-reduced."""
    P, me = world.size, world.rank
    dt = DT[dtname]
    bits, gs, sym = fmt
    qs = [[_qw(500 + 10 * r + i, k, n, bits, gs, sym) for i, n in enumerate(ns)]
          for r in range(P)]
    ws = [[torch.from_numpy(q.dequantize(np.float64)) for q in qr] for qr in qs]
    A = _acts(70 + m, m, k, dt)
    a = A.clone().requires_grad_(grad)
    Cs = at.column_parallel_matmul(a, qs[me], group_name="tp")
    what = "colpar %s %s rows %d" % (dtname, fmt, m)
    a64 = A.double()
    for i, C in enumerate(Cs):
        assert C.dtype == dt and C.requires_grad == grad, (what, C.dtype)
        ref = a64 @ ws[me][i]
        _check(C, ref, _fwd_bound(a64, [qs[me][i]], ref, 1, dt), what + " C%d" % i)
    if not grad:
        return
    gys = [[_acts(800 + 10 * r + i, m, n, dt) for i, n in enumerate(ns)]
           for r in range(P)]
    torch.autograd.backward(Cs, gys[me])
    a64 = A.double().requires_grad_(True)
    sum(((a64 @ w) * g.double()).sum() for wr, gr in zip(ws, gys)
        for w, g in zip(wr, gr)).backward()
    ref = a64.grad
    gz = torch.cat([g.double() for gr in gys for g in gr], 1)
    wcat = torch.cat([w for wr in ws for w in wr], 1)
    assert a.grad is not None and a.grad.dtype == dt, what
    _check(a.grad, ref, _bwd_bound(gz, wcat, ref, sum(ns) * P, dt), what + " dA")


def _refused(fn, exc, *words):
    try:
        fn()
    except exc as e:
        msg = str(e)
        assert "\n" not in msg and all(w in msg for w in words), (words, msg)
        return
    raise AssertionError("not refused: %s" % (words,))


def _refusals(world):
    me = world.rank
    q = _qw(100, 80, 24, 4, 32, True)
    a = _acts(1, 3, 80, torch.bfloat16)
    ag = at.fused_all_gather_matmul
    _refused(lambda: ag(_acts(1, 3, 64, torch.bfloat16), [q], group_name="tp"),
             agmm.InvalidArgument, "Bs[0]", "k 80", "64")
    _refused(lambda: ag(torch.ones(3, 80, dtype=torch.int8), [q], group_name="tp"),
             agmm.InvalidArgument, "A_shard", "int8")
    _refused(lambda: ag(a, [q, torch.ones(80, 8, dtype=torch.bfloat16)],
                        group_name="tp"), agmm.InvalidArgument, "Bs[1]", "tensor")
    _refused(lambda: ag(a, [q, _qw(5, 80, 8, 8, None, False)], group_name="tp"),
             agmm.InvalidArgument, "Bs[1]", "bits 8")
    qr = _qw(200 + me, 64, 24, 4, 32, True)
    ar = _acts(2, 5, 64, torch.float32)
    _refused(lambda: at.fused_matmul_reduce_scatter(ar[:, :32], qr, group_name="tp"),
             agmm.InvalidArgument, "B:", "k 64", "32")
    _refused(lambda: at.fused_matmul_reduce_scatter(ar, qr, group_name="tp",
                                                    activation="silu_mul"),
             agmm.InvalidArgument, "activation", "silu")
    _refused(lambda: at.fused_matmul_all_reduce(ar.to(torch.int8), qr,
                                                group_name="tp"),
             agmm.InvalidArgument, "A:", "int8")
    _refused(lambda: at.column_parallel_matmul(a, [q, torch.ones(80, 8)],
                                               group_name="tp"),
             agmm.InvalidArgument, "Bs[1]", "tensor")
    _refused(lambda: at.column_parallel_matmul(a[:, :64], [q], group_name="tp"),
             agmm.InvalidArgument, "Bs[0]", "k 80", "64")
    # Traced (FakeTensor): torch.ops.agmm.*_wq's fake kernels give the
    # shapes and dtypes, no communication; an input that needs a gradient
    # is refused in one line (the gradient is eager's).
    try:
        from torch._subclasses.fake_tensor import FakeTensorMode
    except ImportError:
        FakeTensorMode = None
    P = world.size
    if FakeTensorMode is not None:
        a_grad = a.clone().requires_grad_(True)
        with FakeTensorMode() as mode:
            fa = mode.from_tensor(a)
            A_g, (c,) = ag(fa, [q], group_name="tp", activation="silu")
            assert list(A_g.shape) == [3 * P, 80] and list(c.shape) == [3 * P, 24] \
                and c.dtype == torch.bfloat16, (A_g.shape, c.shape, c.dtype)
            fr = mode.from_tensor(_acts(2, 2 * P + 1, 64, torch.float32))
            c = at.fused_matmul_reduce_scatter(fr, qr, group_name="tp",
                                               out_dtype=torch.bfloat16)
            rows = 2 + (1 if me == 0 else 0)  # 2P + 1 rows split: rank 0 one more
            assert list(c.shape) == [rows, 24] and c.dtype == torch.bfloat16, \
                (c.shape, c.dtype)
            c = at.fused_matmul_all_reduce(fr, qr, group_name="tp")
            assert list(c.shape) == [2 * P + 1, 24] and c.dtype == torch.float32
            cs = at.column_parallel_matmul(fa, [q, q], group_name="tp")
            assert [list(x.shape) for x in cs] == [[3, 24]] * 2
            fg = mode.from_tensor(a_grad)
            _refused(lambda: ag(fg, [q], group_name="tp"), agmm.Unsupported,
                     "QuantizedWeight", "gradient")
    # The traced graph's op on real tensors: the eager call's values.
    _, (want,) = ag(a, [q], group_name="tp", return_A=False)
    _, (got,) = torch.ops.agmm.fused_all_gather_matmul_wq(a, [q.op_id], 0, "tp",
                                                          return_A=False)
    assert torch.equal(got, want), "fused_all_gather_matmul_wq vs eager"
    got = torch.ops.agmm.column_parallel_matmul_wq(a, [q.op_id], "tp")[0]
    assert torch.equal(got, at.column_parallel_matmul(a, [q], group_name="tp")[0])
    _refused(lambda: torch.ops.agmm.column_parallel_matmul_wq(a, [10 ** 9], "tp"),
             agmm.InvalidArgument, "Bs[0]", "op_id")


def _caching(world):
    """A QuantizedWeight's plan is made once and reused (set once); a new
    QuantizedWeight object of the same values gets its own plan; rows
    changing between calls keep the plan (per-call rows)."""
    q = _qw(100, 80, 24, 4, 32, True)
    a = _acts(7, 4, 80, torch.float32)
    _, (c1,) = at.fused_all_gather_matmul(a, [q], group_name="tp")
    n0 = len(at.group_plans("tp"))
    first = at.group_plans("tp")[-1]
    assert first.weight_dtype == "int4" and first.gemm_info().engine == "wq", \
        (first.weight_dtype, first.gemm_info())
    _, (c2,) = at.fused_all_gather_matmul(a, [q], group_name="tp")
    assert torch.equal(c1, c2) and len(at.group_plans("tp")) == n0
    assert at.group_plans("tp")[-1] is first
    _, (c3,) = at.fused_all_gather_matmul(a[:1], [q], group_name="tp")
    assert c3.shape == (world.size, 24) and torch.allclose(
        c3, c1[:1].expand(world.size, -1), rtol=1e-5, atol=1e-5)
    q2 = _qw(100, 80, 24, 4, 32, True)  # the same values, another object
    _, (c4,) = at.fused_all_gather_matmul(a, [q2], group_name="tp")
    assert torch.equal(c4, c1) and at.group_plans("tp")[-1] is not first
    # repeated calls (the memo of checks and of the previous plan) with
    # weights and rows changing, every rank's rows its own
    P, me = world.size, world.rank
    q3 = _qw(101, 80, 24, 4, 32, True)  # other values
    for i, rows in enumerate([2, 2, 5, 5, 1, 1, 3]):
        qi = (q, q3)[(i // 2) % 2]
        shards = [_acts(1000 + 10 * i + r, rows + r, 80, torch.float32)
                  for r in range(P)]
        full = torch.cat(shards).double()
        _, (c,) = at.fused_all_gather_matmul(shards[me], [qi], group_name="tp",
                                             return_A=False)
        ref = full @ torch.from_numpy(qi.dequantize(np.float64))
        _check(c, ref, _fwd_bound(full, [qi], ref, 1, torch.float32),
               "repeated call %d" % i)
    # the reduce ops likewise: weights and rows changing between calls
    kl = 32
    qa, qb = (_qw(1100 + me, kl, 24, 8, None, False),
              _qw(1200 + me, kl, 24, 8, None, False))
    for op in ("gemm-rs", "gemm-ar"):
        for i, M in enumerate([4, 4, 4, 7, 7, 1, 1]):
            qs = [_qw((1100 if i % 3 != 2 else 1200) + r, kl, 24, 8, None, False)
                  for r in range(P)]
            qi = qa if i % 3 != 2 else qb
            A_full = _acts(1300 + M, M, kl * P, torch.float32)
            ak = A_full[:, kl * me:kl * me + kl].contiguous()
            w64 = torch.cat([torch.from_numpy(x.dequantize(np.float64)) for x in qs])
            if op == "gemm-rs":
                c = at.fused_matmul_reduce_scatter(ak, qi, group_name="tp")
                split = [M // P + (r < M % P) for r in range(P)]
                rows = slice(sum(split[:me]), sum(split[:me + 1]))
            else:
                c = at.fused_matmul_all_reduce(ak, qi, group_name="tp")
                rows = slice(0, M)
            a64 = A_full.double()[rows]
            ref = a64 @ w64
            _check(c, ref, _fwd_bound(a64, qs, ref, P, torch.float32),
                   "%s repeated call %d" % (op, i))
    # column_parallel_matmul's local plans: one per weights, kept while
    # they live (6 layers in turn: no plan made in the second pass), a
    # plan of a weight gone closed at the next new plan.
    from agmm.torch.kernels import wq_colpar as _torch_wq_colpar
    layers = [_qw(600 + i, 80, 24, 4, 32, True) for i in range(6)]
    outs = [at.column_parallel_matmul(a, [q_], group_name="tp")[0] for q_ in layers]
    plans = dict(_torch_wq_colpar._local_plans)
    again = [at.column_parallel_matmul(a, [q_], group_name="tp")[0] for q_ in layers]
    assert all(torch.equal(x, y) for x, y in zip(outs, again))
    assert {k_: v[1] for k_, v in _torch_wq_colpar._local_plans.items()} == \
        {k_: v[1] for k_, v in plans.items()}
    gone = _torch_wq_colpar._local_plans[next(k_ for k_ in plans
                                        if k_[0] == (id(layers[0]),))][1]
    del layers[0]
    at.column_parallel_matmul(a, [q2], group_name="tp")  # a new plan
    assert gone.closed


def _gated(world):
    """silu_mul over a quantized [gate | up] weight, forward and dA."""
    P, me = world.size, world.rank
    k, i = 64, 16
    qs = [_qw(400 + r, k, 2 * i, 8, None, False) for r in range(P)]
    ws = [torch.from_numpy(q.dequantize(np.float64)) for q in qs]
    m = [5, 3][:P] + [4] * (P - 2)
    shards = [_acts(40 + r, m[r], k, torch.float32) for r in range(P)]
    a = shards[me].clone().requires_grad_(True)
    _, (C,) = at.fused_all_gather_matmul(a, [qs[me]], group_name="tp",
                                         activation="silu_mul")
    a64 = torch.cat(shards).double().requires_grad_(True)
    outs = [torch.nn.functional.silu(a64 @ w[:, :i]) * (a64 @ w[:, i:]) for w in ws]
    ref = outs[me].detach()
    assert C.shape == ref.shape
    tol = 1e-4 * (1 + ref.abs())
    _check(C, ref, tol, "gated C")
    gys = [_acts(60 + r, sum(m), i, torch.float32) for r in range(P)]
    C.backward(gys[me])
    sum((o * g.double()).sum() for o, g in zip(outs, gys)).backward()
    off = sum(m[:me])
    ref = a64.grad[off:off + m[me]]
    _check(a.grad, ref, 1e-4 * (1 + ref.abs()), "gated dA")


def _colpar_act(world):
    """column_parallel_matmul(activation=): in inference the one-rank
    plans' epilogue (QuantizedWeights at any rows, bf16 weights at up to
    32 rows: kernels/local.py's decode plans) from the float32 sums, C
    rounded once; the gated ones over [gate | up] halves; with a gradient
    the products then the activation, dA through them; bad activations
    and odd gated widths refused by name."""
    from agmm.torch.kernels import local as local_k
    from agmm.torch.kernels import wq_colpar
    me = world.rank
    F = torch.nn.functional
    fns = {"silu_mul": F.silu, "gelu_tanh_mul":
           lambda z: F.gelu(z, approximate="tanh")}
    L = 1.13  # |act'| <= L for SiLU and GELU (tanh), 1 for ReLU
    k, i = 1024, 512  # the bf16 weight: k x 2i >= 2^20, the decode kernel's
    qs = [_qw(900 + me, k, 2 * i, 4, 32, True), _qw(910 + me, k, 2 * i, 8, None, False)]
    wb = _acts(920 + me, k, 2 * i, torch.bfloat16) * (1 / 32)
    cases = [(q, torch.from_numpy(q.dequantize(np.float64)), [q]) for q in qs]
    cases.append((wb, wb.double(), None))
    for W, w64, qparts in cases:
        for act in ("silu_mul", "gelu_tanh_mul", "relu"):
            for m in (1, 5, 33):
                A = _acts(930 + m, m, k, torch.bfloat16)
                a64 = A.double()
                what = "cp activation %s %s rows %d" % (
                    act, "bf16" if qparts is None else "int%d" % W.bits, m)
                with torch.no_grad():
                    (C,) = at.column_parallel_matmul(A, [W], group_name="tp",
                                                     activation=act)
                    (P,) = at.column_parallel_matmul(A, [W], group_name="tp")
                fused = qparts is not None or m <= local_k.DECODE_ROWS
                z = a64 @ w64
                if act == "relu":
                    ref = z.clamp_min(0)
                    e = _fwd_bound(a64, qparts, z, 1, torch.bfloat16) \
                        if qparts else OUT_U[torch.bfloat16] * (a64.abs() @ w64.abs())
                    bound = e + OUT_U[torch.bfloat16] * (ref.abs() + e)
                else:
                    g, u = z[:, :i], z[:, i:]
                    ag = fns[act](g)
                    ref = ag * u
                    if qparts:
                        e = _fwd_bound(a64, qparts, z, 1, torch.bfloat16)
                    else:  # bf16 weights: fp32 sums of k exact products
                        e = (_gamma(k + 4) + OUT_U[torch.bfloat16]) * (a64.abs() @ w64.abs())
                    eg, eu = e[:, :i], e[:, i:]
                    bound = L * eg * (u.abs() + eu) + (ag.abs() + L * eg) * eu
                    bound = bound + OUT_U[torch.bfloat16] * (ref.abs() + bound)
                _check(C, ref, bound + 1e-30, what)
                # the same values as the products, then the activation, where
                # no agmm kernel takes the activation (torch's matmul: bf16
                # above 32 rows)
                if not fused:
                    after = (F.silu(P[:, :i].float()) * P[:, i:].float()).to(P.dtype) \
                        if act == "silu_mul" else None
                    if after is not None:
                        assert torch.equal(C, after), what
        # the epilogue plans exist (their keys end with the activation)
        if qparts is not None:
            assert any(kk[-1] == "gelu-tanh-mul" and id(W) in kk[0]
                       for kk in wq_colpar._local_plans), \
                "no QuantizedWeight plan with the activation"
        else:
            assert any(kk[-1] == "silu-mul" and id(W) in kk[0]
                       for kk in local_k._decode_plans), \
                "no bf16 decode plan with the activation"
    # a gradient: the products, then the activation (differentiable); dA
    # is all-reduced: the sum over ranks of each rank's weights' share
    q = qs[0]
    w64s = [torch.from_numpy(_qw(900 + r, k, 2 * i, 4, 32, True).dequantize(np.float64))
            for r in range(world.size)]
    A = _acts(950, 3, k, torch.float32)
    a = A.clone().requires_grad_(True)
    (C,) = at.column_parallel_matmul(a, [q], group_name="tp", activation="silu_mul")
    assert C.requires_grad and C.shape == (3, i)
    gy = _acts(951, 3, i, torch.float32)
    C.backward(gy)
    a64 = A.double().requires_grad_(True)
    for w64 in w64s:
        z = a64 @ w64
        (F.silu(z[:, :i]) * z[:, i:] * gy.double()).sum().backward()
    ref = a64.grad
    # A's gradient through the activation's gradient, summed over 2i columns
    # of W in fp32: a relative 1e-4 of its magnitude
    _check(a.grad, ref, 1e-4 * (1 + ref.abs()) + 1e-4 * float(ref.abs().max()),
           "cp activation dA")
    _refused(lambda: at.column_parallel_matmul(A, [q], group_name="tp",
                                               activation="tanh"),
             agmm.InvalidArgument, "activation", "'tanh'", "silu-mul")
    _refused(lambda: at.column_parallel_matmul(
        A, [_qw(960, k, 7, 4, 32, True)], group_name="tp", activation="silu_mul"),
        agmm.InvalidArgument, "Bs[0]", "7 columns", "even")
    _refused(lambda: at.column_parallel_matmul(
        A.bfloat16(), [torch.ones(k, 9, dtype=torch.bfloat16)], group_name="tp",
        activation="gelu_tanh_mul"), agmm.InvalidArgument, "Bs[0]", "9 columns")


def _epilogues(world):
    """3-D A gathered along dim 1, a bias with its gradient, an activation,
    out_dtype float32 from bf16 A; the reduce-scatter with bias and
    gelu-tanh; against float64 autograd (fp32: 1e-4 relative, smooth
    activations only)."""
    P, me = world.size, world.rank
    k, n = 64, 16
    qs = [_qw(700 + r, k, n, 8, 32, False) for r in range(P)]
    ws = [torch.from_numpy(q.dequantize(np.float64)) for q in qs]
    m = [3, 2] + [1] * (P - 2)
    shards = [_acts(710 + r, 2 * m[r], k, torch.float32).view(2, m[r], k)
              for r in range(P)]
    bs = [torch.from_numpy(np.random.default_rng(720 + r).standard_normal(n)
                           .astype(np.float32)) for r in range(P)]
    a = shards[me].clone().requires_grad_(True)
    b = bs[me].clone().requires_grad_(True)
    _, (C,) = at.fused_all_gather_matmul(a, [qs[me]], gather_dim=1, group_name="tp",
                                         bias=b, activation="gelu-tanh")
    a64 = torch.cat(shards, 1).double().requires_grad_(True)
    b64 = [x.double().requires_grad_(True) for x in bs]
    gelu = lambda z: torch.nn.functional.gelu(z, approximate="tanh")  # noqa: E731
    outs = [gelu(a64 @ w + bb) for w, bb in zip(ws, b64)]
    _check(C, outs[me].detach(), 1e-4 * (1 + outs[me].detach().abs()), "ag 3-D C")
    gys = [_acts(730 + r, 2 * sum(m), n, torch.float32).view(2, sum(m), n)
           for r in range(P)]
    C.backward(gys[me])
    sum((o * g.double()).sum() for o, g in zip(outs, gys)).backward()
    off = sum(m[:me])
    ref = a64.grad[:, off:off + m[me]]
    _check(a.grad, ref, 1e-4 * (1 + ref.abs()), "ag 3-D dA")
    _check(b.grad, b64[me].grad, 1e-4 * (1 + b64[me].grad.abs()), "ag db")
    # bf16 A, float32 out
    _, (C,) = at.fused_all_gather_matmul(shards[me].to(torch.bfloat16), [qs[me]],
                                         gather_dim=1, group_name="tp",
                                         out_dtype=torch.float32)
    assert C.dtype == torch.float32
    full = torch.cat(shards, 1).to(torch.bfloat16).double()
    ref = full @ ws[me]
    _check(C, ref, _fwd_bound(full.reshape(-1, k), [qs[me]],
                              ref.reshape(-1, n), 1, torch.float32).view(ref.shape),
           "ag out float32")
    # reduce-scatter: bias + gelu-tanh, A [M, k_local]
    kl = [32] * P
    qr = [_qw(740 + r, kl[r], n, 4, 32, True) for r in range(P)]
    wr = torch.cat([torch.from_numpy(q.dequantize(np.float64)) for q in qr])
    M = 5
    A_full = _acts(750, M, sum(kl), torch.float32)
    a = A_full[:, 32 * me:32 * me + 32].clone().requires_grad_(True)
    b = bs[0].clone().requires_grad_(True)
    C = at.fused_matmul_reduce_scatter(a, qr[me], group_name="tp", bias=b,
                                       activation="gelu-tanh")
    split = [M // P + (r < M % P) for r in range(P)]
    rows = slice(sum(split[:me]), sum(split[:me + 1]))
    a64 = A_full.double().requires_grad_(True)
    b64 = bs[0].double().requires_grad_(True)
    y64 = gelu(a64 @ wr + b64)
    _check(C, y64[rows].detach(), 1e-4 * (1 + y64[rows].detach().abs()), "rs C")
    gy = _acts(760, M, n, torch.float32)
    C.backward(gy[rows])
    (y64[rows] * gy[rows].double()).sum().backward()  # this rank's rows' loss
    # dA: every rank's rows' gradients flow to every rank's k part
    a64b = A_full.double().requires_grad_(True)
    (gelu(a64b @ wr + bs[0].double()) * gy.double()).sum().backward()
    ref = a64b.grad[:, 32 * me:32 * me + 32]
    _check(a.grad, ref, 1e-4 * (1 + ref.abs()), "rs dA")
    _check(b.grad, b64.grad, 1e-4 * (1 + b64.grad.abs()), "rs db (this rank's rows)")


def _two_weights(world):
    """Two QuantizedWeights in one all-gather call (one plan, one round),
    return_A False; the gradient with both outputs used, and with only the
    first (the second's gradient None: zeros)."""
    P, me = world.size, world.rank
    k, ns = 96, (24, 40)
    qs = [[_qw(800 + 10 * r + i, k, n, 4, 32, False) for i, n in enumerate(ns)]
          for r in range(P)]
    ws = [[torch.from_numpy(q.dequantize(np.float64)) for q in qr] for qr in qs]
    m = [4, 7] + [2] * (P - 2)
    shards = [_acts(820 + r, m[r], k, torch.float32) for r in range(P)]
    for both in (True, False):
        a = shards[me].clone().requires_grad_(True)
        A_g, Cs = at.fused_all_gather_matmul(a, qs[me], group_name="tp",
                                             return_A=False)
        assert A_g is None and len(Cs) == 2
        a64 = torch.cat(shards).double().requires_grad_(True)
        outs = [[a64 @ w for w in wr] for wr in ws]
        for i, C in enumerate(Cs):
            ref = outs[me][i].detach()
            _check(C, ref, _fwd_bound(a64.detach(), [qs[me][i]], ref, 1,
                                      torch.float32), "two weights C%d" % i)
        gys = [[_acts(840 + 10 * r + i, sum(m), n, torch.float32)
                for i, n in enumerate(ns)] for r in range(P)]
        used = 2 if both else 1
        torch.autograd.backward(Cs[:used], gys[me][:used])
        sum((o * g.double()).sum() for orr, gr in zip(outs, gys)
            for o, g in list(zip(orr, gr))[:used]).backward()
        off = sum(m[:me])
        ref = a64.grad[off:off + m[me]]
        gz = torch.cat([g.double() for gr in gys for g in gr[:used]], 1)[off:off + m[me]]
        wcat = torch.cat([w for wr in ws for w in wr[:used]], 1)
        _check(a.grad, ref, _bwd_bound(gz, wcat, ref, sum(ns) * P, torch.float32),
               "two weights dA (%d used)" % used)


def _quant_rows(a32):
    """A's rows [rows, k] (float32) as the A8 kernels take them (a_quant
    int8: agmm.h's agmm_aquant_t): scale max |a| / 127 (1 for a zero row),
    rint(a / scale) within -127..127, the float32 steps of the C library
    (so the same integers), the values q x scale in float64."""
    a32 = np.ascontiguousarray(a32, dtype=np.float32)
    amax = np.abs(a32).max(axis=1) if a32.shape[1] else \
        np.zeros(a32.shape[0], np.float32)
    s = np.where(amax > 0, amax / np.float32(127), np.float32(1)).astype(np.float32)
    q = np.clip(np.rint(a32 / s[:, None]), -127, 127)
    return torch.from_numpy(q.astype(np.float64) * s.astype(np.float64)[:, None])


def _a8_check(C, aq, a_plain, qs, P, what):
    """C (fp32) against aq @ W within the A8 kernels' bound (exact integer
    group sums, a few fp32 roundings: gamma(groups + 4 + P) of the
    magnitudes, O = 256: int8 symmetric's q + 128 too), and off the product
    of A unquantized by more than that somewhere (the check can tell)."""
    w64 = torch.cat([torch.from_numpy(q.dequantize(np.float64)) for q in qs])
    ref = aq @ w64
    ng = max(q.groups for q in qs)
    mw = torch.from_numpy(np.concatenate([_mag_weight(q) + (
        256.0 * np.repeat(np.abs(q.scales.astype(np.float64)), q.group_size,
                          axis=0)[:q.k] if q.bits == 8 else 0) for q in qs]))
    e = _gamma(ng + 4 + P) * (aq.abs() @ mw) + U * ref.abs() + 1e-30
    _check(C, ref, e, what + " C (a_quant int8)")
    if C.numel():
        plain = a_plain @ w64
        assert bool(((C.double() - plain).abs() > e).any()), \
            "%s: every element within the A8 bound of A unquantized's " \
            "product (the check cannot tell)" % what


def _a8(world):
    """QuantizedWeights with a_quant="int8" (W4A8 / W8A8 in groups) on
    every op, fp32 A and C: within the A8 kernels' bound of A quantized as
    the library does, and off A unquantized's product; bf16 A in the
    column-parallel decode path within that bound plus C's rounding;
    refusals by name."""
    P, me = world.size, world.rank
    for bits, gs, sym in ((4, 32, True), (8, 64, True), (4, 128, False)):
        def qw(seed, k, n):
            w = np.random.default_rng(seed).standard_normal((k, n)).astype(np.float32)
            return agmm.quantize_weight(w, bits=bits, group_size=gs,
                                        symmetric=sym, a_quant="int8")
        tag = "a8 int%d g%d %s" % (bits, gs, "sym" if sym else "asym")
        k, n = 128, 40
        # all-gather + matmul: each gathered row quantized over all of k
        m_local = [3, 1]
        qs = [qw(1000 + r, k, n) for r in range(P)]
        shards = [_acts(1100 + r, m_local[r], k, torch.float32) for r in range(P)]
        full = torch.cat(shards)
        _, (C,) = at.fused_all_gather_matmul(shards[me], [qs[me]], group_name="tp",
                                             return_A=False)
        _a8_check(C, _quant_rows(full.numpy()), full.double(), [qs[me]], 1,
                  tag + " ag")
        # gemm-rs / gemm-ar: each rank quantizes its own k part of a row
        k_local = (128, 64)  # rank 0's a multiple of every G here
        offs = [0, 128, 192]
        qs = [qw(1200 + r, k_local[r], n) for r in range(P)]
        A_full = _acts(1300, 5, sum(k_local), torch.float32)
        aq = torch.cat([_quant_rows(A_full[:, offs[r]:offs[r + 1]].numpy())
                        for r in range(P)], 1)
        a = A_full[:, offs[me]:offs[me + 1]].contiguous()
        C = at.fused_matmul_all_reduce(a, qs[me], group_name="tp")
        _a8_check(C, aq, A_full.double(), qs, P, tag + " gemm-ar")
        C = at.fused_matmul_reduce_scatter(a, qs[me], group_name="tp")
        rows = slice(0, 3) if me == 0 else slice(3, 5)
        _a8_check(C, aq[rows], A_full.double()[rows], qs, P, tag + " gemm-rs")
        # column_parallel_matmul (the decode path at few rows): fp32, then
        # bf16 A and C (its rounding on top)
        q = qw(1400 + me, k, n)
        for m in (1, 5):
            A = _acts(1500 + m, m, k, torch.float32)
            (C,) = at.column_parallel_matmul(A, [q], group_name="tp")
            _a8_check(C, _quant_rows(A.numpy()), A.double(), [q], 1,
                      tag + " colpar rows %d" % m)
            Ab = A.to(torch.bfloat16)
            (Cb,) = at.column_parallel_matmul(Ab, [q], group_name="tp")
            aq = _quant_rows(Ab.float().numpy())
            w64 = torch.from_numpy(q.dequantize(np.float64))
            ref = aq @ w64
            e = _gamma(q.groups + 5) * (aq.abs() @ torch.from_numpy(
                _mag_weight(q) + 256.0 * np.repeat(np.abs(q.scales.astype(
                    np.float64)), q.group_size, axis=0)[:q.k])) + U * ref.abs()
            _check(Cb, ref, e + OUT_U[torch.bfloat16] * (ref.abs() + e),
                   tag + " colpar bf16 rows %d" % m)
    _refused(lambda: agmm.quantize_weight(np.ones((32, 8), np.float32),
                                          a_quant="int4"),
             agmm.InvalidArgument, "a_quant", "int4")
    # the ranks must agree: rank 0's weight a_quant int8, rank 1's none
    w = np.random.default_rng(7).standard_normal((64, 16)).astype(np.float32)
    q = agmm.quantize_weight(w, bits=4, group_size=32,
                             a_quant="int8" if me == 0 else "none")
    _refused(lambda: at.fused_all_gather_matmul(
        _acts(1600, 2, 64, torch.float32), [q], group_name="tp"),
        agmm.InvalidArgument, "a_quant int8", "agree")


def scenario_torch_wq(world, args):
    at.register_group("tp", world)
    try:
        part = args["part"]
        if part == "ag":
            for dtname in ("bf16", "fp32"):
                for fmt in FORMATS:
                    for m_local in ([1, 1], [33, 0], [0, 33], [33, 1]):
                        for grad in (False, True):
                            _ag(world, dtname, tuple(fmt), m_local, grad)
        elif part in ("gemm-rs", "gemm-ar"):
            for dtname in ("bf16", "fp32"):
                for fmt in FORMATS:
                    for M in (1, 33):
                        for grad in (False, True):
                            _reduce(world, part, dtname, tuple(fmt), M, grad)
            # uneven k parts (the backward pads W^T to the largest)
            _reduce(world, part, "fp32", (4, 32, True), 7, True, k_local=(32, 72))
        elif part == "colpar":
            for dtname in ("bf16", "fp32"):
                for fmt in FORMATS:
                    for m in (1, 33, 0):
                        for grad in (False, True):
                            _colpar(world, dtname, tuple(fmt), m, grad)
        elif part == "misc":
            _refusals(world)
            _epilogues(world)
            _two_weights(world)
            _caching(world)
            _gated(world)
            _colpar_act(world)
            _a8(world)
    finally:
        at.unregister_group("tp")


SCENARIOS = {"torch_wq": scenario_torch_wq}
