"""column_parallel_matmul's CPU kernel: [A @ B_i] on this rank, no
communication, through local.py's local_mm (agmm's engine where it
applies, torch's matmul below its bounds); the Function, its backward and
the op's Autograd kernel are autograd/colpar.py's.
"""
import torch

from ...errors import InvalidArgument
from .dispatch import needs_grad, plain_cpu
from .epilogue import c_cols
from .local import _decode_mm, decode_applies, local_mm


def params_plain(ts):
    """plain_cpu with nn.Parameters taken as the plain tensors they hold."""
    return plain_cpu([t.detach() if isinstance(t, torch.nn.Parameter) else t
                      for t in ts])


def check(A, Bs):
    for i, B in enumerate(Bs):
        if B.dim() != 2 or int(B.shape[0]) != int(A.shape[-1]) or B.dtype != A.dtype:
            raise InvalidArgument(
                "Bs[%d]: %s %s (expected [k=%d, n] %s: A's last dimension and "
                "dtype)" % (i, list(B.shape), B.dtype, int(A.shape[-1]), A.dtype))


def local(A, Bs):
    """[A @ B_i], each [..., n_i] in A's dtype (local_mm on A's rows; torch's
    matmul for tensors that are not plain CPU ones, a FakeTensor while
    tracing, say; a layer's weights, nn.Parameters, are taken as the
    plain tensors they hold)."""
    k = int(A.shape[-1])
    lead = list(A.shape[:-1])
    if A.numel() == 0:  # no rows or no k (reshape(-1, 0) is ambiguous)
        return [A.new_zeros(lead + [int(B.shape[1])]) for B in Bs]
    a2 = A.reshape(-1, k)
    if not params_plain([A] + list(Bs)):
        return [(a2 @ B).view(lead + [int(B.shape[1])]) for B in Bs]
    outs = local_mm(a2, list(Bs), A.dtype, keep=True)
    return [c.view(lead + [int(B.shape[1])]) for c, B in zip(outs, Bs)]


def cp_kernel(A, Bs, group_name):
    """torch.ops.agmm.column_parallel_matmul's CPU kernel: the local
    GEMMs (no communication)."""
    check(A, list(Bs))
    return local(A, list(Bs))


def local_act(A, Bs, act):
    """[act(A @ B_i)] with act in the GEMM's epilogue (agmm.torch's
    column_parallel_matmul(activation=)), or None where no agmm kernel
    takes it: only agmm's bf16-weight decode kernel does among the
    tensor paths (local_mm's decode case: plain CPU tensors, no gradient
    wanted, bf16, 1..DECODE_ROWS rows); the caller then applies act
    after the products."""
    Bs = list(Bs)
    if not isinstance(A, torch.Tensor) or not params_plain([A] + Bs) or \
            needs_grad([A] + Bs):
        return None
    check(A, Bs)
    k = int(A.shape[-1])
    lead = list(A.shape[:-1])
    rows = 1
    for d in lead:
        rows *= int(d)
    ns = [int(B.shape[1]) for B in Bs]
    if A.numel() == 0 or not decode_applies(rows, k, ns, A.dtype, Bs):
        return None
    # the weights themselves (their plan is kept per object, as local's)
    with torch.no_grad():
        outs = _decode_mm(A.reshape(-1, k), Bs, rows, k, ns, act)
    return [c.view(lead + [c_cols(n, act)]) for c, n in zip(outs, ns)]
