"""The rounds a backward runs (autograd/functions.py's backward_round,
the column-parallel and quantized backwards): agmm.torch's public call of
the op with tensor weights, without importing agmm.torch (which imports
the backwards). Plain CPU tensors that need no gradient take the plain
call (plain.py: the path agmm.torch.fused_* takes for them); anything
else (a FakeTensor, a tensor needing a gradient) the registered op
torch.ops.agmm.*, through the dispatcher.
"""
import torch

from .dispatch import needs_grad, plain_cpu
from .fp import ar_kernel, plan_op_available
from .plain import ag_plain, ar_plain, rs_plain


def all_gather_round(A, W, group_name, return_A, out_dtype=None):
    """agmm.torch.fused_all_gather_matmul(A, [W], 0, group_name, return_A,
    out_dtype=out_dtype): (A_gathered or None, [C])."""
    dts = None if out_dtype is None else [out_dtype]
    if plain_cpu([A, W]) and not needs_grad([A, W]):
        return ag_plain(A, [W], 0, group_name, return_A, out_dtypes=dts)
    return torch.ops.agmm.fused_all_gather_matmul(
        A, [W], 0, group_name, return_A=return_A, biases=None,
        activations=None, out_dtypes=dts)


def reduce_scatter_round(A, W, group_name, out_dtype=None):
    """agmm.torch.fused_matmul_reduce_scatter(A, W, "sum", 0, group_name,
    out_dtype=out_dtype)."""
    if plain_cpu([A, W]) and not needs_grad([A, W]):
        return rs_plain(A, W, "sum", 0, group_name, out_dtype=out_dtype)
    return torch.ops.agmm.fused_matmul_reduce_scatter(
        A, W, "sum", 0, group_name, bias=None, activation=None,
        out_dtype=out_dtype)


def all_reduce_round(A, W, group_name, out_dtype=None):
    """agmm.torch.fused_matmul_all_reduce(A, W, "sum", group_name,
    out_dtype=out_dtype) (agmm.Unsupported without the op "gemm-ar")."""
    if plain_cpu([A, W]) and not needs_grad([A, W]):
        if plan_op_available("gemm-ar"):
            return ar_plain(A, W, "sum", group_name, out_dtype=out_dtype)
        return ar_kernel(A, W, "sum", group_name, out_dtype=out_dtype)
    return torch.ops.agmm.fused_matmul_all_reduce(
        A, W, "sum", group_name, bias=None, activation=None,
        out_dtype=out_dtype)
