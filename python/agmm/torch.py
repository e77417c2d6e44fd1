"""agmm.torch: the all-gather + matmul PyTorch users know, on CPU tensors.

    import agmm.torch
    agmm.torch.register_group("tp", world)      # or the default: from env
    A, [C] = agmm.torch.fused_all_gather_matmul(A_shard, [B], gather_dim=0,
                                                 group_name="tp")

The signature and results follow torch.ops.symm_mem.fused_all_gather_matmul
(which has no CPU kernel): A_shard [..., k] is gathered along gather_dim
across the group's ranks (in rank order, as torch.cat(all_gather(A_shard),
gather_dim)), each B_i [k, n_i] multiplies it, and the op returns
(A_gathered or None, [C_i]). Differences, all by design:
  - C_i is float32 (agmm accumulates and stores fp32) whatever A's dtype;
  - shards may differ in size along gather_dim (agmm allows uneven shards;
    torch requires equal ones): each call all-gathers every rank's shape (a
    few bytes, one small collective), which also turns a shape mismatch
    into an error on every rank instead of a hang;
  - gather_dim != 0 costs a copy of A_shard into gather_dim-first layout
    (torch does the same) and C comes back as a view in the original
    layout;
  - a B that is not C-contiguous (B = W.t()) is copied once per plan and
    weight version.
It is registered as the custom op torch.ops.agmm.fused_all_gather_matmul
(torch.library, CPU kernel in Python; torch 1.13 allows it), and this
module's function calls it.

Plans are cached per group, per (k, [n_i], dtype) and per weights
(data_ptr, version counter, strides of each B): a weight changed in place
(its _version moves) is set again; a new weight tensor gets a new plan.
With per-call rows (agmm_plan_run_args) one plan serves every row count
up to its capacity (each rank's largest rows so far, rounded up to a power
of two) and is replaced by a larger one when a call needs more. Several
weights share one plan and one gather. return_A: the library fills
A_gathered in the same round (agmm_run_args_t.a_gathered). Plans are
created, reused and
evicted (least recently used, beyond PLAN_CACHE_SIZE per group)
identically on every rank because every rank makes the same calls in the
same order; the cache is closed with the group (unregister_group, or the
world's close()).
"""
import os
import struct
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

    def close_plans(self):
        while self.plans:
            _, (plan, _) = self.plans.popitem(last=False)
            plan.close()


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


def _weights_key(Bs):
    return tuple((b.data_ptr(), b._version, tuple(b.stride())) for b in Bs)


def _capacity(rows):
    """The rows a plan is made for when a call needs `rows` (per-call rows
    library): the next power of two, so a growing row count re-creates
    the plan a bounded number of times (log2 of the largest) and the
    windows are at most twice what a call needs."""
    return 0 if rows == 0 else 1 << (int(rows) - 1).bit_length()


def _cached_plan(g, m_local, k, ns, dtype, Bs):
    """(plan, m_rows) for this call: the group's plan for k, columns, dtype
    and weight tensors, created (collectively) if new, and the rows to pass
    (None: the plan's own). With per-call rows (agmm_plan_run_args), one
    plan serves every row count up to its capacity and is replaced by a
    larger one when a call needs more. Weights are set again when a B
    changed in place (its version counter moved)."""
    wkey = _weights_key(Bs)
    pkey = (k, tuple(ns), dtype, tuple(w[0] for w in wkey))
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
        plan = g.world.plan(m_local=grown, k=k,
                            n=ns if len(ns) > 1 else ns[0], dtype=dtype, **opts)
        g.plans[pkey] = entry = [plan, None]
        while len(g.plans) > PLAN_CACHE_SIZE:
            _, (old, _) = g.plans.popitem(last=False)
            old.close()
    else:
        g.plans.move_to_end(pkey)
    plan = entry[0]
    if entry[1] != wkey:
        plan.set_weights([B if B.is_contiguous() else B.contiguous() for B in Bs])
        entry[1] = wkey
    m_rows = None if list(m_local) == plan.m_local else list(m_local)
    return plan, m_rows


def _impl(A_shard, Bs, gather_dim, group_name, return_A=True):
    g = _group(group_name)
    world = g.world
    if A_shard.device.type != "cpu" or A_shard.dtype not in _DT:
        raise InvalidArgument("A_shard: %s %s (agmm takes CPU float16, "
                              "bfloat16 or float32)" % (A_shard.device, A_shard.dtype))
    if A_shard.dim() < 2:
        raise InvalidArgument("A_shard: %d dimensions (at least 2: [..., k])"
                              % A_shard.dim())
    nd = A_shard.dim()
    gd = gather_dim + nd if gather_dim < 0 else gather_dim
    if not 0 <= gd < nd - 1:
        raise InvalidArgument("gather_dim %d: allowed %d..%d for A_shard of %d "
                              "dimensions (not the last, k)" % (gather_dim, -nd,
                                                                nd - 2, nd))
    if len(Bs) < 1:
        raise InvalidArgument("Bs: an empty list (at least one weight)")
    code, dtype = _DT[A_shard.dtype]
    k = A_shard.shape[-1]
    for i, B in enumerate(Bs):
        if B.dim() != 2 or B.shape[0] != k or B.dtype != A_shard.dtype \
                or B.device.type != "cpu":
            raise InvalidArgument("Bs[%d]: %s %s %s (expected [k=%d, n] %s on "
                                  "the CPU)" % (i, list(B.shape), B.dtype,
                                                B.device, k, A_shard.dtype))
    ns = [int(B.shape[1]) for B in Bs]
    # gather_dim first, the rest of the leading dims folded into rows.
    a = A_shard if gd == 0 else A_shard.movedim(gd, 0)
    lead = list(a.shape[:-1])  # [s_gd, other leading dims...]
    a2 = a.reshape(-1, k)      # a view when contiguous, else one copy
    rows_per_slice = 1
    for s in lead[1:]:
        rows_per_slice *= int(s)

    # Every rank's shape: rows, slices along gather_dim, k, ns, dtype.
    mine = [int(lead[0]), rows_per_slice, k, code, len(ns)] + ns
    blob = struct.pack("<%dq" % len(mine), *mine)
    everyone = [struct.unpack("<%dq" % len(mine), b) for b in world.allgather(blob)]
    for r, other in enumerate(everyone):
        if other[1:] != tuple(mine[1:]):
            raise InvalidArgument(
                "fused_all_gather_matmul: rank %d has shape/dtype %s, rank %d "
                "%s (ranks must agree on every dimension but gather_dim)"
                % (r, list(other), world.rank, mine))
    slices = [o[0] for o in everyone]
    m_local = [s * rows_per_slice for s in slices]
    if sum(m_local) == 0:
        raise InvalidArgument("fused_all_gather_matmul: every rank's shard is "
                              "empty")

    # One plan for every weight: one gather.
    A_g = None
    plan, m_rows = _cached_plan(g, m_local, k, ns, dtype, Bs)
    res = plan.run(a2, a_gathered=True if return_A else None, m_rows=m_rows,
                   schedule=g.options.get("schedule", "auto"))
    if return_A:
        A_g, res = res
    Cs = res if isinstance(res, list) else [res]
    total = sum(slices)
    out_lead = [total] + lead[1:]
    Cs = [c.view(out_lead + [n]) for c, n in zip(Cs, ns)]
    if gd != 0:
        Cs = [c.movedim(0, gd) for c in Cs]
    if return_A:
        A_g = A_g.view(out_lead + [k])
        if gd != 0:
            A_g = A_g.movedim(0, gd)
    return A_g, Cs


# ------------------------------------------------------ the custom op
_SCHEMA = ("fused_all_gather_matmul(Tensor A_shard, Tensor[] Bs, int gather_dim, "
           "str group_name, *, bool return_A=True) -> (Tensor?, Tensor[])")
_lib_def = torch.library.Library("agmm", "DEF")
_lib_def.define(_SCHEMA)
_lib_def.impl("fused_all_gather_matmul", _impl, "CPU")
REGISTERED_OP = True  # torch.ops.agmm.fused_all_gather_matmul exists


def fused_all_gather_matmul(A_shard, Bs, gather_dim=0, group_name=None,
                            return_A=True):
    """(A_gathered or None, [C_i]) with A_gathered = cat of every rank's
    A_shard along gather_dim and C_i = A_gathered @ Bs[i] (float32). Calls
    torch.ops.agmm.fused_all_gather_matmul; group_name None: the default
    group (the world from the environment)."""
    return torch.ops.agmm.fused_all_gather_matmul(
        A_shard, list(Bs), int(gather_dim),
        DEFAULT_GROUP if group_name is None else group_name, return_A=return_A)


__all__ = ["fused_all_gather_matmul", "register_group", "unregister_group",
           "PLAN_CACHE_SIZE", "DEFAULT_GROUP", "REGISTERED_OP"]
