"""W8A8 int8 through the package (issue 22): agmm.quantize (the library's
agmm_quantize) against NumPy, scale validation naming the argument, the
float convenience, int8 plans at 1 and 2 ranks against an int64 oracle
(int8_scenarios.py, run by rank_worker.py), and agmm.torch's scaled ops.

Tests that run int8 plans skip only where agmm.int8_available() says this
build's engine cannot (an OpenBLAS-only build refuses int8 plans; that
refusal is checked instead)."""
import numpy as np
import pytest

import agmm
from agmm import _buffers
from conftest import run_world

needs_int8 = pytest.mark.skipif(
    not agmm.int8_available(),
    reason="int8 needs the oneDNN engine (agmm.int8_available() is False)")


def _ref_quantize(x32, axis):
    """NumPy's reading of agmm.h: s = absmax / 127 in fp32 over each set,
    q = round-half-even(x / s), 0 where s == 0."""
    a = np.abs(x32)
    if axis == "rows":
        s = a.max(axis=1)
        sb = s[:, None]
    elif axis == "cols":
        s = a.max(axis=0)
        sb = s[None, :]
    else:
        s = np.array([a.max()], np.float32)
        sb = s.reshape(1, 1)
    s = (s / np.float32(127)).astype(np.float32)
    sb = (sb / np.float32(127)).astype(np.float32)
    with np.errstate(divide="ignore", invalid="ignore"):
        q = np.where(sb == 0, 0, np.rint(x32 / sb))
    return q.astype(np.int8), s


# ------------------------------------------------ local: no world needed
def test_int8_names_and_layouts():
    assert agmm.plan.dtype_name("int8") == "int8"
    assert agmm.plan.dtype_name(np.int8) == "int8"
    assert agmm.plan.dtype_name(np.dtype("int8")) == "int8"
    assert agmm.plan.dtype_name(np.float16) == "fp16"
    import torch
    assert agmm.plan.dtype_name(torch.int8) == "int8"
    assert _lib_scale_names() == ["channel", "tensor"]
    assert isinstance(agmm.int8_available(), bool)
    if not agmm.int8_available("onednn"):
        assert not agmm.int8_available()
    assert not agmm.int8_available("openblas")  # no int8 GEMM in OpenBLAS


def _lib_scale_names():
    from agmm import _lib
    f = _lib.fn.agmm_scale_name
    if f is None:
        return list(_lib.SCALES)  # checked by test_abi's enum values then
    return [_lib.text(f(v)) for v in sorted(_lib.SCALES.values())]


@pytest.mark.parametrize("scalar", [False, True])
def test_scale_checks_name_the_argument(scalar):
    E = agmm.InvalidArgument
    count = 1 if scalar else 16
    good = np.ones(count, np.float32)
    ptr, keep = _buffers.scales_ptr(good, count, "a_scale", scalar=scalar)
    assert ptr == good.ctypes.data and keep is good  # by pointer, no copy
    want = "a_scale: expected float32 of shape (%d,)" % count
    with pytest.raises(E) as e:
        _buffers.scales_ptr(np.ones(8, np.float32), count, "a_scale", scalar=scalar)
    assert str(e.value).endswith(want + (" or a number" if scalar else "") +
                                 ", got shape (8,)"), str(e.value)
    assert isinstance(e.value, ValueError)
    with pytest.raises(E, match=r"a_scale: expected float32.*got float64"):
        _buffers.scales_ptr(good.astype(np.float64), count, "a_scale", scalar=scalar)
    with pytest.raises(E, match="a_scale"):
        _buffers.scales_ptr("1.0", count, "a_scale", scalar=scalar)
    with pytest.raises(E, match="a_scale"):
        _buffers.scales_ptr(None, count, "a_scale", scalar=scalar)
    import torch
    with pytest.raises(E, match=r"w_scale: expected float32.*got torch.float16"):
        _buffers.scales_ptr(torch.ones(count, dtype=torch.float16), count, "w_scale",
                            scalar=scalar)
    strided = np.ones(2 * count, np.float32)[::2]
    ptr, keep = _buffers.scales_ptr(strided, count, "a_scale", scalar=scalar)
    assert keep.flags.c_contiguous  # copied once
    if scalar:
        for number in (0.5, np.float32(0.5), np.array(0.5, np.float32),
                       torch.tensor(0.5)):
            ptr, keep = _buffers.scales_ptr(number, 1, "a_scale", scalar=True)
            assert float(np.asarray(keep).reshape(-1)[0]) == 0.5
    else:
        with pytest.raises(E, match="a_scale.*number"):
            _buffers.scales_ptr(0.5, count, "a_scale")
    bad = np.ones(count, np.float32)
    bad[-1] = np.inf
    with pytest.raises(E, match=r"a_scale\[%d\]" % (count - 1)):
        _buffers.check_scale_values(bad, "a_scale")


def test_quantize_argument_errors():
    E = agmm.InvalidArgument
    x = np.ones((4, 8), np.float32)
    with pytest.raises(E, match="axis: 'row'"):
        agmm.quantize(x, axis="row")
    with pytest.raises(E, match="x: dtype float64"):
        agmm.quantize(x.astype(np.float64))
    with pytest.raises(E, match="x: dtype int8"):
        agmm.quantize(x.astype(np.int8))
    with pytest.raises(E, match="x: 1 dimension"):
        agmm.quantize(np.ones(8, np.float32))
    q, s = agmm.quantize(np.zeros((0, 8), np.float32), "rows")  # nothing to scan
    assert q.shape == (0, 8) and s.shape == (0,)


@pytest.mark.parametrize("axis", ["rows", "cols", "tensor"])
def test_quantize_matches_numpy(axis):
    """agmm.quantize = NumPy's reading of the header: the scales exactly;
    the values within one step (a quotient the library computes in
    another precision may round a tie the other way), and exactly where
    the quotient is not within 1e-3 of a tie; -127..127, never -128; a
    zero row/column has scale 0. float32, float16, bf16 (NumPy bits and
    torch), strided input."""
    import torch
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((12, 20)) * rng.uniform(0.1, 10, (12, 1))).astype(np.float32)
    x[4, :] = 0
    x[:, 7] = 0
    x[0, 0], x[1, 1] = -3e3, 2e3
    for name, xin, x32 in (
            ("fp32", x, x),
            ("fp16", x.astype(np.float16), x.astype(np.float16).astype(np.float32)),
            ("bf16", agmm.bf16_from_float32(x),
             agmm.bf16_to_float32(agmm.bf16_from_float32(x))),
            ("torch-bf16", torch.from_numpy(x).to(torch.bfloat16),
             torch.from_numpy(x).to(torch.bfloat16).float().numpy()),
            ("strided", np.asfortranarray(x), x)):
        q, s = agmm.quantize(xin, axis)
        q, s = (q.numpy(), s.numpy()) if hasattr(q, "numpy") else (q, s)
        rq, rs = _ref_quantize(x32, axis)
        assert q.dtype == np.int8 and q.shape == x.shape, name
        assert s.dtype == np.float32 and s.shape == rs.shape, (name, s.shape)
        assert np.array_equal(s, rs), name
        assert q.min() >= -127 and q.max() <= 127, name
        diff = np.abs(q.astype(np.int32) - rq.astype(np.int32))
        assert diff.max() <= 1, name
        sb = rs[:, None] if axis == "rows" else rs[None, :]  # tensor: [1, 1]
        with np.errstate(divide="ignore", invalid="ignore"):
            frac = np.abs(np.abs(x32 / sb) % 1 - 0.5)
        clear = np.nan_to_num(frac, nan=1.0) > 1e-3
        assert np.array_equal(q[clear], rq[clear]), name
    if axis == "rows":
        assert s[4] == 0 and not q[4].any()
    if axis == "cols":
        assert s[7] == 0 and not q[:, 7].any()
    # kinds follow the input; leading dims are rows
    q3, s3 = agmm.quantize(torch.from_numpy(x.reshape(3, 4, 20)), "rows")
    assert q3.dtype == torch.int8 and tuple(s3.shape) == (3, 4)
    q2, s2 = agmm.quantize(x, "rows")
    assert np.array_equal(q3.reshape(12, 20).numpy(), q2)
    with pytest.raises(agmm.InvalidArgument):
        bad = x.copy()
        bad[2, 3] = np.nan
        agmm.quantize(bad, axis)


def test_scales_only_for_int8_plans():
    """a_scale / w_scale on a float plan: InvalidArgument naming it."""
    run_world(1, "int8_float_plan_refuses_scales", dict())


def test_openblas_refuses_int8_plans():
    """Where int8 is unavailable (an OpenBLAS-only build, or the openblas
    engine asked for), creating an int8 plan raises agmm.Unsupported."""
    run_world(1, "int8_unavailable", dict(engines=[
        e for e in ("auto", "openblas") if agmm.gemm_path_available(e, "fp32", "auto")
        and not agmm.int8_available(e)]))


# ------------------------------------------------ worlds of int8 plans
@needs_int8
@pytest.mark.parametrize("nranks,m_local", [(1, [19]), (2, [13, 6])])
def test_int8_allgather_gemm_matches_int64_oracle(nranks, m_local):
    run_world(nranks, "int8_gemm", dict(m_local=m_local, k=40, n=[24, 9], rounds=3,
                                        tile_m=8, tile_n=16, kinds=["numpy", "torch"],
                                        torch=True))


@needs_int8
@pytest.mark.parametrize("nranks", [1, 2])
def test_int8_float_inputs_quantized_like_agmm_quantize(nranks):
    run_world(nranks, "int8_float_in", dict(m_local=[9, 4][:nranks], k=32, n=12,
                                            torch=True))


@needs_int8
@pytest.mark.parametrize("nranks,k_local", [(1, [30]), (2, [17, 9])])
def test_int8_gemm_reduce_scatter(nranks, k_local):
    run_world(nranks, "int8_rs", dict(m_local=[7, 5][:nranks], k_local=k_local, n=11,
                                      rounds=2))


@needs_int8
def test_int8_bad_scales_are_exceptions_naming_the_argument():
    run_world(2, "int8_errors", dict(torch=True))


@needs_int8
@pytest.mark.parametrize("nranks", [1, 2])
def test_torch_scaled_ops_match_the_oracle(nranks):
    run_world(nranks, "int8_op", dict(calls=4, torch=True))
