"""agmm.QuantizedWeight and agmm.quantize_weight (python/agmm/qweight.py):
the plain int4/int8 layout by hand (nibble order, +7 and -8, zero points 0
and 15, a partial last group, odd k, n not a multiple of 16), the
quantizer against a scalar loop of the documented float32 arithmetic
(ties to even), the round-trip error bound, refusals naming the argument,
and GPTQ and AWQ tensors packed here by simple loops, independent of the
module's unpackers, imported to the expected values and floats."""
import numpy as np
import pytest

import agmm
from agmm import InvalidArgument, QuantizedWeight, quantize_weight

try:
    import torch
except ImportError:  # the torch parts skip; the rest runs
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch not installed")


# ------------------------------------------------------------ test helpers
def pack_nibbles(vals):
    """The plain int4 layout by a loop: byte (kk//2, j) holds row kk low
    (kk even), row kk+1 high; the padding nibble of an odd k is 0."""
    k, n = len(vals), len(vals[0])
    out = np.zeros(((k + 1) // 2, n), np.uint8)
    for kk in range(k):
        for j in range(n):
            nib = int(vals[kk][j]) & 0xF
            out[kk // 2, j] |= nib if kk % 2 == 0 else nib << 4
    return out


def expected(vals, zeros, scales, g):
    """(q - zero) * scale per element, in float64 (exact)."""
    k, n = vals.shape
    out = np.empty((k, n), np.float64)
    for kk in range(k):
        for j in range(n):
            z = 0 if zeros is None else int(zeros[kk // g, j])
            out[kk, j] = (int(vals[kk, j]) - z) * float(scales[kk // g, j])
    return out


def as_int32(u):
    """A 32-bit pattern (Python int) as the int32 a checkpoint holds."""
    u &= 0xFFFFFFFF
    return u - (1 << 32) if u >= (1 << 31) else u


def rows_of(a, g, k):
    return np.repeat(a, g, axis=0)[:k]


# ------------------------------------------------------- the plain layout
def test_int4_symmetric_by_hand():
    # k = 5 (odd: a padding nibble), one group (G = k), n = 3.
    vals = np.array([[7, -8, 0], [-8, 7, -1], [1, 2, 3],
                     [-3, -2, 5], [6, -7, -8]], np.int8)
    packed = pack_nibbles(vals)
    assert packed.shape == (3, 3)
    assert packed[0, 0] == 0x87 and packed[0, 1] == 0x78   # low row 0, high row 1
    assert packed[0, 2] == 0xF0                             # 0 low, -1 high
    assert packed[2, 0] == 0x06 and packed[2, 2] == 0x08    # padding nibble 0
    scales = np.array([[0.5, 2.0, 0.25]], np.float32)
    w = QuantizedWeight(packed, scales, None, bits=4, group_size=None, k=5)
    assert (w.bits, w.k, w.n, w.group_size, w.symmetric) == (4, 5, 3, 5, True)
    assert w.zeros is None
    np.testing.assert_array_equal(w.values(), vals)
    ref = expected(vals, None, scales, 5)
    np.testing.assert_array_equal(w.dequantize(np.float64), ref)
    np.testing.assert_array_equal(w.dequantize(), ref.astype(np.float32))
    assert w.dequantize().dtype == np.float32
    assert w.nbytes == 3 * 3 + 3 * 4


def test_int4_asymmetric_zero_points_partial_group():
    # k = 37: groups of 32 and a last one of 5; n = 20 (not a multiple of 16).
    rng = np.random.default_rng(1)
    k, n, g = 37, 20, 32
    vals = rng.integers(0, 16, (k, n)).astype(np.uint8)
    vals[0, 0], vals[1, 0], vals[36, 19] = 0, 15, 15
    zeros = rng.integers(0, 16, (2, n)).astype(np.uint8)
    zeros[0, 0], zeros[1, 0], zeros[1, 19] = 0, 15, 15
    scales = rng.uniform(0.01, 2, (2, n)).astype(np.float32)
    w = QuantizedWeight(pack_nibbles(vals), scales, zeros, bits=4,
                        group_size=32, k=k)
    assert not w.symmetric and w.groups == 2
    np.testing.assert_array_equal(w.values(), vals)
    ref = expected(vals, zeros, scales, g)
    assert ref[0, 0] == 0.0 and ref[1, 0] == 15 * float(scales[0, 0])
    assert ref[36, 19] == 0.0 and ref[32, 0] == (int(vals[32, 0]) - 15) * \
        float(scales[1, 0])
    np.testing.assert_array_equal(w.dequantize(np.float64), ref)
    np.testing.assert_array_equal(w.dequantize(np.float32),
                                  ref.astype(np.float32))
    assert w.nbytes == 19 * 20 + 2 * 20 * 4 + 2 * 20


def test_int8_layouts_by_hand():
    vals = np.array([[127, -127], [-1, 0], [5, -128]], np.int8)
    s = np.array([[0.5, 0.125]], np.float32)
    w = QuantizedWeight(vals, s, None, bits=8, group_size=None)
    assert w.k == 3 and w.symmetric
    np.testing.assert_array_equal(w.dequantize(np.float64),
                                  expected(vals, None, s, 3))
    u = np.array([[255, 0], [128, 17], [0, 255]], np.uint8)
    z = np.array([[0, 255]], np.uint8)
    w = QuantizedWeight(u, s, z, bits=8, group_size=-1)
    ref = expected(u, z, s, 3)
    assert ref[0, 0] == 127.5 and ref[2, 1] == 0.0 and ref[0, 1] == -255 * 0.125
    np.testing.assert_array_equal(w.dequantize(np.float64), ref)


def test_group_of_k_spelled_three_ways():
    w = np.arange(48, dtype=np.float32).reshape(24, 2) - 20
    a = quantize_weight(w, group_size=None)
    for gs in (-1, 24):
        b = quantize_weight(w, group_size=gs)
        assert b.group_size == 24 and b.scales.shape == (1, 2)
        np.testing.assert_array_equal(a.q, b.q)


# --------------------------------------------------------------- quantizer
def scalar_quantize(w, bits, g, symmetric):
    """The module doc's arithmetic, one element at a time, float32 scalars."""
    f = np.float32
    k, n = w.shape
    ng = -(-k // g)
    q = np.zeros((k, n), np.int64)
    scales = np.zeros((ng, n), np.float32)
    zeros = np.zeros((ng, n), np.int64)
    for gi in range(ng):
        for j in range(n):
            col = [f(w[r, j]) for r in range(gi * g, min(k, gi * g + g))]
            if symmetric:
                top, lo = (7, -8) if bits == 4 else (127, -127)
                s = f(max(abs(x) for x in col) / f(top))
                z = 0
            else:
                top, lo = (15 if bits == 4 else 255), 0
                mx, mn = max(max(col), f(0)), min(min(col), f(0))
                s = f(f(mx - mn) / f(top))
                z = 0 if s == 0 else int(min(max(np.rint(f(-mn) / s), 0), top))
            scales[gi, j], zeros[gi, j] = s, z
            for i, x in enumerate(col):
                v = 0 if s == 0 else \
                    int(min(max(np.rint(f(x / s)) + z, lo), top))
                q[gi * g + i, j] = v
    return q, scales, zeros


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("k,gs", [(40, 32), (9, None), (64, 64)])
def test_quantizer_is_the_documented_arithmetic(bits, symmetric, k, gs):
    rng = np.random.default_rng(k + bits)
    w = (rng.standard_normal((k, 5)) * 3).astype(np.float32)
    w[:, 4] = 0                    # a column of zero groups: scale 0, q 0
    w[:, 3] = -0.75                # constant groups (max == min)
    w[0, 2] = 1e-3                 # and a tiny element among large ones
    got = quantize_weight(w, bits=bits, group_size=gs, symmetric=symmetric)
    g = k if gs is None else gs
    q, s, z = scalar_quantize(w, bits, g, symmetric)
    np.testing.assert_array_equal(got.scales, s)
    np.testing.assert_array_equal(got.values().astype(np.int64), q)
    if symmetric:
        assert got.zeros is None
    else:
        np.testing.assert_array_equal(got.zeros.astype(np.int64), z)
    assert (got.scales[:, 4] == 0).all() and (got.values()[:, 4] == 0).all()
    # A constant group comes back within scale / 2 (here exactly -0.75 to
    # float32 rounding of the scale).
    assert np.allclose(got.dequantize(np.float64)[:, 3], -0.75, rtol=1e-6)


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("k,gs", [(201, 32), (128, 64), (77, None), (256, 128)])
def test_quantizer_matches_the_c_quantizer_bit_for_bit(bits, symmetric, k, gs):
    """agmm.quantize_weight and agmm_quantize_weight (src/gemm/wq) are two
    implementations of one documented arithmetic: same q bytes, scales and
    zero points on the same input (both signs, one-signed columns,
    constant and zero groups, a partial last group, odd k)."""
    from agmm import _lib
    if not _lib.fn.has("agmm_quantize_weight"):
        pytest.fail("libagmm has no agmm_quantize_weight")
    rng = np.random.default_rng(k * 3 + bits)
    n = 19
    w = (rng.standard_normal((k, n)) * rng.uniform(1e-3, 30, n)).astype(
        np.float32)
    w[:, 0] = np.abs(w[:, 0])      # all positive: zero point 0
    w[:, 1] = -np.abs(w[:, 1])     # all negative: zero point at the top
    w[:, 2] = 0.3125               # constant groups
    w[:, 3] = 0                    # zero groups
    w[5, 4] = 1e-30                # a tiny value among large ones
    py = quantize_weight(w, bits=bits, group_size=gs, symmetric=symmetric)
    g = 0 if gs is None else gs
    ng = py.scales.shape[0]
    qc = np.zeros_like(py.q)
    sc = np.zeros((ng, n), np.float32)
    zc = np.zeros((ng, n), np.uint8)
    st = _lib.fn.agmm_quantize_weight(
        w.ctypes.data, k, n, bits, g, 1 if symmetric else 0, qc.ctypes.data,
        sc.ctypes.data, None if symmetric else zc.ctypes.data)
    assert st == 0, _lib.text(_lib.fn.agmm_last_error())
    np.testing.assert_array_equal(py.scales, sc)
    np.testing.assert_array_equal(py.q.view(np.uint8), qc.view(np.uint8))
    if not symmetric:
        np.testing.assert_array_equal(py.zeros, zc)


def test_ties_round_to_even():
    # int4 symmetric: max |w| = 7 -> scale 1, w / scale = w.
    col = np.array([7, 0.5, 1.5, 2.5, -2.5, -3.5, -0.5, 4.5], np.float32)
    w = quantize_weight(col[:, None], bits=4, group_size=None)
    assert w.scales[0, 0] == 1.0
    np.testing.assert_array_equal(w.values()[:, 0], [7, 0, 2, 2, -2, -4, 0, 4])
    # int8 symmetric: max |w| = 127 -> scale 1.
    col = np.array([127, 0.5, 1.5, -126.5, 3.5], np.float32)
    w = quantize_weight(col[:, None], bits=8, group_size=None)
    np.testing.assert_array_equal(w.values()[:, 0], [127, 0, 2, -126, 4])
    # int4 asymmetric: min -1.5, max 6 -> scale 0.5, zero rint(3) = 3;
    # 0.25 / 0.5 = 0.5 -> 0 (+3), 0.75 -> 1.5 -> 2 (+3), -0.25 -> -0.5 -> 0.
    col = np.array([-1.5, 6, 0.25, 0.75, -0.25, 1.25], np.float32)
    w = quantize_weight(col[:, None], bits=4, group_size=None, symmetric=False)
    assert w.scales[0, 0] == 0.5 and w.zeros[0, 0] == 3
    np.testing.assert_array_equal(w.values()[:, 0], [0, 15, 3, 5, 3, 5])
    # the zero point itself ties: min -1.25, max 6.25 -> scale 0.5,
    # -min / scale = 2.5 -> zero 2.
    col = np.array([-1.25, 6.25], np.float32)
    w = quantize_weight(col[:, None], bits=4, group_size=None, symmetric=False)
    assert w.scales[0, 0] == 0.5 and w.zeros[0, 0] == 2
    # int8 asymmetric: min 0, max 255 -> scale 1, zero 0; 2.5 -> 2.
    col = np.array([0, 255, 2.5, 3.5], np.float32)
    w = quantize_weight(col[:, None], bits=8, group_size=None, symmetric=False)
    assert w.scales[0, 0] == 1.0 and w.zeros[0, 0] == 0
    np.testing.assert_array_equal(w.values()[:, 0], [0, 255, 2, 4])


def test_partial_last_group_uses_only_its_rows():
    w = np.ones((40, 3), np.float32) * 70     # group 0: rows 0..31
    w[32:] = np.arange(8, dtype=np.float32)[:, None] * 0.5   # max 3.5
    q = quantize_weight(w, bits=4, group_size=32)
    np.testing.assert_array_equal(q.scales, [[10, 10, 10], [0.5, 0.5, 0.5]])
    np.testing.assert_array_equal(q.values()[32:, 0], np.arange(8))
    qa = quantize_weight(w, bits=4, group_size=32, symmetric=False)
    # last group: min 0, max 3.5 -> scale 3.5 / 15, zero 0
    assert qa.scales[1, 0] == np.float32(3.5) / np.float32(15)
    assert qa.zeros[1, 0] == 0


@pytest.mark.parametrize("bits", [4, 8])
@pytest.mark.parametrize("symmetric", [True, False])
@pytest.mark.parametrize("gs", [32, 64, 128, None])
def test_round_trip_error_within_half_a_step(bits, symmetric, gs):
    rng = np.random.default_rng(bits * 7 + (gs or 1))
    k, n = 201, 24                       # a partial last group every time
    w = (rng.standard_normal((k, n)) * rng.uniform(0.01, 10, n)).astype(
        np.float32)
    w[0] = np.abs(w[0]) + 0.1            # both signs in every group below
    w[1] = -np.abs(w[1]) - 0.1
    for g0 in range(0, k, gs or k):
        w[g0], w[g0 + 1] = np.abs(w[g0]) + 0.1, -np.abs(w[g0 + 1]) - 0.1
    q = quantize_weight(w, bits=bits, group_size=gs, symmetric=symmetric)
    s = rows_of(q.scales, q.group_size, k).astype(np.float64)
    err = np.abs(w.astype(np.float64) - q.dequantize(np.float64))
    # scale / 2, and the float32 quotient's own rounding (|w / s| <= 255).
    assert (err <= s / 2 + s * 255 * 2.0 ** -23).all(), err.max()
    # float32 dequantize: one rounding of the exact value.
    np.testing.assert_array_equal(q.dequantize(np.float32),
                                  q.dequantize(np.float64).astype(np.float32))


def test_float16_and_bf16_bits_inputs():
    rng = np.random.default_rng(5)
    h = rng.standard_normal((64, 8)).astype(np.float16)
    a = quantize_weight(h, group_size=32)
    b = quantize_weight(h.astype(np.float32), group_size=32)
    np.testing.assert_array_equal(a.q, b.q)
    np.testing.assert_array_equal(a.scales, b.scales)
    bits16 = agmm.bf16_from_float32(rng.standard_normal((64, 8)).astype(
        np.float32))
    c = quantize_weight(bits16, bits=8, group_size=64)
    d = quantize_weight(agmm.bf16_to_float32(bits16), bits=8, group_size=64)
    np.testing.assert_array_equal(c.q, d.q)


# ---------------------------------------------------------------- refusals
def _refused(fn, *words):
    with pytest.raises(InvalidArgument) as e:
        fn()
    msg = str(e.value)
    for word in words:
        assert word in msg, msg
    assert e.value.status_name == "AGMM_ERR_INVALID_ARG"
    return msg


def test_quantize_refusals_name_the_argument():
    w = np.zeros((64, 4), np.float32)
    _refused(lambda: quantize_weight(w, bits=3), "bits", "4, 8")
    _refused(lambda: quantize_weight(w, bits=True), "bits")
    _refused(lambda: quantize_weight(w, group_size=48), "group_size", "32",
             "64", "128", "k = 64")
    _refused(lambda: quantize_weight(w, group_size=0), "group_size")
    _refused(lambda: quantize_weight(w[0]), "w", "2", "[k, n]", "t()")
    _refused(lambda: quantize_weight(w[None]), "w", "dimension")
    _refused(lambda: quantize_weight(w[:0]), "w", ">= 1")
    _refused(lambda: quantize_weight(w.astype(np.int32)), "w", "dtype")
    _refused(lambda: quantize_weight([[1.0]]), "w", "list")
    bad = w.copy()
    bad[2, 1], bad[5, 0] = np.nan, np.inf
    _refused(lambda: quantize_weight(bad), "w[2, 1]", "nan", "finite")
    bad[2, 1] = 0
    _refused(lambda: quantize_weight(bad, bits=8), "w[5, 0]", "inf")
    # float64 beyond float32's range becomes inf in the float32 arithmetic
    big = np.zeros((4, 4))
    big[3, 2] = 1e300
    _refused(lambda: quantize_weight(big), "w[3, 2]", "finite")


def test_constructor_refusals():
    q4 = np.zeros((3, 4), np.uint8)
    s = np.ones((1, 4), np.float32)
    _refused(lambda: QuantizedWeight(q4, s, bits=4, group_size=None, k=7),
             "q", "shape", "k = 7")
    _refused(lambda: QuantizedWeight(q4.astype(np.int8), s, bits=4,
                                     group_size=None, k=5), "q", "dtype",
             "uint8")
    _refused(lambda: QuantizedWeight(q4, np.ones((2, 4), np.float32), bits=4,
                                     group_size=None, k=5), "scales", "(1, 4)")
    _refused(lambda: QuantizedWeight(q4, s.astype(np.float64), bits=4,
                                     group_size=None, k=5), "scales", "dtype")
    sn = s.copy()
    sn[0, 3] = np.nan
    _refused(lambda: QuantizedWeight(q4, sn, bits=4, group_size=None, k=5),
             "scales[0, 3]")
    z = np.zeros((1, 4), np.uint8)
    z[0, 2] = 16
    _refused(lambda: QuantizedWeight(q4, s, z, bits=4, group_size=None, k=5),
             "zeros[0, 2]", "0..15")
    _refused(lambda: QuantizedWeight(q4, s, z.astype(np.int8), bits=4,
                                     group_size=None, k=5), "zeros", "uint8")
    pad = q4.copy()
    pad[2, 1] = 0x10
    _refused(lambda: QuantizedWeight(pad, s, bits=4, group_size=None, k=5),
             "q[2, 1]", "padding")
    QuantizedWeight(pad, s, bits=4, group_size=None, k=6)  # k even: a value
    _refused(lambda: QuantizedWeight(np.zeros((5, 4), np.uint8), s, bits=8,
                                     group_size=None), "q", "int8")
    _refused(lambda: QuantizedWeight(np.zeros((5, 4), np.int8), s,
                                     np.zeros((1, 4), np.uint8), bits=8,
                                     group_size=None), "q", "uint8")
    _refused(lambda: QuantizedWeight(q4, s, bits=2), "bits")
    w = QuantizedWeight(q4, s, bits=4, group_size=None, k=5)
    _refused(lambda: w.dequantize(np.float16), "dtype")


# ------------------------------------------------------------- GPTQ layout
def pack_gptq(vals, zeros, bits):
    """GPTQ v1 by loops: qweight [k*bits/32, n] along k, qzeros [groups,
    n*bits/32] along n holding zero - 1, low bits first."""
    per, mask = 32 // bits, (1 << bits) - 1
    k, n = vals.shape
    qw = np.zeros((k // per, n), np.int32)
    for r in range(k // per):
        for j in range(n):
            word = 0
            for t in range(per):
                word |= (int(vals[per * r + t, j]) & mask) << (bits * t)
            qw[r, j] = as_int32(word)
    ng = zeros.shape[0]
    qz = np.zeros((ng, n // per), np.int32)
    for gi in range(ng):
        for c in range(n // per):
            word = 0
            for t in range(per):
                word |= ((int(zeros[gi, per * c + t]) - 1) & mask) << (bits * t)
            qz[gi, c] = as_int32(word)
    return qw, qz


def test_gptq_one_word_by_hand():
    # Rows 0..7 of column 0 hold 1..8: qweight[0, 0] = 0x87654321 (negative
    # as int32); zeros 8 stored as 7: 0x77777777.
    qw = np.array([[as_int32(0x87654321)] * 8], np.int32)
    assert qw[0, 0] < 0
    qz = np.array([[0x77777777]], np.int32)
    sc = np.full((1, 8), 0.5, np.float16)
    w = QuantizedWeight.from_gptq(qw, qz, sc, bits=4, group_size=-1,
                                  sym=False)
    np.testing.assert_array_equal(w.values()[:, 0], np.arange(1, 9))
    np.testing.assert_array_equal(w.zeros, np.full((1, 8), 8))
    np.testing.assert_array_equal(w.dequantize()[:, 0],
                                  (np.arange(1, 9) - 8) * 0.5)
    s = QuantizedWeight.from_gptq(qw, qz, sc, bits=4, group_size=-1)
    assert s.symmetric and s.zeros is None
    np.testing.assert_array_equal(s.values()[:, 0], np.arange(1, 9) - 8)
    np.testing.assert_array_equal(s.dequantize(), w.dequantize())


@pytest.mark.parametrize("bits", [4, 8])
def test_gptq_import(bits):
    rng = np.random.default_rng(10 + bits)
    k, n, g = 96, 24, 32
    top = (1 << bits) - 1
    vals = rng.integers(0, top + 1, (k, n)).astype(np.uint8)
    vals[0, 0], vals[1, 0] = top, 0
    zeros = rng.integers(0, top + 1, (3, n)).astype(np.uint8)
    zeros[0, 0], zeros[0, 1], zeros[2, 23] = 0, top, 1  # stored -1, top-1, 0
    scales = rng.uniform(0.001, 0.1, (3, n)).astype(np.float16)
    qw, qz = pack_gptq(vals, zeros, bits)
    w = QuantizedWeight.from_gptq(qw, qz, scales, bits=bits, group_size=32)
    assert (w.bits, w.k, w.n, w.group_size, w.symmetric) == (bits, k, n, 32,
                                                             False)
    assert w.zeros.dtype == np.uint8 and w.scales.dtype == np.float32
    np.testing.assert_array_equal(w.values(), vals)
    np.testing.assert_array_equal(w.zeros, zeros)
    ref = expected(vals, zeros, scales.astype(np.float32), g)
    np.testing.assert_array_equal(w.dequantize(np.float64), ref)
    # the trivial g_idx is accepted, an act-order one refused by name
    gi = (np.arange(k) // g).astype(np.int32)
    QuantizedWeight.from_gptq(qw, qz, scales, bits=bits, group_size=32,
                              g_idx=gi)
    perm = gi.copy()
    perm[[5, 40]] = perm[[40, 5]]
    _refused(lambda: QuantizedWeight.from_gptq(
        qw, qz, scales, bits=bits, group_size=32, g_idx=perm), "g_idx",
        "act-order", "g_idx[5]")
    _refused(lambda: QuantizedWeight.from_gptq(
        qw, qz, scales, bits=bits, group_size=32, sym=True), "sym=True",
        "zero point")


def test_gptq_symmetric_checkpoint():
    rng = np.random.default_rng(3)
    k, n = 64, 16
    vals = rng.integers(0, 16, (k, n)).astype(np.uint8)
    vals[0, 0], vals[1, 0] = 0, 15                      # -8 and +7
    zeros = np.full((1, n), 8, np.uint8)
    scales = rng.uniform(0.01, 1, (1, n)).astype(np.float16)
    qw, qz = pack_gptq(vals, zeros, 4)
    assert (qz == 0x77777777).all()
    w = QuantizedWeight.from_gptq(qw, qz, scales, group_size=None)
    assert w.symmetric and w.group_size == k
    signed = vals.astype(np.int16) - 8
    np.testing.assert_array_equal(w.values(), signed)
    assert w.values()[0, 0] == -8 and w.values()[1, 0] == 7
    np.testing.assert_array_equal(
        w.dequantize(np.float64),
        expected(vals, zeros, scales.astype(np.float32), k))
    # 8 bits: zero 128, symmetric unless some q is 0 (-128 is outside the
    # symmetric range); sym=True takes it anyway.
    v8 = rng.integers(1, 256, (k, n)).astype(np.uint8)
    qw8, qz8 = pack_gptq(v8, np.full((1, n), 128, np.uint8), 8)
    assert QuantizedWeight.from_gptq(qw8, qz8, scales, bits=8,
                                     group_size=-1).symmetric
    v8[3, 3] = 0
    qw8, qz8 = pack_gptq(v8, np.full((1, n), 128, np.uint8), 8)
    a = QuantizedWeight.from_gptq(qw8, qz8, scales, bits=8, group_size=-1)
    assert not a.symmetric
    b = QuantizedWeight.from_gptq(qw8, qz8, scales, bits=8, group_size=-1,
                                  sym=True)
    assert b.symmetric and b.values()[3, 3] == -128
    np.testing.assert_array_equal(a.dequantize(np.float64),
                                  b.dequantize(np.float64))


def test_gptq_shape_refusals():
    qw = np.zeros((8, 16), np.int32)
    qz = np.zeros((2, 2), np.int32)
    sc = np.ones((2, 16), np.float16)
    QuantizedWeight.from_gptq(qw, qz, sc, group_size=32)
    _refused(lambda: QuantizedWeight.from_gptq(qw, qz, sc, group_size=64),
             "qzeros", "(1, 2)")
    _refused(lambda: QuantizedWeight.from_gptq(qw, qz[:, :1], sc,
                                               group_size=32), "qzeros")
    _refused(lambda: QuantizedWeight.from_gptq(qw, qz, sc[:, :8],
                                               group_size=32), "scales")
    _refused(lambda: QuantizedWeight.from_gptq(qw.astype(np.int64), qz, sc,
                                               group_size=32), "qweight",
             "int32")
    _refused(lambda: QuantizedWeight.from_gptq(qw, qz, sc, group_size=16),
             "group_size")
    _refused(lambda: QuantizedWeight.from_gptq(qw, qz, sc, bits=3), "bits")


# -------------------------------------------------------------- AWQ layout
AWQ_PACK_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]   # nibble p holds column 8c + this


def pack_awq(vals):
    """AWQ GEMM by loops: int32 [rows, cols/8], nibble p of word c holding
    column 8c + AWQ_PACK_ORDER[p]."""
    rows, cols = vals.shape
    out = np.zeros((rows, cols // 8), np.int32)
    for r in range(rows):
        for c in range(cols // 8):
            word = 0
            for p in range(8):
                word |= (int(vals[r, 8 * c + AWQ_PACK_ORDER[p]]) & 0xF) << (4 * p)
            out[r, c] = as_int32(word)
    return out


def test_awq_one_word_by_hand():
    # Columns 0..7 hold 0..7: the word's nibbles, low first, are columns
    # 0, 2, 4, 6, 1, 3, 5, 7 -> 0x75316420.
    vals = np.arange(8, dtype=np.uint8)[None, :].repeat(32, 0)
    qw = pack_awq(vals)
    assert qw[0, 0] == 0x75316420
    qz = np.array([[0x75316420]], np.int32)    # zeros 0..7, not minus one
    sc = np.full((1, 8), 0.25, np.float16)
    w = QuantizedWeight.from_awq(qw, qz, sc, group_size=32)
    np.testing.assert_array_equal(w.values()[0], np.arange(8))
    np.testing.assert_array_equal(w.zeros[0], np.arange(8))
    assert (w.dequantize() == 0).all()


def test_awq_import():
    rng = np.random.default_rng(7)
    k, n, g = 72, 24, 32       # a partial last group (8 rows); n = 3 words
    vals = rng.integers(0, 16, (k, n)).astype(np.uint8)
    vals[0, :2] = (15, 0)
    zeros = rng.integers(0, 16, (3, n)).astype(np.uint8)
    zeros[0, :2] = (0, 15)
    scales = rng.uniform(0.001, 0.1, (3, n)).astype(np.float16)
    w = QuantizedWeight.from_awq(pack_awq(vals), pack_awq(zeros), scales,
                                 group_size=32)
    assert (w.k, w.n, w.groups, w.symmetric) == (k, n, 3, False)
    np.testing.assert_array_equal(w.values(), vals)
    np.testing.assert_array_equal(w.zeros, zeros)
    np.testing.assert_array_equal(
        w.dequantize(np.float64),
        expected(vals, zeros, scales.astype(np.float32), g))
    _refused(lambda: QuantizedWeight.from_awq(pack_awq(vals), pack_awq(zeros),
                                              scales, bits=8), "bits", "4")
    _refused(lambda: QuantizedWeight.from_awq(pack_awq(vals),
                                              pack_awq(zeros)[:2], scales,
                                              group_size=32), "qzeros")


# ------------------------------------------------------------------- torch
@needs_torch
def test_torch_in_and_out():
    g = torch.Generator().manual_seed(0)
    t = torch.randn(100, 24, generator=g)
    for dt in (torch.float32, torch.float16, torch.bfloat16):
        x = t.to(dt)
        a = quantize_weight(x, bits=4, group_size=32, symmetric=False)
        b = quantize_weight(x.float().numpy(), bits=4, group_size=32,
                            symmetric=False)
        np.testing.assert_array_equal(a.q, b.q)
        np.testing.assert_array_equal(a.scales, b.scales)
        np.testing.assert_array_equal(a.zeros, b.zeros)
    # a transposed (non-contiguous) view: nn.Linear's weight as [k, n]
    lin = torch.randn(24, 100, generator=g)
    c = quantize_weight(lin.t(), bits=8, group_size=None)
    assert (c.k, c.n) == (100, 24)
    d = c.dequantize(torch.float32)
    assert isinstance(d, torch.Tensor) and d.dtype == torch.float32
    np.testing.assert_array_equal(d.numpy(), c.dequantize())
    assert c.dequantize(torch.float64).dtype == torch.float64
    assert c.dequantize(torch.bfloat16).dtype == torch.bfloat16
    parts = c.to_torch()
    assert parts.q.dtype == torch.int8 and parts.zeros is None
    assert parts.scales.data_ptr() == c.scales.ctypes.data  # shared
    e = quantize_weight(t, bits=4, group_size=32, symmetric=False).to_torch()
    assert e.q.dtype == torch.uint8 and e.zeros.dtype == torch.uint8
    # the constructor and importers take tensors
    f = QuantizedWeight(e.q, e.scales.to(torch.bfloat16), e.zeros, bits=4,
                        group_size=32, k=100)
    assert f.scales.dtype == np.float32
    vals = np.random.default_rng(2).integers(0, 16, (64, 16)).astype(np.uint8)
    zeros = np.full((2, 16), 3, np.uint8)
    qw, qz = pack_gptq(vals, zeros, 4)
    sc = torch.rand(2, 16, generator=g).half()
    h = QuantizedWeight.from_gptq(torch.from_numpy(qw), torch.from_numpy(qz),
                                  sc, group_size=32,
                                  g_idx=torch.arange(64, dtype=torch.int32) // 32)
    np.testing.assert_array_equal(h.values(), vals)
    i = QuantizedWeight.from_awq(torch.from_numpy(pack_awq(vals)),
                                 torch.from_numpy(pack_awq(zeros)), sc,
                                 group_size=32)
    np.testing.assert_array_equal(i.dequantize(), h.dequantize())
    bad = torch.zeros(4, 4)
    bad[1, 3] = float("nan")
    _refused(lambda: quantize_weight(bad), "w[1, 3]")


def test_repr_and_exports():
    w = quantize_weight(np.ones((77, 24), np.float32), group_size=32)
    r = repr(w)
    assert "bits=4" in r and "k=77" in r and "n=24" in r and "symmetric" in r
    assert "nbytes=%d" % w.nbytes in r
    assert w.nbytes == 39 * 24 + 3 * 24 * 4
    assert "QuantizedWeight" in agmm.__all__ and "quantize_weight" in agmm.__all__


# Plans with quantized weights (issue 48): every operation at 1 and 2
# ranks, int4 and int8, symmetric and with zero points, groups 32 / 128 /
# all of k (wq_scenarios.py, run by rank_worker.py).
@pytest.mark.parametrize("nranks", [1, 2])
@pytest.mark.parametrize("op,bits,zp,gs", [
    ("ag-gemm", 4, False, 32), ("ag-gemm", 8, True, None),
    ("gemm-rs", 4, True, 32), ("gemm-ar", 8, False, None)])
def test_plans_take_quantized_weights(nranks, op, bits, zp, gs):
    from conftest import run_world
    args = dict(op=op, bits=bits, zp=zp, group_size=gs,
                m_local=[9, 4][:nranks], k=96 if op == "ag-gemm" else 100,
                n=40)
    if op != "ag-gemm":
        args["k_local"] = [64, 36] if nranks == 2 else [100]
    run_world(nranks, "wq", args)
