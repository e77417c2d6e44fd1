"""agmm.torch's groups: a registered agmm.World per group name (the
default group: the environment's world, made on first use), each with
its plan cache (plan_cache.py, closed with the group); the size and rank
of a group for the fake kernels (meta_world); the dtype codes and shape
checks every kernel shares.
"""
import os

import torch

from ..._buffers import free_scratch
from ...errors import InvalidArgument
from ...world import World
from .plan_cache import PlanCache

DEFAULT_GROUP = "default"

_groups = {}


class _Group:
    """A registered group: its world, its plan options and its plan cache
    (plan_cache.PlanCache)."""

    def __init__(self, world, plan_options):
        self.world = world
        self.options = dict(plan_options)
        self.cache = PlanCache(world, self.options)

    @property
    def schedule(self):
        """The group's schedule for its rounds ("auto", "fused", "baseline")."""
        return self.options.get("schedule", "auto")

    @property
    def plans(self):
        """The cached entries, least recently used first."""
        return self.cache.entries()


def register_group(name, world, **plan_options):
    """Make `world` (an agmm.World) the group `name` for the op. Plan
    options (tile_m, tile_n, comm_workers, gemm_workers, gemm_engine,
    timeout; see agmm.Plan) apply to the group's plans, `schedule`
    ("auto", the default, "fused" or "baseline") to its rounds, and
    `plan_cache_size` (None, the default: no bound; else at least 1) bounds
    how many plans the group keeps (the least recently used beyond it are
    closed: a bound below the weights a step uses remakes plans every
    call). Every rank must pass the same options."""
    bad = set(plan_options) - {"tile_m", "tile_n", "comm_workers", "gemm_workers",
                               "gemm_engine", "timeout", "schedule",
                               "plan_cache_size"}
    if bad:
        raise InvalidArgument("register_group: unknown option(s) %s"
                              % ", ".join(sorted(bad)))
    size = plan_options.get("plan_cache_size")
    if size is not None and (type(size) is not int or size < 1):
        raise InvalidArgument("register_group: plan_cache_size %r (allowed: "
                              "None, or an int of at least 1)" % (size,))
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
        g.cache.close()
    free_scratch()


def get_group(name):
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


DT = {torch.float16: (0, "fp16"), torch.bfloat16: (1, "bf16"),
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


def split_rows(rows, P):
    """row_split's values in Python (agmm_k_split: rows // P each, the
    first rows % P ranks one more), for the calls' fast paths."""
    q, r = divmod(int(rows), P)
    return [q + 1 if i < r else q for i in range(P)]


def group_plans(name=None):
    """The plans the group `name` has cached (most recently used last): to
    trace them (agmm.Trace) or read their gemm_info()."""
    return [e.plan for e in get_group(name).plans]


def meta_world(group_name):
    """(size, rank) of a group without communicating: a registered group's
    world, else (the default group before first use) the launcher's
    environment (AGMM_WORLD_SIZE/AGMM_RANK, else WORLD_SIZE/RANK)."""
    name = DEFAULT_GROUP if group_name is None else group_name
    g = _groups.get(name)
    if g is not None:
        return g.world.size, g.world.rank
    env = os.environ
    size = env.get("AGMM_WORLD_SIZE", env.get("WORLD_SIZE"))
    rank = env.get("AGMM_RANK", env.get("RANK"))
    if name != DEFAULT_GROUP or size is None or rank is None:
        raise InvalidArgument("group_name %r: the Meta kernel needs the group's "
                              "size: register it (agmm.torch.register_group) or "
                              "set WORLD_SIZE and RANK" % (name,))
    return int(size), int(rank)


def registered(name):
    """Whether a group `name` is registered (no default group made)."""
    return name in _groups
