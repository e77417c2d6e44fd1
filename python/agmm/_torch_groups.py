"""agmm.torch's groups (a registered agmm.World per group name) and their
plan caches. Plans are created, reused and evicted identically on every
rank because every rank makes the same calls in the same order (see
agmm/torch.py's module doc); the cache is closed with the group.
"""
import os
from collections import OrderedDict

import torch

from .errors import InvalidArgument
from .world import World

PLAN_CACHE_SIZE = 8
DEFAULT_GROUP = "default"

_groups = {}


class _Group:
    def __init__(self, world, plan_options):
        self.world = world
        self.options = dict(plan_options)
        self.plans = OrderedDict()  # key -> (plan, weights key)
        # Backward weights (B^T, contiguous; several B_i^T stacked): the
        # source weights' key -> the tensor, kept so that its plan's key
        # (its data_ptr) stays valid; at most PLAN_CACHE_SIZE.
        self.bwd_weights = OrderedDict()

    def close_plans(self):
        while self.plans:
            _, (plan, _) = self.plans.popitem(last=False)
            plan.close()
        self.bwd_weights.clear()


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


def _remember(g, pkey, entry):
    """Put a new plan in the group's cache, closing the least recently used
    beyond PLAN_CACHE_SIZE."""
    g.plans[pkey] = entry
    while len(g.plans) > PLAN_CACHE_SIZE:
        _, (old, _) = g.plans.popitem(last=False)
        old.close()


def _cached_plan(g, m_local, k, ns, dtype, Bs, B_scales=None, modes=None):
    """(plan, m_rows) for this call: the group's plan for k, columns, dtype
    and weight tensors, created (collectively) if new, and the rows to pass
    (None: the plan's own). With per-call rows (agmm_plan_run_args), one
    plan serves every row count up to its capacity and is replaced by a
    larger one when a call needs more. Weights are set again when a B (or,
    int8, its scale) changed in place (its version counter moved) or the
    scale is another tensor. int8: B_scales are the weights' flat float32
    scales (the originals' keys, `modes` (a_scale, w_scale) of the plan)."""
    wkey = _weights_key(Bs)
    # data_ptr and strides: B and B.t() (the backward's) are different plans.
    pkey = (k, tuple(ns), dtype, tuple((w[0], w[2]) for w in wkey), modes)
    if B_scales is not None:
        wkey = wkey + _weights_key(B_scales)
    entry = g.plans.get(pkey)
    if entry is not None and \
            any(r > cap for r, cap in zip(m_local, entry[0].m_local)):
        del g.plans[pkey]
        grown = [max(cap, _capacity(r)) for r, cap in zip(m_local, entry[0].m_local)]
        entry[0].close()
        entry = None
    else:
        grown = [_capacity(r) for r in m_local]
    if entry is None:
        opts = {k2: v for k2, v in g.options.items() if k2 != "schedule"}
        if modes is not None:
            opts["a_scale"], opts["w_scale"] = modes
        plan = g.world.plan(m_local=grown, k=k,
                            n=ns if len(ns) > 1 else ns[0], dtype=dtype, **opts)
        entry = [plan, None]
        _remember(g, pkey, entry)
    else:
        g.plans.move_to_end(pkey)
    plan = entry[0]
    if entry[1] != wkey:
        plan.set_weights([B if B.is_contiguous() else B.contiguous() for B in Bs],
                         None if B_scales is None else
                         [_flat_scale(s) for s in B_scales])
        entry[1] = wkey
    m_rows = None if list(m_local) == plan.m_local else list(m_local)
    return plan, m_rows


def _reduce_plan(g, op, m_local, k_local, B):
    """The group's fp plan of op "gemm-rs" or "gemm-ar" for these rows
    (m_local: the rows of C each rank gets; "gemm-ar": their split of M),
    inner split k_local and weight B ([k_local[rank], n]), created
    (collectively) if new; the weight is set again when B changed in place.
    The library has no per-call rows for these ops: a plan per shape."""
    wkey = _weights_key([B])
    pkey = (op, tuple(m_local), tuple(k_local), int(B.shape[1]), B.dtype,
            (wkey[0][0], wkey[0][2]))
    entry = g.plans.get(pkey)
    if entry is None:
        opts = {k2: v for k2, v in g.options.items() if k2 != "schedule"}
        plan = g.world.plan(m_local=list(m_local), k=sum(k_local),
                            n=int(B.shape[1]), dtype=_DT[B.dtype][1], op=op,
                            k_local=list(k_local), **opts)
        entry = [plan, None]
        _remember(g, pkey, entry)
    else:
        g.plans.move_to_end(pkey)
    plan = entry[0]
    if entry[1] != wkey:
        plan.set_weight(B if B.is_contiguous() else B.contiguous())
        entry[1] = wkey
    return plan


def _bwd_weight(g, Bs):
    """cat([B_i.t() for B_i in Bs]) ([sum n_i, k], contiguous), kept per
    group and per the Bs' keys (a weight changed in place makes a new one),
    so that the backward's plans find the same tensor every step."""
    key = _weights_key(Bs)
    w = g.bwd_weights.get(key)
    if w is None:
        w = torch.cat([B.t() for B in Bs], 0).contiguous()
        g.bwd_weights[key] = w
        while len(g.bwd_weights) > PLAN_CACHE_SIZE:
            g.bwd_weights.popitem(last=False)
    else:
        g.bwd_weights.move_to_end(key)
    return w


def group_plans(name=None):
    """The plans the group `name` has cached (most recently used last): to
    trace them (agmm.Trace) or read their gemm_info()."""
    return [entry[0] for entry in _group(name).plans.values()]
