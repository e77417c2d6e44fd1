"""Quantized weights (int4 and int8, grouped scales) in agmm's plain
layout, the one the C weight kernels read (issue 48), and importers for
the GPTQ and AWQ checkpoint layouts. NumPy only: no call into libagmm.

The plain layout of a weight W [k, n] (k rows = input features, n columns
= output features: agmm's [k, n], NOT torch's nn.Linear.weight [n, k];
give an nn.Linear's weight as `linear.weight.t()`):

  q       int8:  int8 [k, n] (symmetric, -127..127) or uint8 [k, n]
                 (asymmetric, 0..255, with zero points);
          int4:  uint8 [(k+1)//2, n], two values per byte along k, low
                 nibble first: byte (kk//2, j) holds row kk in its low
                 nibble when kk is even, row kk+1 in its high nibble (the
                 padding nibble of an odd k is 0); symmetric nibbles are
                 signed -8..7 (two's complement), asymmetric 0..15;
  scales  float32 [ceil(k/G), n];
  zeros   uint8 [ceil(k/G), n] (one per byte, int4 too) when asymmetric,
          None when symmetric;
  G       group_size: 32, 64, 128, or k (None or -1 mean all of k); the
          last group may be partial;

  value(kk, j) = (q[kk, j] - zero[kk//G, j]) * scale[kk//G, j]

quantize_weight computes, in float32 and in this order (the C quantizer
does the same, bit for bit), per group of G rows and per column j:

  symmetric:  scale = max|w| / 7 (int4) or / 127 (int8);
              q = clamp(rint(w / scale), -8, 7) or (-127, 127)
  asymmetric: lo = min(min w, 0), hi = max(max w, 0) (0 stays in the
              range, as GPTQ's quantizer keeps it: a constant group is
              not lost);
              scale = (hi - lo) / 15 (or / 255);
              zero = clamp(rint(-lo / scale), 0, 15 or 255);
              q = clamp(rint(w / scale) + zero, 0, 15 or 255)

with rint rounding half to even; a scale of 0 (a group of zeros) gives q 0
and zero 0. Every element's error is at most scale / 2 (plus the float32
quotient's rounding). tests/python/test_qweight.py checks these bits
against the C quantizer's (agmm_quantize_weight) on the same input.
"""
import itertools
import weakref
from collections import namedtuple

import numpy as np

from . import _buffers
from .errors import InvalidArgument

GROUP_SIZES = (32, 64, 128)
BITS = (4, 8)

# AWQ (llm-awq, AutoAWQ "GEMM"): nibble p of an int32 holds column
# 8c + AWQ_ORDER[p]; column 8c + t is in nibble AWQ_REVERSE_ORDER[t].
AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)
AWQ_REVERSE_ORDER = (0, 4, 1, 5, 2, 6, 3, 7)

TorchParts = namedtuple("TorchParts", "q scales zeros")


# ------------------------------------------------------------- helpers
def _torch():
    return _buffers.torch_module()


def _is_torch(x):
    return _buffers.is_torch(x)


def _numpy(x, what):
    """A NumPy array of x (a torch CPU tensor's values; bf16 as float32)."""
    if _is_torch(x):
        t = _torch()
        if x.device.type != "cpu":
            raise InvalidArgument("%s: a tensor on %s (agmm takes CPU tensors)"
                                  % (what, x.device))
        x = x.detach()
        if x.dtype == t.bfloat16:
            x = x.float()
        return x.contiguous().numpy()
    if not isinstance(x, np.ndarray):
        raise InvalidArgument("%s: a %s (expected a NumPy array or a CPU "
                              "torch tensor)" % (what, type(x).__name__))
    return x


def _check_bits(bits):
    if bits not in BITS or isinstance(bits, bool):
        raise InvalidArgument("bits: %r (allowed: 4, 8)" % (bits,))
    return int(bits)


def _check_a_quant(a_quant):
    if a_quant not in ("none", "int8"):
        raise InvalidArgument("a_quant: %r (allowed: 'none', 'int8')"
                              % (a_quant,))
    return a_quant


def _group(group_size, k):
    """G for group_size (None or -1: all of k)."""
    if group_size is None or group_size == -1:
        return k
    if isinstance(group_size, bool) or not isinstance(
            group_size, (int, np.integer)) or \
            (group_size not in GROUP_SIZES and group_size != k):
        raise InvalidArgument(
            "group_size: %r (allowed: 32, 64, 128, k = %d, or None / -1 for "
            "all of k)" % (group_size, k))
    return int(group_size)


def _ngroups(k, g):
    return -(-k // g)


def _first_nonfinite(w, what):
    bad = ~np.isfinite(w)
    if bad.any():
        r, c = (int(i) for i in np.argwhere(bad)[0])
        raise InvalidArgument("%s[%d, %d] = %r (values must be finite)"
                              % (what, r, c, float(w[r, c])))


def _group_rows(a, g, k):
    """a [ceil(k/g), n] repeated to one row per weight row: [k, n]."""
    return np.repeat(a, g, axis=0)[:k]


def pack_int4(q):
    """Nibbles q [k, n] (int8 -8..7 or 0..15) packed two per byte along k,
    low nibble first (the plain layout): uint8 [(k+1)//2, n]."""
    q = np.asarray(q)
    k, n = q.shape
    nib = (q.astype(np.int16) & 0xF).astype(np.uint8)
    if k % 2:
        nib = np.concatenate([nib, np.zeros((1, n), np.uint8)])
    return (nib[0::2] | (nib[1::2] << 4)).astype(np.uint8)


def unpack_int4(packed, k, signed):
    """The k rows of nibbles of a packed [(k+1)//2, n] uint8: int8 -8..7
    (signed) or 0..15."""
    p = np.asarray(packed, np.uint8)
    out = np.empty((p.shape[0] * 2, p.shape[1]), np.uint8)
    out[0::2] = p & 0xF
    out[1::2] = p >> 4
    out = out[:k]
    if signed:
        return ((out.astype(np.int8) ^ 8) - 8).astype(np.int8)
    return out


# ------------------------------------------------------------- the class
_op_ids = itertools.count(1)
_live = weakref.WeakValueDictionary()  # op_id -> the QuantizedWeight


def by_op_id(op_id, what="weight"):
    """The live QuantizedWeight whose op_id is `op_id` (torch.ops.agmm.*_wq
    take weights by it); InvalidArgument naming `what` when there is none
    (never made, or freed since the graph was traced)."""
    q = _live.get(int(op_id))
    if q is None:
        raise InvalidArgument("%s: no live agmm.QuantizedWeight has op_id %d "
                              "(freed since the call was traced?)" % (what, op_id))
    return q


class QuantizedWeight:
    """A weight W [k, n] quantized to `bits` (4 or 8) in agmm's plain
    layout (module doc): `q` (NumPy; int4 packed two per byte along k),
    `scales` float32 [ceil(k/G), n], `zeros` uint8 [ceil(k/G), n] or None
    (symmetric), `group_size` G, `k`, `n`, `bits`, `symmetric`.

    QuantizedWeight(q, scales, zeros=None, bits=4, group_size=128, k=None,
    a_quant="none") takes the parts already in the plain layout (NumPy arrays or CPU torch
    tensors; scales float32, float16 or bfloat16, stored as float32,
    exactly; k defaults to q's rows, twice them for int4) and checks them:
    dtypes, shapes, finite scales, int4 zeros <= 15, an odd k's padding
    nibbles 0 (a symmetric int8 -128 is accepted: exact, as in int8 plans;
    quantize_weight never makes it). The arrays are kept, not copied, when they are already the
    layout's NumPy dtype. quantize_weight, from_gptq and from_awq make one.

    a_quant: how agmm's torch ops multiply it, "none" (A as given: W4A16 /
    W8A16, the default) or "int8" (each row of A quantized to int8, scale
    max |a| / 127, then the int8 dot: W4A8 / W8A8 in groups, faster from
    a few rows on (docs/performance.md), within A's int8 rounding;
    agmm.Plan's a_quant). The weight's bytes are the same either way.
    """

    def __init__(self, q, scales, zeros=None, bits=4, group_size=128, k=None,
                 a_quant="none"):
        bits = _check_bits(bits)
        a_quant = _check_a_quant(a_quant)
        q = _numpy(q, "q")
        scales = _numpy(scales, "scales")
        if zeros is not None:
            zeros = _numpy(zeros, "zeros")
        symmetric = zeros is None
        if q.ndim != 2:
            raise InvalidArgument("q: %d dimension(s) (expected 2)" % q.ndim)
        rows, n = (int(d) for d in q.shape)
        if k is None:
            k = rows * 2 if bits == 4 else rows
        k = int(k)
        want_rows = (k + 1) // 2 if bits == 4 else k
        if k < 1 or n < 1 or rows != want_rows:
            raise InvalidArgument(
                "q: shape (%d, %d) (expected (%d, n) for k = %d%s, k and n "
                ">= 1)" % (rows, n, want_rows, k,
                           ", two rows per byte" if bits == 4 else ""))
        if bits == 4:
            qdt, qname = np.uint8, "uint8 (two nibbles per byte)"
        elif symmetric:
            qdt, qname = np.int8, "int8 (symmetric; uint8 with zeros)"
        else:
            qdt, qname = np.uint8, "uint8 (asymmetric; int8 without zeros)"
        if q.dtype != qdt:
            raise InvalidArgument("q: dtype %s (expected %s for bits=%d)"
                                  % (q.dtype, qname, bits))
        g = _group(group_size, k)
        ng = _ngroups(k, g)
        if scales.dtype not in (np.float32, np.float16):
            raise InvalidArgument("scales: dtype %s (expected float32, float16"
                                  " or bfloat16)" % scales.dtype)
        if scales.shape != (ng, n):
            raise InvalidArgument("scales: shape %s (expected (%d, %d): "
                                  "ceil(k/G) = ceil(%d/%d) groups by n)"
                                  % (tuple(scales.shape), ng, n, k, g))
        scales = np.ascontiguousarray(scales, np.float32)
        _first_nonfinite(scales, "scales")
        if zeros is not None:
            if zeros.dtype != np.uint8:
                raise InvalidArgument("zeros: dtype %s (expected uint8, one "
                                      "per byte)" % zeros.dtype)
            if zeros.shape != (ng, n):
                raise InvalidArgument("zeros: shape %s (expected (%d, %d), "
                                      "as scales)" % (tuple(zeros.shape), ng, n))
            if bits == 4 and zeros.size and int(zeros.max()) > 15:
                r, c = (int(i) for i in np.argwhere(zeros > 15)[0])
                raise InvalidArgument("zeros[%d, %d] = %d (int4 zero points "
                                      "are 0..15)" % (r, c, int(zeros[r, c])))
            zeros = np.ascontiguousarray(zeros)
        q = np.ascontiguousarray(q)
        if bits == 4 and k % 2 and int((q[-1] >> 4).max()) != 0:
            c = int(np.argmax(q[-1] >> 4))
            raise InvalidArgument("q[%d, %d]: high nibble %d (k = %d is odd: "
                                  "the padding nibble is 0)"
                                  % (rows - 1, c, int(q[-1, c] >> 4), k))
        self.bits, self.group_size, self.k, self.n = bits, g, k, n
        self.symmetric = symmetric
        self.a_quant = a_quant
        self.q, self.scales, self.zeros = q, scales, zeros
        # The number that stands for this object in torch.ops.agmm.*_wq
        # calls (traced graphs: _torch_wq_ops), unique in the process.
        self.op_id = next(_op_ids)
        _live[self.op_id] = self

    # -- views
    @property
    def groups(self):
        """ceil(k / group_size)."""
        return self.scales.shape[0]

    @property
    def nbytes(self):
        """Bytes of q, scales and zeros: what a decode step streams."""
        return int(self.q.nbytes + self.scales.nbytes +
                   (self.zeros.nbytes if self.zeros is not None else 0))

    def values(self):
        """The integer values q [k, n] unpacked (int8 for symmetric, uint8
        for asymmetric; int4 nibbles one per byte)."""
        if self.bits == 4:
            return unpack_int4(self.q, self.k, self.symmetric)
        return self.q

    def zero_points(self):
        """zeros [groups, n] as uint8 (all 0 when symmetric)."""
        if self.zeros is None:
            return np.zeros(self.scales.shape, np.uint8)
        return self.zeros

    def dequantize(self, dtype=np.float32):
        """W [k, n]: (q - zero) * scale, in float32 (one rounding of the
        exact product) or np.float64 (exact: an oracle's); a torch dtype
        (torch.float32, float64, float16, bfloat16) returns a tensor,
        computed in float32 (float64 for torch.float64) then converted."""
        t = _torch()
        if t is not None and isinstance(dtype, t.dtype):
            base = np.float64 if dtype == t.float64 else np.float32
            return t.from_numpy(self.dequantize(base)).to(dtype)
        dtype = np.dtype(dtype)
        if dtype not in (np.float32, np.float64):
            raise InvalidArgument("dtype: %s (allowed: float32, float64, or "
                                  "a torch float dtype)" % dtype)
        qi = self.values().astype(np.int32)
        if self.zeros is not None:
            qi = qi - _group_rows(self.zeros, self.group_size, self.k)
        s = _group_rows(self.scales, self.group_size, self.k)
        return qi.astype(dtype) * s.astype(dtype)

    def to_torch(self):
        """(q, scales, zeros) as torch tensors sharing the arrays' memory
        (zeros None when symmetric)."""
        t = _torch()
        if t is None:
            import torch as t  # noqa: F811 (the caller asked for torch)
        z = None if self.zeros is None else t.from_numpy(self.zeros)
        return TorchParts(t.from_numpy(self.q), t.from_numpy(self.scales), z)

    def __repr__(self):
        return ("QuantizedWeight(bits=%d, k=%d, n=%d, group_size=%d, %s, "
                "%sq %s %s, nbytes=%d)"
                % (self.bits, self.k, self.n, self.group_size,
                   "symmetric" if self.symmetric else "asymmetric",
                   "a_quant=int8, " if self.a_quant == "int8" else "",
                   self.q.dtype, tuple(self.q.shape), self.nbytes))

    # -- checkpoint layouts
    @classmethod
    def from_gptq(cls, qweight, qzeros, scales, bits=4, group_size=128,
                  g_idx=None, sym=None, a_quant="none"):
        """A GPTQ layer (AutoGPTQ / transformers, the "v1" checkpoint
        format) in the plain layout. qweight int32 [k*bits/32, n], packed
        along k, low bits first (row (32/bits)*r + t in bits
        bits*t .. bits*t+bits-1 of qweight[r, j]); qzeros int32 [groups,
        n*bits/32], packed along n the same way, each the zero point minus
        one (v1: the real zero is (stored + 1) mod 2^bits, so a stored 15,
        a zero of 0 minus one, is 0); scales float16 [groups, n]; q
        unsigned. g_idx: None or the trivial g_idx[i] == i // G; an
        act-order (desc_act) checkpoint's permuted g_idx is refused.
        group_size -1 or None: one group (all of k).

        The result is asymmetric (zeros uint8), or symmetric (q - 8 in
        -8..7; int8: q - 128) when every zero is 2^(bits-1) and sym is not
        False (sym=True requires it; int8 only when no q is 0, -128 being
        outside the symmetric range, unless sym=True). a_quant as in the
        constructor."""
        bits = _check_bits(bits)
        per = 32 // bits
        mask = (1 << bits) - 1
        qw = _int32(qweight, "qweight")
        qz = _int32(qzeros, "qzeros")
        k, n = qw.shape[0] * per, qw.shape[1]
        g = _group(group_size, k)
        ng = _ngroups(k, g)
        if qz.shape != (ng, n // per) or n % per:
            raise InvalidArgument(
                "qzeros: shape %s (expected (%d, %d): ceil(k/G) = ceil(%d/%d)"
                " groups by n/%d = %d/%d, packed along n)"
                % (tuple(qz.shape), ng, n // per, k, g, per, n, per))
        _check_g_idx(g_idx, k, g)
        shifts = np.arange(0, 32, bits, dtype=np.uint32)
        # [k/per, per, n]: row per*r + t is (qweight[r] >> bits*t) & mask.
        vals = (qw[:, None, :] >> shifts[None, :, None]) & mask
        vals = vals.reshape(k, n).astype(np.uint8)
        # [ng, n/per, per]: column per*c + t is (qzeros[g, c] >> bits*t).
        zs = (qz[:, :, None] >> shifts[None, None, :]) & mask
        zs = ((zs.reshape(ng, n) + 1) & mask).astype(np.uint8)
        sc = _scales(scales, (ng, n))
        return _build(vals, zs, sc, bits, g, k, sym, a_quant)

    @classmethod
    def from_awq(cls, qweight, qzeros, scales, bits=4, group_size=128,
                 a_quant="none"):
        """An AWQ layer (llm-awq / AutoAWQ "GEMM" format) in the plain
        layout: qweight int32 [k, n/8], packed along n in AWQ's interleaved
        order (nibble p, bits 4p..4p+3, of qweight[kk, c] holds column
        8c + AWQ_ORDER[p], AWQ_ORDER = (0, 2, 4, 6, 1, 3, 5, 7)); qzeros
        int32 [groups, n/8], packed the same way, the zero points
        themselves (not minus one); scales float16 [groups, n]. Always
        asymmetric. bits: 4 only (AWQ's GEMM format is 4-bit). a_quant as
        in the constructor."""
        bits = _check_bits(bits)
        if bits != 4:
            raise InvalidArgument("bits: %d (from_awq: 4 only, AWQ's GEMM "
                                  "format is 4-bit)" % bits)
        qw = _int32(qweight, "qweight")
        qz = _int32(qzeros, "qzeros")
        k, n = qw.shape[0], qw.shape[1] * 8
        g = _group(group_size, k)
        ng = _ngroups(k, g)
        if qz.shape != (ng, n // 8):
            raise InvalidArgument(
                "qzeros: shape %s (expected (%d, %d): ceil(k/G) = ceil(%d/%d)"
                " groups by n/8, packed along n)"
                % (tuple(qz.shape), ng, n // 8, k, g))
        vals = _awq_unpack(qw)
        zs = _awq_unpack(qz)
        sc = _scales(scales, (ng, n))
        return _build(vals, zs, sc, 4, g, k, False, a_quant)


def _int32(x, what):
    a = _numpy(x, what)
    if a.dtype != np.int32 and a.dtype != np.uint32:
        raise InvalidArgument("%s: dtype %s (expected int32, the packed "
                              "checkpoint tensor)" % (what, a.dtype))
    if a.ndim != 2 or 0 in a.shape:
        raise InvalidArgument("%s: shape %s (expected 2 dimensions, none 0)"
                              % (what, tuple(a.shape)))
    # Bits, not numbers: a high nibble >= 8 makes the int32 negative.
    return np.ascontiguousarray(a).view(np.uint32)


def _scales(x, shape):
    s = _numpy(x, "scales")
    if s.dtype not in (np.float16, np.float32):
        raise InvalidArgument("scales: dtype %s (expected float16, float32 or "
                              "bfloat16)" % s.dtype)
    if s.shape != shape:
        raise InvalidArgument("scales: shape %s (expected %s: groups by n)"
                              % (tuple(s.shape), shape))
    return s


def _check_g_idx(g_idx, k, g):
    if g_idx is None:
        return
    gi = _numpy(g_idx, "g_idx")
    want = np.arange(k) // g
    if gi.shape != (k,):
        raise InvalidArgument("g_idx: shape %s (expected (%d,))"
                              % (tuple(gi.shape), k))
    if not np.array_equal(gi.astype(np.int64), want):
        i = int(np.argmax(gi.astype(np.int64) != want))
        raise InvalidArgument(
            "g_idx: g_idx[%d] = %d, not %d // %d = %d: an act-order "
            "(desc_act) checkpoint, whose rows are permuted; only the "
            "trivial g_idx (i // group_size) is supported"
            % (i, int(gi[i]), i, g, int(want[i])))


def _awq_unpack(packed):
    """uint32 [r, c] in AWQ's order -> uint8 [r, 8c] in column order."""
    shifts = np.arange(0, 32, 4, dtype=np.uint32)
    nib = (packed[:, :, None] >> shifts[None, None, :]) & 0xF  # [r, c, 8]
    nib = nib[:, :, list(AWQ_REVERSE_ORDER)]                   # column t
    return nib.reshape(packed.shape[0], -1).astype(np.uint8)


def _build(vals, zs, scales, bits, g, k, sym, a_quant="none"):
    """A QuantizedWeight of unsigned values [k, n] with zeros [ng, n]."""
    mid = 1 << (bits - 1)
    all_mid = bool((zs == mid).all())
    if sym and not all_mid:
        r, c = (int(i) for i in np.argwhere(zs != mid)[0])
        raise InvalidArgument("sym=True: zero point [%d, %d] is %d (symmetric"
                              " needs every zero to be %d)"
                              % (r, c, int(zs[r, c]), mid))
    if sym is None:
        sym = all_mid and (bits == 4 or not (vals == 0).any())
    if sym:
        signed = (vals.astype(np.int16) - mid).astype(np.int8)
        q = pack_int4(signed) if bits == 4 else signed
        return QuantizedWeight(q, scales, None, bits, g, k, a_quant)
    q = pack_int4(vals) if bits == 4 else vals
    return QuantizedWeight(q, scales, zs, bits, g, k, a_quant)


# ------------------------------------------------------------- quantizer
def _weight_float32(w):
    """w as float32 NumPy [k, n] (torch: its values; float16/bf16 exact)."""
    if _is_torch(w):
        t = _torch()
        if not w.dtype.is_floating_point:
            raise InvalidArgument("w: dtype %s (expected a float tensor)"
                                  % w.dtype)
        w = _numpy(w.float() if w.dtype != t.float64 else w, "w")
    elif isinstance(w, np.ndarray):
        if w.dtype == np.uint16:  # bf16 bits, as agmm.quantize takes them
            w = _buffers.bf16_to_float32(w)
        elif w.dtype not in (np.float32, np.float16, np.float64):
            raise InvalidArgument("w: dtype %s (expected float32 or float16; "
                                  "uint16 bf16 bits; a torch float tensor)"
                                  % w.dtype)
    else:
        raise InvalidArgument("w: a %s (expected a NumPy array or a CPU "
                              "torch tensor)" % type(w).__name__)
    if w.ndim != 2:
        raise InvalidArgument(
            "w: %d dimension(s) (expected 2: [k, n], k input features by n "
            "output features; an nn.Linear's weight is [n, k]: pass "
            "weight.t())" % w.ndim)
    if 0 in w.shape:
        raise InvalidArgument("w: shape %s (k and n must be >= 1)"
                              % (tuple(w.shape),))
    if w.dtype == np.float64:
        # Rounded to float32 first: the quantizer computes in float32 (a
        # value beyond its range becomes inf, refused by name after).
        _first_nonfinite(w, "w")
        with np.errstate(over="ignore"):
            return np.ascontiguousarray(w, dtype=np.float32)
    return np.ascontiguousarray(w, dtype=np.float32)


def quantize_weight(w, bits=4, group_size=128, symmetric=True, a_quant="none"):
    """QuantizedWeight of w [k, n] (k input features by n output features:
    agmm's layout, not nn.Linear.weight's [n, k]; pass `linear.weight.t()`
    for that). w: a NumPy float32 or float16 array (or uint16 bf16 bits),
    or a CPU torch float tensor. bits 4 or 8; group_size 32, 64, 128, k,
    or None / -1 for all of k; symmetric (no zero points) or not. (float64
    is accepted too, rounded to float32 first.) The
    arithmetic is in the module doc: float32, in that order, rint half to
    even, as the C quantizer. Non-finite values raise InvalidArgument
    naming the first (row, column). a_quant: how agmm's torch ops multiply
    it (QuantizedWeight's: "none", or "int8" for W4A8 / W8A8)."""
    bits = _check_bits(bits)
    a_quant = _check_a_quant(a_quant)
    w = _weight_float32(w)
    k, n = w.shape
    g = _group(group_size, k)
    ng = _ngroups(k, g)
    _first_nonfinite(w, "w")
    pad = ng * g - k  # the last group's missing rows: copies of its last
    wp = np.pad(w, ((0, pad), (0, 0)), mode="edge") if pad else w
    wg = wp.reshape(ng, g, n)
    f32 = np.float32
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if symmetric:
            qmax = f32(7 if bits == 4 else 127)
            qmin = f32(-8 if bits == 4 else -127)
            scales = (np.abs(wg).max(axis=1) / qmax).astype(f32)
            s = _group_rows(scales, g, k)
            q = np.rint(w / s)
            q = np.where(s == 0, f32(0), np.clip(q, qmin, qmax))
            qi = q.astype(np.int8)
            qout = pack_int4(qi) if bits == 4 else qi
            return QuantizedWeight(qout, scales, None, bits, g, k, a_quant)
        top = f32(15 if bits == 4 else 255)
        hi = np.maximum(wg.max(axis=1), f32(0))
        lo = np.minimum(wg.min(axis=1), f32(0))
        scales = ((hi - lo).astype(f32) / top).astype(f32)
        zero = np.clip(np.rint(-lo / scales), f32(0), top)
        zero = np.where(scales == 0, f32(0), zero).astype(f32)
        s = _group_rows(scales, g, k)
        z = _group_rows(zero, g, k)
        q = np.clip(np.rint(w / s) + z, f32(0), top)
        q = np.where(s == 0, f32(0), q).astype(np.uint8)
    qout = pack_int4(q) if bits == 4 else q
    return QuantizedWeight(qout, scales, zero.astype(np.uint8), bits, g, k,
                           a_quant)
