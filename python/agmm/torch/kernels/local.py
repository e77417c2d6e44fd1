"""The local matmuls of agmm.torch's backward (weight gradients, and the
all-reduce op's input gradient) through agmm's own GEMM engine.

A world of one rank is a GEMM: an all-gather + GEMM plan on it computes
C_i = A @ W_i with the engine, path and kernel every agmm plan measures
and picks at creation (oneDNN's brgemm as agmm calls it ran the layer's
weight-gradient shapes 2-10% faster than torch 1.13's own bf16 matmul on
a Zen 4 core, bit for bit the same values; on an AMX core one call ran
645-699 GF/s where torch's matmul ran 450-510, in an earlier sitting:
docs/history/, "Zen 4 again" and "on AMX, model 167").

Each process joins its own one-rank world once (job agmm-local-<pid>, a
shared-memory control segment of this process only, removed when the
world closes at exit, also at a multiprocessing child's; a process killed
or ended by os._exit leaves it to `agmm cleanup`), and keeps the last
LOCAL_PLANS plans by shape, each made for a capacity of rows (the next
power of two, plan_cache.capacity) and run with the call's rows
(m_rows), so that a row count that changes every call (a prefill's
tokens) does not make a plan, and prepare its weight into fresh memory,
each time (a new plan for 4096 x 5504 bf16 cost 250-450 ms against a
call's 100). A plan is made for a shape only the LOCAL_SIGHTINGS-th time
it comes within the last LOCAL_SEEN calls, and only if it evicts no plan
used within them; until then torch's matmul runs it. The backward's
weight gradients (x^T @ dC) have the token count as their inner
dimension, which a plan cannot take per call: where it changes every
step a plan per count cost more than it saved (gate and up at TP 2,
counts 2560-4096: 1.08-1.09x torch's matmul with a plan made per call;
bench/local_gemm.py --inner), and a count seen once is most likely not
seen again. The second operand is the plan's weight: set (prepared) on
every call where it is an output gradient, new every step (the
backwards), kept prepared where the caller says it is a layer's weight
(keep=True: column_parallel_matmul's forward) and it is the same
tensor, unchanged (its version), since it was set. Small products (under
LOCAL_MIN_FLOP flops, or a dimension below LOCAL_MIN_DIM: decode's few
rows among them) and float32 stay with torch: a call's own cost (the
weight's preparation, the Python) is paid back only by a large product
(measured with bench/local_gemm.py on the Zen 4 host: agmm / torch 1.20
at 256^3, 1.07 at 512^3, 1.00 at 1024^3, 0.92 at 2048^3), and a plan per
row count would be made and evicted every step.

Decode (issue 48): a bf16 product of at most DECODE_ROWS rows by a
weight of at least DECODE_MIN_WEIGHT elements runs agmm's own bf16-weight
kernel (the "wq" engine on an unquantized bf16 weight: VDPBF16PS where
the CPU has it, the weight packed once and streamed once per call),
which torch 1.13's matmul reaches a fraction of at few rows. Its plans
are one per weight tensor set (keyed by the tensors themselves, made for
DECODE_ROWS rows, run at the call's), so a model's layers of one shape
never repack each other's weights; a plan lives as long as its weights
(closed at the next miss after one of them is gone) and holds the packed
copy of them (agmm's layout, as large as the bf16 weight). A weight
changed in place (its version) is packed again.

AGMM_LOCAL_GEMM=torch keeps every local matmul with torch (for a side by
side comparison: bench/local_gemm.py, bench/tp_layer.py); "agmm" (or
unset) is the default.

Local only: nothing here is collective, so ranks may take different paths.
"""
import collections
import multiprocessing.util
import os
import weakref

import torch

from ... import _lib
from ..._buffers import contiguous_torch, empty_torch
from ...errors import InvalidArgument
from ..distributed.plan_cache import capacity, weights_key
from ...world import World

LOCAL_PLANS = 4
LOCAL_SIGHTINGS = 2
LOCAL_SEEN = 16
LOCAL_MIN_DIM = 256
LOCAL_MIN_FLOP = 4e9
DECODE_ROWS = 32
DECODE_MIN_WEIGHT = 1 << 20
_DTYPES = {torch.bfloat16: "bf16", torch.float16: "fp16"}

_state = {"pid": None, "world": None, "plans": [],
          "seen": collections.deque(maxlen=LOCAL_SEEN)}


def _torch_mm(x, ys, dtype):
    """[x @ y for y in ys] in dtype with torch's matmul; float16 in float32,
    converted (torch 1.13 has no float16 matmul on the CPU). Each y made
    contiguous first (a column slice of a wider tensor, as the all-gather
    op's backward passes, took torch 1.13's bf16 matmul 2.9x as long at
    4096 x 8 x 5504), and each product written into an output advised as
    agmm's are (empty_torch): a fresh 45 MB tensor's first touch in 4 KiB
    pages cost 120 of a 128 ms product there, on the VMs of
    docs/history/ ("Zen 5")."""
    if dtype == torch.float16:
        xf = x.float()
        return [(xf @ y.float()).to(dtype) for y in ys]
    x = x.to(dtype)
    outs = []
    for y in ys:
        y = contiguous_torch(y.to(dtype))
        out = empty_torch((int(x.shape[0]), int(y.shape[1])), dtype)
        outs.append(torch.mm(x, y, out=out))
    return outs


def _world():
    """This process's one-rank world (joined again after a fork)."""
    if _state["pid"] != os.getpid() or _state["world"] is None or \
            _state["world"].closed:
        # A forked child inherits the parent's objects, not its world.
        del _state["plans"][:]
        w = World.join(0, 1, "agmm-local-%d" % os.getpid())
        _state["world"], _state["pid"] = w, os.getpid()
        # Closed at exit also in a multiprocessing child, which ends by
        # os._exit after its finalizers, skipping atexit (a Finalize runs
        # only in the process that made it).
        multiprocessing.util.Finalize(None, w.close, exitpriority=0)
    return _state["world"]


def _plan(m, k, ns, name):
    """The plan for up to capacity(m) rows of [m, k] @ [k, n_i], or None
    (torch's matmul, then) while its shape has come fewer than
    LOCAL_SIGHTINGS times among the last LOCAL_SEEN calls (this one
    included), or when making it would evict a plan used among them (a
    cycle of more shapes than LOCAL_PLANS would otherwise make a plan on
    every call). Its `kept`: one per weight, the key of the tensor its
    prepared weight came from, when kept; None when set from a tensor not
    to be kept."""
    key = (capacity(m), k, tuple(ns), name)
    world = _world()
    seen = _state["seen"]
    if seen.maxlen != LOCAL_SEEN:  # (a test's or a user's setting)
        seen = _state["seen"] = collections.deque(seen, maxlen=LOCAL_SEEN)
    seen.append(key)
    plans = _state["plans"]
    for i, (kk, p) in enumerate(plans):
        if kk == key:
            plans.append(plans.pop(i))
            return p
    if seen.count(key) < LOCAL_SIGHTINGS:
        return None
    if len(plans) >= LOCAL_PLANS and plans[0][0] in seen:
        return None
    p = world.plan(key[0], k, list(ns), dtype=name, out_dtype=name,
                   gemm_engine="onednn", comm_workers=0,
                   gemm_workers=max(1, torch.get_num_threads()))
    p.kept = [None] * len(ns)
    plans.append((key, p))
    while len(plans) > LOCAL_PLANS:
        plans.pop(0)[1].close()
    return p


def _set_weight(p, i, y, keep):
    """Set weight i of p from y, unless keep and p's weight i was set from
    this very tensor, unchanged since (same object, storage, version and
    strides: an optimizer's in-place step moves the version)."""
    wkey = (weakref.ref(y), weights_key([y])) if keep else None
    old = p.kept[i]
    if wkey is not None and old is not None and old[0]() is y and \
            old[1] == wkey[1]:
        return
    p.set_weight(y, i)
    p.kept[i] = wkey


def engine_available():
    """Is oneDNN built into libagmm? Without it agmm's 16-bit GEMM is
    OpenBLAS's sgemm on converted rows, whose kernel may not know the CPU
    (docs/install.md): torch's matmul stays the better default there."""
    if "onednn" not in _state:
        _state["onednn"] = bool(_lib.fn.agmm_gemm_engine_available(
            _lib.ENGINES["onednn"]))
    return _state["onednn"]


# (ids of the weights, k, ns) -> ([weak references], [versions], plan)
_decode_plans = {}


def _decode_mm(x, ys, m, k, ns, act=None):
    """[act(x @ y) for y in ys], bf16, m <= DECODE_ROWS rows, on agmm's
    bf16-weight kernel: the plan of these very weight tensors (module
    comment), their versions checked every call; act (an activation name
    of epilogue.py, or None) in the plan's epilogue, from the float32
    sums (a gated one: n / 2 columns)."""
    key = (tuple(id(y) for y in ys), k, tuple(ns), act)
    vers = [y._version for y in ys]
    got = _decode_plans.get(key)
    p = None
    if got is not None:
        refs, old, p = got
        if p.closed or not all(r() is y for r, y in zip(refs, ys)):
            p = None
        elif old != vers:  # changed in place: packed again
            for i, y in enumerate(ys):
                p.set_weight(contiguous_torch(y), i)
            got[1][:] = vers
    if p is None:
        for kk in [kk for kk, (refs, _, q) in _decode_plans.items()
                   if kk == key or any(r() is None for r in refs)]:
            _decode_plans.pop(kk)[2].close()
        p = _world().plan(DECODE_ROWS, k, list(ns), dtype="bf16",
                          out_dtype="bf16", gemm_engine="wq", comm_workers=0,
                          gemm_workers=max(1, torch.get_num_threads()),
                          activation=act or "none")
        for i, y in enumerate(ys):
            p.set_weight(contiguous_torch(y), i)
        _decode_plans[key] = ([weakref.ref(y) for y in ys], vers, p)
    outs = [empty_torch((m, n), torch.bfloat16) for n in p.c_cols]
    p.run(contiguous_torch(x.to(torch.bfloat16)),
          out=outs if len(outs) > 1 else outs[0], schedule="fused",
          m_rows=[m])
    return outs


def decode_applies(m, k, ns, dtype, ys, keep=True):
    """Whether local_mm runs [m, k] @ ys on agmm's bf16-weight decode
    kernel (_decode_mm): bf16 weights kept, 1..DECODE_ROWS rows, each
    weight at least DECODE_MIN_WEIGHT elements, AGMM_LOCAL_GEMM not
    "torch"."""
    use = os.environ.get("AGMM_LOCAL_GEMM", "agmm")
    if use not in ("agmm", "torch"):
        raise InvalidArgument("AGMM_LOCAL_GEMM: %r (allowed: agmm, torch)" % (use,))
    return use == "agmm" and dtype == torch.bfloat16 and \
        0 < m <= DECODE_ROWS and keep and \
        all(y.dtype == dtype for y in ys) and k * min(ns) >= DECODE_MIN_WEIGHT


def local_mm(x, ys, dtype, keep=False):
    """[x @ y for y in ys] in dtype (the weights' dtype), each C-contiguous:
    x [m, k] (any layout or dtype), ys [k, n_i]. bf16 weights kept
    (keep) at up to DECODE_ROWS rows: agmm's bf16-weight decode kernel
    (_decode_mm). Otherwise through a one-rank agmm plan for 16-bit dtypes when every dimension is at least LOCAL_MIN_DIM
    and the product LOCAL_MIN_FLOP flops and libagmm has oneDNN, from the
    shape's LOCAL_SIGHTINGS-th recent call on (_plan), else torch's
    matmul. keep: the ys are weights that change only by torch's
    in-place operations (their version counter), kept prepared between
    calls; never for a buffer written outside torch's knowledge."""
    m, k = int(x.shape[0]), int(x.shape[1])
    ns = [int(y.shape[1]) for y in ys]
    if decode_applies(m, k, ns, dtype, ys, keep):
        return _decode_mm(x, ys, m, k, ns)
    use = os.environ.get("AGMM_LOCAL_GEMM", "agmm")
    name = _DTYPES.get(dtype) if use == "agmm" and engine_available() else None
    if name is None or min([m, k] + ns) < LOCAL_MIN_DIM or \
            2.0 * m * k * sum(ns) < LOCAL_MIN_FLOP:
        return _torch_mm(x, ys, dtype)
    p = _plan(m, k, ns, name)
    if p is None:  # a shape not seen often enough yet (_plan)
        return _torch_mm(x, ys, dtype)
    for i, y in enumerate(ys):
        _set_weight(p, i, y.to(dtype), keep and y.dtype == dtype)
    outs = [empty_torch((m, n), dtype) for n in ns]
    a = contiguous_torch(x.to(dtype))
    p.run(a, out=outs if len(outs) > 1 else outs[0], schedule="fused",
          m_rows=[m])
    return outs
