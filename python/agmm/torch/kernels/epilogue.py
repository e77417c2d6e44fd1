"""The epilogue of agmm.torch's fp ops: bias, activation, output dtype,
applied to an op's final result (after the gather + GEMM, after the
reduction of a reduce-scatter or all-reduce: never to a partial sum).

apply_epilogue is the ONE place that applies it in Python, on the float32
result, for every op and its autograd (apply_epilogue_, its in-place form
for outputs nobody else holds, in inference). The all-gather op hands its
epilogue to the plan instead, applied inside the round, where the plan
can take it (kernels/fp.py's lib_epilogue: no bias, one out dtype, no autograd).
"""

import torch

from ...errors import InvalidArgument

# activation name -> fn(z) on a float32 tensor (differentiable by torch).
ACTIVATIONS = {
    "relu": torch.relu,
    "gelu-tanh": lambda z: torch.nn.functional.gelu(z, approximate="tanh"),
    "gelu-erf": torch.nn.functional.gelu,
    "silu": torch.nn.functional.silu,
}


def _gated(fn):
    """A gated activation of z [..., 2i] = [gate | up] (agmm.h): fn(gate) *
    up, [..., i] (differentiable: autograd gives both halves' gradient)."""
    def gated(z):
        i = int(z.shape[-1]) // 2
        return fn(z[..., :i]) * z[..., i:]
    return gated


# The gated ones (all-gather op only): a weight of n = 2i columns [gate |
# up] gives C of i columns (agmm_plan_desc_t's AGMM_ACT_SILU_MUL, ...).
GATED = {"silu-mul": _gated(ACTIVATIONS["silu"]),
         "gelu-tanh-mul": _gated(ACTIVATIONS["gelu-tanh"])}
ACTIVATIONS.update(GATED)
# torch's ScalarType codes, as a ScalarType?[] argument reaches a kernel.
SCALAR_TYPES = {0: torch.uint8, 1: torch.int8, 2: torch.int16, 3: torch.int32,
                4: torch.int64, 5: torch.float16, 6: torch.float32,
                7: torch.float64, 11: torch.bool, 15: torch.bfloat16}
OUT_DTYPES = (torch.float32, torch.bfloat16, torch.float16)


def activation_name(act, what="activation"):
    """None for no activation (None or ""), else a name of ACTIVATIONS."""
    if act is None or act == "":
        return None
    if isinstance(act, str) and act.replace("_", "-") in GATED:
        act = act.replace("_", "-")  # "silu_mul" as torch spells names
    if act not in ACTIVATIONS:
        raise InvalidArgument("%s: %r (allowed: None, %s)"
                              % (what, act, ", ".join(ACTIVATIONS)))
    return act


def c_cols(n, act):
    """C's columns for a weight of n: n // 2 with a gated activation."""
    return n // 2 if act in GATED else n


def not_gated(act, op):
    """act, refused (InvalidArgument) if gated: a reduce op's epilogue runs
    on the reduced sum, which both halves would need first."""
    if act in GATED:
        raise InvalidArgument("activation: %r on %s (a gated activation is "
                              "for the all-gather op, fused_all_gather_matmul: "
                              "here both halves would need the reduced sum "
                              "first)" % (act, op))
    return act


def out_dtype(dt, what="out_dtype", default=torch.float32):
    """The output dtype (None: `default`; the ops pass default_out(A): A's
    dtype, as torch.ops.symm_mem's ops and A @ B have it)."""
    if dt is None:
        return default
    if isinstance(dt, int) and not isinstance(dt, bool):
        dt = SCALAR_TYPES.get(dt, dt)
    if dt not in OUT_DTYPES:
        raise InvalidArgument("%s: %s (allowed: torch.float32, the library's "
                              "output, torch.bfloat16 or torch.float16, "
                              "converted after the round)" % (what, dt))
    return dt


def default_out(A):
    """An op's output dtype when out_dtype is None: A's (float32, bfloat16
    or float16), else float32 (A is then refused by the op's own check)."""
    dt = getattr(A, "dtype", None)
    return dt if dt in OUT_DTYPES else torch.float32


def check_bias(bias, n, what="bias"):
    if bias is None:
        return
    if not isinstance(bias, torch.Tensor) or bias.device.type != "cpu" \
            or tuple(bias.shape) != (n,) or not bias.is_floating_point():
        desc = ("%s %s %s" % (list(bias.shape), bias.dtype, bias.device)) \
            if isinstance(bias, torch.Tensor) else type(bias).__name__
        raise InvalidArgument("%s: %s (expected a CPU floating-point tensor of "
                              "shape [%d])" % (what, desc, n))


def apply_epilogue(c, bias=None, activation=None, dtype=None):
    """act(c + bias) in float32, converted to dtype (None: float32). c is the
    op's float32 result [..., n]; bias [n] of any float dtype. Returns c
    itself when there is nothing to do."""
    if bias is not None:
        c = c + bias.to(torch.float32)
    if activation is not None:
        c = ACTIVATIONS[activation](c)
    dt = out_dtype(dtype)
    return c if dt == torch.float32 else c.to(dt)


# activation name -> its in-place form, where torch has one (the same
# kernel, so the same values as ACTIVATIONS').
INPLACE = {
    "relu": torch.relu_,
    "silu": lambda z: torch.nn.functional.silu(z, inplace=True),
}


def apply_epilogue_(c, bias=None, activation=None, dtype=None):
    """apply_epilogue() on a float32 c the caller owns and will not read
    again (an op's fresh output, in inference): the bias and, where torch
    has it in place, the activation are applied in c itself, saving a
    pass that allocates and writes a second tensor of c's size; the same
    values."""
    if bias is not None:
        c.add_(bias.to(torch.float32))
    if activation is not None:
        inplace = INPLACE.get(activation)
        c = inplace(c) if inplace is not None else ACTIVATIONS[activation](c)
    dt = out_dtype(dtype)
    return c if dt == torch.float32 else c.to(dt)


# activation name -> its backward kernel (grad_y, z) -> grad_z, where aten
# has one: the kernel autograd itself would run, without recomputing the
# activation forward to build a graph.
BACKWARD = {
    "silu": torch.ops.aten.silu_backward,
    "gelu-tanh": lambda g, z: torch.ops.aten.gelu_backward(g, z, approximate="tanh"),
    "gelu-erf": lambda g, z: torch.ops.aten.gelu_backward(g, z, approximate="none"),
}


def epilogue_backward(z, grad_y, activation):
    """d(loss)/dz for y = act(z) (z the float32 pre-activation result, bias
    included), given d(loss)/dy; grad_y itself without an activation."""
    grad_y = grad_y.to(torch.float32)
    if activation is None:
        return grad_y
    if activation in BACKWARD:
        return BACKWARD[activation](grad_y, z.detach())
    with torch.enable_grad():
        zz = z.detach().requires_grad_(True)
        y = ACTIVATIONS[activation](zz)
        (gz,) = torch.autograd.grad(y, zz, grad_y)
    return gz


__all__ = ["apply_epilogue", "apply_epilogue_", "epilogue_backward",
           "activation_name", "c_cols", "not_gated", "GATED",
           "out_dtype", "default_out", "check_bias", "ACTIVATIONS"]
