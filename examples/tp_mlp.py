#!/usr/bin/python3
"""A Llama-style MLP (hidden h, intermediate i: down(silu(gate(x)) * up(x)))
split across ranks with agmm's ops, forward and backward, checked against
the same MLP with the full weights in one process.

Two forms (TPMLP(mode=...)):
  "sp"  sequence-parallel: each rank holds its rows of x [m_r, h]; one
        all-gather feeds both column-parallel GEMMs (gate and up, two
        weights of one fused_all_gather_matmul; SiLU on gate in its
        epilogue in inference, agmm.torch.silu_and_mul with autograd),
        then the row-parallel down GEMM + reduce-scatter
        (fused_matmul_reduce_scatter) returns this rank's rows [m_r, h].
  "tp"  plain tensor-parallel: x [M, h] is the same on every rank; gate and
        up are local GEMMs on it (column_parallel_matmul), then down GEMM +
        all-reduce (fused_matmul_all_reduce) gives every rank the whole
        [M, h]. Its backward gives every rank the whole dx: the sum over
        ranks of each rank's d gate @ W_gate^T + d up @ W_up^T, which
        column_parallel_matmul's backward makes in one GEMM + all-reduce
        round (Megatron's "f", overlapped), so layers stack.
With quantized weights gate and up are one weight [gate | up] and one call
in both forms, activation="silu_mul" (fused_all_gather_matmul's;
column_parallel_matmul's in inference): SiLU(gate) * up is its GEMM's
epilogue, a layer two calls.
Rank r holds columns [i_lo(r), i_hi(r)) of W_gate and W_up ([h, i]) and
those rows of W_down ([i, h]); i is split as agmm_k_split splits (the
first i % P ranks one more; the "sp" form needs i a multiple of the
ranks: every rank's gate/up GEMM of the one gather has as many columns).

Weights (--weights): bf16/fp32 tensors (the default: --dtype), or int8 /
int4 agmm.QuantizedWeights (W8A16 / W4A16, symmetric, a scale per group
of 128 rows of k, or per rank's whole k part where 128 does not divide
it: a group may not straddle the split of k across ranks), run by agmm's
own weight kernels in every op; int8-a8 / int4-a8 quantize A per row to
int8 for the int8 dot as well (W8A8 / W4A8 in groups, a_quant="int8":
the check's tolerance is then 5e-2, A's rounding). Quantized weights
are inference weights: they get no gradient (x's still does), run
eagerly (no --compile), and the check's reference is the MLP with the
exactly dequantized weights.

Run it (PYTHONPATH=build/python):
  /usr/bin/python3 examples/tp_mlp.py --ranks 2            # starts 2 ranks
  build/agmm launch -n 2 -- /usr/bin/python3 examples/tp_mlp.py
                                      # ranks started by agmm launch (or torchrun)
  ... examples/tp_mlp.py --weights int4 --dtype bf16  # W4A16 weights
  ... examples/tp_mlp.py --compile inductor   # torch.compile(fullgraph=True)
                                      # of the module (torch >= 2)
Each rank prints its max errors and "rank r: ok"; exit 0 when every check
of every rank passed.
"""
import argparse
import os
import sys

import torch
import torch.nn.functional as F

import agmm
import agmm.launch
import agmm.torch as at

# (torch 1.13 has no float16 matmul on the CPU for the reference.)
DTYPES = {"fp32": torch.float32, "bf16": torch.bfloat16}
# --weights: bits; "-a8": A quantized per row to int8 for the int8 dot
# (QuantizedWeight(a_quant="int8"): W4A8 / W8A8 in groups)
WEIGHTS = {"dense": None, "int8": 8, "int4": 4, "int8-a8": 8, "int4-a8": 4}


def split(n, P):
    """[lo, hi) of each rank's share of n (agmm_k_split's split)."""
    sizes = [n // P + (1 if r < n % P else 0) for r in range(P)]
    return [(sum(sizes[:r]), sum(sizes[:r + 1])) for r in range(P)]


class TPMLP(torch.nn.Module):
    """This rank's part of the MLP: w_gate, w_up [h, i_r], w_down [i_r, h]
    (slices of full weights given, else random); with quantized weights
    w_gate_up [h, 2 i_r] = [gate | up] instead of w_gate and w_up (None),
    one call with SiLU(gate) * up in its epilogue."""

    def __init__(self, hidden, inter, rank, size, mode="sp", group_name="tp",
                 dtype=torch.bfloat16, full=None, weights="dense"):
        super().__init__()
        if mode not in ("sp", "tp"):
            raise ValueError("mode: %r (allowed: sp, tp)" % (mode,))
        if mode == "sp" and inter % size:
            # One all-gather + GEMM round has one column count on every rank.
            raise ValueError("inter %d: the sequence-parallel form needs it a "
                             "multiple of the ranks (%d)" % (inter, size))
        self.mode, self.group = mode, group_name
        lo, hi = split(inter, size)[rank]
        if full is None:
            g = torch.Generator().manual_seed(1234)
            full = [torch.randn(hidden, inter, generator=g) / hidden ** 0.5,
                    torch.randn(hidden, inter, generator=g) / hidden ** 0.5,
                    torch.randn(inter, hidden, generator=g) / inter ** 0.5]
        wg, wu, wd = full
        self.dtype = dtype
        if weights not in WEIGHTS:
            raise ValueError("weights: %r (allowed: %s)"
                             % (weights, ", ".join(WEIGHTS)))
        self.w_gate_up = None
        if WEIGHTS[weights]:
            # Inference weights: plain attributes, not Parameters.
            # One weight [gate | up] (the same values as two: a group's
            # scale is per column), SiLU(gate) * up in its GEMM's epilogue.
            self.w_gate_up, _, self.w_down = quantized_shard(
                full, rank, size, WEIGHTS[weights], fuse=True,
                a_quant="int8" if weights.endswith("-a8") else "none")
            self.w_gate = self.w_up = None
            return
        self.w_gate = torch.nn.Parameter(wg[:, lo:hi].to(dtype).contiguous())
        self.w_up = torch.nn.Parameter(wu[:, lo:hi].to(dtype).contiguous())
        self.w_down = torch.nn.Parameter(wd[lo:hi].to(dtype).contiguous())

    def forward(self, x):
        dt = self.dtype
        if self.mode == "sp" and self.w_gate_up is not None:
            # Quantized: one gather, one weight [gate | up], SiLU(gate) *
            # up in the round's epilogue (differentiable in x).
            _, (act,) = at.fused_all_gather_matmul(
                x, [self.w_gate_up], group_name=self.group, return_A=False,
                activation="silu_mul", out_dtype=dt)
            return at.fused_matmul_reduce_scatter(act, self.w_down,
                                                  group_name=self.group)
        if self.mode == "sp":
            # x: this rank's rows [m_r, h]; one gather, two GEMMs.
            # In inference the op's outputs are in the weights' dtype, with
            # SiLU applied inside the round, and gate (the op's own fresh
            # tensor) is multiplied in place. With autograd gate and up
            # come in the weights' dtype too (what the backward keeps, as
            # torch's own layer keeps them) and silu_and_mul rounds the
            # float32 product once, as the expression in reference() does.
            infer = not (torch.is_grad_enabled() and
                         (x.requires_grad or
                          getattr(self.w_gate, "requires_grad", False) or
                          getattr(self.w_up, "requires_grad", False)))
            _, (gate, up) = at.fused_all_gather_matmul(
                x, [self.w_gate, self.w_up], group_name=self.group,
                return_A=False, activation=["silu", None] if infer else None,
                out_dtype=dt)
            act = gate.mul_(up) if infer else at.silu_and_mul(gate, up)
            return at.fused_matmul_reduce_scatter(act, self.w_down,
                                                  group_name=self.group)
        # x: [M, h], the same on every rank; its gradient all-reduced.
        if self.w_gate_up is not None:
            # Quantized: gate and up in one call, SiLU(gate) * up in its
            # epilogue in inference (with autograd: the product, then
            # silu_and_mul), so the layer is two calls.
            (act,) = at.column_parallel_matmul(x, [self.w_gate_up],
                                               group_name=self.group,
                                               activation="silu_mul")
            return at.fused_matmul_all_reduce(act, self.w_down,
                                              group_name=self.group)
        gate, up = at.column_parallel_matmul(x, [self.w_gate, self.w_up],
                                             group_name=self.group)
        act = at.silu_and_mul(gate, up)
        return at.fused_matmul_all_reduce(act, self.w_down, group_name=self.group)


def group_for(k_parts):
    """128 when it divides every rank's k part but the last (no group
    straddles the split), else None: each rank's whole part."""
    return 128 if all(k % 128 == 0 for k in k_parts[:-1]) else None


def quantized_shard(full, rank, size, bits, fuse=False, a_quant="none"):
    """This rank's w_gate, w_up [h, i_r] and w_down [i_r, h] as
    agmm.QuantizedWeights (symmetric; groups along k: h for gate and up,
    the rank's i_r for down); fuse: (w_gate_up [h, 2 i_r] = [gate | up],
    None, w_down), the same values (scales are per column). a_quant:
    the QuantizedWeights' (the ops quantize A to int8 for "int8")."""
    wg, wu, wd = full
    parts = split(wg.shape[1], size)
    lo, hi = parts[rank]
    h = wg.shape[0]
    g_in = 128 if h % 128 == 0 else None   # gate, up: all of h on a rank
    g_down = group_for([b - a for a, b in parts])
    down = agmm.quantize_weight(wd[lo:hi].float(), bits=bits, group_size=g_down,
                                a_quant=a_quant)
    if fuse:
        gu = torch.cat([wg[:, lo:hi], wu[:, lo:hi]], 1).float()
        return agmm.quantize_weight(gu, bits=bits, group_size=g_in,
                                    a_quant=a_quant), None, down
    return (agmm.quantize_weight(wg[:, lo:hi].float(), bits=bits, group_size=g_in),
            agmm.quantize_weight(wu[:, lo:hi].float(), bits=bits, group_size=g_in),
            down)


def dequantized_full(full, size, bits):
    """The full weights every rank's QuantizedWeights stand for, exactly
    dequantized (float32; each rank's shard quantized as it quantizes it)."""
    shards = [quantized_shard(full, r, size, bits) for r in range(size)]
    deq = [[torch.from_numpy(q.dequantize()) for q in sh] for sh in shards]
    return [torch.cat([d[0] for d in deq], 1), torch.cat([d[1] for d in deq], 1),
            torch.cat([d[2] for d in deq], 0)]


def reference(x, full, dtype):
    """The MLP in one process with the full weights: (out, leaves)."""
    wg, wu, wd = [w.to(dtype).detach().requires_grad_(True) for w in full]
    x = x.detach().requires_grad_(True)
    act = (F.silu((x @ wg).float()) * (x @ wu).float()).to(dtype)
    return (act @ wd).float(), (x, wg, wu, wd)


def err(a, b):
    return ((a.float() - b.float()).abs().max() /
            b.float().abs().max().clamp(min=1e-6)).item()


def check(world, args, mode):
    P, me = world.size, world.rank
    dt = DTYPES[args.dtype]
    h, i, m = args.hidden, args.inter, args.tokens
    tol = {"fp32": 1e-4, "bf16": 5e-2}[args.dtype]
    if args.weights.endswith("-a8"):
        # A rounded to int8, 2^-8 of its row's max an element: 1.8-2.4e-2
        # of the largest output here (the down projection's A, SiLU(gate)
        # * up, is heavy-tailed), against 1e-5 with A as given
        tol = max(tol, 5e-2)
    g = torch.Generator().manual_seed(7)
    full = [torch.randn(h, i, generator=g) / h ** 0.5,
            torch.randn(h, i, generator=g) / h ** 0.5,
            torch.randn(i, h, generator=g) / i ** 0.5]
    X = torch.randn(m * P, h, generator=g).to(dt)   # every rank's rows
    G = torch.randn(m * P, h, generator=g)          # d(loss)/d(out)
    bits = WEIGHTS[args.weights]
    mlp = TPMLP(h, i, me, P, mode=mode, dtype=dt, full=full,
                weights=args.weights)
    if args.compile:  # agmm's ops stay whole in the graph: no graph break
        mlp = torch.compile(mlp, backend=args.compile, fullgraph=True)
    rows = slice(me * m, (me + 1) * m)
    x = (X[rows] if mode == "sp" else X).clone().requires_grad_(True)
    out = mlp(x)
    (out * (G[rows] if mode == "sp" else G)).sum().backward()

    # Quantized: the reference multiplies by the exactly dequantized weights.
    ref, (rx, rwg, rwu, rwd) = reference(
        X, dequantized_full(full, P, bits) if bits else full, dt)
    (ref * G).sum().backward()
    lo, hi = split(i, P)[me]
    mlp = getattr(mlp, "_orig_mod", mlp)  # the compiled module's parameters
    errors = {"out": err(out, ref[rows] if mode == "sp" else ref)}
    if not bits:  # quantized weights get no gradient
        errors.update({
            "d w_gate": err(mlp.w_gate.grad, rwg.grad[:, lo:hi]),
            "d w_up": err(mlp.w_up.grad, rwu.grad[:, lo:hi]),
            "d w_down": err(mlp.w_down.grad, rwd.grad[lo:hi]),
        })
    errors["d x"] = err(x.grad, rx.grad[rows] if mode == "sp" else rx.grad)
    bad = {k: v for k, v in errors.items() if not v <= tol}
    print("rank %d %s: %s" % (me, mode, ", ".join("%s %.2g" % kv for kv in
                                                 errors.items())), flush=True)
    return not bad


def run_rank(args):
    torch.set_num_threads(args.threads)
    with agmm.World.from_env(timeout=args.timeout) as world:
        at.register_group("tp", world)
        ok = True
        for mode in args.modes.split(","):
            ok = check(world, args, mode) and ok
        at.unregister_group("tp")
        print("rank %d: %s" % (world.rank, "ok" if ok else "FAILED"), flush=True)
    return 0 if ok else 1


def spawn(args):
    """Start args.ranks copies of this script with torchrun's variables
    (Debian 12's torchrun fails before it starts a worker); the first rank
    to fail ends the others (agmm.launch)."""
    return agmm.launch.spawn(args.ranks, [sys.executable] + sys.argv)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=2,
                   help="ranks to start when not started by a launcher (RANK unset)")
    p.add_argument("--hidden", type=int, default=256)
    p.add_argument("--inter", type=int, default=688)
    p.add_argument("--tokens", type=int, default=64, help="rows of x per rank")
    p.add_argument("--dtype", choices=sorted(DTYPES), default="fp32")
    p.add_argument("--modes", default="sp,tp", help="sp, tp or sp,tp")
    p.add_argument("--weights", choices=list(WEIGHTS), default="dense",
                   help="dense (--dtype), or int8 / int4 QuantizedWeights "
                        "(-a8: A quantized to int8 too)")
    p.add_argument("--threads", type=int, default=1, help="torch threads per rank")
    p.add_argument("--timeout", type=float, default=60)
    p.add_argument("--compile", choices=["aot_eager", "inductor"],
                   help="run the module under torch.compile(fullgraph=True) "
                   "with this backend (torch >= 2)")
    args = p.parse_args()
    if args.compile and not hasattr(torch, "compile"):
        p.error("--compile: this torch (%s) has no torch.compile (torch >= 2)"
                % torch.__version__)
    if args.compile and args.weights != "dense":
        p.error("--compile: with --weights %s (QuantizedWeights run eagerly "
                "only; allowed: --weights dense)" % args.weights)
    for mode in args.modes.split(","):
        if mode not in ("sp", "tp"):
            p.error("--modes: %r (allowed: sp, tp, or both: sp,tp)" % mode)
    if "RANK" not in os.environ and "AGMM_RANK" not in os.environ:
        if args.ranks < 1:
            p.error("--ranks: %d (at least 1)" % args.ranks)
        return spawn(args)
    return run_rank(args)


if __name__ == "__main__":
    sys.exit(main())
