"""agmm.torch's W8A8 int8 ops (issue 22): the CPU kernels of
fused_all_gather_scaled_matmul and fused_scaled_matmul_reduce_scatter
(python/agmm/torch/__init__.py's module doc has the contract)."""
import struct

import torch

from ...errors import InvalidArgument
from ..distributed.groups import as_rows, check_tensor, get_group
from ..distributed.plan_cache import ag_key, ag_plan, flat_scale, reduce_key, reduce_plan

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


def int8_out_dtype(dt, what):
    if dt is None:
        return torch.float32
    if isinstance(dt, int) and not isinstance(dt, bool):
        dt = _SCALAR_TYPES.get(dt, dt)
    if dt not in _OUT_DTYPES:
        raise InvalidArgument("%s: %s (allowed: torch.float32, the library's "
                              "output, or torch.bfloat16, converted from it "
                              "after the round)" % (what, dt))
    return dt


def int8_out_dtypes(out_dtypes, count):
    if out_dtypes is None:
        return [torch.float32] * count
    if isinstance(out_dtypes, (torch.dtype, int)):
        out_dtypes = [out_dtypes] * count
    out_dtypes = list(out_dtypes)
    if len(out_dtypes) != count:
        raise InvalidArgument("out_dtypes: %d for %d weights"
                              % (len(out_dtypes), count))
    return [int8_out_dtype(d, "out_dtypes[%d]" % i) for i, d in enumerate(out_dtypes)]


def _int8_tensor(x, what, dims=None):
    check_tensor(x, what, (torch.int8,), "%(what)s: expected a CPU torch.int8 "
                 "tensor, got %(got)s (the scaled ops take int8 values; "
                 "agmm.quantize makes them)", dims)


def scaled_ag_kernel(A_shard, Bs, A_scale, B_scales, gather_dim, group_name,
                    out_dtypes, return_A=True):
    g = get_group(group_name)
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
    outs = int8_out_dtypes(out_dtypes, len(Bs))
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
    # The plan cache's key has this rank's layouts (the plan's own modes
    # are resolved from every rank's); its serial goes last.
    key = ag_key(k, ns, "int8", ("kinds", akind, tuple(bkinds)))
    mine = [int(lead[0]), rows_per_slice, k, nw] + ns + pad + [akind] + bkinds + \
        pad + [g.cache.lookup(key, Bs)]
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
    plan, m_rows = ag_plan(g.cache, [o[-1] for o in everyone], m_local, k, ns,
                                "int8", Bs, B_scales, (a_mode, w_mode), key)
    res = plan.run(a2, a_scale=flat_scale(A_scale),
                   a_gathered=True if return_A else None, m_rows=m_rows,
                   schedule=g.schedule)
    A_g = None
    if return_A:
        (A_g, _), res = res
        A_g = A_g.view([sum(slices)] + lead[1:] + [k])
    Cs = res if isinstance(res, list) else [res]
    out_lead = [sum(slices)] + lead[1:]
    Cs = [c.view(out_lead + [n]) for c, n in zip(Cs, ns)]
    Cs = [c if dt == torch.float32 else c.to(dt) for c, dt in zip(Cs, outs)]
    return A_g, Cs


def scaled_rs_kernel(A, B, A_scale, B_scale, reduce_op, scatter_dim, group_name,
                    out_dtype):
    g = get_group(group_name)
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
    out = int8_out_dtype(out_dtype, "out_dtype")
    akind = _a_scale_kind(A, A_scale)
    bkind = _b_scale_kind(B, B_scale, "B_scale")
    n = int(B.shape[1])
    lead = [int(d) for d in A.shape[:-1]]
    if len(lead) > _MAX_LEAD:
        raise InvalidArgument("A: %d dimensions (at most %d)" % (nd, _MAX_LEAD + 1))
    # Padded: every rank sends as many bytes whatever A's dimensions.
    L = _MAX_LEAD + 2
    total = 1
    for d in lead:
        total *= d
    key = reduce_key("gemm-rs", [total], k_mine, n, "int8", ("kinds", akind, bkind))
    mine = [nd - 1] + lead + [0] * (_MAX_LEAD - len(lead)) + \
        [n, k_mine, akind, bkind, g.cache.lookup(key, [B])]
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
    from ..._lib import fn
    split = [int(fn.agmm_k_split(lead[0], P, r)) for r in range(P)]
    m_local = [sl * rows_per_slice for sl in split]
    if sum(k_local) == 0 or sum(m_local) == 0:
        raise InvalidArgument("fused_scaled_matmul_reduce_scatter: an empty "
                              "product (rows %d, k %d)" % (sum(m_local),
                                                           sum(k_local)))
    plan = reduce_plan(g.cache, [o[L + 3] for o in everyone], "gemm-rs", m_local,
                        k_local, B, "int8", B_scale, (a_mode, w_mode), key)
    c = plan.run(as_rows(A), a_scale=flat_scale(A_scale),
                 schedule=g.schedule)
    c = c.view([split[world.rank]] + lead[1:] + [n])
    return c if out == torch.float32 else c.to(out)

