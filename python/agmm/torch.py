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

W8A8 (issue 22), PyTorch's scaled ops with int8 in place of fp8:
  fused_all_gather_scaled_matmul(A_shard, Bs, A_scale, B_scales,
      gather_dim=0, group_name=None, out_dtypes=None) -> (A_gathered, [C_i])
  fused_scaled_matmul_reduce_scatter(A, B, A_scale, B_scale,
      reduce_op="sum", scatter_dim=0, group_name=None, out_dtype=None) -> C
(torch.ops.agmm.*). Scales are float32 and laid out as torch's: A_scale
[*A.shape[:-1], 1] per row or one element per tensor (each rank's own),
B_scale [1, n] per column or one element; every rank and every weight of
a call must use one layout for A and one for the weights (a shape that
reads either way, one row or one column, goes with the others). Outputs
float32, or bfloat16 converted after the round; no other out dtype, no
gather/scatter dimension but 0, no reduce_op but "sum". int8 plans are
cached like the others, also keyed by the scale layouts; a B_scale
changed in place or replaced sets the weight again. A_gathered is the
int8 rows (torch returns no gathered scales either).
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
    pkey = (k, tuple(ns), dtype, tuple(w[0] for w in wkey), modes)
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


# ------------------------------------------------ the int8 (W8A8) ops
# How a scale tensor's shape lays out its values: per row/column, one for
# the tensor, or either (one row/column: both read the same).
_EITHER, _CHANNEL, _TENSOR = 0, 1, 2
_KIND_NAMES = {_CHANNEL: "per-row/column (channel)", _TENSOR: "per-tensor"}
# torch's ScalarType codes, as a ScalarType?[] argument reaches the kernel.
_SCALAR_TYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32,
                 4: torch.int64, 5: torch.float16, 6: torch.float32,
                 7: torch.float64, 11: torch.bool, 15: torch.bfloat16}
_OUT_DTYPES = (torch.float32, torch.bfloat16)
_MAX_WEIGHTS = 16  # AGMM_MAX_WEIGHTS
_MAX_LEAD = 8      # leading dimensions of the reduce-scatter's A


def _flat_scale(s):
    return s.reshape(-1).contiguous()


def _scale_tensor(x, what):
    if not isinstance(x, torch.Tensor) or x.device.type != "cpu" \
            or x.dtype != torch.float32:
        desc = ("%s %s" % (x.device, x.dtype)) if isinstance(x, torch.Tensor) \
            else type(x).__name__
        raise InvalidArgument("%s: expected a CPU torch.float32 tensor, got %s"
                              % (what, desc))


def _a_scale_kind(A, A_scale, what="A_scale"):
    """How A_scale scales A ([..., k]): per row (shape [*A.shape[:-1], 1]
    as torch's row-wise scaling has it, or A.shape[:-1]), one element (per
    tensor), or either (one row)."""
    _scale_tensor(A_scale, what)
    lead = tuple(A.shape[:-1])
    rowwise = tuple(A_scale.shape) in (lead + (1,), lead)
    single = A_scale.numel() == 1
    if rowwise:
        return _EITHER if single else _CHANNEL
    if single:
        return _TENSOR
    raise InvalidArgument(
        "%s: shape %s (expected %s for per-row scales, or one element for a "
        "per-tensor scale)" % (what, list(A_scale.shape), list(lead + (1,))))


def _b_scale_kind(B, B_scale, what):
    """How B_scale scales B ([k, n]): per column ([1, n] as torch has it,
    or [n]), one element, or either (one column)."""
    _scale_tensor(B_scale, what)
    n = int(B.shape[1])
    colwise = tuple(B_scale.shape) in ((1, n), (n,))
    single = B_scale.numel() == 1
    if colwise:
        return _EITHER if single else _CHANNEL
    if single:
        return _TENSOR
    raise InvalidArgument("%s: shape %s (expected [1, %d] for per-column "
                          "scales, or one element for a per-tensor scale)"
                          % (what, list(B_scale.shape), n))


def _resolve_mode(kinds, what):
    """The plan's layout from every rank's kinds: "channel" or "tensor"
    (all either: tensor, as torch reads one element)."""
    found = set(kinds) - {_EITHER}
    if len(found) > 1:
        raise InvalidArgument("%s: per-row/column on some ranks or weights, "
                              "per-tensor on others (one layout per call)" % what)
    return "channel" if found == {_CHANNEL} else "tensor"


def _out_dtype(dt, what):
    if dt is None:
        return torch.float32
    if isinstance(dt, int) and not isinstance(dt, bool):
        dt = _SCALAR_TYPES.get(dt, dt)
    if dt not in _OUT_DTYPES:
        raise InvalidArgument("%s: %s (allowed: torch.float32, the library's "
                              "output, or torch.bfloat16, converted from it "
                              "after the round)" % (what, dt))
    return dt


def _out_dtypes(out_dtypes, count):
    if out_dtypes is None:
        return [torch.float32] * count
    if isinstance(out_dtypes, (torch.dtype, int)):
        out_dtypes = [out_dtypes] * count
    out_dtypes = list(out_dtypes)
    if len(out_dtypes) != count:
        raise InvalidArgument("out_dtypes: %d for %d weights"
                              % (len(out_dtypes), count))
    return [_out_dtype(d, "out_dtypes[%d]" % i) for i, d in enumerate(out_dtypes)]


def _int8_tensor(x, what, dims=None):
    if not isinstance(x, torch.Tensor) or x.device.type != "cpu" \
            or x.dtype != torch.int8:
        desc = ("%s %s" % (x.device, x.dtype)) if isinstance(x, torch.Tensor) \
            else type(x).__name__
        raise InvalidArgument("%s: expected a CPU torch.int8 tensor, got %s (the "
                              "scaled ops take int8 values; agmm.quantize makes "
                              "them)" % (what, desc))
    if dims == 2 and x.dim() != 2:
        raise InvalidArgument("%s: %d dimensions (expected 2: [k, n])"
                              % (what, x.dim()))
    if dims is None and x.dim() < 2:
        raise InvalidArgument("%s: %d dimensions (at least 2: [..., k])"
                              % (what, x.dim()))


def _scaled_ag_impl(A_shard, Bs, A_scale, B_scales, gather_dim, group_name,
                    out_dtypes, return_A=True):
    g = _group(group_name)
    world = g.world
    _int8_tensor(A_shard, "A_shard")
    nd = A_shard.dim()
    if (gather_dim + nd if gather_dim < 0 else gather_dim) != 0:
        raise InvalidArgument("gather_dim: %d (the scaled op gathers along "
                              "dimension 0 only)" % gather_dim)
    Bs, B_scales = list(Bs), list(B_scales)
    if len(Bs) < 1:
        raise InvalidArgument("Bs: an empty list (at least one weight)")
    if len(B_scales) != len(Bs):
        raise InvalidArgument("B_scales: %d for %d weights"
                              % (len(B_scales), len(Bs)))
    k = int(A_shard.shape[-1])
    for i, B in enumerate(Bs):
        _int8_tensor(B, "Bs[%d]" % i, dims=2)
        if B.shape[0] != k:
            raise InvalidArgument("Bs[%d]: shape %s (expected [k=%d, n])"
                                  % (i, list(B.shape), k))
    outs = _out_dtypes(out_dtypes, len(Bs))
    akind = _a_scale_kind(A_shard, A_scale)
    bkinds = [_b_scale_kind(B, S, "B_scales[%d]" % i)
              for i, (B, S) in enumerate(zip(Bs, B_scales))]
    ns = [int(B.shape[1]) for B in Bs]
    lead = list(A_shard.shape[:-1])
    rows_per_slice = 1
    for d in lead[1:]:
        rows_per_slice *= int(d)
    a2 = A_shard.reshape(-1, k)

    # Every rank's shape and scale layouts: the ranks must agree on all but
    # the rows, and on one layout for A and one for the weights. Padded to
    # the most weights, so that every rank sends as many bytes.
    nw = len(ns)
    if nw > _MAX_WEIGHTS:
        raise InvalidArgument("Bs: %d weights (at most %d)" % (nw, _MAX_WEIGHTS))
    pad = [0] * (_MAX_WEIGHTS - nw)
    mine = [int(lead[0]), rows_per_slice, k, nw] + ns + pad + [akind] + bkinds + pad
    blob = struct.pack("<%dq" % len(mine), *mine)
    everyone = [struct.unpack("<%dq" % len(mine), b) for b in world.allgather(blob)]
    for r, other in enumerate(everyone):
        if other[1:4 + _MAX_WEIGHTS] != tuple(mine[1:4 + _MAX_WEIGHTS]):
            raise InvalidArgument(
                "fused_all_gather_scaled_matmul: rank %d has shape %s, rank %d "
                "%s (ranks must agree on every dimension but the rows)"
                % (r, list(other[:4 + other[3]]), world.rank, mine[:4 + nw]))
    a_mode = _resolve_mode([o[4 + _MAX_WEIGHTS] for o in everyone], "A_scale")
    w_mode = _resolve_mode([kd for o in everyone
                            for kd in o[5 + _MAX_WEIGHTS:5 + _MAX_WEIGHTS + nw]],
                           "B_scales")
    slices = [o[0] for o in everyone]
    m_local = [sl * rows_per_slice for sl in slices]
    if sum(m_local) == 0:
        raise InvalidArgument("fused_all_gather_scaled_matmul: every rank's "
                              "shard is empty")
    plan, m_rows = _cached_plan(g, m_local, k, ns, "int8", Bs, B_scales,
                                (a_mode, w_mode))
    res = plan.run(a2, a_scale=_flat_scale(A_scale),
                   a_gathered=True if return_A else None, m_rows=m_rows,
                   schedule=g.options.get("schedule", "auto"))
    A_g = None
    if return_A:
        (A_g, _), res = res
        A_g = A_g.view([sum(slices)] + lead[1:] + [k])
    Cs = res if isinstance(res, list) else [res]
    out_lead = [sum(slices)] + lead[1:]
    Cs = [c.view(out_lead + [n]) for c, n in zip(Cs, ns)]
    Cs = [c if dt == torch.float32 else c.to(dt) for c, dt in zip(Cs, outs)]
    return A_g, Cs


def _scaled_rs_impl(A, B, A_scale, B_scale, reduce_op, scatter_dim, group_name,
                    out_dtype):
    g = _group(group_name)
    world = g.world
    if reduce_op != "sum":
        raise InvalidArgument("reduce_op: %r (allowed: \"sum\")" % (reduce_op,))
    _int8_tensor(A, "A")
    nd = A.dim()
    if (scatter_dim + nd if scatter_dim < 0 else scatter_dim) != 0:
        raise InvalidArgument("scatter_dim: %d (the scaled op scatters along "
                              "dimension 0 only)" % scatter_dim)
    _int8_tensor(B, "B", dims=2)
    k_mine = int(A.shape[-1])
    if B.shape[0] != k_mine:
        raise InvalidArgument("B: shape %s (expected [k_local=%d, n], A's last "
                              "dimension)" % (list(B.shape), k_mine))
    out = _out_dtype(out_dtype, "out_dtype")
    akind = _a_scale_kind(A, A_scale)
    bkind = _b_scale_kind(B, B_scale, "B_scale")
    n = int(B.shape[1])
    lead = [int(d) for d in A.shape[:-1]]
    if len(lead) > _MAX_LEAD:
        raise InvalidArgument("A: %d dimensions (at most %d)" % (nd, _MAX_LEAD + 1))
    # Padded: every rank sends as many bytes whatever A's dimensions.
    L = _MAX_LEAD + 2
    mine = [nd - 1] + lead + [0] * (_MAX_LEAD - len(lead)) + [n, k_mine, akind, bkind]
    blob = struct.pack("<%dq" % len(mine), *mine)
    everyone = [struct.unpack("<%dq" % len(mine), b) for b in world.allgather(blob)]
    for r, other in enumerate(everyone):
        if other[:L] != tuple(mine[:L]):
            raise InvalidArgument(
                "fused_scaled_matmul_reduce_scatter: rank %d has A's rows %s "
                "and n %d, rank %d %s and %d (ranks must agree on all but k)"
                % (r, list(other[1:1 + other[0]]), other[L - 1], world.rank,
                   lead, n))
    k_local = [o[L] for o in everyone]
    a_mode = _resolve_mode([o[L + 1] for o in everyone], "A_scale")
    w_mode = _resolve_mode([o[L + 2] for o in everyone], "B_scale")
    P = world.size
    rows_per_slice = 1
    for d in lead[1:]:
        rows_per_slice *= d
    from ._lib import fn
    split = [int(fn.agmm_k_split(lead[0], P, r)) for r in range(P)]
    m_local = [sl * rows_per_slice for sl in split]
    if sum(k_local) == 0 or sum(m_local) == 0:
        raise InvalidArgument("fused_scaled_matmul_reduce_scatter: an empty "
                              "product (rows %d, k %d)" % (sum(m_local),
                                                           sum(k_local)))
    wkey = _weights_key([B, B_scale])
    pkey = ("gemm-rs", tuple(m_local), tuple(k_local), n, wkey[0][0],
            (a_mode, w_mode))
    entry = g.plans.get(pkey)
    if entry is None:
        opts = {k2: v for k2, v in g.options.items() if k2 != "schedule"}
        plan = g.world.plan(m_local=m_local, k=sum(k_local), n=n, dtype="int8",
                            op="gemm-rs", k_local=k_local, a_scale=a_mode,
                            w_scale=w_mode, **opts)
        entry = [plan, None]
        _remember(g, pkey, entry)
    else:
        g.plans.move_to_end(pkey)
    plan = entry[0]
    if entry[1] != wkey:
        plan.set_weight(B if B.is_contiguous() else B.contiguous(),
                        scale=_flat_scale(B_scale))
        entry[1] = wkey
    c = plan.run(A.reshape(-1, k_mine), a_scale=_flat_scale(A_scale),
                 schedule=g.options.get("schedule", "auto"))
    c = c.view([split[world.rank]] + lead[1:] + [n])
    return c if out == torch.float32 else c.to(out)


# ------------------------------------------------------ the custom op
_SCHEMA = ("fused_all_gather_matmul(Tensor A_shard, Tensor[] Bs, int gather_dim, "
           "str group_name, *, bool return_A=True) -> (Tensor?, Tensor[])")
_lib_def = torch.library.Library("agmm", "DEF")
_lib_def.define(_SCHEMA)
_lib_def.impl("fused_all_gather_matmul", _impl, "CPU")
REGISTERED_OP = True  # torch.ops.agmm.fused_all_gather_matmul exists
_lib_def.define("fused_all_gather_scaled_matmul(Tensor A_shard, Tensor[] Bs, "
                "Tensor A_scale, Tensor[] B_scales, int gather_dim, "
                "str group_name, ScalarType?[] out_dtypes, *, "
                "bool return_A=True) -> (Tensor?, Tensor[])")
_lib_def.impl("fused_all_gather_scaled_matmul", _scaled_ag_impl, "CPU")
_lib_def.define("fused_scaled_matmul_reduce_scatter(Tensor A, Tensor B, "
                "Tensor A_scale, Tensor B_scale, str reduce_op, int scatter_dim, "
                "str group_name, ScalarType? out_dtype) -> Tensor")
_lib_def.impl("fused_scaled_matmul_reduce_scatter", _scaled_rs_impl, "CPU")


def fused_all_gather_matmul(A_shard, Bs, gather_dim=0, group_name=None,
                            return_A=True):
    """(A_gathered or None, [C_i]) with A_gathered = cat of every rank's
    A_shard along gather_dim and C_i = A_gathered @ Bs[i] (float32). Calls
    torch.ops.agmm.fused_all_gather_matmul; group_name None: the default
    group (the world from the environment)."""
    return torch.ops.agmm.fused_all_gather_matmul(
        A_shard, list(Bs), int(gather_dim),
        DEFAULT_GROUP if group_name is None else group_name, return_A=return_A)


def fused_all_gather_scaled_matmul(A_shard, Bs, A_scale, B_scales, gather_dim=0,
                                   group_name=None, out_dtypes=None,
                                   return_A=True):
    """W8A8: (A_gathered or None, [C_i]) with A_gathered = cat of every
    rank's int8 A_shard along dim 0 and C_i = (A_gathered @ Bs[i]) scaled
    by the rows' and the columns' scales. A_shard int8 [..., k]; A_scale
    float32 [*A_shard.shape[:-1], 1] (per row) or one element (per rank's
    shard); Bs[i] int8 [k, n_i] with B_scales[i] float32 [1, n_i] (per
    column) or one element. out_dtypes: None (float32), one dtype or one
    per weight, float32 or bfloat16 (converted after the round). Calls
    torch.ops.agmm.fused_all_gather_scaled_matmul."""
    Bs, B_scales = list(Bs), list(B_scales)
    outs = _out_dtypes(out_dtypes, len(Bs)) if len(Bs) else []
    return torch.ops.agmm.fused_all_gather_scaled_matmul(
        A_shard, Bs, A_scale, B_scales, int(gather_dim),
        DEFAULT_GROUP if group_name is None else group_name, outs,
        return_A=return_A)


def fused_scaled_matmul_reduce_scatter(A, B, A_scale, B_scale, reduce_op="sum",
                                       scatter_dim=0, group_name=None,
                                       out_dtype=None):
    """W8A8 GEMM + reduce-scatter: this rank's rows of sum_r (A_r @ B_r)
    scaled, A_r int8 [M, ..., k_local[r]] (rank r's slice of the inner
    dimension), A_scale float32 [M, ..., 1] (per row) or one element,
    B_r int8 [k_local[r], n] with B_scale float32 [1, n] or one element.
    The rows are split along dimension 0 as agmm_k_split does (equal when
    the ranks divide it, as torch requires; else the first ones one more).
    out_dtype: None/float32 or bfloat16. Calls
    torch.ops.agmm.fused_scaled_matmul_reduce_scatter."""
    _out_dtype(out_dtype, "out_dtype")
    return torch.ops.agmm.fused_scaled_matmul_reduce_scatter(
        A, B, A_scale, B_scale, str(reduce_op), int(scatter_dim),
        DEFAULT_GROUP if group_name is None else group_name, out_dtype)


__all__ = ["fused_all_gather_matmul", "fused_all_gather_scaled_matmul",
           "fused_scaled_matmul_reduce_scatter", "register_group",
           "unregister_group", "PLAN_CACHE_SIZE", "DEFAULT_GROUP",
           "REGISTERED_OP"]
