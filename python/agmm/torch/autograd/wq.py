"""The autograd of agmm.torch's ops with agmm.QuantizedWeight weights
(kernels/wq.py's text has the contract): the Functions of the all-gather
op, the reduce ops and column_parallel_matmul, and the calls agmm.torch's
functions make for QuantizedWeights (the kernel straight when no input
needs a gradient; traced, kernels/wq_traced.py's calls of
torch.ops.agmm.*_wq). The input's gradient (and the bias's) comes from
the weight dequantized and transposed (kernels/wq.py's bwd_qweight, kept
in the group's plan cache); there is none for the weight.
"""
import torch

from ..distributed.groups import DT, get_group
from ..distributed.plan_cache import reduce_key
from ..kernels.calls import all_gather_round, all_reduce_round
from ..kernels.dispatch import plain_cpu
from ..kernels.epilogue import (activation_name, apply_epilogue, default_out,
                                epilogue_backward, not_gated)
from ..kernels.epilogue import out_dtype as _out_dt
from ..kernels.fp import (ag_views, allgather_ints, norm_dim, per_weight,
                          reduce_core)
from ..kernels.local import local_mm
from ..kernels.wq import (ag_kernel, bwd_qweight, check_a, check_weights,
                          reduce_kernel)
from ..kernels.wq_colpar import local_matmul
from ..kernels.wq_traced import traced_ag, traced_cp, traced_reduce


class AllGatherMatmulQ(torch.autograd.Function):
    """AllGatherMatmul (functions.py) with QuantizedWeights: dA_shard =
    my rows of sum_r dZ_r @ W_r^T (one gemm-rs round against the
    dequantized W^T), the biases' gradients, none for the weights."""

    @staticmethod
    def forward(ctx, info, a2, *biases):
        group, return_A, Qs, acts, dts = info
        nw = len(Qs)
        plain = all(a is None for a in acts)
        A_g, zs = ag_kernel(a2, Qs, 0, group, return_A, list(biases), None,
                            list(dts) if plain else [torch.float32] * nw)
        ys = zs if plain else [apply_epilogue(z, None, a, d)
                               for z, a, d in zip(zs, acts, dts)]
        ctx.info = info
        ctx.bias_grad = [b is not None and b.requires_grad for b in biases]
        ctx.save_for_backward(*[z if a is not None else None
                                for z, a in zip(zs, acts)])
        ctx.rows = int(a2.shape[0])
        ctx.M = int(ys[0].shape[0])  # the gathered rows
        ctx.a_dtype = a2.dtype
        if A_g is not None:
            ctx.mark_non_differentiable(A_g)
        return (A_g, *ys)

    @staticmethod
    def backward(ctx, _gA, *gys):
        group, _, Qs, acts, _ = ctx.info
        zs = ctx.saved_tensors
        dt = ctx.a_dtype
        gzs = [epilogue_backward(z, gy, a) if gy is not None else
               torch.zeros((ctx.M, int(q.n)))
               for z, gy, a, q in zip(zs, gys, acts, Qs)]
        dA = None
        if ctx.needs_input_grad[1]:
            g = get_group(group)
            W = bwd_qweight(g, Qs, dt)  # [sum n_i, k]
            gz = torch.cat([t.to(dt) for t in gzs], 1) if len(gzs) > 1 \
                else gzs[0].to(dt)
            gz = gz.contiguous()
            nsum = int(W.shape[0])
            serial = g.cache.lookup(reduce_key("gemm-rs", (), nsum,
                                         int(W.shape[1]), DT[dt][1]), [W])
            everyone = allgather_ints(g.world, [ctx.rows, nsum, serial])
            dA = reduce_core(g, [o[2] for o in everyone], "gemm-rs", gz, W,
                             [o[0] for o in everyone],
                             [o[1] for o in everyone]).to(dt)
        dbs = [gz.sum(0, dtype=torch.float32) if want else None
               for gz, want in zip(gzs, ctx.bias_grad)]
        return (None, dA, *dbs)


def fused_all_gather_matmul(A_shard, Bs, gather_dim, group_name, return_A=True,
                            bias=None, activation=None, out_dtype=None):
    """agmm.torch.fused_all_gather_matmul with QuantizedWeights Bs."""
    Bs = list(Bs)
    nw = len(Bs)
    biases = [bias] * nw if isinstance(bias, torch.Tensor) or bias is None \
        else list(bias)
    if isinstance(A_shard, torch.Tensor) and not plain_cpu([A_shard] + biases):
        # Traced (torch.compile, FakeTensor): the registered op
        return traced_ag(A_shard, Bs, gather_dim, group_name, return_A, bias,
                         activation, out_dtype)
    check_a(A_shard, "A_shard")
    need = torch.is_grad_enabled() and any(
        t is not None and t.requires_grad for t in [A_shard] + biases)
    if not need:
        return ag_kernel(A_shard, Bs, gather_dim, group_name, return_A,
                         None if bias is None else biases, activation, out_dtype)
    k = int(A_shard.shape[-1])
    check_weights(Bs, k, "Bs", "A_shard")
    acts = tuple(activation_name(a, "activations[%d]" % i)
                 for i, a in enumerate(per_weight(activation, nw, "activation")))
    dts = tuple(_out_dt(d, "out_dtypes[%d]" % i, default_out(A_shard))
                for i, d in enumerate(per_weight(out_dtype, nw, "out_dtype")))
    nd = A_shard.dim()
    gd = norm_dim(gather_dim, nd, "gather_dim")
    a = A_shard if gd == 0 else A_shard.movedim(gd, 0)
    lead = [int(s) for s in a.shape[:-1]]
    out = AllGatherMatmulQ.apply((group_name, return_A, tuple(Bs), acts, dts),
                                 a.reshape(-1, k), *biases)
    A_g, ys = out[0], list(out[1:])
    rps = 1
    for s in lead[1:]:
        rps *= s
    total = int(ys[0].shape[0]) // max(1, rps)
    return ((ag_views(A_g, total, lead, gd) if A_g is not None else None),
            [ag_views(y, total, lead, gd) for y in ys])


class ReduceQ(torch.autograd.Function):
    """MatmulReduceScatter / MatmulAllReduce (functions.py) with a
    QuantizedWeight: dA from the dequantized W^T (reduce-scatter: one
    ag-gemm round of dZ with it, padded to the largest k_local;
    all-reduce: local), the bias's gradient, none for the weight."""

    @staticmethod
    def forward(ctx, info, A, bias):
        op, what, Q, dim, group, act, dt = info
        z = reduce_kernel(op, what, A, Q, "sum", dim, group, bias, None,
                          torch.float32)
        ctx.info = info
        ctx.bias_grad = bias is not None and bias.requires_grad
        ctx.a_shape = list(A.shape)
        ctx.a_dtype = A.dtype
        ctx.save_for_backward(z if act is not None else None)
        return apply_epilogue(z, None, act, dt)

    @staticmethod
    def backward(ctx, gy):
        op, _, Q, dim, group, act, _ = ctx.info
        (z,) = ctx.saved_tensors
        gz = epilogue_backward(z, gy, act)
        n = int(Q.n)
        dt = ctx.a_dtype
        dA = None
        if ctx.needs_input_grad[1]:
            g = get_group(group)
            k = ctx.a_shape[-1]
            if op == "gemm-ar":
                dA = local_mm(gz.reshape(-1, n), [bwd_qweight(g, [Q], dt)],
                              dt)[0].view(ctx.a_shape)
            else:
                nd = len(ctx.a_shape)
                dd = dim + nd if dim < 0 else dim
                gzm = gz if dd == 0 else gz.movedim(dd, 0)
                kmax = max(o[0] for o in allgather_ints(g.world, [k]))
                Wt = bwd_qweight(g, [Q], dt, kmax)  # [n, kmax]
                _, (dA2,) = all_gather_round(
                    gzm.reshape(-1, n).to(dt).contiguous(), Wt, group, False, dt)
                am_shape = [int(s) for s in gzm.shape[:-1]]
                am_shape[0] = -1
                dA = dA2[:, :k].reshape(am_shape + [k])
                dA = dA if dd == 0 else dA.movedim(0, dd)
                dA = dA.contiguous()
        db = gz.reshape(-1, n).sum(0) if ctx.bias_grad else None
        return None, dA, db


def fused_matmul_reduce(op, what, A, B, reduce_op, dim, group_name, bias=None,
                        activation=None, out_dtype=None):
    """agmm.torch.fused_matmul_reduce_scatter (op "gemm-rs", dim the
    scatter dimension) or fused_matmul_all_reduce ("gemm-ar", dim None)
    with a QuantizedWeight B."""
    if isinstance(A, torch.Tensor) and not plain_cpu([A, bias]):
        # Traced (torch.compile, FakeTensor): the registered op
        return traced_reduce(op, A, B, reduce_op, dim, group_name, bias,
                             activation, out_dtype)
    check_a(A, "A")
    if not (torch.is_grad_enabled() and
            any(t is not None and t.requires_grad for t in (A, bias))) \
            or reduce_op != "sum":
        return reduce_kernel(op, what, A, B, reduce_op, dim, group_name, bias,
                             activation, out_dtype)
    act = not_gated(activation_name(activation), what)
    dt = _out_dt(out_dtype, default=default_out(A))
    return ReduceQ.apply((op, what, B, dim, group_name, act, dt), A, bias)


class ColumnParallelMatmulQ(torch.autograd.Function):
    """ColumnParallelMatmul (colpar.py) with QuantizedWeights: dA = sum
    over ranks of sum_i dC_i @ W_i^T in one gemm-ar round against the
    dequantized W_i^T stacked; no gradient for the weights."""

    @staticmethod
    def forward(ctx, info, A):
        group, Qs, fmt = info
        ctx.info = info
        ctx.a_shape = list(A.shape)
        ctx.a_dtype = A.dtype
        return tuple(local_matmul(A, Qs, fmt))

    @staticmethod
    def backward(ctx, *gys):
        group, Qs, _ = ctx.info
        dt = ctx.a_dtype
        rows = 1
        for s in ctx.a_shape[:-1]:
            rows *= s
        if rows == 0:  # A is the same on every rank: every rank is here
            return None, torch.zeros(ctx.a_shape, dtype=dt)
        gz = torch.cat([(gy if gy is not None else
                         torch.zeros(ctx.a_shape[:-1] + [int(q.n)], dtype=dt))
                        .reshape(rows, int(q.n)).to(dt)
                        for gy, q in zip(gys, Qs)], 1).contiguous()
        W = bwd_qweight(get_group(group), list(Qs), dt)  # [sum n_i, k]
        dA = all_reduce_round(gz, W, group, dt)
        return None, dA.view(ctx.a_shape)


def column_parallel_matmul_fused(A, Qs, act):
    """[act(A @ W_i)] with act in the one-rank plan's epilogue
    (kernels/wq_colpar.py) for QuantizedWeights Qs, or None where it does
    not apply (a gradient wanted, or A traced): the caller then applies
    act after the products."""
    Qs = list(Qs)
    if not isinstance(A, torch.Tensor) or not plain_cpu([A]) or \
            (torch.is_grad_enabled() and A.requires_grad):
        return None
    check_a(A, "A")
    fmt = check_weights(Qs, int(A.shape[-1]), "Bs", "A")
    return local_matmul(A, Qs, fmt, act)


def column_parallel_matmul(A, Qs, group_name):
    """agmm.torch.column_parallel_matmul with QuantizedWeights Qs: the
    forward local (agmm's weight kernels on a one-rank plan, at every row
    count), the backward's dA all-reduced as for tensors."""
    Qs = list(Qs)
    if isinstance(A, torch.Tensor) and not plain_cpu([A]):
        # Traced (torch.compile, FakeTensor): the registered op
        return traced_cp(A, Qs, group_name)
    check_a(A, "A")
    fmt = check_weights(Qs, int(A.shape[-1]), "Bs", "A")
    if torch.is_grad_enabled() and A.requires_grad:
        return list(ColumnParallelMatmulQ.apply((group_name, tuple(Qs), fmt), A))
    return local_matmul(A, Qs, fmt)
