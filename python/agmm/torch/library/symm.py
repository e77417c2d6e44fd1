"""agmm's CPU kernels under torch.ops.symm_mem.fused_all_gather_matmul and
fused_matmul_reduce_scatter, where the installed torch defines them (torch
2.6 once torch.distributed._symmetric_memory is imported: schemas
(Tensor A, Tensor[] Bs, int gather_dim, str group_name) -> (Tensor,
Tensor[]) and (Tensor A, Tensor B, str reduce_op, int scatter_dim, str
group_name) -> Tensor, CUDA and Meta kernels, none for CPU), so code
written for PyTorch's async-TP runs on CPU tensors unchanged.

group_name is a torch.distributed group's name (group.group_name): the
agmm group registered under that name (agmm.torch.register_group(
group.group_name, world)), else, for torch.distributed's default group,
agmm's default group (the world of the environment, as agmm.torch's own
ops with group_name None). The results are agmm's ops' (A's dtype, the
gathered A always returned, as torch's); no autograd (torch's ops have
none either).
"""
import importlib

import torch

from ...errors import InvalidArgument
from ..kernels.fp import ag_kernel, rs_kernel
from ..distributed.groups import DEFAULT_GROUP, registered

REGISTERED = False  # set by register() when torch has the ops


def _agmm_group(group_name):
    """The agmm group for a torch.distributed group's name."""
    if registered(group_name):
        return group_name
    import torch.distributed as dist
    if dist.is_available() and dist.is_initialized() and \
            dist.group.WORLD is not None and \
            group_name == dist.group.WORLD.group_name:
        return DEFAULT_GROUP
    raise InvalidArgument(
        "group_name %r: no agmm group for this torch.distributed group (agmm."
        "torch.register_group(group.group_name, world) first; the default "
        "group maps to agmm's default world)" % (group_name,))


def _ag(A, Bs, gather_dim, group_name):
    A_g, Cs = ag_kernel(A, list(Bs), gather_dim, _agmm_group(group_name), True)
    return A_g, Cs


def _rs(A, B, reduce_op, scatter_dim, group_name):
    return rs_kernel(A, B, reduce_op, scatter_dim, _agmm_group(group_name))


def register():
    """Register the CPU kernels where torch defines the ops (once)."""
    global REGISTERED, _lib
    if REGISTERED:
        return True
    try:
        # importing it defines the ops
        importlib.import_module("torch.distributed._symmetric_memory")
    except Exception:  # torch 1.13, or no torch.distributed
        return False
    ns = torch.ops.symm_mem
    if not (hasattr(ns, "fused_all_gather_matmul") and
            hasattr(ns, "fused_matmul_reduce_scatter")):
        return False
    _lib = torch.library.Library("symm_mem", "IMPL")
    _lib.impl("fused_all_gather_matmul", _ag, "CPU")
    _lib.impl("fused_matmul_reduce_scatter", _rs, "CPU")
    REGISTERED = True
    return True
