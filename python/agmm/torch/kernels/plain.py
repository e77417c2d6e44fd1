"""The plain calls of agmm.torch's fp ops: plain CPU tensors, no gradient
needed (the calls of inference; a decode step makes them every step).
They return what the CPU kernels of kernels/fp.py return, raise the same
errors and make the same collective decisions, with less Python per call
(docs/history/, "The op's own cost"):

  - a call with the arguments of this rank's previous call of the op in
    the group (A's shape but for the gathered dimension, its dtype, the
    dimension, the very weight tensors at the same versions) skips the
    local checks, which the same arguments passed then (_Memo);
  - a call whose shape all-gather brings the same bytes as the previous
    call's (every rank's shape and cached-plan serial unchanged) while
    that call's plan is still the group's most recently used skips the
    plan lookup, which would find that plan and move nothing: every rank
    received the same bytes and holds the same cache, so all decide alike;
  - the round goes straight to agmm_plan_run or agmm_plan_run_args
    (Plan._run_tensor, Plan._run_args_tensor) with outputs made here,
    when A's rows are non-empty and contiguous.

The epilogue is the plan's own where the kernel's is (no bias, one out
dtype: kernels/fp.py's lib_epilogue), else applied in place on the op's fresh
float32 outputs (kernels/epilogue.py's apply_epilogue_: the same values as
apply_epilogue). Anything else (new
arguments, a plan to make, an empty shard) takes the kernels' own steps.
"""
import ctypes
import struct
import weakref

import torch

_OUT_DT = {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}
_OUT_NAMES = {torch.bfloat16: "bf16", torch.float16: "fp16"}

from ..._lib import SCHEDULES
from .epilogue import apply_epilogue_, default_out
from .fp import (_MAX_LEAD, ag_agree, ag_check, ag_epilogue, ag_run,
                 ag_views, lib_epilogue, reduce_agree, reduce_check,
                 reduce_core, reduce_epilogue, row_split)
from ..distributed.groups import DT, as_rows, get_group, split_rows
from ..distributed.plan_cache import ag_key, ag_plan, reduce_key, set_weights


_Q = struct.Struct("<q")
# A's dtype -> the plan epilogue (lib_epilogue's) of nw weights without a
# bias, an activation or an out dtype.
_LIB_OUT = {torch.float32: lambda nw: None,
            torch.bfloat16: lambda nw: (("none",) * nw, "bf16"),
            torch.float16: lambda nw: (("none",) * nw, "fp16")}


class _Memo:
    """This rank's previous plain call of one op with these weights in a
    group (`mkey`: the op and the weights' ids; a deep model's layers each
    keep theirs): the arguments
    the checks depend on (`args`, weak references to the weights and their
    versions), what the checks derived from them (`fmt`: the shape
    all-gather's format, `fixed`: its fields that depend on the arguments
    only, `key`: the plan cache key, `dims`, `sched`: the group's schedule
    code, None when the round must take plan.run's own path: an unknown
    name, which it reports, or empty outputs), and the all-gather's bytes
    with the plan entry and rows they led to."""
    __slots__ = ("args", "refs", "versions", "fmt", "buf", "fixed", "key",
                 "dims", "sched", "raw", "rows", "entry", "arrays", "out",
                 "mkey")

    def same_args(self, args, Bs):
        return args == self.args and len(Bs) == len(self.refs) and \
            all(r() is B and B._version == v
                for r, B, v in zip(self.refs, Bs, self.versions))

    def hit(self, g, raw, off=0):
        """(entry, rows): the previous call's plan entry if `raw` repeats
        its bytes but for each rank's rows (the field at byte `off` of its
        record; a decode step's rows change every call) and the entry is
        still cached (rows_hit), with every rank's rows; else (None,
        None). The caller checks the rows against the plan."""
        rows = rows_hit(g, self, raw, self.fmt.size, off)
        return (None, None) if rows is None else (self.entry, rows)

    def rows_c(self, rows):
        return rows_array(self.arrays, rows)


def rows_hit(g, m, raw, size, off):
    """_Memo.hit's test for any memo m with .entry, .raw (the bytes of the
    call that found the entry) and .rows (their rows): every rank's rows
    (the int64 at byte `off` of each `size`-byte record of `raw`), or
    None. A hit needs the entry still cached and the same bytes but for
    the rows, serials included: every rank received the same bytes, and
    a rank whose memo misses takes the full path, whose agreed() finds the
    same entry from the same serials; either way the entry becomes the
    most recently used (touch), so the caches stay the same on every
    rank."""
    e, old = m.entry, m.raw
    if e is None or not e.live or old is None:
        return None
    if raw == old:
        rows = m.rows
    else:
        end = off + 8
        for b in range(0, len(raw), size):
            if raw[b:b + off] != old[b:b + off] or \
                    raw[b + end:b + size] != old[b + end:b + size]:
                return None
        rows = [_Q.unpack_from(raw, b + off)[0] for b in range(0, len(raw), size)]
    g.cache.touch(e)  # as the full path's lookup would (every rank alike)
    return rows


def rows_array(arrays, rows):
    """A ctypes int64 array of `rows`, kept in the dict `arrays` (a decode
    step's few row counts come back)."""
    key = tuple(rows)
    arr = arrays.get(key)
    if arr is None:
        if len(arrays) > 64:
            arrays.clear()
        arr = arrays[key] = (ctypes.c_int64 * len(rows))(*rows)
    return arr


def _memo(g, op, args, Bs):
    """(memo, known): the group's memo of op if it was made for these
    arguments, else a new one (kept by the caller once its checks pass)."""
    mkey = (op,) + tuple(id(B) for B in Bs)
    m = g.cache.memo_get(mkey)
    if m is not None and m.same_args(args, Bs):
        return m, True
    m = _Memo()
    m.mkey = mkey
    m.args, m.refs = args, [weakref.ref(B) for B in Bs]
    m.versions = [B._version for B in Bs]
    m.raw = m.entry = m.rows = None
    m.arrays = {}
    return m, False


def _everyone(m, raw, P):
    size = m.fmt.size
    return [m.fmt.unpack_from(raw, r * size) for r in range(P)]


def _ag_args(A_shard, gather_dim):
    """What the checks of an all-gather call depend on in A_shard (all of
    its shape but the gathered dimension, its dtype) with gather_dim."""
    shape = A_shard.shape
    if gather_dim == 0:
        return (shape[1:], A_shard.dtype)
    nd = len(shape)
    gd = gather_dim + nd if gather_dim < 0 else gather_dim
    return (gather_dim, nd, shape[:gd] + shape[gd + 1:] if 0 <= gd < nd else None,
            A_shard.dtype)


def ag_plain(A_shard, Bs, gather_dim, group_name, return_A, biases=None,
             activations=None, out_dtypes=None):
    """kernels/fp.py's ag_kernel(A_shard, Bs, gather_dim, group_name, return_A,
    biases, activations, out_dtypes) for a plain CPU tensor A_shard and a
    list Bs (the caller checked: kernels/dispatch.py's plain_cpu)."""
    dt = getattr(A_shard, "dtype", None)
    if biases is None and activations is None and out_dtypes is None and Bs \
            and dt in _LIB_OUT:
        # No epilogue asked for: C in A's dtype, by the plan (what
        # ag_epilogue and lib_epilogue decide for these arguments).
        epi, lib = None, _LIB_OUT[dt](len(Bs))
    else:
        epi = ag_epilogue(Bs, biases, activations, out_dtypes, default_out(A_shard))
        # The plan's own epilogue where it can apply it (ag_kernel's choice).
        lib = lib_epilogue(*epi)
        if lib is not None:
            epi = None
    g = get_group(group_name)
    m, known = _memo(g, "ag", _ag_args(A_shard, gather_dim) + (lib,), Bs)
    if not known:
        gd = ag_check(A_shard, Bs, gather_dim)
        k = int(A_shard.shape[-1])
        ns = [int(B.shape[1]) for B in Bs]
        rest = [int(s) for i, s in enumerate(A_shard.shape[:-1]) if i != gd]
        rps = 1
        for s in rest:
            rps *= s
        code, dtype = DT[A_shard.dtype]
        # ag_shapes' fields: slices, rows per slice, k, dtype, weights,
        # ns..., serial
        m.fmt = struct.Struct("<%dq" % (6 + len(ns)))
        m.buf = ctypes.create_string_buffer(m.fmt.size * g.world.size)
        m.fixed = [rps, k, code, len(ns)] + ns
        m.key = ag_key(k, ns, dtype, None, lib)
        m.out = torch.float32 if lib is None else _OUT_DT[lib[1]]
        m.dims = (gd, k, ns, dtype, rest)
        m.sched = SCHEDULES.get(g.schedule)
        if not all(ns):
            m.sched = None  # an empty output: plan.run's own path
        g.cache.memo_put(m.mkey, m)
    gd, k, ns, dtype, rest = m.dims
    a = A_shard if gd == 0 else A_shard.movedim(gd, 0)
    a2 = a if gd == 0 and not rest else a.reshape(-1, k)
    rows, serial = int(a.shape[0]), g.cache.lookup(m.key, Bs, m.entry)
    raw = g.world.allgather_raw(m.fmt.pack(rows, *m.fixed, serial), m.buf)
    e, slices = m.hit(g, raw)
    if e is not None:
        rps = m.fixed[0]
        m_local = [s * rps for s in slices]
        cap = e.plan.m_local
        if not any(m_local) or any(r > c for r, c in zip(m_local, cap)):
            e = None  # ag_agree's refusal, or a larger plan: the full path
    if e is None:
        everyone = _everyone(m, raw, g.world.size)
        ag_agree(g, everyone, [rows] + m.fixed + [serial])
        slices = [o[0] for o in everyone]
        m_local = [s * m.fixed[0] for s in slices]
        plan, m_rows = ag_plan(g.cache, [o[-1] for o in everyone], m_local, k,
                                    ns, dtype, Bs, epi=lib)
        m.raw, m.entry, m.rows = raw, g.cache.newest(), slices
    else:
        set_weights(e, Bs)
        plan = e.plan
        m_rows = None if m_local == plan.m_local else m_local
    M, total = sum(m_local), sum(slices)
    if m.sched is not None and a2.numel() and a2.is_contiguous():
        Cs = [torch.empty((M, ni), dtype=m.out)  # gated: half of W's
              for ni in plan.c_cols]
        A_g = torch.empty((M, k), dtype=a2.dtype) if return_A else None
        if m_rows is None and A_g is None and len(Cs) == 1:
            plan._run_tensor(a2, Cs[0], m.sched)
        else:
            plan._run_args_tensor(a2, Cs, m.sched,
                                  None if m_rows is None else m.rows_c(m_rows),
                                  A_g)
    else:
        A_g, Cs = ag_run(g, plan, m_rows, a2, return_A)
    if epi is not None:
        Cs = [apply_epilogue_(c, b, a, d) for c, b, a, d in zip(Cs, *epi)]
    if gd == 0 and not rest:  # the views would be the same
        return A_g, Cs
    lead = [total] + rest
    return (ag_views(A_g, total, lead, gd) if return_A else None,
            [ag_views(c, total, lead, gd) for c in Cs])


def _reduce_args(A, reduce_op, dim):
    """What the checks of a reduce call depend on: A's shape but for the
    dimension its rows are split along (scatter_dim, or 0 for the
    all-reduce: a decode step's rows change every call), its dtype and
    device, reduce_op and dim."""
    if not isinstance(A, torch.Tensor):
        return (None, reduce_op, dim)
    shape = A.shape
    nd = len(shape)
    d = 0 if dim is None else dim
    dd = d + nd if isinstance(d, int) and d < 0 else d
    if isinstance(dd, int) and 0 <= dd < nd - 1:
        shape = shape[:dd] + shape[dd + 1:]
    else:
        shape = (shape, "whole")  # refused by the checks: never kept
    return (shape, nd, A.dtype, A.device, reduce_op, dim)


def _reduce_plain(op, what, A, B, reduce_op, dim, group_name, epi):
    """(c [this call's rows of C, n], lead, rows per slice, scatter index):
    the round of the reduce kernels (rs_kernel, ar_kernel) and their
    epilogue `epi` (reduce_epilogue's). The plan takes its rows per call
    (plan_cache.reduce_plan's per_call): a call that differs from the
    previous one in its rows only reuses its checks and its plan."""
    g = get_group(group_name)
    # C in a 16-bit out dtype without bias or activation: the plan's own
    # rounding (the same values as apply_epilogue_'s), no pass after.
    lib = _OUT_NAMES.get(epi[2]) if epi[0] is None and epi[1] is None else None
    m, known = _memo(g, op, _reduce_args(A, reduce_op, dim) + (lib,), [B])
    if not known:
        dd = reduce_check(A, B, reduce_op, dim)
        k_mine = int(A.shape[-1])
        lead = [int(d) for d in (A if dd == 0 else A.movedim(dd, 0)).shape[:-1]]
        n = int(B.shape[1])
        code, dtype = DT[A.dtype]
        # reduce_shapes' fields: dims, lead padded, n, dtype, k, serial; the
        # rows (lead[0]) set per call
        m.fmt = struct.Struct("<%dq" % (_MAX_LEAD + 5))
        m.buf = ctypes.create_string_buffer(m.fmt.size * g.world.size)
        m.fixed = lead[1:] + [0] * (_MAX_LEAD - len(lead)) + [n, code, k_mine]
        m.key = reduce_key(op, (), k_mine, n, dtype) + ((lib,) if lib else ())
        m.out = torch.float32 if lib is None else _OUT_DT[lib]
        rps = 1
        for d in lead[1:]:
            rps *= d
        m.dims = (dd, k_mine, len(lead), rps, n)
        m.sched = SCHEDULES.get(g.schedule) if n else None
        g.cache.memo_put(m.mkey, m)
    dd, k_mine, nlead, rps, n = m.dims
    a = A if dd == 0 else A.movedim(dd, 0)
    a2 = as_rows(a)
    rows = int(a.shape[0])
    mine = [nlead, rows] + m.fixed + [g.cache.lookup(m.key, [B], m.entry)]
    raw = g.world.allgather_raw(m.fmt.pack(*mine), m.buf)
    P = g.world.size
    e, everyone_rows = m.hit(g, raw, 8)
    if e is not None:
        m_local = [s * rps for s in split_rows(rows, P)] if op == "gemm-rs" \
            else split_rows(rows * rps, P)
        if rows * rps == 0 or any(r != rows for r in everyone_rows) or \
                any(r > c for r, c in zip(m_local, e.plan.m_local)):
            e = None  # reduce_agree's refusal, or a larger plan: the full path
    lead = [rows] + list(a.shape[1:-1])
    if e is None:
        everyone = _everyone(m, raw, P)
        reduce_agree(g, everyone, mine, what)
        m_local = [s * rps for s in row_split(rows, P)] if op == "gemm-rs" \
            else row_split(rows * rps, P)
        c = reduce_core(g, [o[-1] for o in everyone], op, a2, B, m_local,
                        [o[_MAX_LEAD + 3] for o in everyone], m.key, lib)
        m.raw, m.entry, m.rows = raw, g.cache.newest(), [o[1] for o in everyone]
        return (c if lib else apply_epilogue_(c, *epi)), lead, rps, dd
    set_weights(e, [B])
    plan = e.plan
    c = torch.empty((m_local[g.world.rank] if op == "gemm-rs" else rows * rps, n),
                    dtype=m.out)
    m_rows = None if m_local == plan.m_local else m_local
    if m.sched is not None and c.numel() and a2.numel() and a2.is_contiguous():
        if m_rows is None:
            plan._run_tensor(a2, c, m.sched)
        else:
            plan._run_args_tensor(a2, [c], m.sched, m.rows_c(m_rows))
    else:
        c = plan.run(a2, out=c, schedule=g.schedule,
                     m_rows=m_rows)
    return (c if lib else apply_epilogue_(c, *epi)), lead, rps, dd


def rs_plain(A, B, reduce_op, scatter_dim, group_name, bias=None,
             activation=None, out_dtype=None):
    """kernels/fp.py's rs_kernel(A, B, reduce_op, scatter_dim, group_name, bias,
    activation, out_dtype)."""
    epi = reduce_epilogue(B, bias, activation, out_dtype, A)
    c, lead, rps, dd = _reduce_plain("gemm-rs", "fused_matmul_reduce_scatter",
                                     A, B, reduce_op, scatter_dim, group_name,
                                     epi)
    if len(lead) == 1:
        return c  # [this rank's rows, n]: the view would be the same
    c = c.view([int(c.shape[0]) // rps] + lead[1:] + [int(B.shape[1])])
    return c if dd == 0 else c.movedim(0, dd)


def ar_plain(A, B, reduce_op, group_name, bias=None, activation=None,
             out_dtype=None):
    """kernels/fp.py's ar_kernel(A, B, reduce_op, group_name, bias, activation,
    out_dtype)."""
    epi = reduce_epilogue(B, bias, activation, out_dtype, A)
    c, lead, _, _ = _reduce_plain("gemm-ar", "fused_matmul_all_reduce", A, B,
                                  reduce_op, None, group_name, epi)
    return c if len(lead) == 1 else c.view(lead + [int(B.shape[1])])
