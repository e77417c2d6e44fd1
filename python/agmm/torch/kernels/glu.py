"""The kernels of silu_and_mul(gate, up), the gated activation of a Llama
MLP, (silu(gate.float()) * up.float()).to(gate.dtype), forward and
backward in row blocks (the Function and the call: autograd/glu.py).

Why not torch's expression: written out, it is five tensors of the
whole [rows, i] in float32 or 16 bits in the forward (gate.float(),
silu, up.float(), the product, the conversion) and as many in the
backward (autograd's ToCopy, Mul and Silu backwards), each a fresh
allocation. With glibc's default allocator every tensor over 32 MiB is
a fresh mmap whose pages are touched anew; on the VMs of
docs/history/ ("Zen 5") a 4 KiB page costs about 11 us, so that
page touching, not the arithmetic, was most of the layer's time outside
the GEMMs (aten::mul 293 ms a call at 4096 x 5504, bench/tp_layer.py's
prefill forward + backward). Here the same kernels run block by block
on float32 buffers of BLOCK elements (reused, cache-sized), and only the
results are whole tensors (agmm's outputs' allocation: _buffers.
empty_torch, advised for huge pages).

Values: the same aten kernels in the same order as autograd runs for the
expression (silu, mul; in the backward grad * up, silu_backward, grad *
silu(gate)), on the same float32 values, so forward and gradients are bit
for bit those of the expression (tests/python/test_glu.py checks it).

Tensors that are not plain CPU tensors (FakeTensor, subclasses, other
devices) take the expression itself (plain() says which), as do gate/up
of different shapes or dtypes (torch's broadcasting and promotion, then,
are the rules).
"""
import math

import torch
import torch.nn.functional as F

from ..._buffers import empty_torch


BLOCK = 1 << 17  # float32 elements per block buffer (512 KiB)


def expression(gate, up):
    return (F.silu(gate.float()) * up.float()).to(gate.dtype)


def plain(*ts):
    return all(type(t) is torch.Tensor and t.is_cpu and t.dim() >= 1 for t in ts) \
        and ts[0].shape == ts[1].shape and ts[0].dtype == ts[1].dtype \
        and ts[0].is_floating_point()


def block_rows(rows, n):
    """Rows per block: about BLOCK elements, a multiple of 64 of them
    where n allows. torch's elementwise loops run whole vectors and leave
    the last few elements of a call to a scalar loop, whose float32
    results may differ in the last bit (seen with SiLU): blocks of whole
    vectors leave that to the last block's end, where the expression
    leaves it too."""
    n = max(1, n)
    align = 64 // math.gcd(n, 64)
    return max(1, min(rows, max(align, BLOCK // n // align * align)))


def blocks(rows, n):
    step = block_rows(rows, n)
    for r0 in range(0, rows, step):
        yield r0, min(rows, r0 + step)


def flat_rows(t):
    n = int(t.shape[-1])
    return t.reshape(-1, n), n


def forward(gate, up):
    g2, n = flat_rows(gate)
    u2, _ = flat_rows(up)
    rows = int(g2.shape[0])
    out = empty_torch((rows, n), gate.dtype)
    buf = torch.empty((block_rows(rows, n), n), dtype=torch.float32)
    for r0, r1 in blocks(rows, n):
        s = buf[:r1 - r0]
        s.copy_(g2[r0:r1])
        torch.ops.aten.silu_(s)
        s.mul_(u2[r0:r1])
        out[r0:r1].copy_(s)
    return out.view(gate.shape)


def backward(gy, gate, up, want_gate, want_up):
    g2, n = flat_rows(gate)
    u2, _ = flat_rows(up)
    y2 = gy.reshape(-1, n)
    rows = int(g2.shape[0])
    dgate = empty_torch((rows, n), gate.dtype) if want_gate else None
    dup = empty_torch((rows, n), up.dtype) if want_up else None
    h = block_rows(rows, n)
    gf, yf, t = (torch.empty((h, n), dtype=torch.float32) for _ in range(3))
    for r0, r1 in blocks(rows, n):
        m = r1 - r0
        g, y, tt = gf[:m], yf[:m], t[:m]
        g.copy_(g2[r0:r1])
        y.copy_(y2[r0:r1])
        if want_up:  # d up = dy * silu(gate)
            torch.ops.aten.silu.out(g, out=tt)
            tt.mul_(y)
            dup[r0:r1].copy_(tt)
        if want_gate:  # d gate = silu'(gate) * (dy * up)
            torch.mul(y, u2[r0:r1], out=tt)
            torch.ops.aten.silu_backward.grad_input(tt, g, grad_input=y)
            dgate[r0:r1].copy_(y)
    return (dgate.view(gate.shape) if want_gate else None,
            dup.view(up.shape) if want_up else None)
