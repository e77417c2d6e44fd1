"""The CPU kernels of agmm.torch's fp ops (fp16, bf16, fp32):
fused_all_gather_matmul (op "ag-gemm"), fused_matmul_reduce_scatter
("gemm-rs") and fused_matmul_all_reduce ("gemm-ar"), each with the
epilogue (bias, activation, output dtype) applied once to its final result
by kernels/epilogue.py's apply_epilogue. python/agmm/torch/__init__.py's
module doc has the contract; the *_core functions are the 2-D rounds
the autograd's backward also calls.
"""
import struct

import torch

from ... import _lib
from ...errors import InvalidArgument, Unsupported
from .epilogue import (apply_epilogue, activation_name, check_bias, default_out,
                       not_gated, out_dtype)
from ..distributed.groups import DT, as_rows, check_tensor, get_group
from ..distributed.plan_cache import ag_key, ag_plan, reduce_key, reduce_plan

_MAX_LEAD = 8  # leading dimensions of a reduce's A


def plan_op_available(op):
    """Whether this agmm package (and so its libagmm.so) has the plan op
    `op` ("ag-gemm", "gemm-rs", "gemm-ar")."""
    return op in _lib.OPS


def _fp_tensor(x, what, dims=None):
    check_tensor(x, what, DT, "%(what)s: %(got)s (agmm takes CPU float16, "
                 "bfloat16 or float32)", dims)


def norm_dim(d, nd, what):
    """d (may be negative) as an index among A's leading dimensions."""
    dd = d + nd if d < 0 else d
    if not 0 <= dd < nd - 1:
        raise InvalidArgument("%s %d: allowed %d..%d for A of %d dimensions "
                              "(not the last, k)" % (what, d, -nd, nd - 2, nd))
    return dd


def per_weight(value, count, what):
    """One value per weight from None, one value, or a list of `count`."""
    if isinstance(value, (list, tuple)):
        if len(value) != count:
            raise InvalidArgument("%s: %d for %d weights" % (what, len(value), count))
        return list(value)
    return [value] * count


def allgather_ints(world, mine):
    blob = struct.pack("<%dq" % len(mine), *mine)
    return [struct.unpack("<%dq" % len(mine), b) for b in world.allgather(blob)]


# ------------------------------------------------ all-gather + matmul
def ag_core(g, serials, a2, Bs, m_local, return_A, epi=None):
    """One round: gather the rows a2 ([m_local[rank], k]) of every rank and
    multiply by each B_i; returns (A_gathered [M, k] or None, [C_i float32
    [M, n_i]], or with `epi` (lib_epilogue's) C_i = the plan's epilogue's
    output). serials: every rank's plan lookup (ag_shapes)."""
    ns = [int(B.shape[1]) for B in Bs]
    plan, m_rows = ag_plan(g.cache, serials, m_local, int(a2.shape[1]), ns,
                                DT[a2.dtype][1], Bs, epi=epi)
    return ag_run(g, plan, m_rows, a2, return_A)


def ag_run(g, plan, m_rows, a2, return_A):
    """ag_core's round on the plan found for it (m_rows: its rows or
    None)."""
    res = plan.run(a2, a_gathered=True if return_A else None, m_rows=m_rows,
                   schedule=g.schedule)
    A_g = None
    if return_A:
        A_g, res = res
    return A_g, (res if isinstance(res, list) else [res])


def ag_check(A_shard, Bs, gather_dim):
    """The local checks of an all-gather call's arguments (InvalidArgument
    naming the first bad one); returns gather_dim as an index."""
    _fp_tensor(A_shard, "A_shard")
    gd = norm_dim(gather_dim, A_shard.dim(), "gather_dim")
    if len(Bs) < 1:
        raise InvalidArgument("Bs: an empty list (at least one weight)")
    k = A_shard.shape[-1]
    for i, B in enumerate(Bs):
        if not isinstance(B, torch.Tensor) or B.dim() != 2 or B.shape[0] != k \
                or B.dtype != A_shard.dtype or B.device.type != "cpu":
            desc = "%s %s %s" % (list(B.shape), B.dtype, B.device) \
                if isinstance(B, torch.Tensor) else type(B).__name__
            raise InvalidArgument("Bs[%d]: %s (expected [k=%d, n] %s on the CPU)"
                                  % (i, desc, k, A_shard.dtype))
    return gd


def ag_agree(g, everyone, mine):
    """Every rank's all-gathered shape (ag_shapes' `mine`) against this
    rank's: InvalidArgument naming the first that differs."""
    for r, other in enumerate(everyone):
        if other[1:-1] != tuple(mine[1:-1]):
            raise InvalidArgument(
                "fused_all_gather_matmul: rank %d has shape/dtype %s, rank %d "
                "%s (ranks must agree on every dimension but gather_dim)"
                % (r, list(other[:-1]), g.world.rank, mine[:-1]))
    if sum(o[0] * o[1] for o in everyone) == 0:
        raise InvalidArgument("fused_all_gather_matmul: every rank's shard is "
                              "empty")


def ag_shapes(g, A_shard, Bs, gather_dim, epi=None):
    """Checks and every rank's rows: (gd, a2, lead, m_local, slices,
    serials), serials every rank's cached plan for the call (g.lookup;
    epi: lib_epilogue's, part of the plan's key)."""
    gd = ag_check(A_shard, Bs, gather_dim)
    code = DT[A_shard.dtype][0]
    k = A_shard.shape[-1]
    ns = [int(B.shape[1]) for B in Bs]
    # gather_dim first, the rest of the leading dims folded into rows.
    a = A_shard if gd == 0 else A_shard.movedim(gd, 0)
    lead = [int(s) for s in a.shape[:-1]]  # [s_gd, other leading dims...]
    a2 = a.reshape(-1, k)  # a view when contiguous, else one copy
    rows_per_slice = 1
    for s in lead[1:]:
        rows_per_slice *= s
    # Every rank's shape: rows, slices along gather_dim, k, ns, dtype; and
    # its cached plan's serial.
    serial = g.cache.lookup(ag_key(k, ns, DT[A_shard.dtype][1], None, epi), Bs)
    mine = [lead[0], rows_per_slice, k, code, len(ns)] + ns + [serial]
    everyone = allgather_ints(g.world, mine)
    ag_agree(g, everyone, mine)
    slices = [o[0] for o in everyone]
    m_local = [s * rows_per_slice for s in slices]
    return gd, a2, lead, m_local, slices, [o[-1] for o in everyone]


def ag_views(x, total, lead, gd):
    """x [M, c] (rows in gathered order) as A_shard's layout with the
    gathered dimension `total` long."""
    x = x.view([total] + lead[1:] + [int(x.shape[-1])])
    return x if gd == 0 else x.movedim(0, gd)


def ag_epilogue(Bs, biases, activations, out_dtypes, default=torch.float32):
    """Each weight's checked epilogue: (biases, activations, dtypes), one
    of each per weight (a dtype None: `default`, the op's A's dtype)."""
    nw = len(Bs)
    biases = per_weight(biases, nw, "biases")
    acts = [activation_name(a, "activations[%d]" % i)
            for i, a in enumerate(per_weight(activations, nw, "activations"))]
    dts = [out_dtype(d, "out_dtypes[%d]" % i, default)
           for i, d in enumerate(per_weight(out_dtypes, nw, "out_dtypes"))]
    for i, (B, b) in enumerate(zip(Bs, biases)):
        check_bias(b, int(B.shape[1]) if isinstance(B, torch.Tensor) and B.dim() == 2
                   else -1, "biases[%d]" % i)
    return biases, acts, dts


# torch dtype -> the library's out_dtype name.
_OUT_NAMES = {torch.float32: "fp32", torch.bfloat16: "bf16", torch.float16: "fp16"}


def lib_epilogue(biases, acts, dts):
    """The epilogue of an all-gather call as the plan's own (applied in the
    round, on each finished tile: no pass over C in Python, and a 16-bit C
    written once): (activations, out dtype name) when no weight has a bias
    and every weight has the same out dtype, else None (apply_epilogue
    after the round). Its activations are the library's (agmm.h), within a
    few ulps of torch's; an autograd forward, which keeps the
    pre-activation, always takes apply_epilogue."""
    if any(b is not None for b in biases) or any(d != dts[0] for d in dts):
        return None
    if all(a is None for a in acts) and dts[0] == torch.float32:
        return None  # nothing to do
    return tuple(a or "none" for a in acts), _OUT_NAMES[dts[0]]


def reduce_epilogue(B, bias, activation, dtype, A=None):
    """The checked epilogue of a reduce call: (bias, activation, dtype; None:
    A's dtype)."""
    act = not_gated(activation_name(activation), "a reduce op")
    dt = out_dtype(dtype, default=default_out(A))
    check_bias(bias, int(B.shape[1]) if isinstance(B, torch.Tensor) and B.dim() == 2
               else -1)
    return bias, act, dt


def ag_kernel(A_shard, Bs, gather_dim, group_name, return_A=True, biases=None,
              activations=None, out_dtypes=None):
    Bs = list(Bs)
    biases, acts, dts = ag_epilogue(Bs, biases, activations, out_dtypes,
                                    default_out(A_shard))
    epi = lib_epilogue(biases, acts, dts)
    g = get_group(group_name)
    gd, a2, lead, m_local, slices, serials = ag_shapes(g, A_shard, Bs, gather_dim,
                                                       epi)
    A_g, Cs = ag_core(g, serials, a2, Bs, m_local, return_A, epi)
    total = sum(slices)
    if epi is None:
        Cs = [apply_epilogue(c, b, a, d) for c, b, a, d in zip(Cs, biases, acts, dts)]
    Cs = [ag_views(c, total, lead, gd) for c in Cs]
    if return_A:
        A_g = ag_views(A_g, total, lead, gd)
    return A_g, Cs


# ------------------------------------------ matmul + reduce-scatter/all-reduce
def reduce_core(g, serials, op, a2, B, m_local, k_local, key=None, out=None):
    """One round of op "gemm-rs" (this rank's m_local[rank] rows of
    sum_r A_r @ B_r) or "gemm-ar" (all sum(m_local) rows), float32, on
    the group's plan taking its rows per call (plan_cache.reduce_plan's per_call).
    serials: every rank's g.cache.lookup(reduce_key(op, (), ...), [B]), or
    with `key` (looked up instead) and `out` (the plan's out dtype name,
    C in it: kernels/plain.py's) those."""
    if not plan_op_available(op):
        raise Unsupported("%s: this agmm (%s) has no plan op %r (it has %s)"
                          % ("fused_matmul_all_reduce" if op == "gemm-ar" else op,
                             _lib.path, op, ", ".join(_lib.OPS)))
    plan, m_rows = reduce_plan(g.cache, serials, op, m_local, k_local, B,
                                DT[B.dtype][1], key=key, per_call=True, out=out)
    return plan.run(a2, schedule=g.schedule, m_rows=m_rows)


def reduce_shapes(g, op, A, B, reduce_op, dim, what):
    """Checks and every rank's k: (dd, a2, lead, k_local, rows_per_slice,
    serials), serials every rank's cached plan for the call (g.lookup)."""
    dd = reduce_check(A, B, reduce_op, dim)
    nd = A.dim()
    k_mine = int(A.shape[-1])
    a = A if dd == 0 else A.movedim(dd, 0)
    lead = [int(d) for d in a.shape[:-1]]
    n = int(B.shape[1])
    L = _MAX_LEAD + 3  # padded: every rank sends as many bytes
    serial = g.cache.lookup(reduce_key(op, (), k_mine, n, DT[A.dtype][1]), [B])
    mine = [nd - 1] + lead + [0] * (_MAX_LEAD - len(lead)) + \
        [n, DT[A.dtype][0], k_mine, serial]
    everyone = allgather_ints(g.world, mine)
    reduce_agree(g, everyone, mine, what)
    rows_per_slice = 1
    for d in lead[1:]:
        rows_per_slice *= d
    return (dd, as_rows(a), lead, [o[L] for o in everyone],
            rows_per_slice, [o[L + 1] for o in everyone])


def reduce_check(A, B, reduce_op, dim):
    """The local checks of a reduce call's arguments (InvalidArgument
    naming the first bad one); returns scatter_dim as an index (0 for
    the all-reduce, dim None)."""
    if reduce_op != "sum":
        raise InvalidArgument("reduce_op: %r (allowed: \"sum\")" % (reduce_op,))
    _fp_tensor(A, "A")
    _fp_tensor(B, "B", dims=2)
    nd = A.dim()
    dd = norm_dim(dim, nd, "scatter_dim") if dim is not None else 0
    k_mine = int(A.shape[-1])
    if B.shape[0] != k_mine or B.dtype != A.dtype:
        raise InvalidArgument("B: %s %s (expected [k_local=%d, n] %s: A's last "
                              "dimension and dtype)" % (list(B.shape), B.dtype,
                                                        k_mine, A.dtype))
    if nd - 1 > _MAX_LEAD:
        raise InvalidArgument("A: %d dimensions (at most %d)" % (nd, _MAX_LEAD + 1))
    return dd


def reduce_agree(g, everyone, mine, what):
    """Every rank's all-gathered shape (reduce_shapes' `mine`) against this
    rank's: InvalidArgument naming the first that differs, or an empty
    product."""
    L = _MAX_LEAD + 3
    for r, other in enumerate(everyone):
        if other[:L] != tuple(mine[:L]):
            raise InvalidArgument(
                "%s: rank %d has A's rows %s, n %d, dtype code %d; rank %d %s, "
                "%d, %d (ranks must agree on all but k)"
                % (what, r, list(other[1:1 + other[0]]), other[L - 2],
                   other[L - 1], g.world.rank, list(mine[1:1 + mine[0]]),
                   mine[L - 2], mine[L - 1]))
    rows = 1
    for d in mine[1:1 + mine[0]]:
        rows *= d
    k = sum(o[L] for o in everyone)
    if k == 0 or rows == 0:
        raise InvalidArgument("%s: an empty product (rows %d, k %d)"
                              % (what, rows, k))


def row_split(rows, P):
    """Rows per rank as agmm_k_split splits them (the first rows % P ranks
    one more)."""
    return [int(_lib.fn.agmm_k_split(rows, P, r)) for r in range(P)]


def rs_kernel(A, B, reduce_op, scatter_dim, group_name, bias=None,
              activation=None, out_dtype=None):
    bias, act, out_dtype = reduce_epilogue(B, bias, activation, out_dtype, A)
    g = get_group(group_name)
    dd, a2, lead, k_local, rps, serials = reduce_shapes(
        g, "gemm-rs", A, B, reduce_op, scatter_dim, "fused_matmul_reduce_scatter")
    split = row_split(lead[0], g.world.size)
    c = reduce_core(g, serials, "gemm-rs", a2, B, [s * rps for s in split],
                    k_local)
    c = apply_epilogue(c, bias, act, out_dtype)
    c = c.view([split[g.world.rank]] + lead[1:] + [int(B.shape[1])])
    return c if dd == 0 else c.movedim(0, dd)


def ar_kernel(A, B, reduce_op, group_name, bias=None, activation=None,
              out_dtype=None):
    bias, act, out_dtype = reduce_epilogue(B, bias, activation, out_dtype, A)
    g = get_group(group_name)
    _, a2, lead, k_local, rps, serials = reduce_shapes(
        g, "gemm-ar", A, B, reduce_op, None, "fused_matmul_all_reduce")
    c = reduce_core(g, serials, "gemm-ar", a2, B,
                    row_split(lead[0] * rps, g.world.size), k_local)
    c = apply_epilogue(c, bias, act, out_dtype)
    return c.view(lead + [int(B.shape[1])])
