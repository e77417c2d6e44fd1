"""agmm.torch.column_parallel_matmul with agmm.QuantizedWeight weights
(issue 48 item 5): the forward local, agmm's weight kernels (the "wq"
engine) on this process's one-rank plan at every row count; the backward's
dA all-reduced in one gemm-ar round against the dequantized weights, as
for tensors. Here: the one-rank plans and the forward's local GEMMs
(local_matmul); the Function and the call are autograd/wq.py's, the
checks, the format and the dequantized W^T kernels/wq.py's; traced, the
forward is torch.ops.agmm.column_parallel_matmul_wq (library/wq_ops.py),
as there. With an activation (column_parallel_matmul's activation=, in
inference) the one-rank plan applies it in its epilogue: from the GEMM's
float32 sums, rounded once into A's dtype, a gated one's [rows, n] product
never written.
"""
import torch

from ..._lib import SCHEDULES
from ..distributed.groups import DT, as_rows
from .epilogue import c_cols
from .plain import rows_array

# (ids of the QuantizedWeights, shape key) -> ([weak references], plan): a
# plan lives as long as its weights do (closed at the next miss after one
# of them is gone), so a deep model's layers, each called in turn, never
# make a plan again (a bounded LRU would repack every weight on every call
# once the layers outnumber it).
_local_plans = {}
_arrays = {}  # rows -> ctypes array (kernels/plain.py's rows_array)
_FUSED = SCHEDULES["fused"]


def _local_plan(m, k, Qs, dtname, fmt, act=None):
    """This process's one-rank plan (kernels/local.py's _world) for up to
    capacity(m) rows of [m, k] @ the QuantizedWeights Qs, made for these
    very objects (their parts set once, when it is made), replaced by a
    larger one when a call needs more rows; act (an activation name of
    kernels/epilogue.py, or None) in its epilogue, for every weight.
    Local: nothing collective."""
    from ..distributed.plan_cache import capacity
    from .local import _world
    import weakref
    key = (tuple(id(q) for q in Qs), k, tuple(int(q.n) for q in Qs), dtname,
           fmt, act)
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
                   group_size=None if fmt[2] else fmt[1], zero_point=bool(fmt[3]),
                   a_quant="int8" if fmt[4] else "none",
                   activation=act or "none")
    p.set_weights(list(Qs))
    _local_plans[key] = ([weakref.ref(q) for q in Qs], p)
    return p


def local_matmul(A, Qs, fmt, act=None):
    """[act(A @ W_i)] on this rank, each [..., n_i] (a gated act: n_i / 2)
    in A's dtype: agmm's weight kernels on a one-rank plan (_local_plan),
    act (None: none) in its epilogue."""
    k = int(A.shape[-1])
    lead = [int(s) for s in A.shape[:-1]]
    a2 = as_rows(A)
    m = int(a2.shape[0])
    ns = [c_cols(int(q.n), act) for q in Qs]
    if m == 0:
        return [A.new_zeros(lead + [n]) for n in ns]
    p = _local_plan(m, k, Qs, DT[A.dtype][1], fmt, act)
    a2 = a2.contiguous()
    outs = [torch.empty((m, n), dtype=A.dtype) for n in ns]
    if all(ns):  # the round straight (every tensor checked)
        p._run_args_tensor(a2, outs, _FUSED, rows_array(_arrays, [m]))
    else:
        p.run(a2, out=outs if len(outs) > 1 else outs[0], schedule="fused",
              m_rows=[m])
    return [c.view(lead + [n]) for c, n in zip(outs, ns)]
