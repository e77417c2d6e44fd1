"""agmm.torch's calls of the QuantizedWeight ops when their tensors are
not plain CPU ones (FakeTensor, a dispatch mode, Dynamo tracing:
dispatch.plain_cpu): each weight by its op_id through
torch.ops.agmm.*_wq (library/wq_ops.py registers them; these only call
them, through the dispatcher). Forward only: under tracing a call whose
input needs a gradient raises agmm.Unsupported (the input's gradient with
a QuantizedWeight is eager's: autograd/wq.py).
"""
import torch

from ...errors import InvalidArgument, Unsupported
from ...qweight import QuantizedWeight
from .fp import per_weight


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


def traced_ag(A_shard, Bs, gather_dim, group_name, return_A, bias, activation,
              out_dtype_):
    """agmm.torch.fused_all_gather_matmul with QuantizedWeights, traced."""
    nw = len(Bs)
    biases = None if bias is None else \
        ([bias] * nw if isinstance(bias, torch.Tensor) else list(bias))
    _no_grad([A_shard] + (biases or []), "fused_all_gather_matmul")
    acts = None if activation is None else \
        ["" if a is None else a for a in per_weight(activation, nw, "activation")]
    dts = None if out_dtype_ is None else per_weight(out_dtype_, nw, "out_dtype")
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
