"""agmm.Plan: one operation's shape, dtype, tiles and threads, created
collectively and reused for every round (agmm_plan_create).

    plan = world.plan(m_local=[2048, 2048], k=4096, n=4096, dtype="bf16")
    plan.set_weight(w)               # [k, n] (gemm-rs/-ar: [k_local[rank], n])
    c = plan.run(a)                  # [M, n] float32 (gemm-rs: [m_local[rank], n])
    plan.close()                     # or `with world.plan(...) as plan:`

The epilogue: C = out_dtype(activation(A @ W + bias)), C in out_dtype
(bf16 from NumPy: uint16 bits, as bf16 inputs are):

    plan = world.plan(m_local=64, k=512, n=256, dtype="bf16", bias=True,
                      activation="gelu-tanh", out_dtype="bf16")
    plan.set_weight(w)
    plan.set_bias(b)                 # float32 [n], the same on every rank
    c = plan.run(a)                  # bf16 [M, n]

W8A8 (dtype="int8"): int8 A and W with float32 scales, C in float32:

    plan = world.plan(m_local=64, k=512, n=256, dtype="int8",
                      a_scale="channel", w_scale="channel")
    plan.set_weight(wq, scale=ws)    # int8 [k, n], float32 [n] (or a float W)
    c = plan.run(aq, a_scale=s)      # int8 [64, k], float32 [64] (or a float A)

Threads: run() releases the GIL for the whole round (ctypes.CDLL does for
every call), so other Python threads of the process keep running. A plan
is used by one thread at a time; an overlapping call fails with
agmm.BadState (the library refuses it without touching the plan).
"""
import ctypes
import threading

import numpy as np

from . import _buffers, _lib, _plan_info, _plan_int8
from ._plan_desc import code_of as _name, default_workers, dtype_name, int_list
from ._plan_info import GemmInfo, ScheduleInfo
from .errors import BadState, InvalidArgument, check, missing

__all__ = ["Plan", "GemmInfo", "ScheduleInfo", "default_workers", "dtype_name"]


def _k_part(desc, rank):
    """Rank `rank`'s part of k under `desc` (agmm_plan_desc_k_part: the
    library's one definition of the split)."""
    k0, kp = ctypes.c_int64(), ctypes.c_int64()
    check(_lib.fn.agmm_plan_desc_k_part(ctypes.byref(desc), int(rank),
                                        ctypes.byref(k0), ctypes.byref(kp)),
          "plan k part")
    return kp.value


class Plan:
    """A plan of `world` (collective: every rank passes the same arguments).

    m_local   rows of each rank's A shard: a list (one per rank) or one int
              for every rank (gemm-rs: the rows of C each rank gets;
              gemm-ar: the rows of C each rank sums)
    k, n      inner and output dimensions
    dtype     "fp16", "bf16", "fp32" (or a numpy/torch dtype) of A and W; C
              is out_dtype (float32 by default)
    op        "ag-gemm" (C = gather(A_r) @ W on every rank), "gemm-rs"
              (C = sum_r A_r @ W_r scattered by rows; k_local splits k) or
              "gemm-ar" (the same sum, all of C on every rank, the same
              bits everywhere)
    weights   "shared" (the same W everywhere) or "per-rank"
    gemm_path "auto" (measured at creation), "native" or "f32": how the
              engine multiplies a 16-bit dtype (gemm_info() says which ran)
    a_scale   int8 plans: "channel" (the default: one scale per row of A,
              per token, given with each run) or "tensor" (one per rank's
              shard); other dtypes: None
    w_scale   int8 plans: "channel" (the default: one scale per column of
              each W, given with it) or "tensor" (one per weight)
    bias      True: C gets a per-column float32 bias per weight, given with
              set_bias before the first run (gemm-rs: added once, after the
              reduction); False (the default): none
    activation "none" (the default), "relu", "gelu-tanh", "gelu-erf",
              "silu": applied after the bias, in fp32; or a list, one per
              weight (a gate and an up projection: ["silu", "none"]).
              Gated (ag-gemm): "silu-mul", "gelu-tanh-mul": the weight's n
              columns are [gate | up] halves (bias likewise), C has n / 2
              columns, act(A @ W_gate + b_gate) * (A @ W_up + b_up)
    out_dtype "fp32" (the default), "bf16" or "fp16" (or a numpy/torch
              dtype): C's dtype, rounded once after the activation; bf16
              from NumPy is a uint16 array of the raw bits
    weight_dtype "same" (the default: W in dtype), "int8" or "int4": a
              quantized weight (agmm.QuantizedWeight, or float weights
              quantized by set_weight) run by agmm's own kernels (the "wq"
              engine); with group_size (32, 64, 128 (the default), or None /
              -1: all of the rank's k) and zero_point (True: asymmetric);
              a_quant "none" (the default: A as given, W4A16 / W8A16) or
              "int8": each row of A quantized to int8 (scale max |a| /
              127) for the int8 dot, W4A8 / W8A8 in groups (agmm.h's
              agmm_aquant_t)
    tile_m, tile_n, comm_workers, gemm_workers, gemm_engine ("auto",
    "onednn", "openblas"), timeout (seconds per wait), k_local: as in
    agmm_plan_desc_t; None keeps agmm_plan_desc_init's default, except the
    workers: None splits the cores as the agmm tool does (default_workers).
    """

    def __init__(self, world, m_local, k, n, dtype="bf16", op="ag-gemm",
                 weights="shared", tile_m=None, tile_n=None, comm_workers=None,
                 gemm_workers=None, gemm_engine="auto", timeout=None,
                 k_local=None, gemm_path="auto", a_scale=None, w_scale=None,
                 bias=False, activation="none", out_dtype="fp32",
                 weight_dtype="same", group_size=128, zero_point=False,
                 a_quant="none"):
        self._h = None
        self.world = world
        P = world.size
        self.rank = world.rank
        self.dtype = dtype_name(dtype)
        self.op = op
        self.m_local = int_list(m_local, P, "m_local")
        self.k = int(k)
        self.n_list = [int(v) for v in n] if isinstance(n, (list, tuple)) \
            else [int(n)]
        if not self.n_list:
            raise InvalidArgument("n: an empty list (one column count per weight)")
        self.n = self.n_list[0]
        self._nlist = None
        self._mrows = (ctypes.c_int64 * P)(*self.m_local)
        self._klocal = None
        desc = _lib.PlanDesc()
        _lib.fn.agmm_plan_desc_init(ctypes.byref(desc))
        d = desc.d
        d.nranks = P
        d.m_local = ctypes.cast(self._mrows, ctypes.POINTER(ctypes.c_int64))
        d.k, d.n = self.k, self.n
        d.dtype = _lib.DTYPES[self.dtype]
        d.op = _name(op, _lib.OPS, "op")
        d.weights = _name(weights, _lib.WEIGHTS, "weights")
        d.gemm_engine = _name(gemm_engine, _lib.ENGINES, "gemm_engine")
        d.gemm_path = _name(gemm_path, _lib.PATHS, "gemm_path")
        self.bias = bool(bias)
        self.activation = activation
        d.bias = int(self.bias)
        self._acts = None
        if isinstance(activation, (list, tuple)):
            if len(activation) != len(self.n_list):
                raise InvalidArgument("activation: %d values for %d weights"
                                      % (len(activation), len(self.n_list)))
            self.activation = list(activation)
            self._acts = (ctypes.c_int * len(activation))(*[
                _name(a, _lib.ACTIVATIONS, "activation[%d]" % i)
                for i, a in enumerate(activation)])
            d.activations = ctypes.cast(self._acts, ctypes.POINTER(ctypes.c_int))
        else:
            d.activation = _name(activation, _lib.ACTIVATIONS, "activation")
        acts = self.activation if isinstance(self.activation, list) else \
            [self.activation] * len(self.n_list)
        # C's columns per weight: a gated one's half of W's.
        self.c_cols = [ni // 2 if a in _lib.GATED else ni
                       for a, ni in zip(acts, self.n_list)]
        self.out_dtype = dtype_name(out_dtype)
        if self.out_dtype == "int8":
            raise InvalidArgument("out_dtype: 'int8' (allowed: fp32, bf16, "
                                  "fp16)")
        d.out_dtype = _lib.DTYPES[self.out_dtype]
        if self.dtype == "int8":
            self.a_scale = "channel" if a_scale is None else a_scale
            self.w_scale = "channel" if w_scale is None else w_scale
            d.a_scale = _name(self.a_scale, _lib.SCALES, "a_scale")
            d.w_scale = _name(self.w_scale, _lib.SCALES, "w_scale")
        else:
            for what, value in (("a_scale", a_scale), ("w_scale", w_scale)):
                if value is not None:
                    raise InvalidArgument("%s: %r for a %s plan (scales are for "
                                          "dtype int8)" % (what, value, self.dtype))
            self.a_scale = self.w_scale = None
        if comm_workers is None and gemm_workers is None:
            comm_workers, gemm_workers = default_workers(P)
        elif gemm_workers is None:
            gemm_workers = default_workers(P, int(comm_workers))[1]
        for field, value in (("tile_m", tile_m), ("tile_n", tile_n),
                             ("comm_workers", comm_workers),
                             ("gemm_workers", gemm_workers)):
            if value is not None:
                setattr(d, field, int(value))
        if timeout is not None:
            d.timeout_s = float(timeout)
        if len(self.n_list) > 1:
            self._nlist = (ctypes.c_int64 * len(self.n_list))(*self.n_list)
            d.n_weights = len(self.n_list)
            d.n_list = ctypes.cast(self._nlist, ctypes.POINTER(ctypes.c_int64))
        if k_local is not None:
            self._klocal = (ctypes.c_int64 * P)(*int_list(k_local, P, "k_local"))
            d.k_local = ctypes.cast(self._klocal, ctypes.POINTER(ctypes.c_int64))
        self.weight_dtype = weight_dtype
        d.weight_dtype = _name(weight_dtype, _lib.WDTYPES, "weight_dtype")
        if weight_dtype != "same":
            self.group_size = None if group_size in (None, -1) else \
                int(group_size)
            self.zero_point = bool(zero_point)
            d.group_size = self.group_size or 0
            d.weight_zero_point = int(self.zero_point)
        self.a_quant = a_quant
        d.a_quant = _name(a_quant, _lib.AQUANTS, "a_quant")
        self._desc = desc
        h = ctypes.c_void_p()
        check(_lib.fn.agmm_plan_create(world.handle, ctypes.byref(desc),
                                       ctypes.byref(h)), "plan create")
        self._h = h.value
        M = sum(self.m_local)
        if d.op in (_lib.OPS["gemm-rs"], _lib.OPS["gemm-ar"]):
            kp = [_k_part(desc, r) for r in range(P)]
            self.k_local = kp
            self.a_shape = (M, kp[self.rank])
            self.w_shape = (kp[self.rank], self.n)
            self.c_shape = ((self.m_local[self.rank] if d.op == _lib.OPS["gemm-rs"]
                             else M), self.n)
        else:
            self.k_local = None
            self.a_shape = (self.m_local[self.rank], self.k)
            self.w_shape = (self.k, self.n)
            self.c_shape = (M, self.c_cols[0])
        self._run = _lib.fn.agmm_plan_run
        world._plans.append(self)

    @property
    def handle(self):
        if self._h is None:
            raise BadState("plan: used after close()")
        return self._h

    @property
    def closed(self):
        return self._h is None

    @property
    def rows(self):
        """Rows of the gathered matrix in the last round (before the first:
        sum(m_local)); agmm_plan_rows."""
        return int(_lib.fn.agmm_plan_rows(self.handle))

    @property
    def bytes_per_rank(self):
        """Memory one rank's plan needs (agmm_plan_bytes_per_rank)."""
        return int(_lib.fn.agmm_plan_bytes_per_rank(ctypes.byref(self._desc)))

    def row_offset(self, r):
        """The first row of rank r's shard in the gathered matrix."""
        return int(_lib.fn.agmm_plan_row_offset(self.handle, int(r)))

    @property
    def weights(self):
        """How many weights (outputs) a round computes."""
        return len(self.n_list)

    def set_weight(self, w, i=0, scale=None):
        """Local: prepare weight i ([k, n_list[i]]; gemm-rs: [k_local[rank],
        n]) for the plan's engine (copied/converted by the library: w may
        change or go away afterwards). Call before the first run and
        whenever the weight changes.

        int8 plans: w int8 (-127..127) with `scale` float32 [n_i] (w_scale
        "channel") or [1] / a number ("tensor"), finite and >= 0
        (agmm_plan_set_weight_scaled); or w float (float32, float16, bf16)
        and no scale: quantized here by agmm.quantize, per column or per
        tensor as the plan's w_scale says."""
        i = int(i)
        if not 0 <= i < len(self.n_list):
            raise InvalidArgument("set_weight: weight %d of a plan of %d"
                                  % (i, len(self.n_list)))
        shape = (self.w_shape[0], self.n_list[i])
        what = "weight" if i == 0 else "weight %d" % i
        if self.weight_dtype != "same":
            if scale is not None:
                raise InvalidArgument("scale: given to a quantized plan (the "
                                      "scales are the QuantizedWeight's)")
            self._set_weight_quantized(w, i, shape, what)
            return
        if self.dtype == "int8":
            self._set_weight_int8(w, i, scale, shape, what)
            return
        if scale is not None:
            raise InvalidArgument("scale: given to a %s plan (scales are for "
                                  "dtype int8)" % self.dtype)
        ptr, keep = _buffers.input_ptr(w, self.dtype, shape, what)
        if i == 0:
            st = _lib.fn.agmm_plan_set_weight(self.handle, ptr)
        else:
            st = _lib.fn.agmm_plan_set_weight_i(self.handle, i, ptr)
        check(st, "set_weight")
        del keep

    def _set_weight_quantized(self, w, i, shape, what):
        """A quantized plan's weight i: an agmm.QuantizedWeight of the plan's
        bits, group and symmetry and of `shape`, or float weights quantized
        here (agmm.quantize_weight)."""
        from .qweight import QuantizedWeight, quantize_weight
        bits = 8 if self.weight_dtype == "int8" else 4
        if not isinstance(w, QuantizedWeight):
            w = quantize_weight(w, bits=bits, group_size=self.group_size,
                                symmetric=not self.zero_point)
        g = self.group_size if self.group_size else shape[0]
        got = (w.bits, w.k, w.n, w.group_size, w.symmetric)
        want = (bits, shape[0], shape[1], g, not self.zero_point)
        if got != want:
            raise InvalidArgument(
                "%s: a QuantizedWeight of bits %d, [%d, %d], group %d, "
                "symmetric %s (the plan's: bits %d, [%d, %d], group %d, "
                "symmetric %s)" % ((what,) + got + want))
        f = _lib.fn.agmm_plan_set_weight_quantized
        if f is None:
            raise missing("agmm_plan_set_weight_quantized")
        z = w.zeros.ctypes.data if w.zeros is not None else None
        check(f(self.handle, i, w.q.ctypes.data, w.scales.ctypes.data, z),
              "set_weight")

    def _set_weight_int8(self, w, i, scale, shape, what):
        f = _lib.fn.agmm_plan_set_weight_scaled
        if f is None:
            raise missing("agmm_plan_set_weight_scaled")
        wptr, wkeep, sptr, skeep = _plan_int8.weight(
            w, scale, shape, what, "scale" if i == 0 else "scale %d" % i,
            self.w_scale == "tensor")
        check(f(self.handle, i, wptr, sptr), "set_weight")
        del wkeep, skeep

    def set_bias(self, b, i=0):
        """Local: weight i's bias, float32 [n_list[i]] (numpy or torch),
        each value finite; copied by the library. Only for a plan made with
        bias=True, which needs every weight's bias before its first run and
        takes a new one between runs. Every rank passes the same bias."""
        i = int(i)
        if not self.bias:
            raise InvalidArgument("set_bias: the plan was made without "
                                  "bias=True")
        if not 0 <= i < len(self.n_list):
            raise InvalidArgument("set_bias: weight %d of a plan of %d"
                                  % (i, len(self.n_list)))
        what = "bias" if i == 0 else "bias %d" % i
        if not _buffers.is_torch(b):  # a list, float64: as float32 values
            b = np.ascontiguousarray(b, dtype=np.float32)
        ptr, keep = _buffers.input_ptr(b, "fp32", (self.n_list[i],), what)
        f = _lib.fn.agmm_plan_set_bias
        if f is None:
            raise missing("agmm_plan_set_bias")
        check(f(self.handle, i, ptr), "set_bias")
        del keep

    def set_weights(self, ws, scales=None):
        """set_weight(ws[i], i, scales[i]) for every weight of the plan
        (scales: int8 plans with int8 weights)."""
        if len(ws) != len(self.n_list):
            raise InvalidArgument("set_weights: %d weights for a plan of %d"
                                  % (len(ws), len(self.n_list)))
        if scales is not None and len(scales) != len(ws):
            raise InvalidArgument("scales: %d for %d weights"
                                  % (len(scales), len(ws)))
        for i, w in enumerate(ws):
            self.set_weight(w, i, None if scales is None else scales[i])

    def run(self, a, out=None, schedule="auto", m_rows=None, a_gathered=None,
            a_scale=None):
        """Collective: one round. Returns C, or (A_gathered, C) when
        a_gathered is given; C is a list of outputs for a plan of several
        weights. int8 plans: A_gathered is the pair (int8 rows [M, k],
        float32 scales [M]).

        a           this rank's A ([m_local[rank], k]; with m_rows:
                    [m_rows[rank], k]; gemm-rs, gemm-ar: [M, k_local[rank]],
                    M the sum of m_rows or of m_local) in the plan's dtype
        out         C in the plan's out_dtype (float32 unless set; bf16
                    from NumPy: uint16 bits) [M, n] (gemm-rs:
                    [m_local[rank], n], with m_rows [m_rows[rank], n];
                    gemm-ar: [M, n], M the sum of m_rows), or
                    a list of [M, n_i] for several weights; None:
                    allocated, of a's kind (numpy array or torch tensor)
        schedule    "auto" (measures both, then keeps the faster), "fused",
                    "baseline"
        m_rows      the rows every rank has in this call (gemm-rs: the
                    rows of C each rank gets; gemm-ar: the rows of C each
                    rank sums, C being all of them; each at most the plan's
                    m_local[r]; every rank passes the same list); None:
                    the plan's m_local
        a_gathered  True (allocated) or an array [M, k] of the plan's dtype
                    to receive gather(A), rows in rank order (int8: True or
                    a pair of arrays, int8 [M, k] and float32 [M], the
                    scales of the rows, a per-tensor scale repeated over
                    its rank's rows)
        a_scale     int8 plans with an int8 a: its scales, float32 of shape
                    (rows of a,) (a_scale "channel") or (1,) / a number
                    ("tensor"), finite and >= 0. A float a (float32,
                    float16, bf16) without a_scale is quantized here by
                    agmm.quantize, per row or per tensor as the plan says.
        The GIL is released while the round runs."""
        sched = _lib.SCHEDULES.get(schedule)
        if sched is None:
            _name(schedule, _lib.SCHEDULES, "schedule")
        simple = m_rows is None and a_gathered is None and \
            len(self.n_list) == 1 and self.dtype != "int8" and a_scale is None
        if simple:  # the plain call: the hot path, nothing else to build
            aptr, akeep = _buffers.input_ptr(a, self.dtype, self.a_shape, "a")
            cptr, c = _buffers.output(out, self.c_shape, a, "out",
                                      self.out_dtype)
            check(self._run(self.handle, sched, aptr, cptr), "run")
            del akeep
            return c
        if a_scale is not None and self.dtype != "int8":
            raise InvalidArgument("a_scale: given to a %s plan (scales are "
                                  "for dtype int8)" % self.dtype)
        return self._run_args(a, out, sched, m_rows, a_gathered, a_scale)

    def _run_tensor(self, a, c, sched):
        """One round of the plain call (run(a, out=c) with schedule code
        `sched`), for callers that checked a and c already: agmm.torch's
        plain calls (_torch_plain.py). a: a C-contiguous, non-empty torch
        tensor of the plan's dtype and a_shape; c: float32, c_shape,
        C-contiguous, non-empty. The GIL is released while the round
        runs."""
        check(self._run(self.handle, sched, a.data_ptr(), c.data_ptr()), "run")

    def _run_args_tensor(self, a, cs, sched, rows_c=None, a_gathered=None):
        """run(a, out=cs, m_rows=..., a_gathered=...) of a float plan for
        callers that checked every tensor already (_torch_plain.py): a as
        for _run_tensor with this call's rows, cs the float32 outputs, one
        per weight, rows_c a ctypes int64 array of every rank's rows (None:
        the plan's), a_gathered None or the [M, k] tensor to fill; every
        tensor non-empty."""
        # The argument block is built once per plan and refilled, with the
        # rows arrays' pointers kept beside it (a decode step's few row
        # counts). A call overlapping another thread's (which the library
        # refuses) gets a block of its own, so it never rewrites the one
        # the running call reads.
        fast = self.__dict__.get("_fast")
        if fast is None or len(fast[1]) != len(cs):
            args = _lib.RunArgsC()
            cptrs = (ctypes.c_void_p * len(cs))()
            args.c = ctypes.cast(cptrs, ctypes.POINTER(ctypes.c_void_p))
            fast = self._fast = (args, cptrs, ctypes.byref(args), {},
                                 threading.Lock())
        args, cptrs, ref, ptrs, lock = fast
        if not lock.acquire(False):
            self._run_args_tensor_new(a, cs, sched, rows_c, a_gathered)
            return
        try:
            for i, c in enumerate(cs):
                cptrs[i] = c.data_ptr()
            args.schedule, args.a_local = sched, a.data_ptr()
            if rows_c is None:
                args.m_rows = None
            else:
                got = ptrs.get(id(rows_c))
                if got is None or got[0] is not rows_c:
                    if len(ptrs) > 64:
                        ptrs.clear()
                    got = ptrs[id(rows_c)] = (rows_c, ctypes.cast(
                        rows_c, ctypes.POINTER(ctypes.c_int64)))
                args.m_rows = got[1]
            args.a_gathered = None if a_gathered is None else a_gathered.data_ptr()
            check(_lib.fn.agmm_plan_run_args(self.handle, ref), "run")
        finally:
            lock.release()

    def _run_args_tensor_new(self, a, cs, sched, rows_c, a_gathered):
        """_run_args_tensor with an argument block of its own."""
        args = _lib.RunArgsC()
        cptrs = (ctypes.c_void_p * len(cs))(*[c.data_ptr() for c in cs])
        args.schedule, args.a_local = sched, a.data_ptr()
        args.c = ctypes.cast(cptrs, ctypes.POINTER(ctypes.c_void_p))
        if rows_c is not None:
            args.m_rows = ctypes.cast(rows_c, ctypes.POINTER(ctypes.c_int64))
        if a_gathered is not None:
            args.a_gathered = a_gathered.data_ptr()
        check(_lib.fn.agmm_plan_run_args(self.handle, ctypes.byref(args)),
              "run")

    def _run_args(self, a, out, sched, m_rows, a_gathered, a_scale=None):
        gemm_rs = self.op in ("gemm-rs", "gemm-ar")  # A [M, k_local[rank]]
        if gemm_rs and a_gathered is not None:
            raise InvalidArgument("run: a_gathered is for ag-gemm plans")
        rows = self.m_local if m_rows is None else \
            int_list(m_rows, self.world.size, "m_rows")
        for r, (got, most) in enumerate(zip(rows, self.m_local)):
            if not 0 <= got <= most:
                raise InvalidArgument("m_rows[%d] = %d (allowed 0..%d, the "
                                      "plan's m_local)" % (r, got, most))
        M = sum(rows)
        a_shape = (M, self.a_shape[1]) if gemm_rs else (rows[self.rank], self.k)
        int8 = self.dtype == "int8"
        if int8:
            a, (sptr, skeep) = _plan_int8.a_rows(a, a_scale, a_shape,
                                                  self.a_scale == "tensor")
        aptr, akeep = _buffers.input_ptr(a, self.dtype, a_shape, "a")
        nw = len(self.n_list)
        outs = out if nw > 1 else [out]
        if outs is None:
            outs = [None] * nw
        if len(outs) != nw:
            raise InvalidArgument("out: %d arrays for %d weights" % (len(outs), nw))
        c_rows = rows[self.rank] if self.op == "gemm-rs" else M
        cs = [_buffers.output(o, (c_rows, ni), a, "out" if nw == 1 else
                              "out[%d]" % i, self.out_dtype)
              for i, (o, ni) in enumerate(zip(outs, self.c_cols))]
        g = gs = None
        if a_gathered is not None:
            g_out = None if a_gathered is True else a_gathered
            gs_out = None
            if int8 and g_out is not None:
                if not (isinstance(g_out, (tuple, list)) and len(g_out) == 2):
                    raise InvalidArgument(
                        "a_gathered: True or a pair (int8 [%d, %d], float32 "
                        "[%d]) for an int8 plan" % (M, self.k, M))
                g_out, gs_out = g_out
            g = _buffers.output(g_out, (M, self.k), a, "a_gathered", self.dtype)
            if int8:
                gs = _buffers.output(gs_out, (M,), a, "a_gathered scales")
        args = _lib.RunArgsC()
        cptrs = (ctypes.c_void_p * nw)(*[p for p, _ in cs])
        args.schedule, args.a_local = sched, aptr
        args.c = ctypes.cast(cptrs, ctypes.POINTER(ctypes.c_void_p))
        mr = None
        if m_rows is not None:
            mr = (ctypes.c_int64 * len(rows))(*rows)
            args.m_rows = ctypes.cast(mr, ctypes.POINTER(ctypes.c_int64))
        if g is not None:
            args.a_gathered = g[0]
        fptr = ctypes.POINTER(ctypes.c_float)
        if int8:
            args.a_scale = ctypes.cast(sptr, fptr)
            if gs is not None:
                args.a_gathered_scale = ctypes.cast(gs[0], fptr)
        check(_lib.fn.agmm_plan_run_args(self.handle, ctypes.byref(args)),
              "run")
        del akeep
        if int8:
            del skeep
        c = [x for _, x in cs] if nw > 1 else cs[0][1]
        if g is None:
            return c
        return ((g[1], gs[1]) if int8 else g[1]), c

    def gemm_info(self):
        """The GEMM engine this plan runs (agmm_plan_gemm_info)."""
        return _plan_info.gemm_info(self.handle)

    def schedule_info(self):
        """What schedule="auto" did so far (agmm_plan_schedule_info)."""
        return _plan_info.schedule_info(self.handle)

    def close(self):
        """Collective: destroy the plan (agmm_plan_destroy). Idempotent."""
        if self._h is None:
            return
        h = self._h
        for t in list(getattr(self, "_traces", ())):
            t.close()  # a trace is destroyed before its plan (agmm.h)
        st = _lib.fn.agmm_plan_destroy(h)
        if st == _lib.STATUS["AGMM_ERR_BAD_STATE"]:
            check(st, "plan close")  # another call in progress: still open
        self._h = None
        try:
            self.world._plans.remove(self)
        except ValueError:
            pass
        check(st, "plan close")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        state = "closed" if self._h is None else "rank %d" % self.rank
        return "<agmm.Plan %s %s m_local=%s k=%d n=%d, %s>" % (
            self.op, self.dtype, self.m_local, self.k, self.n, state)
