"""silu_and_mul(gate, up): the gated activation of a Llama MLP,
(silu(gate.float()) * up.float()).to(gate.dtype), differentiable: its
torch.autograd.Function over the row-block kernels of kernels/glu.py
(whose text says why: no whole-size float32 temporary, the same values
bit for bit as torch's expression; tests/python/test_glu.py checks it).
Tensors that are not plain CPU tensors, and traced calls
(torch.compile), take the expression itself.
"""
import torch

from ..kernels import glu
from ..kernels.dispatch import compiling


class _SiluAndMul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, gate, up):
        ctx.save_for_backward(gate, up)
        with torch.no_grad():
            return glu.forward(gate, up)

    @staticmethod
    def backward(ctx, gy):
        gate, up = ctx.saved_tensors
        with torch.no_grad():
            return glu.backward(gy, gate, up, ctx.needs_input_grad[0],
                                ctx.needs_input_grad[1])


def silu_and_mul(gate, up):
    """(silu(gate.float()) * up.float()).to(gate.dtype), differentiable,
    the same values bit for bit, with no whole-size float32 temporary
    (kernels/glu.py's text). gate and up: tensors of one shape and dtype."""
    if compiling() or not glu.plain(gate, up):  # traced: the expression
        return glu.expression(gate, up)
    if torch.is_grad_enabled() and (gate.requires_grad or up.requires_grad):
        return _SiluAndMul.apply(gate, up)
    return glu.forward(gate, up)


__all__ = ["silu_and_mul"]
