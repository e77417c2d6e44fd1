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

The CPU kernels are the eager path's (kernels/wq.py, kernels/wq_colpar.py:
the same plans, checks and errors); the fake kernels give the outputs'
shapes and dtypes from the weights' n without communicating. agmm.torch's
functions call these ops when their tensors are not plain CPU ones
(FakeTensor, a dispatch mode, Dynamo tracing: kernels/dispatch.py's
plain_cpu), through kernels/wq_traced.py. Forward only: under tracing a
call whose input needs a gradient raises agmm.Unsupported (the input's
gradient with a QuantizedWeight is eager's: autograd/wq.py).
"""
from ...qweight import by_op_id
from ..kernels.epilogue import (activation_name, c_cols, default_out, not_gated,
                                out_dtype)
from ..kernels.fp import norm_dim, per_weight, row_split
from ..kernels import wq, wq_colpar
from ..distributed.groups import meta_world

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


# ------------------------------------------------------- CPU kernels
def _ag_cpu(A_shard, weights, gather_dim, group_name, return_A=True, biases=None,
            activations=None, out_dtypes=None):
    return wq.ag_kernel(A_shard, _qs(weights, "Bs"), gather_dim, group_name,
                               return_A, biases, activations, out_dtypes)


def _rs_cpu(A, weight, reduce_op, scatter_dim, group_name, bias=None,
            activation=None, out_dtype=None):
    return wq.reduce_kernel("gemm-rs", "fused_matmul_reduce_scatter", A,
                                   by_op_id(weight, "B"), reduce_op, scatter_dim,
                                   group_name, bias, activation, out_dtype)


def _ar_cpu(A, weight, reduce_op, group_name, bias=None, activation=None,
            out_dtype=None):
    return wq.reduce_kernel("gemm-ar", "fused_matmul_all_reduce", A,
                                   by_op_id(weight, "B"), reduce_op, None,
                                   group_name, bias, activation, out_dtype)


def _cp_cpu(A, weights, group_name):
    Qs = _qs(weights, "Bs")
    wq.check_a(A, "A")
    fmt = wq.check_weights(Qs, int(A.shape[-1]), "Bs", "A")
    return wq_colpar.local_matmul(A, Qs, fmt)


# ------------------------------------------------------ fake kernels
def _ag_fake(A_shard, weights, gather_dim, group_name, return_A=True, biases=None,
             activations=None, out_dtypes=None):
    ns = [int(q.n) for q in _qs(weights, "Bs")]
    P, _ = meta_world(group_name)
    gd = norm_dim(gather_dim, A_shard.dim(), "gather_dim")
    shape = list(A_shard.shape)
    shape[gd] *= P  # every rank's shard taken as large as this one's
    acts = [activation_name(a) for a in per_weight(activations, len(ns),
                                                      "activations")]
    dts = [out_dtype(d, default=default_out(A_shard))
           for d in per_weight(out_dtypes, len(ns), "out_dtypes")]
    A_g = A_shard.new_empty(shape) if return_A else None
    return A_g, [A_shard.new_empty(shape[:-1] + [c_cols(n, a)], dtype=d)
                 for n, a, d in zip(ns, acts, dts)]


def _reduce_fake(A, weight, dim, group_name, activation, dt):
    not_gated(activation_name(activation), "a reduce op")
    shape = list(A.shape[:-1]) + [int(by_op_id(weight, "B").n)]
    if dim is not None:
        P, rank = meta_world(group_name)
        dd = norm_dim(dim, A.dim(), "scatter_dim")
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
