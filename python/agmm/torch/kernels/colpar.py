"""column_parallel_matmul's CPU kernel: [A @ B_i] on this rank, no
communication, through local.py's local_mm (agmm's engine where it
applies, torch's matmul below its bounds); the Function, its backward and
the op's Autograd kernel are autograd/colpar.py's.
"""
import torch

from ...errors import InvalidArgument
from .dispatch import plain_cpu
from .local import local_mm


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
