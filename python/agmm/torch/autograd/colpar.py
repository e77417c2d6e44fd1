"""column_parallel_matmul(A, Bs, group_name): the column-parallel GEMMs of
plain tensor parallelism on an input every rank holds whole (Megatron's
ColumnParallelLinear after its "copy to the tensor-parallel region"),
with the all-reduce of their input's gradient through agmm.

  forward   C_i = A @ B_i on this rank, no communication (A [..., k], the
            same on every rank; B_i [k, n_i], this rank's columns of the
            layer's weight i), through kernels/local.py's local_mm: agmm's engine
            where it applies, torch's matmul below its bounds (decode's
            few rows), outputs advised for huge pages either way (what
            the plain-TP MLP's prefill forward gains most from: 0.38-0.43
            of gloo's time against 0.51-0.55 with `x @ w`, docs/python.md).
  backward  dA   = sum over ranks r of sum_i dC_i,r @ B_i,r^T, the same on
                   every rank: the all-reduce a replicated input needs
                   (Megatron's "f": identity forward, all-reduce backward).
                   One GEMM + all-reduce round (fused_matmul_all_reduce,
                   op "gemm-ar") of every dC_i side by side ([rows, sum n_i])
                   against the B_i^T stacked ([sum n_i, k], kept per weight
                   version: plan_cache.backward_weight), so the reduction of
                   dA's tiles overlaps the GEMM of the next ones instead of
                   following this rank's whole share. sum n_i may differ
                   between ranks (gemm-ar gives each rank its own k,
                   none at all included).
            dB_i = A^T @ dC_i (local; one plan for every i where agmm's
                   engine applies: kernels/local.py's local_mm).

Without it a replicated input's gradient is this rank's share only; a
stacked model must then all-reduce it itself. The backward is collective:
every rank must run it (with A requiring grad on every rank or on none),
as every agmm op. dA has A's dtype (the round's own epilogue rounds the
float32 sums once); dB_i the weights'. The forward's local GEMMs (the
op's CPU kernel) are kernels/colpar.py's.
"""
import torch

from ..._buffers import scratch_copy, scratch_torch
from ...qweight import QuantizedWeight
from ..distributed.groups import get_group
from ..distributed.plan_cache import backward_weight
from ..kernels.calls import all_reduce_round
from ..kernels.colpar import check, local, local_act, params_plain
from ..kernels.epilogue import ACTIVATIONS, GATED, activation_name
from ...errors import InvalidArgument
from ..kernels.local import local_mm
from . import wq as _wq
from ..kernels.dispatch import compiling


def _all_reduce_matmul(gz, W, group, out_dtype):
    """fused_matmul_all_reduce(gz, W) in out_dtype (None: gz's dtype): the
    plain call for plain CPU tensors, else the registered op (a FakeTensor
    reaches its Meta kernel)."""
    return all_reduce_round(gz, W, group, out_dtype)


class ColumnParallelMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, group, A, *Bs):
        ctx.group = group
        ctx.save_for_backward(A, *Bs)
        if params_plain([A] + list(Bs)):
            return tuple(local(A, Bs))
        # Traced (FakeTensor, torch.compile's AOTAutograd): the op itself,
        # one node of the graph.
        from .functions import below_autograd
        return tuple(below_autograd(torch.ops.agmm.column_parallel_matmul, A,
                                    list(Bs), group))

    @staticmethod
    def backward(ctx, *gys):
        A, *Bs = ctx.saved_tensors
        if not params_plain([A] + list(Bs) + [g for g in gys if g is not None]):
            return _traced_backward(ctx, A, Bs, gys)
        dt = Bs[0].dtype
        k = int(A.shape[-1])
        rows = 1
        for d in A.shape[:-1]:
            rows *= int(d)
        ns = [int(B.shape[1]) for B in Bs]
        if k == 0:  # no products, on any rank (A is replicated): no round
            dA = torch.zeros_like(A) if ctx.needs_input_grad[1] else None
            dBs = [torch.zeros_like(B) if ctx.needs_input_grad[2 + i] else None
                   for i, B in enumerate(Bs)]
            return (None, dA, *dBs)
        # Every dC_i in the weights' dtype, side by side in warm scratch
        # memory (one operand for the round; a missing one is zeros).
        if len(Bs) == 1 and gys[0] is not None and gys[0].dtype == dt and \
                gys[0].is_contiguous():
            gz = gys[0].reshape(rows, ns[0])
        else:
            gz = scratch_torch("cp-bwd-dz", (rows, sum(ns)), dt, A)
            c0 = 0
            for gy, n in zip(gys, ns):
                if gy is None:
                    gz[:, c0:c0 + n].zero_()
                else:
                    gz[:, c0:c0 + n].copy_(gy.reshape(rows, n))
                c0 += n
        dA = None
        if ctx.needs_input_grad[1] and rows == 0:
            dA = torch.zeros_like(A)  # no rows on any rank (A is replicated)
        elif ctx.needs_input_grad[1]:
            # [sum n_i, k]; a rank without columns adds nothing (k = 0)
            W = backward_weight(get_group(ctx.group).cache, list(Bs))
            dA = _all_reduce_matmul(gz, W, ctx.group, A.dtype).view(A.shape)
            if dA.dtype != A.dtype:
                dA = dA.to(A.dtype)
        want = [i for i in range(len(Bs)) if ctx.needs_input_grad[2 + i]]
        dBs = [None] * len(Bs)
        if want:
            # A^T contiguous once for every weight's dB (torch's matmul is
            # slower on the transposed view).
            At = scratch_copy("cp-bwd-at", A.reshape(rows, k).t())
            c0s = [sum(ns[:i]) for i in range(len(Bs))]
            got = local_mm(At, [gz[:, c0s[i]:c0s[i] + ns[i]] for i in want], dt)
            for i, d in zip(want, got):
                dBs[i] = d
        return (None, dA, *dBs)


def _traced_backward(ctx, A, Bs, gys):
    """The backward in torch ops and torch.ops.agmm.* only (traceable:
    torch.compile's AOTAutograd, FakeTensor): the same products, dA's
    all-reduce by backward_round "cp" (fused_matmul_all_reduce against the
    B_i^T stacked and kept per weight version)."""
    dt = Bs[0].dtype
    k = int(A.shape[-1])
    lead = list(A.shape[:-1])
    ns = [int(B.shape[1]) for B in Bs]
    gz = torch.cat([(gy if gy is not None else A.new_zeros(lead + [n])).to(dt)
                    for gy, n in zip(gys, ns)], -1).reshape(-1, sum(ns))
    dA = None
    if ctx.needs_input_grad[1]:
        (dA,) = torch.ops.agmm.backward_round(gz, list(Bs), "cp", ctx.group,
                                              A.dtype)
        dA = dA.view(A.shape)
    At = A.reshape(-1, k).t()
    dBs, c0 = [], 0
    for i, n in enumerate(ns):
        dBs.append((At @ gz[:, c0:c0 + n]).to(dt) if ctx.needs_input_grad[2 + i]
                   else None)
        c0 += n
    return (None, dA, *dBs)


def cp_autograd(A, Bs, group_name):
    """The op's Autograd kernel: the Function when a gradient is wanted,
    else the op below autograd (the CPU or the fake kernel)."""
    from .functions import below_autograd
    Bs = list(Bs)
    if torch.is_grad_enabled() and any(t.requires_grad for t in [A] + Bs):
        return list(ColumnParallelMatmul.apply(group_name, A, *Bs))
    return below_autograd(torch.ops.agmm.column_parallel_matmul, A, Bs,
                          group_name)


def column_parallel_matmul(A, Bs, group_name):
    """[A @ B_i] with the backward above (group_name resolved by the
    caller); without a gradient to keep, the local matmuls alone."""
    Bs = list(Bs)
    if not Bs:
        return []
    if any(isinstance(B, QuantizedWeight) for B in Bs):
        # agmm.QuantizedWeights: eager (wq.py)
        return _wq.column_parallel_matmul(A, Bs, group_name)
    if compiling():  # one node of torch.compile's graph
        return torch.ops.agmm.column_parallel_matmul(A, Bs, group_name)
    check(A, Bs)
    if not (torch.is_grad_enabled() and
            any(t.requires_grad for t in [A] + Bs)):
        return local(A, Bs)
    return list(ColumnParallelMatmul.apply(group_name, A, *Bs))


def _after(C, act):
    """act applied to a product C in its dtype (differentiable, traceable):
    silu_and_mul for "silu-mul" (no whole float32 temporary), else the
    activation on float32, rounded back."""
    if act == "silu-mul":
        from .glu import silu_and_mul
        i = int(C.shape[-1]) // 2
        return silu_and_mul(C[..., :i], C[..., i:])
    return ACTIVATIONS[act](C.float()).to(C.dtype)


def column_parallel_matmul_act(A, Bs, group_name, activation):
    """column_parallel_matmul with one activation on every C_i (agmm.torch's
    text): in the local GEMMs' epilogue where agmm's decode kernels run
    them in inference (QuantizedWeights; bf16 weights at up to
    DECODE_ROWS rows), else the products, then the activation."""
    act = activation_name(activation)
    Bs = list(Bs)
    if act is None:
        return column_parallel_matmul(A, Bs, group_name)
    if act in GATED:
        for i, B in enumerate(Bs):
            n = int(B.n) if isinstance(B, QuantizedWeight) else \
                int(B.shape[-1]) if isinstance(B, torch.Tensor) and B.dim() == 2 \
                else 0
            if n % 2:
                raise InvalidArgument(
                    "Bs[%d]: %d columns with activation %r (a gated activation "
                    "takes [gate | up] halves: an even count)" % (i, n, act))
    if Bs and not compiling():
        if all(isinstance(B, QuantizedWeight) for B in Bs):
            got = _wq.column_parallel_matmul_fused(A, Bs, act)
        elif not any(isinstance(B, QuantizedWeight) for B in Bs):
            got = local_act(A, Bs, act)
        else:
            got = None
        if got is not None:
            return got
    return [_after(C, act) for C in column_parallel_matmul(A, Bs, group_name)]
