"""Quantized-weight plans (issue 48), run by rank_worker.py: every rank
builds the same float32 W and fp16-exact A from one seed; ag-gemm takes
an agmm.QuantizedWeight, gemm-rs and gemm-ar each rank's k part as floats
(quantized by Plan.set_weight); C against A @ the dequantized weight in
float64 within a few fp32 roundings of |A| @ (|W| + |s| (2|z| + 16))
(check/wq_ref.h's bound, loosely)."""
import numpy as np

import agmm


def scenario_wq(world, args):
    P, me = world.size, world.rank
    op, bits, zp, gs = args["op"], args["bits"], args["zp"], args["group_size"]
    m, k, n, kl = args["m_local"], args["k"], args["n"], args.get("k_local")
    M, off = sum(m), [sum(m[:r]) for r in range(P + 1)]
    rng = np.random.default_rng(7)
    w32 = rng.standard_normal((k, n)).astype(np.float32)
    a32 = rng.standard_normal((M, k)).astype(np.float16).astype(np.float32)
    sym = not zp
    parts = [(0, k)] if op == "ag-gemm" else \
        [(sum(kl[:r]), kl[r]) for r in range(P)]
    qws = [agmm.quantize_weight(w32[s:s + kp], bits=bits, group_size=gs,
                                symmetric=sym) for s, kp in parts]
    wdq = np.concatenate([q.dequantize(np.float64) for q in qws])
    # |s| (2|z| + 16 + O) per weight element: the zero terms the kernel
    # sums (O = 256 for int4: its kernels may sum u + 128, zero + 128)
    u_off = 256.0 if bits == 4 else 0.0
    extra = np.concatenate([
        np.repeat(np.abs(q.scales.astype(np.float64)) *
                  (2.0 * (q.zeros if q.zeros is not None else 0) + 16 + u_off),
                  q.group_size, axis=0)[:q.k] for q in qws])
    with world.plan(m_local=m, k=k, n=n, dtype="fp16", op=op, tile_m=4,
                    tile_n=16, k_local=kl, bias=True, activation="none",
                    weight_dtype="int%d" % bits, group_size=gs,
                    zero_point=zp) as plan:
        info = plan.gemm_info()
        assert info.engine == "wq" and info.impl.startswith("wq:"), info
        bias = rng.standard_normal(n).astype(np.float32)
        plan.set_bias(bias)
        if op == "ag-gemm":
            plan.set_weight(qws[0])
            a = a32[off[me]:off[me + 1]]
        else:
            s, kp = parts[me]
            plan.set_weight(w32[s:s + kp])  # floats: quantized by the plan
            a = a32[:, s:s + kp]
        for schedule in ("fused", "baseline"):
            c = plan.run(a.astype(np.float16), schedule=schedule)
            rows = slice(off[me], off[me + 1]) if op == "gemm-rs" else \
                slice(0, M)
            ref = a32[rows].astype(np.float64) @ wdq + bias
            mag = np.abs(a32[rows]).astype(np.float64) @ (np.abs(wdq) + extra)
            bound = 4 * (k + 128) * 2.0 ** -24 * mag + 2.0 ** -22 * np.abs(ref)
            diff = np.abs(c.astype(np.float64) - ref)
            assert c.shape == ref.shape and np.all(diff <= bound), \
                "%s %s: max |diff| %g, max diff/bound %g" % (
                    op, schedule, diff.max(), (diff / bound).max())
    # The refusals, by name: a QuantizedWeight of another group, and the
    # plain plan's refusal of a quantized weight.
    if op == "ag-gemm":
        with world.plan(m_local=m, k=k, n=n, dtype="fp16",
                        weight_dtype="int%d" % bits, group_size=32,
                        zero_point=zp) as plan:
            other = agmm.quantize_weight(w32, bits=bits, group_size=64,
                                         symmetric=sym)
            try:
                plan.set_weight(other)
            except agmm.InvalidArgument as e:
                assert "group 64" in str(e), str(e)
            else:
                raise AssertionError("a QuantizedWeight of group 64 taken")
    print("RANK %d OK" % me)


SCENARIOS = {"wq": scenario_wq}
