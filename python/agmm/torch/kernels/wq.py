"""agmm.torch's fp ops with agmm.QuantizedWeight weights (issue 48 item 5):
fused_all_gather_matmul, fused_matmul_reduce_scatter and
fused_matmul_all_reduce take a QuantizedWeight (int4 or int8, grouped
scales, in agmm's plain layout: python/agmm/qweight.py) wherever they take
a weight tensor B, and run agmm's own weight kernels (the "wq" engine).

  forward   the group's plan is made with the weights' format (weight_dtype
            "int4"/"int8", group_size, zero_point), cached as the tensor
            plans are (per shapes, dtype and epilogue, and per format) and
            made for the very QuantizedWeight objects; their parts are set
            once, when the plan is made for them: a QuantizedWeight is not
            versioned, so one changed in place (its NumPy arrays written)
            is not seen: make a new one. The ranks exchange their weights'
            format with the call's shapes and must agree on it. A's dtype
            float16, bfloat16 or float32 (an int8 A is W8A8's, the scaled
            ops'). Several weights of one all-gather call share one plan,
            so one format: every one a QuantizedWeight of the same bits,
            group and symmetry.
  autograd  the input's gradient (and the bias's), no gradient for the
            weight (it is not a tensor). dA is computed as the fp ops'
            backward computes it, with B the weight dequantized
            (QuantizedWeight.dequantize: float32, one rounding of the
            exact value, then A's dtype), held transposed per group
            beside the fp ops' B^T (plan_cache.PlanCache.kept_weight: as
            long as the QuantizedWeight lives, within the group's bound if
            it has one; k * n * A's element size bytes per weight, made at
            the first backward that needs it).
  tracing   under torch.compile, FakeTensor or a dispatch mode a call
            runs torch.ops.agmm.*_wq (library/wq_ops.py: the weights by their
            op_id, fake kernels for the shapes), forward only: an input
            that needs a gradient there raises agmm.Unsupported.
Here: the kernels (ag_kernel, reduce_kernel), the checks and the
dequantized W^T (bwd_qweight); the Functions and the calls agmm.torch's
functions make are autograd/wq.py's.
"""
import ctypes
import struct
import weakref

import torch

from ...errors import InvalidArgument, Unsupported
from ...qweight import QuantizedWeight
from .epilogue import (activation_name, apply_epilogue, check_bias, default_out,
                       not_gated)
from .epilogue import out_dtype as _out_dt
from .fp import (_MAX_LEAD, norm_dim, _fp_tensor, per_weight, ag_agree, ag_run,
                 ag_views, lib_epilogue, plan_op_available, reduce_agree)
from ... import _lib
from ..._lib import SCHEDULES
from ..distributed.groups import DT, as_rows, get_group, split_rows
from ..distributed.plan_cache import ag_key, ag_plan, reduce_key, reduce_plan
from .plain import _reduce_args, rows_array, rows_hit


def is_qweight(x):
    return isinstance(x, QuantizedWeight)


# ------------------------------------------------------------ checks
def check_a(A, what):
    if isinstance(A, torch.Tensor) and A.dtype == torch.int8:
        raise InvalidArgument(
            "%s: torch.int8 with a QuantizedWeight (weight-only quantization "
            "takes float16, bfloat16 or float32 activations; int8 activations "
            "are W8A8's: the scaled ops)" % what)
    _fp_tensor(A, what)


def _fmt(q):
    """A QuantizedWeight's format, exchanged between the ranks: (bits, G,
    1 if G is all of the weight's k, 1 if asymmetric, 1 if A is quantized
    to int8 for it: a_quant)."""
    return (int(q.bits), int(q.group_size), int(q.group_size == q.k),
            int(not q.symmetric), int(q.a_quant == "int8"))


def _fmt_text(f):
    return "bits %d, group %s, %s%s" % (
        f[0], "all of k" if f[2] else f[1], "asymmetric" if f[3] else "symmetric",
        ", a_quant int8" if f[4] else "")


def check_weights(Qs, k, what, a_what):
    """Every weight a QuantizedWeight of k rows, one format: the format."""
    for i, q in enumerate(Qs):
        name = "%s[%d]" % (what, i) if len(Qs) > 1 or what == "Bs" else what
        if not is_qweight(q):
            desc = ("a tensor %s %s" % (list(q.shape), q.dtype)) \
                if isinstance(q, torch.Tensor) else "a %s" % type(q).__name__
            raise InvalidArgument(
                "%s: %s among QuantizedWeights (a call's weights share one "
                "plan, one format: quantize every one alike)" % (name, desc))
        if q.k != k:
            raise InvalidArgument(
                "%s: a QuantizedWeight of k %d (%s's last dimension is %d)"
                % (name, q.k, a_what, k))
        if _fmt(q) != _fmt(Qs[0]):
            raise InvalidArgument(
                "%s: a QuantizedWeight of %s (%s[0]'s: %s; a call's weights "
                "share one plan, one format)"
                % (name, _fmt_text(_fmt(q)), what, _fmt_text(_fmt(Qs[0]))))
    return _fmt(Qs[0])


def _agreed_format(g, fmts, mine, what):
    """The plan's quantized arguments from every rank's format (_fmt):
    the same bits and symmetry, and one group: every rank's all of its k
    (group_size None), or one G (a rank whose G is all of its k too when
    that k is G). InvalidArgument naming `what` otherwise."""
    explicit = {f[1] for f in fmts if not f[2]}
    ok = all(f[0] == mine[0] and f[3] == mine[3] and f[4] == mine[4]
             for f in fmts)
    group = None
    if ok and explicit:
        group = explicit.pop()
        ok = not explicit and all(f[1] == group for f in fmts)
    if not ok:
        r = next(i for i, f in enumerate(fmts) if f != mine)
        raise InvalidArgument(
            "%s: rank %d's QuantizedWeight is %s, rank %d's %s (ranks must "
            "agree on the weight format)" % (what, r, _fmt_text(fmts[r]),
                                             g.world.rank, _fmt_text(mine)))
    return dict(weight_dtype="int%d" % mine[0], group_size=group,
                zero_point=bool(mine[3]), a_quant="int8" if mine[4] else "none")


# ------------------------------------------------ all-gather + matmul
class _AgMemo:
    """This rank's previous all-gather call with these QuantizedWeights in a group
    (as kernels/plain.py's _Memo for tensors): the arguments its checks passed
    for (`args`, weak references to the weights: QuantizedWeights have no
    version to compare), what they derived, and the shape all-gather's
    bytes with the plan entry they led to."""
    __slots__ = ("args", "refs", "st", "buf", "fixed", "key", "dims", "epi",
                 "sched", "out", "raw", "entry", "rows", "arrays")


def _hashable(v):
    return tuple(v) if isinstance(v, list) else v


def ag_kernel(A_shard, Qs, gather_dim, group_name, return_A=True, biases=None,
              activations=None, out_dtypes=None):
    """kernels/fp.py's ag_kernel with QuantizedWeights Qs. A call with the
    arguments of this rank's previous one in the group (no bias) skips the
    checks, and one whose shape all-gather repeats the previous bytes while
    that plan is still the group's most recently used skips the plan
    lookup (kernels/plain.py's reasoning: every rank received the same
    bytes and holds the same cache)."""
    g = get_group(group_name)
    m = args = None
    if (biases is None or all(b is None for b in biases)) and \
            isinstance(A_shard, torch.Tensor):
        shape = tuple(A_shard.shape)
        nd = len(shape)
        gdn = gather_dim + nd if gather_dim < 0 else gather_dim
        if 0 <= gdn < nd - 1:  # else the checks below refuse it
            args = (shape[:gdn] + shape[gdn + 1:], A_shard.dtype, gdn,
                    bool(return_A), _hashable(activations), _hashable(out_dtypes))
            m = g.cache.memo_get(("ag-wq",) + tuple(id(q) for q in Qs))
            if m is None or m.args != args or len(m.refs) != len(Qs) or \
                    not all(r() is q for r, q in zip(m.refs, Qs)):
                m = None
    if m is None:
        check_a(A_shard, "A_shard")
        gd = norm_dim(gather_dim, A_shard.dim(), "gather_dim")
        if len(Qs) < 1:
            raise InvalidArgument("Bs: an empty list (at least one weight)")
        k = int(A_shard.shape[-1])
        fmt = check_weights(Qs, k, "Bs", "A_shard")
        nw = len(Qs)
        biases = per_weight(biases, nw, "biases")
        acts = [activation_name(a, "activations[%d]" % i)
                for i, a in enumerate(per_weight(activations, nw, "activations"))]
        dts = [_out_dt(d, "out_dtypes[%d]" % i, default_out(A_shard))
               for i, d in enumerate(per_weight(out_dtypes, nw, "out_dtypes"))]
        for i, (q, b) in enumerate(zip(Qs, biases)):
            check_bias(b, q.n, "biases[%d]" % i)
        lib = lib_epilogue(biases, acts, dts)
        code, dtype = DT[A_shard.dtype]
        ns = [int(q.n) for q in Qs]
        rest = [int(s) for i, s in enumerate(A_shard.shape[:-1]) if i != gd]
        rps = 1
        for s in rest:
            rps *= s
        mm = _AgMemo()
        mm.args = args  # None: not kept (a bias, or no tensor A)
        mm.refs = [weakref.ref(q) for q in Qs]
        # ag_shapes' fields with the format before the serial
        mm.fixed = [rps, k, code, nw] + ns + list(fmt)
        mm.st = struct.Struct("<%dq" % (len(mm.fixed) + 2))
        mm.buf = ctypes.create_string_buffer(mm.st.size * g.world.size)
        mm.key = ag_key(k, ns, dtype, ("wq",) + fmt, lib)
        mm.dims = (gd, k, ns, dtype, rest, fmt)
        mm.epi = None if lib is not None else (biases, acts, dts)
        mm.out = torch.float32 if lib is None else \
            {"fp32": torch.float32, "bf16": torch.bfloat16, "fp16": torch.float16}[lib[1]]
        mm.sched = SCHEDULES.get(g.schedule)
        mm.raw = mm.entry = mm.rows = None
        mm.arrays = {}
        if mm.args is not None:
            g.cache.memo_put(("ag-wq",) + tuple(id(q) for q in Qs), mm)
        m = mm
        m_lib = lib
    else:
        m_lib = m.key[-1]
    gd, k, ns, dtype, rest, fmt = m.dims
    a = A_shard if gd == 0 else A_shard.movedim(gd, 0)
    a2 = a if gd == 0 and not rest else a.reshape(-1, k)
    rows = int(a.shape[0])
    serial = g.cache.lookup(m.key, Qs, m.entry)
    raw = g.world.allgather_raw(m.st.pack(rows, *m.fixed, serial), m.buf)
    # The previous call's plan when only the rows changed (kernels/plain.py's
    # reasoning, rows_hit) and they fit in it.
    slices = rows_hit(g, m, raw, m.st.size, 0)
    if slices is not None:
        m_local = [s * m.fixed[0] for s in slices]
        plan = m.entry.plan
        if not any(m_local) or any(r > c for r, c in zip(m_local, plan.m_local)):
            slices = None
        else:
            m_rows = None if m_local == plan.m_local else m_local
    if slices is None:
        sz = m.st.size
        everyone = [m.st.unpack_from(raw, r * sz) for r in range(g.world.size)]
        mine = [rows] + m.fixed + [serial]
        nf = len(fmt)  # the format's fields, just before the serial
        wq = _agreed_format(g, [tuple(o[-1 - nf:-1]) for o in everyone], fmt,
                            "Bs")
        ag_agree(g, everyone, mine)
        slices = [o[0] for o in everyone]
        m_local = [s * m.fixed[0] for s in slices]
        plan, m_rows = ag_plan(g.cache, [o[-1] for o in everyone], m_local, k, ns,
                                    dtype, Qs, key=m.key, epi=m_lib, wq=wq)
        m.raw, m.entry, m.rows = raw, g.cache.newest(), slices
    M, total = sum(m_local), sum(slices)
    if m.sched is not None and a2.numel() and a2.is_contiguous() and all(ns):
        Cs = [torch.empty((M, ni), dtype=m.out) for ni in plan.c_cols]
        A_g = torch.empty((M, k), dtype=a2.dtype) if return_A else None
        if m_rows is None and A_g is None and len(Cs) == 1:
            plan._run_tensor(a2, Cs[0], m.sched)
        else:
            plan._run_args_tensor(a2, Cs, m.sched, None if m_rows is None
                                  else rows_array(m.arrays, m_rows), A_g)
    else:
        A_g, Cs = ag_run(g, plan, m_rows, a2, return_A)
    if m.epi is not None:
        Cs = [apply_epilogue(c, b, a_, d) for c, b, a_, d in zip(Cs, *m.epi)]
    if gd == 0 and not rest:
        return A_g, Cs
    lead = [total] + rest
    return (ag_views(A_g, total, lead, gd) if return_A else None,
            [ag_views(c, total, lead, gd) for c in Cs])


def bwd_qweight(g, Qs, dt, cols=None):
    """cat([W_i^T]) [sum n_i, k] in dt (cols > k: zero columns up to cols),
    W_i the QuantizedWeight's dequantized values (float32, then dt), kept
    in the group's plan cache beside plan_cache.backward_weight's B^T (the
    same list, kept as long as the objects live) per the very objects, dt
    and cols."""
    def build():
        w = torch.cat([q.dequantize(torch.float32).t() for q in Qs], 0).to(dt)
        if cols is not None and cols > w.shape[1]:
            w = torch.nn.functional.pad(w, (0, cols - int(w.shape[1])))
        return w.contiguous()

    return g.cache.kept_weight(list(Qs), ("wq", dt), cols, build)


# ------------------------------------------ matmul + reduce-scatter/all-reduce
class _RedMemo:
    """This rank's previous reduce call of `op` with this QuantizedWeight in a
    group (as _AgMemo)."""
    __slots__ = ("args", "ref", "st", "buf", "fixed", "key", "dims", "sched",
                 "raw", "entry", "rows", "arrays")


def reduce_kernel(op, what, A, Q, reduce_op, dim, group_name, bias=None,
                  activation=None, dtype=None):
    """kernels/fp.py's rs_kernel / ar_kernel with a QuantizedWeight Q (op
    "gemm-rs": dim the scatter dimension; "gemm-ar": dim None). The plan
    takes its rows per call (plan_cache.reduce_plan's per_call); repeated calls,
    their rows changed or not, skip the checks and the plan lookup as
    ag_kernel's do."""
    g = get_group(group_name)
    args = m = None
    if bias is None and isinstance(A, torch.Tensor):
        args = _reduce_args(A, reduce_op, dim) + (_hashable(activation), dtype)
        m = g.cache.memo_get((op + "-wq", id(Q)))
        if m is None or m.args != args or m.ref() is not Q:
            m = None
    if m is None:
        if reduce_op != "sum":
            raise InvalidArgument("reduce_op: %r (allowed: \"sum\")" % (reduce_op,))
        if not plan_op_available(op):
            raise Unsupported("%s: this agmm (%s) has no plan op %r"
                              % (what, _lib.path, op))
        check_a(A, "A")
        act = not_gated(activation_name(activation), what)
        dt = _out_dt(dtype, default=default_out(A))
        nd = A.dim()
        dd = norm_dim(dim, nd, "scatter_dim") if dim is not None else 0
        if nd - 1 > _MAX_LEAD:
            raise InvalidArgument("A: %d dimensions (at most %d)"
                                  % (nd, _MAX_LEAD + 1))
        k_mine = int(A.shape[-1])
        fmt = check_weights([Q], k_mine, "B", "A")
        n = int(Q.n)
        check_bias(bias, n)
        lead = [int(d) for d in (A if dd == 0 else A.movedim(dd, 0)).shape[:-1]]
        rps = 1
        for d in lead[1:]:
            rps *= d
        code, dtname = DT[A.dtype]
        m = _RedMemo()
        m.args, m.ref = args, weakref.ref(Q)
        # C in a 16-bit dtype without bias or activation: the plan's own
        # rounding (apply_epilogue's values), no pass after the round.
        lib = {torch.bfloat16: "bf16", torch.float16: "fp16"}.get(dt) \
            if bias is None and act is None else None
        m.key = reduce_key(op, (), k_mine, n, dtname, ("wq",) + fmt) + \
            ((lib,) if lib else ())
        # reduce_shapes' fields but the rows (lead[0], set per call), then
        # the format
        m.fixed = lead[1:] + [0] * (_MAX_LEAD - len(lead)) + \
            [n, code, k_mine] + list(fmt)
        m.st = struct.Struct("<%dq" % (len(m.fixed) + 3))
        m.buf = ctypes.create_string_buffer(m.st.size * g.world.size)
        m.dims = (dd, len(lead), rps, n, dtname, fmt, act, dt, lib)
        m.sched = SCHEDULES.get(g.schedule) if n else None
        m.raw = m.entry = m.rows = None
        m.arrays = {}
        if args is not None:
            g.cache.memo_put((op + "-wq", id(Q)), m)
    dd, nlead, rps, n, dtname, fmt, act, dt, lib = m.dims
    a = A if dd == 0 else A.movedim(dd, 0)
    a2 = as_rows(a)
    rows = int(a.shape[0])
    lead = [rows] + list(a.shape[1:-1])
    mine = [nlead, rows] + m.fixed + [g.cache.lookup(m.key, [Q], m.entry)]
    raw = g.world.allgather_raw(m.st.pack(*mine), m.buf)
    P = g.world.size
    split = split_rows(rows, P)
    m_local = [s * rps for s in split] if op == "gemm-rs" \
        else split_rows(rows * rps, P)
    everyone_rows = rows_hit(g, m, raw, m.st.size, 8)
    plan = None
    if everyone_rows is not None and rows * rps and \
            all(r == rows for r in everyone_rows):
        plan = m.entry.plan
        if any(r > c for r, c in zip(m_local, plan.m_local)):
            plan = None  # a larger plan: the full path
    if plan is not None:
        c = torch.empty((m_local[g.world.rank] if op == "gemm-rs" else rows * rps, n),
                        dtype=dt if lib else torch.float32)
        m_rows = None if m_local == plan.m_local else m_local
        if m.sched is not None and c.numel() and a2.numel() and a2.is_contiguous():
            if m_rows is None:
                plan._run_tensor(a2, c, m.sched)
            else:
                plan._run_args_tensor(a2, [c], m.sched, rows_array(m.arrays, m_rows))
        else:
            c = plan.run(a2, out=c, schedule=g.schedule,
                         m_rows=m_rows)
    else:
        L = _MAX_LEAD + 3
        sz = m.st.size
        everyone = [m.st.unpack_from(raw, r * sz) for r in range(P)]
        reduce_agree(g, everyone, mine, what)
        wq = _agreed_format(g, [tuple(o[L + 1:L + 1 + len(fmt)]) for o in everyone],
                            fmt, "B")
        plan, m_rows = reduce_plan(g.cache, [o[-1] for o in everyone], op, m_local,
                                    [o[L] for o in everyone], Q, dtname, key=m.key,
                                    wq=wq, per_call=True, out=lib)
        m.raw, m.entry, m.rows = raw, g.cache.newest(), [o[1] for o in everyone]
        c = plan.run(a2, schedule=g.schedule, m_rows=m_rows)
    if not lib:
        c = apply_epilogue(c, bias, act, dt)
    if op == "gemm-ar":
        return c.view(lead + [n])
    c = c.view([split[g.world.rank]] + lead[1:] + [n])
    return c if dd == 0 else c.movedim(0, dd)
