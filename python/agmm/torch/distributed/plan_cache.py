"""A group's plan cache, owned here: the agmm.Plans a group has made, the
backward's transposed weights kept beside them, and the plain calls'
memos. Plans are created, reused and evicted identically on every rank
because every rank makes the same calls in the same order (see
python/agmm/torch/__init__.py's module doc); the cache is closed with the
group. Other modules go through PlanCache's methods and the functions
below (ag_plan, reduce_plan, backward_weight, kept_weight), never its
lists.
"""
import weakref

import torch

# The default bound of a group's cache, by count (register_group's
# plan_cache_size): None, no bound. A plan lives as long as its weights:
# a deep model's layers, each called in turn, never make a plan again (a
# bound below their number closes and remakes, i.e. prepares or packs
# again, a plan at every call: 2.6-2.9 ms a call for 256 x 256 weights,
# tens of ms for a layer's). A plan whose weights are gone on every rank is
# closed at the group's next plan creation (PlanCache.make).
PLAN_CACHE_SIZE = None
_GATHER_MAX = 1024  # bytes of one World.allgather


class _Entry:
    """A cached plan: the shapes it was made for (key), weak references to
    the very weight tensors it was made for (a new tensor never hits, even
    at a freed one's address), the weights' versions last set (wkey) and
    the group's creation serial (the same plan has the same serial on
    every rank); live until the cache closes it."""
    __slots__ = ("key", "refs", "plan", "wkey", "serial", "live")

    def __init__(self, key, tensors, plan, serial):
        self.key, self.plan, self.serial, self.wkey = key, plan, serial, None
        self.refs = [weakref.ref(t) for t in tensors]
        self.live = True

    def made_for(self, key, tensors):
        return self.key == key and len(self.refs) == len(tensors) and \
            all(r() is t for r, t in zip(self.refs, tensors))


class PlanCache:
    """One group's cache: plans made through `world` with the group's plan
    options (`schedule` is the rounds' own, not a plan's; plan_cache_size
    the cache's bound by count, None for none)."""

    def __init__(self, world, options):
        self._world = world
        self._options = {k: v for k, v in options.items()
                         if k not in ("schedule", "plan_cache_size")}
        self._limit = options.get("plan_cache_size", PLAN_CACHE_SIZE)
        # Least recently used first. Every rank's list holds the same
        # plans in the same order: plans are made, reused (a hit only when
        # every rank's hit is the same serial, agreed through the call's
        # shape all-gather) and evicted by collective decisions only.
        self._plans = []
        self._serial = 0
        # Backward weights (B^T, contiguous; several B_i^T stacked) per the
        # source weights, kept so that the backward's plans see the same
        # tensor object every step; as long as their sources live.
        self._bwd = []
        # Per op and weights, this rank's previous plain call with them
        # (kernels/plain.py's _Memo; memo_get, memo_put): the plain calls'
        # own, dropped with the plans.
        self.memo = {}

    def entries(self):
        """The cached entries, least recently used first (a copy)."""
        return list(self._plans)

    @property
    def made(self):
        """How many plans this cache has made (its last serial)."""
        return self._serial

    def newest(self):
        """The most recently used entry (None: the cache is empty)."""
        return self._plans[-1] if self._plans else None

    def close(self):
        while self._plans:
            self._forget(self._plans[0])
        self._bwd.clear()
        self.memo.clear()

    def _forget(self, e):
        """Collective (every rank closes the same entries in the same
        order): close e's plan and take it out."""
        self._plans.remove(e)
        e.live = False
        e.plan.close()

    def lookup(self, key, tensors, hint=None):
        """Local: this rank's serial of the plan made for key and these
        tensors (-1: none); pass it through the call's all-gather to
        agreed(). hint: the entry a memo found last time for this call
        (tried first: a deep model's layers each have theirs)."""
        if hint is not None and hint.live and hint.made_for(key, tensors):
            return hint.serial
        for e in reversed(self._plans):  # a step's plan: the last, often
            if e.made_for(key, tensors):
                return e.serial
        return -1

    def touch(self, e):
        """e, a memo's entry that every rank reuses (a hit decided on the
        call's all-gathered bytes, the same on every rank), moved to most
        recently used, as agreed() moves the entry it returns; False if e
        has been closed."""
        if not e.live:
            return False
        if self._plans[-1] is not e:
            self._plans.remove(e)
            self._plans.append(e)
        return True

    def memo_get(self, key):
        """This rank's memo of a plain call (kernels/plain.py's _Memo,
        kernels/wq.py's) for key: the op and the ids of its weights; the
        caller checks that the weights are these very objects."""
        return self.memo.get(key)

    def memo_put(self, key, m):
        """Keep memo m for key. Bounded: past 4 per plan (at least 64), all
        are dropped (each call then checks once again and memos anew)."""
        if len(self.memo) >= 4 * max(16, len(self._plans)):
            self.memo.clear()
        self.memo[key] = m

    def agreed(self, serials):
        """The entry every rank hit (the same serial on every rank), moved
        to most recently used; None: a miss, the caller makes a plan."""
        s0 = serials[0]
        if s0 < 0 or any(s != s0 for s in serials):
            return None
        for i, e in enumerate(self._plans):
            if e.serial == s0:
                self._plans.append(self._plans.pop(i))
                return e
        raise AssertionError("agreed serial %d not in the cache" % s0)

    def make(self, key, tensors, **plan_args):
        """Collective: a new plan, cached as most recently used; first the
        plans whose weights are gone on every rank are closed, and after
        it the least recently used beyond the group's bound (if any)."""
        self._close_dead()
        opts = dict(self._options)
        opts.update(plan_args)
        plan = self._world.plan(**opts)
        self._serial += 1
        e = _Entry(key, tensors, plan, self._serial)
        self._plans.append(e)
        while self._limit is not None and len(self._plans) > self._limit:
            self._forget(self._plans[0])
        return e

    def _close_dead(self):
        """Collective (inside make): close the entries one of whose weights
        is gone on every rank. Whether a weight is gone is local (a
        rank's garbage collector may be behind), so the ranks agree on it
        first: each gathers a bit per entry (every rank's list is the same
        entries in the same order), and an entry is closed where every
        rank's bit is set; on any other rank it is closed at a later
        creation."""
        n = len(self._plans)
        if n == 0:
            return
        mine = bytearray((n + 7) // 8)
        for i, e in enumerate(self._plans):
            if any(r() is None for r in e.refs):
                mine[i // 8] |= 1 << (i % 8)
        every = bytearray(b"\xff" * len(mine))
        for c0 in range(0, len(mine), _GATHER_MAX):
            chunk = bytes(mine[c0:c0 + _GATHER_MAX])
            for part in self._world.allgather(chunk):
                for j, b in enumerate(part):
                    every[c0 + j] &= b
        dead = [e for i, e in enumerate(self._plans)
                if every[i // 8] >> (i % 8) & 1]
        for e in dead:
            self._forget(e)

    def drop(self, e):
        """Collective (an agreed entry): close it and forget it."""
        self._forget(e)

    def kept_weight(self, sources, tag, cols, build, refill=False):
        """The tensor kept for these very `sources` (weights), `tag` and
        `cols`, else build() kept as most recently used (as long as its
        sources live; at most the group's bound, if it has one). refill:
        tag is the sources' versions, and a kept tensor whose sources
        moved (changed in place: an optimizer step) is refilled in place
        (copy_ of build()), so that the backward's plan made for it is
        kept and only sets its weight again; else another tag is another
        tensor."""
        for i, item in enumerate(self._bwd):
            refs, ver, c, w = item
            if c == cols and len(refs) == len(sources) and \
                    all(r() is s for r, s in zip(refs, sources)) and \
                    (refill or ver == tag):
                if ver != tag:
                    with torch.no_grad():
                        w.copy_(build())
                    item[1] = tag
                self._bwd.append(self._bwd.pop(i))
                return w
        w = build()
        # Local: a kept tensor is only looked up by this rank (a plan made
        # for a new one is every rank's miss, agreed in the call).
        self._bwd = [item for item in self._bwd
                     if all(r() is not None for r in item[0])]
        self._bwd.append([[weakref.ref(s) for s in sources], tag, cols, w])
        if self._limit is not None and len(self._bwd) > self._limit:
            self._bwd.pop(0)
        return w


def weights_key(Bs):
    return tuple((b.data_ptr(), b._version, tuple(b.stride())) for b in Bs)


def capacity(rows):
    """The rows a plan is made for when a call needs `rows` (per-call rows
    library): the next power of two, so a growing row count re-creates
    the plan a bounded number of times (log2 of the largest) and the
    windows are at most twice what a call needs."""
    return 0 if rows == 0 else 1 << (int(rows) - 1).bit_length()


def flat_scale(s):
    return s.reshape(-1).contiguous()


def set_weights(e, Bs, B_scales=None):
    """Local: set the entry's weights again when a B (or, int8, its scale)
    changed in place (its version counter moved) or the scale is another
    tensor. agmm.QuantizedWeights (no version counter: NumPy parts) are set
    once, when the entry is made for them (kernels/wq.py)."""
    if not isinstance(Bs[0], torch.Tensor):
        if e.wkey is None:
            e.plan.set_weights(list(Bs))
            e.wkey = "wq"
        return
    wkey = weights_key(Bs) + (weights_key(B_scales) if B_scales is not None
                              else ())
    if e.wkey != wkey:
        Bc = [B if B.is_contiguous() else B.contiguous() for B in Bs]
        if B_scales is None:
            e.plan.set_weights(Bc)
        else:
            e.plan.set_weights(Bc, [flat_scale(s) for s in B_scales])
        e.wkey = wkey


def ag_key(k, ns, dtype, modes=None, epi=None):
    return ("ag-gemm", int(k), tuple(ns), dtype, modes, epi)
def ag_plan(cache, serials, m_local, k, ns, dtype, Bs, B_scales=None, modes=None,
            key=None, epi=None, wq=None):
    """(plan, m_rows) for this call of an all-gather op: the plan every
    rank hit (serials: every rank's cache.lookup(ag_key(...), Bs)), else a new
    one (collective), and the rows to pass (None: the plan's own). With
    per-call rows (agmm_plan_run_args), one plan serves every row count up
    to its capacity and is replaced by a larger one when a call needs
    more. int8: B_scales are the weights' flat float32 scales, `modes`
    (a_scale, w_scale) of the plan, `key` the one looked up (with this
    rank's scale layouts, known before the all-gather). epi: the plan's
    own epilogue (kernels/fp.py's lib_epilogue: activations, out dtype), or
    None. wq: a quantized plan's arguments (weight_dtype, group_size,
    zero_point; kernels/wq.py), the Bs agmm.QuantizedWeights."""
    key = ag_key(k, ns, dtype, modes, epi) if key is None else key
    e = cache.agreed(serials)
    grown = [capacity(r) for r in m_local]
    if e is not None and any(r > cap for r, cap in zip(m_local, e.plan.m_local)):
        grown = [max(cap, capacity(r)) for r, cap in zip(m_local, e.plan.m_local)]
        cache.drop(e)
        e = None
    if e is None:
        extra = {} if modes is None else {"a_scale": modes[0], "w_scale": modes[1]}
        if wq is not None:
            extra = dict(wq)
        if epi is not None:
            extra.update(activation=list(epi[0]), out_dtype=epi[1])
        e = cache.make(key, Bs, m_local=grown, k=k, n=ns if len(ns) > 1 else ns[0],
                       dtype=dtype, **extra)
    set_weights(e, Bs, B_scales)
    plan = e.plan
    m_rows = None if list(m_local) == plan.m_local else list(m_local)
    return plan, m_rows


def reduce_key(op, rows, k_mine, n, dtype, modes=None):
    """The cache key of a reduce plan; rows () for a plan taking its rows
    per call (reduce_plan's per_call: the fp and quantized ops), else
    the call's rows (int8's plans, one per shape)."""
    return (op, tuple(rows), int(k_mine), int(n), dtype, modes)


def reduce_plan(cache, serials, op, m_local, k_local, B, dtype, B_scale=None,
                 modes=None, key=None, wq=None, per_call=False, out=None):
    """The plan of op "gemm-rs" or "gemm-ar" every rank hit (serials: every
    rank's cache.lookup(reduce_key(...), [B])), else a new one for these rows
    (m_local: the rows of C each rank gets; "gemm-ar": their split of M),
    inner split k_local and weight B ([k_local[rank], n]); the weight is
    set again when B changed in place. The library has no per-call rows
    for these ops: a plan per shape. int8: B_scale, `modes` and `key` as
    for ag_plan; wq and a QuantizedWeight B as there.

    per_call: the plan takes its rows per call (agmm_plan_run_args'
    m_rows; the key made with rows ()), made for each rank's rows rounded
    up to a power of two (capacity) and replaced by a larger one when a
    call needs more, as ag_plan's: a decode step's changing rows
    reuse one plan. Returns (plan, m_rows: None or the rows to pass).
    out: the plan's out dtype ("bf16", "fp16"; None: float32), part of
    the caller's key."""
    e = cache.agreed(serials)
    n = int(B.shape[1]) if isinstance(B, torch.Tensor) else int(B.n)
    grown = None
    if e is not None and per_call:
        if getattr(e.plan, "k_local", None) not in (None, list(k_local)):
            raise AssertionError("cached %s plan of k %s for k %s"
                                 % (op, e.plan.k_local, k_local))
        if any(r > cap for r, cap in zip(m_local, e.plan.m_local)):
            grown = [max(cap, capacity(r))
                     for r, cap in zip(m_local, e.plan.m_local)]
            cache.drop(e)
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
            rows = grown or [capacity(r) for r in rows]
        e = cache.make(key, [B],
                       m_local=rows, k=sum(k_local), n=n, dtype=dtype,
                       op=op, k_local=list(k_local), **extra)
    set_weights(e, [B], None if B_scale is None else [B_scale])
    if not per_call:
        return e.plan
    rows = [int(r) for r in m_local]
    return e.plan, (None if rows == e.plan.m_local else rows)


def backward_weight(cache, Bs, cols=None):
    """cat([B_i.t() for B_i in Bs]) ([sum n_i, k], contiguous; with `cols`
    > k, zero columns after k up to cols), kept in the cache per the Bs
    (refilled in place when one changed in place), so that the backward's
    plans find the same tensor every step."""
    def build():
        w = torch.cat([B.t() for B in Bs], 0)
        if cols is not None and cols > w.shape[1]:
            w = torch.nn.functional.pad(w, (0, cols - int(w.shape[1])))
        return w.contiguous()

    return cache.kept_weight(list(Bs), tuple(B._version for B in Bs), cols,
                             build, refill=True)

