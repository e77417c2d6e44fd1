"""agmm.torch's local GEMMs (python/agmm/torch/kernels/local.py): the backward's
weight gradients through a one-rank agmm plan, against float32 products,
with a new second operand on every call, the small and float32 cases left
to torch, a forked child's own world, and nothing left in /dev/shm by a
process that used them."""
import glob
import os
import subprocess
import sys

import pytest

torch = pytest.importorskip("torch")
import agmm.torch.kernels.local as L  # noqa: E402


@pytest.fixture(autouse=True)
def small_products_too(monkeypatch):
    """These shapes are small (fast): take them through plans anyway; the
    flop bound itself is checked in test_small_and_fp32_stay_with_torch.
    And a plan from a shape's first call, with no call of an earlier test
    counted as recent: the sightings are test_plan_from_the_second_sighting's."""
    monkeypatch.setattr(L, "LOCAL_MIN_FLOP", 0)
    monkeypatch.setattr(L, "LOCAL_SIGHTINGS", 1)
    L._state["seen"].clear()


def _ref(x, y):
    return x.double() @ y.double()


def _close_enough(got, x, y, dtype):
    ref = _ref(x, y)
    # One rounding of the float32 sum to the 16-bit dtype (and float32
    # accumulation over k): relative to the largest |value|.
    tol = {torch.bfloat16: 1e-2, torch.float16: 2e-3}[dtype]
    err = (got.double() - ref).abs().max() / ref.abs().max()
    return err.item() <= tol, err.item()


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
def test_local_mm_through_a_plan(dtype):
    g = torch.Generator().manual_seed(3)
    x = torch.randn(320, 256, generator=g).to(dtype)
    ys = [torch.randn(320, n, generator=g).to(dtype) for n in (256, 288)]
    outs = L.local_mm(x.t(), ys, dtype)  # x^T: a strided first operand
    key = (256, 320, (256, 288), L._DTYPES[dtype])
    used = any(k == key for k, _ in L._state["plans"])
    # Without oneDNN in libagmm (the OpenBLAS-only build) torch's matmul.
    assert used == L.engine_available(), "plan used: %s" % used
    for out, y in zip(outs, ys):
        assert out.dtype == dtype and out.is_contiguous()
        assert tuple(out.shape) == (256, y.shape[1])
        ok, err = _close_enough(out, x.t(), y, dtype)
        assert ok, "error %g" % err
    # The same shape again with other values: the plan's weight is set
    # again (a stale weight would give the first product).
    ys2 = [torch.randn(320, n, generator=g).to(dtype) for n in (256, 288)]
    outs2 = L.local_mm(x.t(), ys2, dtype)
    for out, y in zip(outs2, ys2):
        ok, err = _close_enough(out, x.t(), y, dtype)
        assert ok, "second call: error %g" % err


def test_small_and_fp32_stay_with_torch():
    before = [k for k, _ in L._state["plans"]]
    x = torch.randn(8, 300).bfloat16()
    y = torch.randn(300, 300).bfloat16()
    (out,) = L.local_mm(x, [y], torch.bfloat16)
    assert torch.equal(out, x @ y)
    xf, yf = torch.randn(300, 300), torch.randn(300, 300)
    (outf,) = L.local_mm(xf, [yf], torch.float32)
    assert torch.equal(outf, xf @ yf)
    L.LOCAL_MIN_FLOP = 2.0 * 300 * 300 * 300 + 1  # (the fixture restores it)
    (outb,) = L.local_mm(y, [y], torch.bfloat16)
    assert torch.equal(outb, y @ y)
    assert [k for k, _ in L._state["plans"]] == before


def test_torch_path_takes_column_slices():
    """The all-gather op's backward hands torch column slices of one wide
    dZ: the products equal torch's of contiguous copies bit for bit, and
    come back contiguous (written into outputs of their own)."""
    g = torch.Generator().manual_seed(4)
    x = torch.randn(8, 300, generator=g).bfloat16()  # 8 rows: torch's path
    wide = torch.randn(300, 700, generator=g).bfloat16()
    ys = [wide[:, :300], wide[:, 300:]]
    outs = L.local_mm(x, ys, torch.bfloat16)
    for out, y in zip(outs, ys):
        assert out.is_contiguous() and tuple(out.shape) == (8, y.shape[1])
        assert torch.equal(out, x @ y.contiguous())
    assert outs[0].data_ptr() != outs[1].data_ptr()


def test_env_keeps_torch(monkeypatch):
    x, y = torch.randn(256, 256).bfloat16(), torch.randn(256, 256).bfloat16()
    monkeypatch.setenv("AGMM_LOCAL_GEMM", "torch")
    before = list(L._state["plans"])
    (out,) = L.local_mm(x, [y], torch.bfloat16)
    assert torch.equal(out, x @ y) and L._state["plans"] == before
    monkeypatch.setenv("AGMM_LOCAL_GEMM", "blas")
    with pytest.raises(Exception, match="AGMM_LOCAL_GEMM: 'blas'"):
        L.local_mm(x, [y], torch.bfloat16)


def test_plans_are_bounded():
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans (test above)")
    for n in range(256, 256 + 32 * (L.LOCAL_PLANS + 2), 32):
        L.local_mm(torch.randn(256, 256).bfloat16(),
                   [torch.randn(256, n).bfloat16()], torch.bfloat16)
    assert len(L._state["plans"]) == L.LOCAL_PLANS


def test_forked_child_joins_its_own_world():
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans")
    x = torch.randn(256, 256).bfloat16()
    y = torch.randn(256, 256).bfloat16()
    L.local_mm(x, [y], torch.bfloat16)
    parent = L._state["world"]
    pid = os.fork()
    if pid == 0:  # the child: its own world, a correct product, then out
        code = 1
        try:
            # GNU OpenMP is not fork-safe: once the parent's pool has run
            # (torch 2.6's bf16 conversions above go parallel), the child's
            # first parallel region of torch's hangs. Torch's own DataLoader
            # workers set one thread for this reason; so does this child.
            torch.set_num_threads(1)
            (out,) = L.local_mm(x, [y], torch.bfloat16)
            ok, _ = _close_enough(out, x, y, torch.bfloat16)
            code = 0 if ok and L._state["world"] is not parent else 3
            L._state["world"].close()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0, status
    assert not glob.glob("/dev/shm/*agmm-local-%d*" % pid)
    (out,) = L.local_mm(x, [y], torch.bfloat16)  # the parent's still works
    assert L._state["world"] is parent
    assert _close_enough(out, x, y, torch.bfloat16)[0]


def test_nothing_left_behind():
    # A forked child that ends as a script ends (atexit handlers run)
    # leaves the parent's world alone.
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans")
    code = ("import torch, os, sys, agmm.torch.kernels.local as L\n"
            "L.LOCAL_MIN_FLOP, L.LOCAL_SIGHTINGS = 0, 1\n"
            "x = torch.randn(256, 256).bfloat16()\n"
            "L.local_mm(x, [x], torch.bfloat16)\n"
            "assert L._state['plans']\n"
            "pid = os.fork()\n"
            "if pid == 0:\n"
            "    sys.exit(0)\n"
            "assert os.waitpid(pid, 0)[1] == 0\n"
            "import glob\n"
            "assert glob.glob('/dev/shm/*agmm-local-%d*' % os.getpid())\n"
            "(y,) = L.local_mm(x, [x], torch.bfloat16)\n"
            "assert (y.float() - (x.float() @ x.float())).abs().max() < 1\n"
            "print(os.getpid())\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    pid = int(r.stdout.split()[-1])
    assert not glob.glob("/dev/shm/*agmm-local-%d*" % pid)


def _mp_child(q):
    torch.set_num_threads(1)  # libgomp after fork: see the test above
    x = torch.randn(256, 256).bfloat16()
    (y,) = L.local_mm(x, [x], torch.bfloat16)
    q.put((os.getpid(), L._state["world"] is not None,
           (y.float() - x.float() @ x.float()).abs().max().item()))


def test_multiprocessing_child_closes_its_world():
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans")
    import multiprocessing as mp
    ctx = mp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_mp_child, args=(q,))
    p.start()
    pid, had_world, err = q.get(timeout=60)
    p.join(60)
    assert p.exitcode == 0 and had_world and err < 1
    # It ends by os._exit (no atexit): its Finalize closed the world.
    assert not glob.glob("/dev/shm/*agmm-local-%d*" % pid)


def test_scratch_is_reused_per_role_and_grows():
    """_buffers.scratch_torch: a role's next tensor is the same memory when
    it fits (the point: warm pages), a larger request replaces it, roles
    and dtypes do not share, free_scratch drops them, and a tensor that is
    not a plain CPU tensor gets a fresh one."""
    from agmm import _buffers as B
    B.free_scratch()
    x = torch.randn(64, 48)
    a = B.scratch_copy("t-a", x.t())
    assert a.is_contiguous() and torch.equal(a, x.t())
    ptr = a.data_ptr()
    b = B.scratch_copy("t-a", x[:10].t())          # smaller: same memory
    assert b.data_ptr() == ptr and torch.equal(b, x[:10].t())
    c = B.scratch_copy("t-b", x)                   # another role
    assert c.data_ptr() != ptr
    d = B.scratch_copy("t-a", x, torch.bfloat16)   # another dtype, converted
    assert d.dtype == torch.bfloat16 and d.data_ptr() != ptr
    assert torch.equal(d, x.to(torch.bfloat16))
    e = B.scratch_torch("t-a", (128, 48), torch.float32, x)  # larger: new
    assert tuple(e.shape) == (128, 48)
    B.free_scratch()
    f = B.scratch_copy("t-a", x)
    assert torch.equal(f, x)

    class Sub(torch.Tensor):
        pass
    s = x.as_subclass(Sub)
    g = B.scratch_torch("t-c", (4, 4), torch.float32, s)
    assert g.shape == (4, 4) and ("t-c", torch.float32) not in B._scratch.d
    B.free_scratch()


def test_rows_change_within_one_plan():
    """A row count that changes every call (a prefill's tokens) runs on one
    plan made for their power-of-two capacity, with the call's rows."""
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans")
    g = torch.Generator().manual_seed(5)
    y = torch.randn(256, 288, generator=g).bfloat16()
    L.local_mm(torch.randn(512, 256, generator=g).bfloat16(), [y], torch.bfloat16)
    before = list(L._state["plans"])
    assert before[-1][0][0] == 512
    for m in (300, 257, 511, 384, 512):
        x = torch.randn(m, 256, generator=g).bfloat16()
        (out,) = L.local_mm(x, [y], torch.bfloat16)
        assert tuple(out.shape) == (m, 288) and out.is_contiguous()
        ok, err = _close_enough(out, x, y, torch.bfloat16)
        assert ok, "m %d: error %g" % (m, err)
    assert L._state["plans"] == before  # no plan made, none evicted


def test_kept_weight_is_prepared_once_and_follows_changes(monkeypatch):
    """keep=True (a layer's weights): prepared once while the tensor stays
    the same; prepared again after an in-place change, for another tensor,
    and after a call that set the plan's weight from a gradient."""
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans")
    from agmm.plan import Plan
    sets = []
    real = Plan.set_weight

    def counting(self, w, i=0, scale=None):
        sets.append(i)
        return real(self, w, i, scale)
    monkeypatch.setattr(Plan, "set_weight", counting)
    g = torch.Generator().manual_seed(6)
    x = torch.randn(320, 256, generator=g).bfloat16()
    w = [torch.randn(256, n, generator=g).bfloat16() for n in (256, 288)]

    def check(ws, keep=True, what=""):
        outs = L.local_mm(x, ws, torch.bfloat16, keep=keep)
        for out, y in zip(outs, ws):
            ok, err = _close_enough(out, x, y, torch.bfloat16)
            assert ok, "%s: error %g" % (what, err)

    check(w, what="first")
    assert sets == [0, 1]
    check(w, what="again")
    check(w, what="and again")
    assert sets == [0, 1], "an unchanged weight was prepared again"
    with torch.no_grad():
        w[1].mul_(-2.0)  # an optimizer's in-place step
    check(w, what="after an in-place change")
    assert sets == [0, 1, 1]
    w2 = [w[0], torch.randn(256, 288, generator=g).bfloat16()]
    check(w2, what="another tensor")
    assert sets == [0, 1, 1, 1]
    gz = [torch.randn(256, n, generator=g).bfloat16() for n in (256, 288)]
    check(gz, keep=False, what="a gradient")
    check(w2, what="the weights after a gradient")
    assert sets == [0, 1, 1, 1, 0, 1, 0, 1]


def test_plan_from_the_second_sighting(monkeypatch):
    """A shape's first call runs with torch's matmul and makes no plan (an
    inner size that changes every call, the backward's token count, would
    make one per call); its second among the last LOCAL_SEEN calls makes
    one. A new shape never evicts a plan used within those calls: it runs
    with torch's matmul instead, until that plan has not been used for
    LOCAL_SEEN calls."""
    if not L.engine_available():
        pytest.skip("libagmm without oneDNN: no local plans")
    monkeypatch.setattr(L, "LOCAL_SIGHTINGS", 2)
    monkeypatch.setattr(L, "LOCAL_PLANS", 2)
    monkeypatch.setattr(L, "LOCAL_SEEN", 4)
    for _, p in L._state["plans"]:
        p.close()
    del L._state["plans"][:]
    g = torch.Generator().manual_seed(7)
    x = torch.randn(256, 320, generator=g).bfloat16()

    def call(k):
        y = torch.randn(k, 256, generator=g).bfloat16()
        (out,) = L.local_mm(x[:, :k], [y], torch.bfloat16)
        ok, err = _close_enough(out, x[:, :k], y, torch.bfloat16)
        assert ok, "k %d: error %g" % (k, err)
        return [key[1] for key, _ in L._state["plans"]]

    assert call(256) == []                  # first sighting: torch
    assert call(288) == []
    assert call(256) == [256]               # second: a plan
    assert call(288) == [256, 288]
    assert call(320) == [256, 288]          # first sighting
    assert call(320) == [256, 288]          # 256, 288 used within 4 calls
    assert call(288) == [256, 288]
    assert call(320) == [288, 320]          # 256 unused for 4 calls: evicted


@pytest.mark.parametrize("m", [1, 7, 32])
def test_decode_bf16_runs_agmms_kernel(monkeypatch, m):
    """A kept bf16 weight at decode's few rows (<= DECODE_ROWS) runs agmm's
    bf16-weight kernel (the wq engine on a plan of these very tensors), not
    torch's matmul: its result matches torch's float32 product within one
    bf16 rounding; an in-place change of the weight is packed again; 33
    rows leave the decode path."""
    monkeypatch.setattr(L, "DECODE_MIN_WEIGHT", 0)
    g = torch.Generator().manual_seed(40 + m)
    k = 257  # odd: the packed layout's padding row
    x = torch.randn(m, k, generator=g).bfloat16()
    ws = [torch.randn(k, n, generator=g).bfloat16() for n in (70, 100)]
    outs = L.local_mm(x, ws, torch.bfloat16, keep=True)
    key = (tuple(id(w) for w in ws), k, (70, 100), None)  # no activation
    assert key in L._decode_plans, "no decode plan"
    info = L._decode_plans[key][2].gemm_info()
    assert info.engine == "wq" and info.impl.startswith("wq:bf16"), info
    for out, w in zip(outs, ws):
        assert out.dtype == torch.bfloat16 and tuple(out.shape) == (m, w.shape[1])
        ok, err = _close_enough(out, x, w, torch.bfloat16)
        assert ok, "error %g" % err
        ref = (x.float() @ w.float()).bfloat16()
        # within one bf16 ulp of torch's own (fp32-accumulated) result
        assert (out.float() - ref.float()).abs().max().item() <= \
            ref.float().abs().max().item() * 2 ** -7
    with torch.no_grad():
        ws[0].mul_(-1.0)
    (o0, _) = L.local_mm(x, ws, torch.bfloat16, keep=True)
    ok, err = _close_enough(o0, x, ws[0], torch.bfloat16)
    assert ok, "after an in-place change: error %g" % err
    x33 = torch.randn(33, k, generator=g).bfloat16()
    before = dict(L._decode_plans)
    L.local_mm(x33, ws, torch.bfloat16, keep=True)
    assert L._decode_plans.keys() == before.keys()
