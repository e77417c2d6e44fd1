"""Symmetric int8 quantization for W8A8 plans (dtype="int8"), by the
library's own agmm_quantize, so that a float A or W given to an int8 plan
is quantized exactly as agmm.quantize does it:

    q, s = agmm.quantize(x, axis="rows")     # x [rows, cols] float
    # q int8 [rows, cols] in -127..127, s float32 [rows]:
    # s[i] = max_j |x[i, j]| / 127, q[i, j] = round_half_even(x[i, j] / s[i])

axis "rows": one scale per row (an A's per-token scales, a_scale
"channel"); "cols": one per column (a W's per-output-channel scales,
w_scale "channel"); "tensor": one for the whole (shape (1,)). A row,
column or tensor of zeros has scale 0 and zero values. x: a NumPy float32
or float16 array, a uint16 array of bf16 bits, or a CPU torch float32,
float16 or bfloat16 tensor, 2-D or more (the leading dimensions are rows:
scales of shape x.shape[:-1] for "rows"); the results are of x's kind.
Non-finite values raise InvalidArgument naming the first.
"""
import numpy as np

from . import _buffers, _lib
from .errors import InvalidArgument, check, missing

_FLOATS = ("fp32", "fp16", "bf16")


def _axis(axis):
    if axis not in _lib.QUANT_AXES:
        raise InvalidArgument("axis: %r (allowed: %s)"
                              % (axis, ", ".join(_lib.QUANT_AXES)))
    return _lib.QUANT_AXES[axis]


def quantize(x, axis="rows", what="x"):
    """(q, scales): x quantized to int8 along `axis` ("rows", "cols",
    "tensor"); see the module doc."""
    code = _axis(axis)
    dtype = _buffers.dtype_of(x)
    if dtype not in _FLOATS:
        raise InvalidArgument(
            "%s: dtype %s (agmm.quantize takes float32, float16 or bf16: "
            "numpy float32/float16, uint16 bf16 bits, torch float32/float16/"
            "bfloat16)" % (what, getattr(x, "dtype", type(x).__name__)))
    shape = tuple(int(d) for d in x.shape)
    if len(shape) < 2:
        raise InvalidArgument("%s: %d dimension(s) (at least 2: [..., cols])"
                              % (what, len(shape)))
    cols = shape[-1]
    rows = 1
    for d in shape[:-1]:
        rows *= d
    sshape = {"rows": shape[:-1], "cols": (cols,), "tensor": (1,)}[axis]
    torch_in = _buffers.is_torch(x)
    if torch_in:
        t = _buffers.torch_module()
        q = t.empty(shape, dtype=t.int8)
        s = t.empty(sshape, dtype=t.float32)
        qptr, sptr = q.data_ptr(), s.data_ptr()
    else:
        q = np.empty(shape, np.int8)
        s = np.empty(sshape, np.float32)
        qptr, sptr = q.ctypes.data, s.ctypes.data
    if rows * cols == 0:  # nothing to scan: zero values, zero scales
        q[...] = 0
        s[...] = 0
        return q, s
    xptr, keep = _buffers.input_ptr(x, dtype, shape, what)
    f = _lib.fn.agmm_quantize
    if f is None:
        raise missing("agmm_quantize")
    check(f(xptr, _lib.DTYPES[dtype], rows, cols, cols, code, qptr, sptr),
          "quantize")
    del keep
    return q, s
