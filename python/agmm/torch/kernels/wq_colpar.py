"""agmm.torch.column_parallel_matmul with agmm.QuantizedWeight weights
(issue 48 item 5): the forward local, agmm's weight kernels (the "wq"
engine) on this process's one-rank plan at every row count; the backward's
dA all-reduced in one gemm-ar round against the dequantized weights, as
for tensors. The checks, the format and the dequantized W^T are
kernels/wq.py's (the fused ops' quantized path); traced, the forward is
torch.ops.agmm.column_parallel_matmul_wq (library/wq_ops.py), as there.
"""
import torch

from ..._lib import SCHEDULES
from ..distributed.groups import DT, as_rows, get_group
from .calls import all_reduce_round
from .plain import rows_array
from .dispatch import plain_cpu
from .wq import _bwd_qweight, check_a, check_weights

# (ids of the QuantizedWeights, shape key) -> ([weak references], plan): a
# plan lives as long as its weights do (closed at the next miss after one
# of them is gone), so a deep model's layers, each called in turn, never
# make a plan again (a bounded LRU would repack every weight on every call
# once the layers outnumber it).
_local_plans = {}
_arrays = {}  # rows -> ctypes array (kernels/plain.py's rows_array)
_FUSED = SCHEDULES["fused"]


def _local_plan(m, k, Qs, dtname, fmt):
    """This process's one-rank plan (kernels/local.py's _world) for up to
    capacity(m) rows of [m, k] @ the QuantizedWeights Qs, made for these
    very objects (their parts set once, when it is made), replaced by a
    larger one when a call needs more rows. Local: nothing collective."""
    from ..distributed.plan_cache import capacity
    from .local import _world
    import weakref
    key = (tuple(id(q) for q in Qs), k, tuple(int(q.n) for q in Qs), dtname, fmt)
    got = _local_plans.get(key)
    if got is not None:
        refs, p = got
        if all(r() is q for r, q in zip(refs, Qs)) and not p.closed and \
                p.m_local[0] >= m:
            return p
    for kk in [kk for kk, (refs, p) in _local_plans.items()
               if kk == key or any(r() is None for r in refs)]:
        _local_plans.pop(kk)[1].close()
    world = _world()
    p = world.plan([capacity(m)], k, list(key[2]), dtype=dtname, out_dtype=dtname,
                   comm_workers=0, gemm_workers=max(1, torch.get_num_threads()),
                   weight_dtype="int%d" % fmt[0],
                   group_size=None if fmt[2] else fmt[1], zero_point=bool(fmt[3]))
    p.set_weights(list(Qs))
    _local_plans[key] = ([weakref.ref(q) for q in Qs], p)
    return p


def local_matmul(A, Qs, fmt):
    """[A @ W_i] on this rank, each [..., n_i] in A's dtype: agmm's weight
    kernels on a one-rank plan (_local_plan)."""
    k = int(A.shape[-1])
    lead = [int(s) for s in A.shape[:-1]]
    a2 = as_rows(A)
    m = int(a2.shape[0])
    if m == 0:
        return [A.new_zeros(lead + [int(q.n)]) for q in Qs]
    p = _local_plan(m, k, Qs, DT[A.dtype][1], fmt)
    a2 = a2.contiguous()
    outs = [torch.empty((m, int(q.n)), dtype=A.dtype) for q in Qs]
    if all(int(q.n) for q in Qs):  # the round straight (every tensor checked)
        p._run_args_tensor(a2, outs, _FUSED, rows_array(_arrays, [m]))
    else:
        p.run(a2, out=outs if len(outs) > 1 else outs[0], schedule="fused",
              m_rows=[m])
    return [c.view(lead + [int(q.n)]) for c, q in zip(outs, Qs)]


class ColumnParallelMatmulQ(torch.autograd.Function):
    """ColumnParallelMatmul (autograd/colpar.py) with QuantizedWeights: dA = sum
    over ranks of sum_i dC_i @ W_i^T in one gemm-ar round against the
    dequantized W_i^T stacked; no gradient for the weights."""

    @staticmethod
    def forward(ctx, info, A):
        group, Qs, fmt = info
        ctx.info = info
        ctx.a_shape = list(A.shape)
        ctx.a_dtype = A.dtype
        return tuple(local_matmul(A, Qs, fmt))

    @staticmethod
    def backward(ctx, *gys):
        group, Qs, _ = ctx.info
        dt = ctx.a_dtype
        rows = 1
        for s in ctx.a_shape[:-1]:
            rows *= s
        if rows == 0:  # A is the same on every rank: every rank is here
            return None, torch.zeros(ctx.a_shape, dtype=dt)
        gz = torch.cat([(gy if gy is not None else
                         torch.zeros(ctx.a_shape[:-1] + [int(q.n)], dtype=dt))
                        .reshape(rows, int(q.n)).to(dt)
                        for gy, q in zip(gys, Qs)], 1).contiguous()
        W = _bwd_qweight(get_group(group), list(Qs), dt)  # [sum n_i, k]
        dA = all_reduce_round(gz, W, group, dt)
        return None, dA.view(ctx.a_shape)


def column_parallel_matmul(A, Qs, group_name):
    """agmm.torch.column_parallel_matmul with QuantizedWeights Qs: the
    forward local (agmm's weight kernels on a one-rank plan, at every row
    count), the backward's dA all-reduced as for tensors."""
    Qs = list(Qs)
    if isinstance(A, torch.Tensor) and not plain_cpu([A]):
        # Traced (torch.compile, FakeTensor): the registered op
        from .wq_traced import traced_cp
        return traced_cp(A, Qs, group_name)
    check_a(A, "A")
    fmt = check_weights(Qs, int(A.shape[-1]), "Bs", "A")
    if torch.is_grad_enabled() and A.requires_grad:
        return list(ColumnParallelMatmulQ.apply((group_name, tuple(Qs), fmt), A))
    return local_matmul(A, Qs, fmt)
