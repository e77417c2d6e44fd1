"""One rank of test_compile.py: examples/tp_mlp.py's TPMLP under
torch.compile(fullgraph=True), both forms ("sp": fused_all_gather_matmul +
fused_matmul_reduce_scatter; "tp": column_parallel_matmul +
fused_matmul_all_reduce), forward (no grad) and forward + backward, with
the backends named, against the same module run eagerly. Asserts: no
graph break (fullgraph, and Dynamo's graph-break counter stays 0), agmm's
ops in Dynamo's graph as torch.ops.agmm.* calls, outputs and gradients
equal to eager's within bf16 rounding, no plan made after the first call;
the forward with int4 QuantizedWeights too (torch.ops.agmm.*_wq in the
graph). Prints "RANK r OK".
"""
import json
import os
import sys

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "examples"))

import agmm  # noqa: E402
import agmm.torch as at  # noqa: E402
from tp_mlp import TPMLP  # noqa: E402


def err(a, b):
    return ((a.float() - b.float()).abs().max() /
            b.float().abs().max().clamp(min=1e-6)).item()


def recording(backend):
    """A backend that records the ops of Dynamo's graph, then compiles it
    with `backend`."""
    seen = []

    def compile_fn(gm, example_inputs):
        seen.extend(str(n.target) for n in gm.graph.nodes
                    if n.op == "call_function")
        if backend == "inductor":
            from torch._inductor.compile_fx import compile_fx
            return compile_fx(gm, example_inputs)
        from torch._dynamo.backends.common import aot_autograd
        from functorch.compile import nop
        return aot_autograd(fw_compiler=nop)(gm, example_inputs)
    return compile_fn, seen


def case(world, mode, backend, grad, h, i, m, weights="dense"):
    from torch._dynamo.utils import counters
    P, me = world.size, world.rank
    dt = torch.bfloat16
    g = torch.Generator().manual_seed(11)
    full = [torch.randn(h, i, generator=g) / h ** 0.5,
            torch.randn(h, i, generator=g) / h ** 0.5,
            torch.randn(i, h, generator=g) / i ** 0.5]
    X = torch.randn(m * P, h, generator=g).to(dt)
    G = torch.randn(m * P, h, generator=g).to(dt)
    rows = slice(me * m, (me + 1) * m)
    x0 = X[rows] if mode == "sp" else X
    gy = G[rows] if mode == "sp" else G

    def run(module):
        x = x0.clone().requires_grad_(grad)
        if not grad:
            with torch.no_grad():
                return module(x), None, None
        out = module(x)
        out.backward(gy)
        return out, x.grad, [p.grad for p in module.parameters()]

    eager = TPMLP(h, i, me, P, mode=mode, dtype=dt, full=full, weights=weights)
    compiled_mod = TPMLP(h, i, me, P, mode=mode, dtype=dt, full=full,
                         weights=weights)
    torch._dynamo.reset()
    counters.clear()
    fn, seen = recording(backend)
    compiled = torch.compile(compiled_mod, backend=fn, fullgraph=True)
    want = run(eager)
    from agmm.torch.distributed.groups import _groups
    made = []
    for rep in range(3):  # then the compiled graphs again
        s0 = _groups["tp"].cache.made
        for p in compiled_mod.parameters():
            p.grad = None
        got = run(compiled)
        made.append(_groups["tp"].cache.made - s0)
    # The compiled rounds (forward and backward) keep their plans: none
    # made after the first call.
    assert made[1:] == [0, 0], (mode, backend, grad, "plans made per call", made)
    breaks = sum(counters["graph_break"].values())
    assert breaks == 0, (mode, backend, dict(counters["graph_break"]))
    ops = {"sp": ["agmm.fused_all_gather_matmul", "agmm.fused_matmul_reduce_scatter"],
           "tp": ["agmm.column_parallel_matmul", "agmm.fused_matmul_all_reduce"]}[mode]
    # QuantizedWeights: the ops that take them by op_id
    # (python/agmm/torch/library/wq_ops.py)
    wq = "_wq" if weights != "dense" else ""
    for op in ops:
        assert any(s.startswith(op + wq + ".") or s == op + wq for s in seen), \
            (mode, backend, op + wq, seen)
    tol = 2e-2  # bf16: a few roundings of the same sums
    assert got[0].dtype == want[0].dtype == dt, (got[0].dtype, want[0].dtype)
    errs = {"out": err(got[0], want[0])}
    if grad:
        errs["d x"] = err(got[1], want[1])
        for name, a, b in zip(["d w_gate", "d w_up", "d w_down"], got[2], want[2]):
            errs[name] = err(a, b)
    print("rank %d %s %s %s %s: %s" % (me, mode, weights, backend,
                                       "fwd+bwd" if grad else "fwd",
                                    ", ".join("%s %.2g" % kv for kv in errs.items())),
          flush=True)
    bad = {k: v for k, v in errs.items() if not v <= tol}
    assert not bad, (mode, backend, grad, bad)


def main():
    args = json.loads(sys.argv[2])
    torch.set_num_threads(1)
    with agmm.World.from_env(timeout=120) as world:
        at.register_group("tp", world)
        for backend in args["backends"]:
            for mode in ("sp", "tp"):
                for grad in (False, True):
                    case(world, mode, backend, grad, args["h"], args["i"], args["m"])
                # int4 QuantizedWeights: the forward (inference) traced
                case(world, mode, backend, False, args["h"], args["i"], args["m"],
                     weights="int4")
        at.unregister_group("tp")
        print("RANK %d OK" % world.rank, flush=True)


if __name__ == "__main__":
    main()
