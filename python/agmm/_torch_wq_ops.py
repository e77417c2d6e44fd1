"""torch.ops.agmm.*_wq: the fp ops and column_parallel_matmul with
agmm.QuantizedWeight weights as registered ops, so that torch.compile
(Dynamo, AOTAutograd, Inductor) and FakeTensor tracing see them (issue 48
item 5: fake kernels for tracing). A QuantizedWeight is not a tensor: the
ops take each weight by its op_id (an int the object got when it was
made; qweight.by_op_id finds it again), a constant of the traced graph,
and Dynamo guards on it like any attribute it reads, so a layer given
another QuantizedWeight is traced again.

  fused_all_gather_matmul_wq(Tensor A_shard, int[] weights, int gather_dim,
      str group_name, *, bool return_A=True, Tensor?[]? biases=None,
      str[]? activations=None, ScalarType?[]? out_dtypes=None)
      -> (Tensor?, Tensor[])
  fused_matmul_reduce_scatter_wq(Tensor A, int weight, str reduce_op,
      int scatter_dim, str group_name, *, bias, activation, out_dtype)
  fused_matmul_all_reduce_wq(Tensor A, int weight, str reduce_op,
      str group_name, *, bias, activation, out_dtype)
  column_parallel_matmul_wq(Tensor A, int[] weights, str group_name)
      -> Tensor[]

The CPU kernels are the eager path's (_torch_wq, _torch_wq_colpar: the same
plans, checks and errors); the fake kernels give the outputs' shapes and
dtypes from the weights' n without communicating. agmm.torch's functions
call these ops when their tensors are not plain CPU ones (FakeTensor, a
dispatch mode, Dynamo tracing: _torch_dispatch.plain_cpu). Forward only:
under tracing a call whose input needs a gradient raises agmm.Unsupported
(the input's gradient with a QuantizedWeight is eager's: _torch_wq).
"""
import torch

from .errors import InvalidArgument, Unsupported
from .qweight import QuantizedWeight, by_op_id
from ._torch_epilogue import (activation_name, c_cols, default_out, not_gated,
                              out_dtype)
from ._torch_fp import _dim, _per_weight, row_split

_EPI = "Tensor? bias=None, str? activation=None, ScalarType? out_dtype=None"
SCHEMAS = {
    "fused_all_gather_matmul_wq":
        "fused_all_gather_matmul_wq(Tensor A_shard, int[] weights, int gather_dim, "
        "str group_name, *, bool return_A=True, Tensor?[]? biases=None, "
        "str[]? activations=None, ScalarType?[]? out_dtypes=None) "
        "-> (Tensor?, Tensor[])",
    "fused_matmul_reduce_scatter_wq":
        "fused_matmul_reduce_scatter_wq(Tensor A, int weight, str reduce_op, "
        "int scatter_dim, str group_name, *, " + _EPI + ") -> Tensor",
    "fused_matmul_all_reduce_wq":
        "fused_matmul_all_reduce_wq(Tensor A, int weight, str reduce_op, "
        "str group_name, *, " + _EPI + ") -> Tensor",
    "column_parallel_matmul_wq":
        "column_parallel_matmul_wq(Tensor A, int[] weights, str group_name) "
        "-> Tensor[]",
}


def _qs(ids, what):
    return [by_op_id(i, "%s[%d]" % (what, j)) for j, i in enumerate(ids)]


def _ids(Qs, what):
    """Each weight's op_id (InvalidArgument naming the first that is not a
    QuantizedWeight: a call's weights share one plan, one format)."""
    out = []
    for i, q in enumerate(Qs):
        if not isinstance(q, QuantizedWeight):
            raise InvalidArgument(
                "%s[%d]: a %s among QuantizedWeights (a call's weights share "
                "one plan, one format: quantize every one alike)"
                % (what, i, type(q).__name__))
        out.append(q.op_id)
    return out


def _no_grad(tensors, what):
    if torch.is_grad_enabled() and any(
            isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
        raise Unsupported(
            "%s: with a QuantizedWeight the input's gradient is computed "
            "eagerly only (traced: forward, under torch.no_grad() or on inputs "
            "that need no gradient)" % what)


# ------------------------------------------------ calls (agmm.torch's)
def traced_ag(A_shard, Bs, gather_dim, group_name, return_A, bias, activation,
              out_dtype_):
    """agmm.torch.fused_all_gather_matmul with QuantizedWeights, traced."""
    nw = len(Bs)
    biases = None if bias is None else \
        ([bias] * nw if isinstance(bias, torch.Tensor) else list(bias))
    _no_grad([A_shard] + (biases or []), "fused_all_gather_matmul")
    acts = None if activation is None else \
        ["" if a is None else a for a in _per_weight(activation, nw, "activation")]
    dts = None if out_dtype_ is None else _per_weight(out_dtype_, nw, "out_dtype")
    return torch.ops.agmm.fused_all_gather_matmul_wq(
        A_shard, _ids(Bs, "Bs"), int(gather_dim), group_name, return_A=return_A,
        biases=biases, activations=acts, out_dtypes=dts)


def traced_reduce(op, A, Q, reduce_op, dim, group_name, bias, activation,
                  out_dtype_):
    """agmm.torch.fused_matmul_reduce_scatter (op "gemm-rs") or
    fused_matmul_all_reduce ("gemm-ar") with a QuantizedWeight, traced."""
    name = "fused_matmul_reduce_scatter" if op == "gemm-rs" else \
        "fused_matmul_all_reduce"
    _no_grad([A, bias], name)
    wid = _ids([Q], "B")[0]
    if op == "gemm-rs":
        return torch.ops.agmm.fused_matmul_reduce_scatter_wq(
            A, wid, str(reduce_op), int(dim), group_name, bias=bias,
            activation=activation, out_dtype=out_dtype_)
    return torch.ops.agmm.fused_matmul_all_reduce_wq(
        A, wid, str(reduce_op), group_name, bias=bias, activation=activation,
        out_dtype=out_dtype_)


def traced_cp(A, Qs, group_name):
    """agmm.torch.column_parallel_matmul with QuantizedWeights, traced."""
    _no_grad([A], "column_parallel_matmul")
    return list(torch.ops.agmm.column_parallel_matmul_wq(A, _ids(Qs, "Bs"),
                                                        group_name))


# ------------------------------------------------------- CPU kernels
def _ag_cpu(A_shard, weights, gather_dim, group_name, return_A=True, biases=None,
            activations=None, out_dtypes=None):
    from . import _torch_wq
    return _torch_wq.ag_kernel(A_shard, _qs(weights, "Bs"), gather_dim, group_name,
                               return_A, biases, activations, out_dtypes)


def _rs_cpu(A, weight, reduce_op, scatter_dim, group_name, bias=None,
            activation=None, out_dtype=None):
    from . import _torch_wq
    return _torch_wq.reduce_kernel("gemm-rs", "fused_matmul_reduce_scatter", A,
                                   by_op_id(weight, "B"), reduce_op, scatter_dim,
                                   group_name, bias, activation, out_dtype)


def _ar_cpu(A, weight, reduce_op, group_name, bias=None, activation=None,
            out_dtype=None):
    from . import _torch_wq
    return _torch_wq.reduce_kernel("gemm-ar", "fused_matmul_all_reduce", A,
                                   by_op_id(weight, "B"), reduce_op, None,
                                   group_name, bias, activation, out_dtype)


def _cp_cpu(A, weights, group_name):
    from . import _torch_wq, _torch_wq_colpar
    Qs = _qs(weights, "Bs")
    _torch_wq._check_a(A, "A")
    fmt = _torch_wq._check_weights(Qs, int(A.shape[-1]), "Bs", "A")
    return _torch_wq_colpar._local(A, Qs, fmt)


# ------------------------------------------------------ fake kernels
def _ag_fake(A_shard, weights, gather_dim, group_name, return_A=True, biases=None,
             activations=None, out_dtypes=None):
    from ._torch_ops import meta_world
    ns = [int(q.n) for q in _qs(weights, "Bs")]
    P, _ = meta_world(group_name)
    gd = _dim(gather_dim, A_shard.dim(), "gather_dim")
    shape = list(A_shard.shape)
    shape[gd] *= P  # every rank's shard taken as large as this one's
    acts = [activation_name(a) for a in _per_weight(activations, len(ns),
                                                      "activations")]
    dts = [out_dtype(d, default=default_out(A_shard))
           for d in _per_weight(out_dtypes, len(ns), "out_dtypes")]
    A_g = A_shard.new_empty(shape) if return_A else None
    return A_g, [A_shard.new_empty(shape[:-1] + [c_cols(n, a)], dtype=d)
                 for n, a, d in zip(ns, acts, dts)]


def _reduce_fake(A, weight, dim, group_name, activation, dt):
    from ._torch_ops import meta_world
    not_gated(activation_name(activation), "a reduce op")
    shape = list(A.shape[:-1]) + [int(by_op_id(weight, "B").n)]
    if dim is not None:
        P, rank = meta_world(group_name)
        dd = _dim(dim, A.dim(), "scatter_dim")
        shape[dd] = row_split(shape[dd], P)[rank]
    return A.new_empty(shape, dtype=out_dtype(dt, default=default_out(A)))


def _rs_fake(A, weight, reduce_op, scatter_dim, group_name, bias=None,
             activation=None, out_dtype=None):
    return _reduce_fake(A, weight, scatter_dim, group_name, activation, out_dtype)


def _ar_fake(A, weight, reduce_op, group_name, bias=None, activation=None,
             out_dtype=None):
    return _reduce_fake(A, weight, None, group_name, activation, out_dtype)


def _cp_fake(A, weights, group_name):
    lead = list(A.shape[:-1])
    return [A.new_empty(lead + [int(q.n)]) for q in _qs(weights, "Bs")]


KERNELS = {
    "fused_all_gather_matmul_wq": (_ag_cpu, _ag_fake),
    "fused_matmul_reduce_scatter_wq": (_rs_cpu, _rs_fake),
    "fused_matmul_all_reduce_wq": (_ar_cpu, _ar_fake),
    "column_parallel_matmul_wq": (_cp_cpu, _cp_fake),
}
