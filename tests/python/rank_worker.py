"""One rank of a Python test world (started N times by launch.py, each
process with its own environment as torchrun would set it: RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT; or under mpirun).

usage: rank_worker.py SCENARIO JSON_ARGS

Every rank builds every rank's inputs from the same seeds, so each checks
the whole result against NumPy (or torch.cat(all_gather) @ B) on its own.
Inputs are small integers: every product and sum is exact in fp32, so the
checks are exact (np.array_equal) whatever order the tiles arrive in.
Prints "RANK r OK" and exits 0 when every check passed; a failed check
raises (traceback, exit 1).
"""
import importlib
import json
import sys
import threading
import time

import numpy as np

import agmm
from worker_common import as_dtype, ints, to_numpy32


def scenario_gemm(world, args):
    """ag-gemm: every dtype x (numpy, torch), uneven shards, several
    rounds with new inputs each round, out= every other round (written in
    place, no copy)."""
    P, me = world.size, world.rank
    m, k, n, rounds = args["m_local"], args["k"], args["n"], args["rounds"]
    assert len(m) == P
    for dtype in args["dtypes"]:
        for kind in args["kinds"]:
            w32 = ints(1000, (k, n), -2, 3)
            path = args.get("gemm_path", "auto")
            with world.plan(m_local=m, k=k, n=n, dtype=dtype, tile_m=args["tile_m"],
                            tile_n=args["tile_n"], gemm_path=path) as plan:
                assert plan.rows == sum(m)
                assert [plan.row_offset(r) for r in range(P)] == \
                    [sum(m[:r]) for r in range(P)]
                plan.set_weight(as_dtype(w32, dtype, kind))
                out = None
                for rnd in range(rounds):
                    shards = [ints(rnd * 100 + r, (m[r], k)) for r in range(P)]
                    a = as_dtype(shards[me], dtype, kind)
                    if rnd % 2 == 1:
                        out = np.empty((sum(m), n), np.float32) if kind == "numpy" \
                            else __import__("torch").empty((sum(m), n))
                        c = plan.run(a, out=out, schedule=args["schedule"])
                        assert c is out, "out= must be written in place"
                    else:
                        c = plan.run(a, schedule=args["schedule"])
                    assert type(c).__module__.split(".")[0] == \
                        ("numpy" if kind == "numpy" else "torch"), type(c)
                    ref = np.concatenate(shards) @ w32
                    got = to_numpy32(c)
                    assert got.dtype == np.float32 and got.shape == ref.shape
                    assert np.array_equal(got, ref), \
                        "%s %s round %d: max |diff| %g" % (
                            dtype, kind, rnd, np.abs(got - ref).max())
                info = plan.gemm_info()
                # a bf16 plan's measurement may also pick agmm's own
                # bf16-weight kernel (src/ops/common/path_bf16w.c): the
                # wq engine, native path
                assert info.engine in ("onednn", "openblas") or (
                    dtype == "bf16" and info.engine == "wq" and
                    info.impl.startswith("wq:bf16") and
                    info.path == "native"), info
                assert info.path in ("native", "f32"), info
                if path != "auto":  # fp32 has one path, native = f32
                    assert info.path == path or dtype == "fp32", info
                    assert info.chosen_by in ("forced", "only"), info
                elif info.chosen_by in ("measured", "cached"):
                    assert [c[0] for c in info.candidates] == \
                        ["native", "f32"], info
                    assert all(c[2] > 0 for c in info.candidates), info
                s = plan.schedule_info()
                if args["schedule"] == "auto":
                    assert s.trials == rounds and s.last in ("fused", "baseline"), s
                else:
                    assert s.trials == 0, s


def scenario_gemm_rs(world, args):
    """gemm-rs: C = sum_r A_r @ W_r, each rank its rows."""
    P, me = world.size, world.rank
    m, k, n = args["m_local"], args["k"], args["n"]
    M = sum(m)
    with world.plan(m_local=m, k=k, n=n, dtype="fp32", op="gemm-rs") as plan:
        kp = plan.k_local
        offs = [sum(kp[:r]) for r in range(P)]
        A = ints(7, (M, k))
        W = ints(8, (k, n), -2, 3)
        plan.set_weight(np.ascontiguousarray(W[offs[me]:offs[me] + kp[me]]))
        for _ in range(args["rounds"]):
            c = plan.run(np.ascontiguousarray(A[:, offs[me]:offs[me] + kp[me]]))
            r0 = sum(m[:me])
            assert np.array_equal(c, (A @ W)[r0:r0 + m[me]])


def scenario_gemm_ar(world, args):
    """gemm-ar: C = sum_r A_r @ W_r, all of it on every rank."""
    P, me = world.size, world.rank
    m, k, n = args["m_local"], args["k"], args["n"]
    M = sum(m)
    with world.plan(m_local=m, k=k, n=n, dtype="fp32", op="gemm-ar") as plan:
        kp = plan.k_local
        offs = [sum(kp[:r]) for r in range(P)]
        A = ints(7, (M, k))
        W = ints(8, (k, n), -2, 3)
        plan.set_weight(np.ascontiguousarray(W[offs[me]:offs[me] + kp[me]]))
        for _ in range(args["rounds"]):
            c = plan.run(np.ascontiguousarray(A[:, offs[me]:offs[me] + kp[me]]))
            assert c.shape == (M, n), c.shape
            assert np.array_equal(c, A @ W)


def scenario_rs_rows(world, args):
    """gemm-rs (or op "gemm-ar") with rows per call: the rows of C each rank
    gets (gemm-ar: sums, C being all of them) change every call on one plan
    (0 on some ranks, on all), A_r is [sum(rows), k_r]; then shapes that do
    not fit those rows are refused."""
    P, me = world.size, world.rank
    most, k, n = [12, 0, 9][:P], 30, 14
    op = args.get("op", "gemm-rs")
    with world.plan(m_local=most, k=k, n=n, dtype="fp32", op=op,
                    tile_m=4) as plan:
        kp = plan.k_local
        offs = [sum(kp[:r]) for r in range(P)]
        W = ints(8, (k, n), -2, 3)
        plan.set_weight(np.ascontiguousarray(W[offs[me]:offs[me] + kp[me]]))
        for call in range(args["calls"]):
            rows = [(call * 5 + 3 * r) % (most[r] + 1) for r in range(P)]
            if call == 2:
                rows = [0] * P
            M = sum(rows)
            A = ints(call, (M, k))
            c = plan.run(np.ascontiguousarray(A[:, offs[me]:offs[me] + kp[me]]),
                         m_rows=rows)
            r0, mine = sum(rows[:me]), rows[me]
            if op == "gemm-ar":  # every row on every rank
                r0, mine = 0, M
            assert c.shape == (mine, n), (call, rows, c.shape)
            assert np.array_equal(c, (A @ W)[r0:r0 + mine]), (call, rows)
            assert plan.rows == M
        rows = [most[r] // 2 for r in range(P)]
        wrong = np.zeros((sum(most), kp[me]), dtype=np.float32)
        try:
            plan.run(wrong, m_rows=rows)  # the plan's A, not this call's
        except agmm.InvalidArgument as e:
            assert "a: shape" in str(e), str(e)
        else:
            raise AssertionError("an A of the plan's rows was taken")


def scenario_gil(world, args):
    """A round releases the GIL: rank 1 enters the round only when a
    Python thread of rank 0 tells it to, and that thread can only run
    while rank 0's main thread is inside plan.run (it sleeps first, then
    needs the GIL to write). Held GIL: rank 0's round waits for rank 1
    forever, the round times out and the test fails."""
    import os
    P, me = world.size, world.rank
    flag = args["flag"]
    k = n = 64
    m = [32] * P
    with world.plan(m_local=m, k=k, n=n, dtype="fp32", timeout=args["timeout"]) as plan:
        w = ints(1, (k, n))
        plan.set_weight(w)
        shards = [ints(10 + r, (32, k)) for r in range(P)]
        world.barrier()
        if me == 0:
            progress = []
            entering = threading.Event()

            def helper():
                entering.wait()
                time.sleep(0.5)              # main is inside plan.run by now
                progress.append(time.monotonic())
                with open(flag + ".tmp", "w") as f:  # needs the GIL
                    f.write("go")
                os.rename(flag + ".tmp", flag)

            t = threading.Thread(target=helper)
            t.start()
            entering.set()
            c = plan.run(shards[0], schedule="fused")
            t.join()
            assert progress, "the helper thread never ran"
        else:
            while not os.path.exists(flag):
                time.sleep(0.01)
            c = plan.run(shards[me], schedule="fused")
        assert np.array_equal(c, np.concatenate(shards) @ w)


def scenario_errors(world, args):
    """Errors raise agmm.Error subclasses with agmm's status and message."""
    P, me = world.size, world.rank
    with world.plan(m_local=[4] * P, k=8, n=8, dtype="fp16") as plan:
        for bad, want in ((np.zeros((4, 8), np.float32), "dtype"),
                          (np.zeros((5, 8), np.float16), "shape")):
            try:
                plan.run(bad)
            except agmm.InvalidArgument as e:
                assert e.status_name == "AGMM_ERR_INVALID_ARG" and want in str(e), e
                assert isinstance(e, ValueError)
            else:
                raise AssertionError("a bad input was accepted")
        try:
            world.plan(m_local=[4] * P, k=8, n=8, dtype="fp16", tile_m=0)
        except agmm.InvalidArgument as e:  # the library's own check
            assert "tile_m" in e.message, e.message
        else:
            raise AssertionError("tile_m=0 was accepted")
        plan.set_weight(np.zeros((8, 8), np.float16))
        plan.run(np.zeros((4, 8), np.float16))
    try:
        plan.run(np.zeros((4, 8), np.float16))
    except agmm.BadState as e:
        assert "close" in e.message
    else:
        raise AssertionError("a closed plan ran")
    # Ranks that disagree on the plan: every rank gets AGMM_ERR_MISMATCH
    # (the library compares descriptions at plan creation).
    try:
        world.plan(m_local=[4] * P, k=8 + me, n=8, dtype="fp16")
    except agmm.Error as e:
        assert e.status_name in ("AGMM_ERR_MISMATCH", "AGMM_ERR_ABORTED"), e
    else:
        raise AssertionError("mismatched plans were accepted")


def scenario_op(world, args):
    """agmm.torch.fused_all_gather_matmul against torch.cat(all_gather) @ B:
    2-D and 3-D shards, gather_dim 0 and 1, uneven shards along gather_dim,
    return_A both ways, one and two weights, every dtype, weights changed
    in place between calls (the cached plan sets them again)."""
    import torch
    import agmm.torch as at
    P, me = world.size, world.rank
    at.register_group("tp", world)
    assert torch.ops.agmm.fused_all_gather_matmul is not None
    k = 24
    for dtype in (torch.float16, torch.bfloat16, torch.float32):
        B0 = torch.from_numpy(ints(500, (k, 8), -2, 3)).to(dtype)
        B1 = torch.from_numpy(ints(501, (k, 12), -2, 3)).to(dtype)
        for case in range(args["calls"]):
            two_weights = case % 2 == 1
            gather_dim = case % 3 == 2 and 1 or 0
            if gather_dim == 0:
                shapes = [(3 + 2 * r + case, k) for r in range(P)]
            else:
                shapes = [(2, 1 + r + case, k) for r in range(P)]
            shards = [torch.from_numpy(ints(case * 10 + r, s)).to(dtype)
                      for r, s in enumerate(shapes)]
            Bs = [B0, B1] if two_weights else [B0]
            if case == 3:
                B0.mul_(-1)  # in place: the op must see the new values
            return_A = case != 1
            A, Cs = at.fused_all_gather_matmul(shards[me], Bs, gather_dim=gather_dim,
                                               group_name="tp", return_A=return_A)
            full = torch.cat(shards, dim=gather_dim)
            if return_A:
                assert A.dtype == dtype and torch.equal(A, full), (A.shape, full.shape)
            else:
                assert A is None
            assert len(Cs) == len(Bs)
            for B, C in zip(Bs, Cs):
                # A's dtype, as torch.ops.symm_mem's and A @ B: the exact
                # float32 sums (small integers) rounded once.
                ref = (full.float() @ B.float()).to(dtype)
                assert C.dtype == dtype and C.shape == ref.shape, (C.dtype, C.shape,
                                                                  ref.shape)
                assert torch.equal(C, ref), (dtype, case, (C.float() - ref.float()).abs().max())
    # the same through torch.ops, as the registered op
    gd = 0 if shards[me].dim() == 2 else 1
    A, (C,) = torch.ops.agmm.fused_all_gather_matmul(shards[me], [B0], gd, "tp",
                                                     return_A=True)
    full = torch.cat(shards, dim=gd)
    assert torch.equal(A, full) and torch.equal(C, full.float() @ B0.float())
    at.unregister_group("tp")


def scenario_rows(world, args):
    """Issue 11 through the package: a plan of several weights, rows that
    change every call (0 allowed) without a new plan, the gathered A
    returned; then the torch op with rows changing and growing past the
    cached plan's capacity."""
    import torch
    import agmm.torch as at
    P, me = world.size, world.rank
    k, ns, most = 20, [8, 5, 11], [16, 9, 12, 7][:P]
    ws = [ints(300 + i, (k, n), -2, 3) for i, n in enumerate(ns)]
    with world.plan(m_local=most, k=k, n=ns, dtype="fp32", tile_m=4) as plan:
        assert plan.weights == 3
        plan.set_weights(ws)
        for call in range(args["calls"]):
            rows = [(call * 5 + 3 * r) % (most[r] + 1) for r in range(P)]
            if call == 2:
                rows = [0] * P
                rows[-1] = 1
            shards = [ints(call * 10 + r, (rows[r], k)) for r in range(P)]
            A, Cs = plan.run(shards[me], m_rows=rows, a_gathered=True)
            full = np.concatenate(shards)
            assert np.array_equal(A, full), (call, rows)
            assert len(Cs) == 3
            for w, c in zip(ws, Cs):
                assert np.array_equal(c, full @ w), (call, rows)
            assert plan.rows == sum(rows)
    at.register_group("rows", world)
    B = torch.from_numpy(ints(77, (k, 6), -2, 3))
    for call, grow in enumerate([1, 3, 2, 6, 0, 9, 4]):
        rows = [grow + r for r in range(P)]
        shards = [torch.from_numpy(ints(call * 7 + r, (rows[r], k))) for r in range(P)]
        A, [C] = at.fused_all_gather_matmul(shards[me], [B], group_name="rows")
        full = torch.cat(shards)
        assert torch.equal(A, full) and torch.equal(C, full @ B), (call, rows)
    plans = at.group_plans("rows")
    assert len(plans) == 1, "one plan for every row count: %d" % len(plans)
    plan, = plans
    assert plan.m_local == [16 if 9 + r > 8 else 8 for r in range(P)], plan.m_local
    at.unregister_group("rows")


SCENARIOS = {"gemm": scenario_gemm, "gemm_rs": scenario_gemm_rs,
             "gemm_ar": scenario_gemm_ar,
             "gil": scenario_gil, "errors": scenario_errors, "op": scenario_op,
             "rows": scenario_rows, "rs_rows": scenario_rs_rows}


# The int8 (W8A8) and the epilogue's scenarios live apart.
from int8_scenarios import SCENARIOS as _INT8  # noqa: E402
from epilogue_scenarios import SCENARIOS as _EPILOGUE  # noqa: E402
SCENARIOS.update(_INT8)
SCENARIOS.update(_EPILOGUE)
from wq_scenarios import SCENARIOS as _WQ  # noqa: E402
SCENARIOS.update(_WQ)


def _torch_wq(world, args):  # imports torch: only when run
    from torch_wq_scenarios import scenario_torch_wq
    scenario_torch_wq(world, args)


SCENARIOS["torch_wq"] = _torch_wq


def main():
    scenario, args = sys.argv[1], json.loads(sys.argv[2])
    if args.get("torch"):  # tensors are recognised once torch is imported
        importlib.import_module("torch")
    with agmm.World.from_env(timeout=args.get("timeout", 30)) as world:
        SCENARIOS[scenario](world, args)
        world.barrier()
        print("RANK %d OK" % world.rank, flush=True)


if __name__ == "__main__":
    main()
