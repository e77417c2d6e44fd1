"""agmm.torch.silu_and_mul (python/agmm/torch/autograd/glu.py, its row
blocks python/agmm/torch/kernels/glu.py): forward and both gradients bit for bit those of torch's expression
(silu(gate.float()) * up.float()).to(gate.dtype) under autograd, at row
counts that span several blocks and end in a partial one, in bf16, fp16
and float32 (where a careless block copy would overwrite gate), 1-D and
3-D shapes; the expression itself for what the blocks do not take."""
import pytest

torch = pytest.importorskip("torch")
import torch.nn.functional as F  # noqa: E402

import agmm.torch.kernels.glu as glu  # noqa: E402
from agmm.torch import silu_and_mul  # noqa: E402


def _expr(gate, up):
    return (F.silu(gate.float()) * up.float()).to(gate.dtype)


def _pair(shape, dtype, seed):
    g = torch.Generator().manual_seed(seed)
    return [(3 * torch.randn(shape, generator=g)).to(dtype) for _ in range(2)]


@pytest.fixture(autouse=True)
def small_blocks(monkeypatch):
    """Blocks of a few rows at these sizes, so every call spans several
    and ends in a partial one."""
    monkeypatch.setattr(glu, "BLOCK", 5 * 40)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
@pytest.mark.parametrize("shape", [(37, 40), (40,), (2, 9, 40), (0, 40), (130, 37)])
def test_forward_and_gradients_are_the_expressions(dtype, shape):
    gate, up = _pair(shape, dtype, 1)
    gy = _pair(shape, dtype, 2)[0]
    g0, u0 = gate.clone(), up.clone()

    a, b = gate.clone().requires_grad_(True), up.clone().requires_grad_(True)
    ref = _expr(a, b)
    ref.backward(gy)

    c, d = gate.clone().requires_grad_(True), up.clone().requires_grad_(True)
    got = silu_and_mul(c, d)
    assert got.dtype == dtype and got.shape == ref.shape
    assert torch.equal(got, ref)
    got.backward(gy)
    assert torch.equal(c.grad, a.grad) and torch.equal(d.grad, b.grad)
    assert c.grad.dtype == dtype and d.grad.dtype == dtype
    # the inputs are only read
    assert torch.equal(c.detach(), g0) and torch.equal(d.detach(), u0)


def test_one_input_wanting_a_gradient():
    gate, up = _pair((19, 40), torch.bfloat16, 3)
    gy = _pair((19, 40), torch.bfloat16, 4)[0]
    for which in (0, 1):
        a, b = gate.clone(), up.clone()
        c, d = gate.clone(), up.clone()
        for t in ((a, c) if which == 0 else (b, d)):
            t.requires_grad_(True)
        _expr(a, b).backward(gy)
        silu_and_mul(c, d).backward(gy)
        want, got = ((a, c) if which == 0 else (b, d))
        assert torch.equal(got.grad, want.grad)
        other = (d if which == 0 else c)
        assert other.grad is None


def test_no_grad_and_views():
    gate, up = _pair((23, 80), torch.bfloat16, 5)
    with torch.no_grad():
        got = silu_and_mul(gate[:, ::2], up[:, 1::2])  # strided columns
    assert torch.equal(got, _expr(gate[:, ::2], up[:, 1::2]))


def test_what_the_blocks_do_not_take_is_the_expression():
    gate, up = _pair((5, 8), torch.bfloat16, 6)
    # broadcast (shapes differ), mixed dtypes: torch's rules
    assert torch.equal(silu_and_mul(gate, up[:1]), _expr(gate, up[:1]))
    assert torch.equal(silu_and_mul(gate, up.float()), _expr(gate, up.float()))
