"""agmm.torch's groups (a registered agmm.World per group name) and their
plan caches. Plans are created, reused and evicted identically on every
rank because every rank makes the same calls in the same order (see
python/agmm/torch.py's module doc); the cache is closed with the group.
"""
import os
import weakref

import torch

from ._buffers import free_scratch
from .errors import InvalidArgument
from .world import World

PLAN_CACHE_SIZE = 8
DEFAULT_GROUP = "default"

_groups = {}


class _Entry:
    """A cached plan: the shapes it was made for (key), weak references to
    the very weight tensors it was made for (a new tensor never hits, even
    at a freed one's address), the weights' versions last set (wkey) and
    the group's creation serial (the same plan has the same serial on
    every rank)."""
    __slots__ = ("key", "refs", "plan", "wkey", "serial")

    def __init__(self, key, tensors, plan, serial):
        self.key, self.plan, self.serial, self.wkey = key, plan, serial, None
        self.refs = [weakref.ref(t) for t in tensors]

    def made_for(self, key, tensors):
        return self.key == key and len(self.refs) == len(tensors) and \
            all(r() is t for r, t in zip(self.refs, tensors))


class _Group:
    def __init__(self, world, plan_options):
        self.world = world
        self.options = dict(plan_options)
        # Least recently used first. Every rank's list holds the same
        # plans in the same order: plans are made, reused (a hit only when
        # every rank's hit is the same serial, agreed through the call's
        # shape all-gather) and evicted by collective decisions only.
        self.plans = []
        self.serial = 0
        # Backward weights (B^T, contiguous; several B_i^T stacked) per the
        # source weights, kept so that the backward's plans see the same
        # tensor object every step; at most PLAN_CACHE_SIZE.
        self.bwd_weights = []
        # Per op, this rank's previous plain call (_torch_plain._Memo).
        self.memo = {}

    def close_plans(self):
        while self.plans:
            self.plans.pop(0).plan.close()
        self.bwd_weights.clear()
        self.memo.clear()

    def lookup(self, key, tensors):
        """Local: this rank's serial of the plan made for key and these
        tensors (-1: none); pass it through the call's all-gather to
        agreed()."""
        for e in reversed(self.plans):  # a step's plan: the last, often
            if e.made_for(key, tensors):
                return e.serial
        return -1

    def agreed(self, serials):
        """The entry every rank hit (the same serial on every rank), moved
        to most recently used; None: a miss, the caller makes a plan."""
        s0 = serials[0]
        if s0 < 0 or any(s != s0 for s in serials):
            return None
        for i, e in enumerate(self.plans):
            if e.serial == s0:
                self.plans.append(self.plans.pop(i))
                return e
        raise AssertionError("agreed serial %d not in the cache" % s0)

    def make(self, key, tensors, **plan_args):
        """Collective: a new plan, cached as most recently used; the least
        recently used beyond PLAN_CACHE_SIZE are closed."""
        opts = {k2: v for k2, v in self.options.items() if k2 != "schedule"}
        opts.update(plan_args)
        plan = self.world.plan(**opts)
        self.serial += 1
        e = _Entry(key, tensors, plan, self.serial)
        self.plans.append(e)
        while len(self.plans) > PLAN_CACHE_SIZE:
            self.plans.pop(0).plan.close()
        return e

    def drop(self, e):
        """Collective (an agreed entry): close it and forget it."""
        self.plans.remove(e)
        e.plan.close()


def register_group(name, world, **plan_options):
    """Make `world` (an agmm.World) the group `name` for the op. Plan
    options (tile_m, tile_n, comm_workers, gemm_workers, gemm_engine,
    timeout; see agmm.Plan) apply to the group's plans, and `schedule`
    ("auto", the default, "fused" or "baseline") to its rounds."""
    bad = set(plan_options) - {"tile_m", "tile_n", "comm_workers", "gemm_workers",
                               "gemm_engine", "timeout", "schedule"}
    if bad:
        raise InvalidArgument("register_group: unknown option(s) %s"
                              % ", ".join(sorted(bad)))
    if not isinstance(world, World):
        raise InvalidArgument("register_group: %r is not an agmm.World" % (world,))
    if name in _groups:
        raise InvalidArgument("register_group: group %r is registered already"
                              % (name,))
    _groups[name] = _Group(world, plan_options)


def unregister_group(name):
    """Collective: close the group's cached plans and forget it (the world
    stays open; close it yourself)."""
    g = _groups.pop(name, None)
    if g is not None and not g.world.closed:
        g.close_plans()
    free_scratch()


def _group(name):
    if name is None:
        name = DEFAULT_GROUP
    g = _groups.get(name)
    if g is None and name == DEFAULT_GROUP:
        # The default group: the world of the environment (torchrun's
        # RANK/WORLD_SIZE/MASTER_ADDR/MASTER_PORT, AGMM_*, or mpirun).
        timeout = float(os.environ.get("AGMM_TIMEOUT_S", "60"))
        register_group(DEFAULT_GROUP, World.from_env(timeout))
        g = _groups[DEFAULT_GROUP]
    if g is None:
        raise InvalidArgument("group_name %r: no such group (agmm.torch."
                              "register_group(name, world) first)" % (name,))
    if g.world.closed:
        raise InvalidArgument("group_name %r: its world is closed" % (name,))
    return g


_DT = {torch.float16: (0, "fp16"), torch.bfloat16: (1, "bf16"),
       torch.float32: (2, "fp32")}


def check_tensor(x, what, dtypes, refusal, dims=None):
    """x must be a CPU torch tensor with a dtype in `dtypes` (else
    InvalidArgument(refusal % {"what": what, "got": its device and dtype,
    or its type})) and 2 dimensions (dims=2: a weight [k, n]) or at least 2
    (dims None: [..., k])."""
    if not isinstance(x, torch.Tensor) or x.device.type != "cpu" \
            or x.dtype not in dtypes:
        got = ("%s %s" % (x.device, x.dtype)) if isinstance(x, torch.Tensor) \
            else type(x).__name__
        raise InvalidArgument(refusal % {"what": what, "got": got})
    nd = x.dim()
    if (dims == 2 and nd != 2) or (dims is None and nd < 2):
        raise InvalidArgument("%s: %d dimension%s (%s)" % (
            what, nd, "" if nd == 1 else "s",
            "expected 2: [k, n]" if dims == 2 else "at least 2: [..., k]"))


def as_rows(t):
    """t [..., k] as [rows, k], rows the product of the leading dims (a
    view when contiguous). Unlike reshape(-1, k), it holds for k = 0: a
    rank of a reduce op may hold none of k (uneven shards)."""
    if t.dim() == 2:
        return t  # (what reshape returns for it, without its cost per call)
    rows = 1
    for d in t.shape[:-1]:
        rows *= int(d)
    return t.reshape(rows, int(t.shape[-1]))


def _flat_scale(s):
    return s.reshape(-1).contiguous()


def _weights_key(Bs):
    return tuple((b.data_ptr(), b._version, tuple(b.stride())) for b in Bs)


def _capacity(rows):
    """The rows a plan is made for when a call needs `rows` (per-call rows
    library): the next power of two, so a growing row count re-creates
    the plan a bounded number of times (log2 of the largest) and the
    windows are at most twice what a call needs."""
    return 0 if rows == 0 else 1 << (int(rows) - 1).bit_length()


def _set_weights(e, Bs, B_scales=None):
    """Local: set the entry's weights again when a B (or, int8, its scale)
    changed in place (its version counter moved) or the scale is another
    tensor. agmm.QuantizedWeights (no version counter: NumPy parts) are set
    once, when the entry is made for them (_torch_wq)."""
    if not isinstance(Bs[0], torch.Tensor):
        if e.wkey is None:
            e.plan.set_weights(list(Bs))
            e.wkey = "wq"
        return
    wkey = _weights_key(Bs) + (_weights_key(B_scales) if B_scales is not None
                               else ())
    if e.wkey != wkey:
        Bc = [B if B.is_contiguous() else B.contiguous() for B in Bs]
        if B_scales is None:
            e.plan.set_weights(Bc)
        else:
            e.plan.set_weights(Bc, [_flat_scale(s) for s in B_scales])
        e.wkey = wkey


def ag_key(k, ns, dtype, modes=None, epi=None):
    return ("ag-gemm", int(k), tuple(ns), dtype, modes, epi)


def _cached_plan(g, serials, m_local, k, ns, dtype, Bs, B_scales=None, modes=None,
                 key=None, epi=None, wq=None):
    """(plan, m_rows) for this call of an all-gather op: the plan every
    rank hit (serials: every rank's g.lookup(ag_key(...), Bs)), else a new
    one (collective), and the rows to pass (None: the plan's own). With
    per-call rows (agmm_plan_run_args), one plan serves every row count up
    to its capacity and is replaced by a larger one when a call needs
    more. int8: B_scales are the weights' flat float32 scales, `modes`
    (a_scale, w_scale) of the plan, `key` the one looked up (with this
    rank's scale layouts, known before the all-gather). epi: the plan's
    own epilogue (_torch_fp.lib_epilogue: activations, out dtype), or
    None. wq: a quantized plan's arguments (weight_dtype, group_size,
    zero_point; _torch_wq), the Bs agmm.QuantizedWeights."""
    key = ag_key(k, ns, dtype, modes, epi) if key is None else key
    e = g.agreed(serials)
    grown = [_capacity(r) for r in m_local]
    if e is not None and any(r > cap for r, cap in zip(m_local, e.plan.m_local)):
        grown = [max(cap, _capacity(r)) for r, cap in zip(m_local, e.plan.m_local)]
        g.drop(e)
        e = None
    if e is None:
        extra = {} if modes is None else {"a_scale": modes[0], "w_scale": modes[1]}
        if wq is not None:
            extra = dict(wq)
        if epi is not None:
            extra.update(activation=list(epi[0]), out_dtype=epi[1])
        e = g.make(key, Bs, m_local=grown, k=k, n=ns if len(ns) > 1 else ns[0],
                   dtype=dtype, **extra)
    _set_weights(e, Bs, B_scales)
    plan = e.plan
    m_rows = None if list(m_local) == plan.m_local else list(m_local)
    return plan, m_rows


def reduce_key(op, rows, k_mine, n, dtype, modes=None):
    """The cache key of a reduce plan; rows () for a plan taking its rows
    per call (_reduce_plan's per_call: the fp and quantized ops), else
    the call's rows (int8's plans, one per shape)."""
    return (op, tuple(rows), int(k_mine), int(n), dtype, modes)


def split_rows(rows, P):
    """row_split's values in Python (agmm_k_split: rows // P each, the
    first rows % P ranks one more), for the calls' fast paths."""
    q, r = divmod(int(rows), P)
    return [q + 1 if i < r else q for i in range(P)]


def _reduce_plan(g, serials, op, m_local, k_local, B, dtype, B_scale=None,
                 modes=None, key=None, wq=None, per_call=False, out=None):
    """The plan of op "gemm-rs" or "gemm-ar" every rank hit (serials: every
    rank's g.lookup(reduce_key(...), [B])), else a new one for these rows
    (m_local: the rows of C each rank gets; "gemm-ar": their split of M),
    inner split k_local and weight B ([k_local[rank], n]); the weight is
    set again when B changed in place. The library has no per-call rows
    for these ops: a plan per shape. int8: B_scale, `modes` and `key` as
    for _cached_plan; wq and a QuantizedWeight B as there.

    per_call: the plan takes its rows per call (agmm_plan_run_args'
    m_rows; the key made with rows ()), made for each rank's rows rounded
    up to a power of two (_capacity) and replaced by a larger one when a
    call needs more, as _cached_plan's: a decode step's changing rows
    reuse one plan. Returns (plan, m_rows: None or the rows to pass).
    out: the plan's out dtype ("bf16", "fp16"; None: float32), part of
    the caller's key."""
    e = g.agreed(serials)
    n = int(B.shape[1]) if isinstance(B, torch.Tensor) else int(B.n)
    grown = None
    if e is not None and per_call:
        if getattr(e.plan, "k_local", None) not in (None, list(k_local)):
            raise AssertionError("cached %s plan of k %s for k %s"
                                 % (op, e.plan.k_local, k_local))
        if any(r > cap for r, cap in zip(m_local, e.plan.m_local)):
            grown = [max(cap, _capacity(r))
                     for r, cap in zip(m_local, e.plan.m_local)]
            g.drop(e)
            e = None
    elif e is not None and (e.plan.m_local != list(m_local) or
                            getattr(e.plan, "k_local", None) not in (None,
                                                                     list(k_local))):
        raise AssertionError("cached %s plan of rows %s, k %s for rows %s, k %s"
                             % (op, e.plan.m_local, e.plan.k_local, m_local,
                                k_local))
    if e is None:
        extra = {} if modes is None else {"a_scale": modes[0], "w_scale": modes[1]}
        if wq is not None:
            extra = dict(wq)
        if out is not None:
            extra["out_dtype"] = out
        rows = [int(r) for r in m_local]
        if key is None:
            key = reduce_key(op, () if per_call else [sum(rows)],
                             int(B.shape[0]), n, dtype, modes)
        if per_call:
            rows = grown or [_capacity(r) for r in rows]
        e = g.make(key, [B],
                   m_local=rows, k=sum(k_local), n=n, dtype=dtype,
                   op=op, k_local=list(k_local), **extra)
    _set_weights(e, [B], None if B_scale is None else [B_scale])
    if not per_call:
        return e.plan
    rows = [int(r) for r in m_local]
    return e.plan, (None if rows == e.plan.m_local else rows)


def _bwd_weight(g, Bs, cols=None):
    """cat([B_i.t() for B_i in Bs]) ([sum n_i, k], contiguous; with `cols`
    > k, zero columns after k up to cols), kept per group and per the Bs'
    keys (a weight changed in place makes a new one), so that the
    backward's plans find the same tensor every step."""
    def build():
        w = torch.cat([B.t() for B in Bs], 0)
        if cols is not None and cols > w.shape[1]:
            w = torch.nn.functional.pad(w, (0, cols - int(w.shape[1])))
        return w.contiguous()

    versions = tuple(B._version for B in Bs)
    for i, item in enumerate(g.bwd_weights):
        refs, ver, c, w = item
        if c == cols and len(refs) == len(Bs) and \
                all(r() is B for r, B in zip(refs, Bs)):
            if ver != versions:
                # Changed in place (an optimizer step): refilled in place,
                # so the backward's plan (made for this tensor) is kept and
                # only sets its weight again.
                with torch.no_grad():
                    w.copy_(build())
                item[1] = versions
            g.bwd_weights.append(g.bwd_weights.pop(i))
            return w
    w = build()
    g.bwd_weights.append([[weakref.ref(B) for B in Bs], versions, cols, w])
    if len(g.bwd_weights) > PLAN_CACHE_SIZE:
        g.bwd_weights.pop(0)
    return w


def group_plans(name=None):
    """The plans the group `name` has cached (most recently used last): to
    trace them (agmm.Trace) or read their gemm_info()."""
    return [e.plan for e in _group(name).plans]
