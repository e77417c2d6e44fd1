"""The tensor-parallel layer's ops in torch (issue 23): agmm.torch's
fused_all_gather_matmul, fused_matmul_reduce_scatter and
fused_matmul_all_reduce with bias and activations, forward and every
gradient against the same layer built from torch.distributed (gloo)
collectives (tp_worker.py) at 2, 3 (uneven shards and k splits) and 4
ranks; the Meta kernels under FakeTensorMode (shapes, dtypes, autograd
graph, no world made); argument errors before any communication.
"""
import os
import re

import pytest
import torch

import agmm
import agmm.torch as at
from conftest import run_world

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "tp_worker.py")
HAS_AR = at.plan_op_available("gemm-ar")


def ag_cases(P, uneven):
    m = [5 + 2 * r for r in range(P)] if uneven else [6] * P
    return [
        dict(op="ag", m=m, k=24, n=[16], bias=False, acts=[None]),
        dict(op="ag", m=m, k=24, n=[16, 8], bias=True, acts=["silu", None],
             repeat=2),
        dict(op="ag", m=m, k=32, n=[8, 8], bias=True, acts=["gelu-tanh", "relu"],
             dtype="bf16"),
        dict(op="ag", m=m, k=16, n=[8, 4], bias=True, acts=["silu", None],
             gather_dim=1),
    ]


def red_cases(op, P, uneven):
    kl = [4 + 3 * r for r in range(P)] if uneven else [8] * P
    M = 7 if uneven else 4 * P
    return [
        dict(op=op, M=M, k_local=kl, n=12, bias=False, act=None),
        dict(op=op, M=M, k_local=kl, n=12, bias=True, act="gelu-erf", repeat=2),
        dict(op=op, M=M, k_local=kl, n=16, bias=True, act="silu", dtype="bf16"),
    ] + ([dict(op=op, M=M, k_local=kl, n=8, bias=True, act="relu", scatter_dim=1)]
         if op == "rs" else []) + ([  # rank 1 holds none of k
        dict(op=op, M=M, k_local=[0 if r == 1 else k for r, k in enumerate(kl)],
             n=12, bias=True, act="silu"),
        dict(op=op, M=M, k_local=[0 if r == 1 else k for r, k in enumerate(kl)],
             n=16, bias=False, act=None, dtype="bf16", no_grad=True),
    ] if uneven else [])


@pytest.mark.parametrize("nranks,uneven", [(2, False), (3, True), (4, False)])
def test_all_gather_and_reduce_scatter_grads_match_gloo(nranks, uneven):
    cases = ag_cases(nranks, uneven) + red_cases("rs", nranks, uneven)
    run_world(nranks, "grads", dict(cases=cases), timeout=240, worker=WORKER)


@pytest.mark.parametrize("nranks,dtype", [(2, "fp32"), (3, "bf16")])
def test_training_steps_keep_their_plans(nranks, dtype):
    run_world(nranks, "steps", dict(h=16, i=8 * nranks, m=5, steps=4, dtype=dtype),
              timeout=240, worker=WORKER)


@pytest.mark.parametrize("nranks", [2, 3])
def test_decode_rows_change_every_call(nranks):
    """A decode step's calls, their rows changing every call, through the
    three fused ops with bf16 tensors (the kernels' bits) and int4
    QuantizedWeights (the dequantized product): no plan is made once one
    holds the largest rows, and disagreeing rows still raise on every
    rank."""
    assert HAS_AR, "agmm.torch.plan_op_available('gemm-ar') is False"
    run_world(nranks, "decode", {}, timeout=240, worker=WORKER)


@pytest.mark.parametrize("nranks", [2, 3])
def test_deep_models_keep_their_plans(nranks):
    """12 layers' weights called in turn make their plans once (no bound
    by count by default); dropped weights' plans are closed at the next
    creation; plan_cache_size bounds the plans kept, and a bad one is
    refused by name."""
    assert HAS_AR, "agmm.torch.plan_op_available('gemm-ar') is False"
    run_world(nranks, "layers", {}, timeout=240, worker=WORKER)


@pytest.mark.parametrize("nranks,dtype", [(2, "bf16"), (3, "fp32")])
def test_plain_calls_match_the_kernels(nranks, dtype):
    """agmm.torch's plain calls (no grad, no epilogue:
    python/agmm/torch/kernels/plain.py) give the CPU kernels' bits and
    errors, through repeats, changing rows and dims, weights changed in
    place and a disagreeing rank."""
    assert HAS_AR, "agmm.torch.plan_op_available('gemm-ar') is False"
    run_world(nranks, "plain", dict(dtype=dtype), timeout=240, worker=WORKER)


@pytest.mark.parametrize("nranks,uneven", [(2, False), (3, True), (4, False)])
def test_all_reduce_grads_match_gloo(nranks, uneven):
    assert HAS_AR, "agmm.torch.plan_op_available('gemm-ar') is False"
    run_world(nranks, "grads", dict(cases=red_cases("ar", nranks, uneven)),
              timeout=240, worker=WORKER)


def cp_cases(P, uneven):
    ns = [[4 + r, 3 + 2 * r] for r in range(P)] if uneven else [[8, 8]] * P
    return [
        dict(op="cp", lead=[7], k=12, n=ns, use=[0, 1]),
        dict(op="cp", lead=[2, 5], k=16, n=ns, use=[1], repeat=2),
        dict(op="cp", lead=[6], k=24, n=[[n[0]] for n in ns], use=[0],
             dtype="bf16"),
        dict(op="cp", lead=[5], k=8, n=ns, use=[0, 1], a_grad=False),
        dict(op="cp", lead=[0], k=8, n=ns, use=[0, 1]),  # no rows: no round
        dict(op="cp", lead=[4], k=0, n=ns, use=[0, 1]),  # no k: no round
    ] + ([  # rank 1 holds no columns: it adds zeros to the round
        dict(op="cp", lead=[5], k=8, use=[0, 1],
             n=[[0, 0] if r == 1 else n for r, n in enumerate(ns)]),
    ] if uneven else [])


@pytest.mark.parametrize("nranks,uneven", [(2, False), (3, True), (4, False)])
def test_column_parallel_input_grad_is_all_reduced(nranks, uneven):
    """agmm.torch.column_parallel_matmul: local forward, the replicated
    input's gradient summed over the ranks (Megatron's f) by one gemm-ar
    round, the weights' local; against gloo's all-reduce."""
    assert HAS_AR, "agmm.torch.plan_op_available('gemm-ar') is False"
    run_world(nranks, "grads", dict(cases=cp_cases(nranks, uneven)),
              timeout=240, worker=WORKER)


def test_column_parallel_bad_weights_fail_before_any_world():
    """A weight whose rows or dtype do not match A's last dimension is an
    InvalidArgument naming it, before any group is looked up."""
    from agmm.torch.distributed import groups as _torch_groups
    before = set(_torch_groups._groups)
    x = torch.zeros(3, 8)
    for Bs, words in (([torch.zeros(8, 4), torch.zeros(7, 4)], "Bs[1]: [7, 4]"),
                      ([torch.zeros(8, 4, dtype=torch.bfloat16)],
                       "Bs[0]: [8, 4] torch.bfloat16"),
                      ([torch.zeros(8)], "Bs[0]: [8]")):
        with pytest.raises(agmm.InvalidArgument, match=re.escape(words)):
            at.column_parallel_matmul(x.requires_grad_(True), Bs, group_name="nope")
    assert set(_torch_groups._groups) == before


def test_meta_kernels_under_fake_tensors(monkeypatch):
    """Shapes and dtypes from the Meta kernels, with every rank's shard
    taken to be this one's size; no world is made (the default group comes
    from WORLD_SIZE/RANK without joining)."""
    from torch._subclasses.fake_tensor import FakeTensor, FakeTensorMode
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setenv("RANK", "3")
    for key in ("AGMM_WORLD_SIZE", "AGMM_RANK"):
        monkeypatch.delenv(key, raising=False)
    from agmm.torch.distributed import groups as _torch_groups
    assert "default" not in _torch_groups._groups
    with FakeTensorMode():
        a = torch.empty(6, 5, 32, dtype=torch.bfloat16)
        w1 = torch.empty(32, 16, dtype=torch.bfloat16, requires_grad=True)
        w2 = torch.empty(32, 8, dtype=torch.bfloat16)
        A, (c1, c2) = at.fused_all_gather_matmul(a, [w1, w2], gather_dim=1,
                                                 out_dtype=[None, torch.float32])
        assert isinstance(c1, FakeTensor)
        assert A.shape == (6, 20, 32) and A.dtype == torch.bfloat16
        assert c1.shape == (6, 20, 16) and c1.dtype == torch.bfloat16  # A's
        assert c2.shape == (6, 20, 8) and c2.dtype == torch.float32
        assert c1.grad_fn is not None  # the autograd kernel ran on fakes
        A, cs = at.fused_all_gather_matmul(a, [w2], return_A=False)
        assert A is None and cs[0].shape == (24, 5, 8)
        # gated: B [32, 16] = [gate | up] gives C of 8 columns
        A, (cg,) = at.fused_all_gather_matmul(a, [w1], return_A=False,
                                              activation="silu_mul")
        assert cg.shape == (24, 5, 8) and cg.grad_fn is not None
        x = torch.empty(10, 3, 32, dtype=torch.float16)
        w = torch.empty(32, 12, dtype=torch.float16)
        # 10 rows over 4 ranks: 3, 3, 2, 2; rank 3 gets 2.
        c = at.fused_matmul_reduce_scatter(x, w.requires_grad_(True),
                                           activation="silu")
        assert c.shape == (2, 3, 12) and c.dtype == torch.float16
        assert c.grad_fn is not None
        c = at.fused_matmul_reduce_scatter(x, w, scatter_dim=1,
                                           out_dtype=torch.bfloat16)
        assert c.shape == (10, 0, 12) and c.dtype == torch.bfloat16
        c = at.fused_matmul_all_reduce(x, w, bias=torch.empty(12))
        assert c.shape == (10, 3, 12) and c.dtype == torch.float16
        c = at.fused_matmul_all_reduce(x, w, out_dtype=torch.float32)
        assert c.dtype == torch.float32
        xr = torch.empty(4, 32, dtype=torch.bfloat16, requires_grad=True)
        c1, c2 = at.column_parallel_matmul(
            xr, [torch.empty(32, 16, dtype=torch.bfloat16),
                 torch.empty(32, 8, dtype=torch.bfloat16)])
        assert c1.shape == (4, 16) and c2.shape == (4, 8)
        assert c1.dtype == torch.bfloat16 and c1.grad_fn is not None
        q = torch.empty(6, 32, dtype=torch.int8)
        s = torch.empty(6, 1)
        A, (c,) = at.fused_all_gather_scaled_matmul(
            q, [torch.empty(32, 8, dtype=torch.int8)], s, [torch.empty(1, 8)],
            out_dtypes=torch.bfloat16)
        assert A.shape == (24, 32) and A.dtype == torch.int8
        assert c.shape == (24, 8) and c.dtype == torch.bfloat16
        c = at.fused_scaled_matmul_reduce_scatter(
            torch.empty(9, 32, dtype=torch.int8), torch.empty(32, 8, dtype=torch.int8),
            torch.empty(9, 1), torch.empty(1, 8))
        assert c.shape == (2, 8) and c.dtype == torch.float32
    assert "default" not in _torch_groups._groups


def test_direct_path_only_for_plain_cpu_tensors():
    """agmm.torch's functions skip the dispatcher only for plain CPU tensors
    outside any mode (python/agmm/torch/kernels/dispatch.py's plain_cpu);
    fakes, meta tensors, subclasses, sparse tensors and an active dispatch
    mode go through torch.ops.agmm.* (the Meta kernel, the mode's
    handler)."""
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode
    from agmm.torch.library.ops import _plain_cpu

    class Sub(torch.Tensor):
        pass

    class Seen(TorchDispatchMode):
        def __init__(self):
            super().__init__()
            self.ops = []

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            self.ops.append(str(func))
            return func(*args, **(kwargs or {}))

    a = torch.ones(4, 3, dtype=torch.bfloat16)
    assert _plain_cpu([a, None, torch.ones(3, requires_grad=True)])
    assert not _plain_cpu([a, torch.empty(3, device="meta")])
    assert not _plain_cpu([a.to_sparse()])
    assert not _plain_cpu([torch.ones(2).as_subclass(Sub)])
    fake = FakeTensorMode()
    assert not _plain_cpu([fake.from_tensor(a)])
    with fake:
        assert not _plain_cpu([a])
    mode = Seen()
    with mode:
        assert not _plain_cpu([a])
        # Under a mode the op is dispatched (and so seen), then fails in
        # its kernel for want of a group, as it would without the mode.
        with pytest.raises(Exception, match="group_name"):
            at.fused_matmul_all_reduce(a, torch.ones(3, 2, dtype=torch.bfloat16),
                                       group_name="no-such-group")
    assert any("agmm.fused_matmul_all_reduce" in op for op in mode.ops), mode.ops


@pytest.mark.parametrize("call,words", [
    (lambda: at.fused_matmul_reduce_scatter(torch.ones(4, 3), torch.ones(3, 2),
                                            activation="tanh"),
     ["activation", "'tanh'", "silu"]),
    (lambda: at.fused_matmul_reduce_scatter(torch.ones(4, 3), torch.ones(3, 2),
                                            bias=torch.ones(3)),
     ["bias", "[3]", "shape [2]"]),
    (lambda: at.fused_matmul_all_reduce(torch.ones(4, 3), torch.ones(3, 2),
                                        out_dtype=torch.int32),
     ["out_dtype", "int32"]),
    (lambda: at.fused_all_gather_matmul(torch.ones(4, 3), [torch.ones(3, 2)] * 2,
                                        activation=["relu"]),
     ["activations", "1 for 2 weights"]),
])
def test_bad_epilogue_arguments_fail_before_any_world(call, words):
    from agmm.torch.distributed import groups as _torch_groups
    with pytest.raises(agmm.InvalidArgument) as e:
        call()
    for w in words:
        assert w in str(e.value), (w, str(e.value))
    assert "default" not in _torch_groups._groups


def test_trace_summaries_from_python(tmp_path):
    """agmm.Trace (bench/tp_layer.py reads where a round's time goes)."""
    run_world(2, "trace", dict(json=str(tmp_path / "t%d.json")), worker=WORKER)
