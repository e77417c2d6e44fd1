"""torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter
on CPU tensors run agmm's kernels (python/agmm/torch/library/symm.py) at 2 ranks
(symm_worker.py). Registered by tests/CMakeLists.txt only where the
interpreter's torch defines the ops (torch 2.6, Debian 13).
"""
import os

import torch

import agmm.torch as at
from conftest import run_world

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "symm_worker.py")


def test_cpu_kernels_registered():
    assert at.SYMM_MEM_CPU
    for name in ("fused_all_gather_matmul", "fused_matmul_reduce_scatter"):
        assert torch._C._dispatch_has_kernel_for_dispatch_key(
            "symm_mem::" + name, "CPU"), name


def test_symm_mem_ops_on_cpu_match_gloo():
    run_world(2, "symm", {}, timeout=240, worker=WORKER)
