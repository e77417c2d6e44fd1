"""torch.ops.agmm: the schemas, and each op's CPU kernel (kernels/fp.py,
kernels/int8.py, autograd/colpar.py), Autograd kernel (the fp ops:
autograd/functions.py) and fake kernel (shapes and dtypes only, no
communication: FakeTensor and torch.compile's tracing; register_fake on
torch 2, the Meta key on 1.13), registered when agmm.torch imports this
module; the QuantizedWeight ops' (wq_ops.py) with them.
"""
import torch

from ..kernels.dispatch import needs_grad, plain_cpu
from ..autograd.functions import (AllGatherMatmul, MatmulAllReduce, MatmulReduceScatter,
                                  backward_round, backward_round_fake, below_autograd)
from ..kernels.epilogue import activation_name, c_cols, default_out, not_gated, out_dtype
from ..kernels.fp import (norm_dim, per_weight, ag_kernel, ar_kernel, row_split,
                          rs_kernel)
from ..autograd.colpar import cp_autograd
from ..kernels.colpar import cp_kernel
from ..distributed.groups import meta_world
from ..kernels.int8 import int8_out_dtypes, scaled_ag_kernel, scaled_rs_kernel

_EPI = "Tensor? bias=None, str? activation=None, ScalarType? out_dtype=None"
SCHEMAS = {
    "fused_all_gather_matmul":
        "fused_all_gather_matmul(Tensor A_shard, Tensor[] Bs, int gather_dim, "
        "str group_name, *, bool return_A=True, Tensor?[]? biases=None, "
        "str[]? activations=None, ScalarType?[]? out_dtypes=None) "
        "-> (Tensor?, Tensor[])",
    "fused_matmul_reduce_scatter":
        "fused_matmul_reduce_scatter(Tensor A, Tensor B, str reduce_op, "
        "int scatter_dim, str group_name, *, " + _EPI + ") -> Tensor",
    "fused_matmul_all_reduce":
        "fused_matmul_all_reduce(Tensor A, Tensor B, str reduce_op, "
        "str group_name, *, " + _EPI + ") -> Tensor",
    "column_parallel_matmul":
        "column_parallel_matmul(Tensor A, Tensor[] Bs, str group_name) -> Tensor[]",
    "backward_round":
        "backward_round(Tensor gz, Tensor[] Bs, str kind, str group_name, "
        "ScalarType out_dtype) -> Tensor[]",
    "fused_all_gather_scaled_matmul":
        "fused_all_gather_scaled_matmul(Tensor A_shard, Tensor[] Bs, "
        "Tensor A_scale, Tensor[] B_scales, int gather_dim, str group_name, "
        "ScalarType?[] out_dtypes, *, bool return_A=True) -> (Tensor?, Tensor[])",
    "fused_scaled_matmul_reduce_scatter":
        "fused_scaled_matmul_reduce_scatter(Tensor A, Tensor B, Tensor A_scale, "
        "Tensor B_scale, str reduce_op, int scatter_dim, str group_name, "
        "ScalarType? out_dtype) -> Tensor",
}


# ------------------------------------------------------------ Autograd
_plain_cpu = plain_cpu  # (the name tests and callers know)


def ag_autograd(A_shard, Bs, gather_dim, group_name, return_A=True, biases=None,
                 activations=None, out_dtypes=None, plain=None):
    Bs = list(Bs)
    nw = len(Bs)
    bl = per_weight(biases, nw, "biases") if nw else []
    if not needs_grad([A_shard] + Bs + bl):
        if plain or (plain is None and _plain_cpu([A_shard] + Bs + bl)):
            return ag_kernel(A_shard, Bs, gather_dim, group_name, return_A,
                             biases, activations, out_dtypes)
        return below_autograd(torch.ops.agmm.fused_all_gather_matmul, A_shard, Bs,
                              gather_dim, group_name, return_A=return_A,
                              biases=biases, activations=activations,
                              out_dtypes=out_dtypes)
    acts = tuple(activation_name(a, "activations[%d]" % i) for i, a in
                 enumerate(per_weight(activations, nw, "activations")))
    dts = tuple(out_dtype(d, "out_dtypes[%d]" % i, default_out(A_shard)) for i, d in
                enumerate(per_weight(out_dtypes, nw, "out_dtypes")))
    # gather_dim first and the other leading dims folded into rows, by
    # differentiable views: the Function sees 2-D rows.
    nd = A_shard.dim()
    gd = norm_dim(gather_dim, nd, "gather_dim")
    a = A_shard if gd == 0 else A_shard.movedim(gd, 0)
    lead = [int(s) for s in a.shape[:-1]]
    out = AllGatherMatmul.apply((group_name, return_A, acts, dts),
                                a.reshape(-1, int(A_shard.shape[-1])), *Bs, *bl)
    A_g, ys = out[0], list(out[1:])
    rows = int(ys[0].shape[0])
    total = rows // max(1, rows_per(lead))

    def back(x):
        x = x.view([total] + lead[1:] + [int(x.shape[-1])])
        return x if gd == 0 else x.movedim(0, gd)
    return (back(A_g) if A_g is not None else None), [back(y) for y in ys]


def rows_per(lead):
    r = 1
    for d in lead[1:]:
        r *= d
    return r


def rs_autograd(A, B, reduce_op, scatter_dim, group_name, bias=None,
                 activation=None, out_dtype=None, plain=None):
    if not needs_grad([A, B, bias]) or reduce_op != "sum":
        if plain or (plain is None and _plain_cpu([A, B, bias])):
            return rs_kernel(A, B, reduce_op, scatter_dim, group_name, bias,
                             activation, out_dtype)
        return below_autograd(torch.ops.agmm.fused_matmul_reduce_scatter, A, B,
                              reduce_op, scatter_dim, group_name, bias=bias,
                              activation=activation, out_dtype=out_dtype)
    return MatmulReduceScatter.apply(
        (group_name, int(scatter_dim),
         not_gated(activation_name(activation), "fused_matmul_reduce_scatter"),
         _out(out_dtype, A)), A, B, bias)


def ar_autograd(A, B, reduce_op, group_name, bias=None, activation=None,
                 out_dtype=None, plain=None):
    if not needs_grad([A, B, bias]) or reduce_op != "sum":
        if plain or (plain is None and _plain_cpu([A, B, bias])):
            return ar_kernel(A, B, reduce_op, group_name, bias, activation,
                             out_dtype)
        return below_autograd(torch.ops.agmm.fused_matmul_all_reduce, A, B,
                              reduce_op, group_name, bias=bias,
                              activation=activation, out_dtype=out_dtype)
    return MatmulAllReduce.apply(
        (group_name, not_gated(activation_name(activation), "fused_matmul_all_reduce"),
         _out(out_dtype, A)), A, B, bias)


def _out(dt, A):
    return out_dtype(dt, default=default_out(A))


# ---------------------------------------------------------------- Meta
def _ag_meta_shapes(A_shard, Bs, gather_dim, group_name):
    """Gathered along gather_dim: every rank's shard the size of this one's
    (shapes cannot be exchanged while tracing)."""
    P, _ = meta_world(group_name)
    nd = A_shard.dim()
    gd = norm_dim(gather_dim, nd, "gather_dim")
    shape = list(A_shard.shape)
    shape[gd] *= P
    return shape, [shape[:-1] + [int(B.shape[1])] for B in Bs]


def _ag_meta(A_shard, Bs, gather_dim, group_name, return_A=True, biases=None,
             activations=None, out_dtypes=None):
    Bs = list(Bs)
    a_shape, c_shapes = _ag_meta_shapes(A_shard, Bs, gather_dim, group_name)
    acts = [activation_name(a) for a in per_weight(activations, len(Bs),
                                                      "activations")]
    c_shapes = [s[:-1] + [c_cols(s[-1], a)] for s, a in zip(c_shapes, acts)]
    dts = [out_dtype(d, default=default_out(A_shard))
           for d in per_weight(out_dtypes, len(Bs), "out_dtypes")]
    A_g = A_shard.new_empty(a_shape) if return_A else None
    return A_g, [A_shard.new_empty(s, dtype=d) for s, d in zip(c_shapes, dts)]


def _reduce_meta_shape(A, B, dim, group_name):
    shape = list(A.shape[:-1]) + [int(B.shape[1])]
    if dim is not None:
        P, rank = meta_world(group_name)
        dd = norm_dim(dim, A.dim(), "scatter_dim")
        shape[dd] = row_split(shape[dd], P)[rank]
    return shape


def _rs_meta(A, B, reduce_op, scatter_dim, group_name, bias=None,
             activation=None, out_dtype=None):
    return A.new_empty(_reduce_meta_shape(A, B, scatter_dim, group_name),
                       dtype=_out(out_dtype, A))


def _ar_meta(A, B, reduce_op, group_name, bias=None, activation=None,
             out_dtype=None):
    return A.new_empty(_reduce_meta_shape(A, B, None, group_name),
                       dtype=_out(out_dtype, A))


def cp_meta(A, Bs, group_name):
    lead = list(A.shape[:-1])
    return [A.new_empty(lead + [int(B.shape[1])]) for B in Bs]


def _scaled_ag_meta(A_shard, Bs, A_scale, B_scales, gather_dim, group_name,
                    out_dtypes, return_A=True):
    Bs = list(Bs)
    a_shape, c_shapes = _ag_meta_shapes(A_shard, Bs, gather_dim, group_name)
    dts = int8_out_dtypes(out_dtypes, len(Bs))
    A_g = A_shard.new_empty(a_shape) if return_A else None
    return A_g, [A_shard.new_empty(s, dtype=d) for s, d in zip(c_shapes, dts)]


def _scaled_rs_meta(A, B, A_scale, B_scale, reduce_op, scatter_dim, group_name,
                    out_dtype=None):
    from ..kernels.int8 import int8_out_dtype
    return A.new_empty(_reduce_meta_shape(A, B, scatter_dim, group_name),
                       dtype=int8_out_dtype(out_dtype, "out_dtype"))


# --------------------------------------------------------- registration
KERNELS = {
    "fused_all_gather_matmul": (ag_kernel, ag_autograd, _ag_meta),
    "fused_matmul_reduce_scatter": (rs_kernel, rs_autograd, _rs_meta),
    "fused_matmul_all_reduce": (ar_kernel, ar_autograd, _ar_meta),
    "column_parallel_matmul": (cp_kernel, cp_autograd, cp_meta),
    "backward_round": (backward_round, None, backward_round_fake),
    "fused_all_gather_scaled_matmul": (scaled_ag_kernel, None, _scaled_ag_meta),
    "fused_scaled_matmul_reduce_scatter": (scaled_rs_kernel, None, _scaled_rs_meta),
}
# The fake kernels: torch.library.register_fake where torch has it (2.4+:
# FakeTensor and torch.compile's tracing call it, and it serves the Meta
# key too), else (1.13) the Meta key itself, which FakeTensor calls.
# The QuantizedWeight ops (library/wq_ops.py: CPU and fake kernels only).
from . import wq_ops  # noqa: E402
SCHEMAS.update(wq_ops.SCHEMAS)
KERNELS.update({_n: (_c, None, _f) for _n, (_c, _f) in wq_ops.KERNELS.items()})
_register_fake = getattr(torch.library, "register_fake", None)
_lib_def = torch.library.Library("agmm", "DEF")
for _name, _schema in SCHEMAS.items():
    _lib_def.define(_schema)
    _cpu, _autograd, _meta = KERNELS[_name]
    _lib_def.impl(_name, _cpu, "CPU")
    if _register_fake is not None:
        _register_fake("agmm::" + _name, _meta, lib=_lib_def)
    else:
        _lib_def.impl(_name, _meta, "Meta")
    if _autograd is not None:
        _lib_def.impl(_name, _autograd, "Autograd")
