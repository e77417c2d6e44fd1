"""The int8 inputs of an agmm.Plan (dtype "int8", W8A8): an int8 weight or
A with its float32 scales checked, or a float one quantized here by
agmm.quantize, per column / row or per tensor as the plan's w_scale /
a_scale says. Each function returns the addresses for the library and the
objects that keep them alive until the call is done."""
from . import _buffers
from .errors import InvalidArgument
from .quant import quantize


def _check_float_input(x, xdt, shape, what, noun, scale_name, given):
    """A float x to quantize here (noun: "weight" or "a"): no scale with
    it, and its shape."""
    if given is not None:
        raise InvalidArgument(
            "%s: given with a %s %s (a float %s is quantized here; pass "
            "int8 values with their %s, or the float %s alone)"
            % (scale_name, xdt, what, noun, "scale" if noun == "weight"
               else scale_name, noun))
    if tuple(x.shape) != tuple(shape):
        raise InvalidArgument("%s: shape %s, expected %s"
                              % (what, _buffers._shape_str(x.shape),
                                 _buffers._shape_str(shape)))


def _scale_required(scale_name, what, noun, count, tensor):
    return InvalidArgument(
        "%s: required with an int8 %s (float32 of shape (%d,)%s, or a float "
        "%s to quantize here)" % (scale_name, what, 1 if tensor else count,
                                  " or a number" if tensor else "", noun))


def weight(w, scale, shape, what, scale_name, tensor):
    """(w address, w owner, scale address, scale owner) of weight w [k, n]
    (what: "weight" or "weight i") with `scale` float32 [n] (tensor: [1] or
    a number), finite and >= 0; a float w without a scale is quantized."""
    wdt = _buffers.dtype_of(w)
    if wdt in ("fp32", "fp16", "bf16"):  # the convenience: quantize here
        _check_float_input(w, wdt, shape, what, "weight", scale_name, scale)
        w, scale = quantize(w, "tensor" if tensor else "cols", what=what)
    wptr, wkeep = _buffers.input_ptr(w, "int8", shape, what)
    if scale is None:
        raise _scale_required(scale_name, what, "weight", shape[1], tensor)
    sptr, skeep = _buffers.scales_ptr(scale, 1 if tensor else shape[1],
                                      scale_name, scalar=tensor)
    _buffers.check_scale_values(skeep, scale_name)
    return wptr, wkeep, sptr, skeep


def a_rows(a, a_scale, a_shape, tensor):
    """(a, (scale address, scale owner)) for an int8 round: a float a
    quantized here (per row, or per tensor), an int8 one with its a_scale
    checked. Any other dtype of a comes back with no scales: the caller's
    input_ptr names the dtype it refuses."""
    adt = _buffers.dtype_of(a)
    if adt in ("fp32", "fp16", "bf16"):
        _check_float_input(a, adt, a_shape, "a", "a", "a_scale", a_scale)
        a, a_scale = quantize(a, "tensor" if tensor else "rows", what="a")
    elif adt == "int8" and a_scale is None:
        raise _scale_required("a_scale", "a", "a", a_shape[0], tensor)
    if adt != "int8" and a_scale is None:
        return a, (None, None)
    return a, _buffers.scales_ptr(a_scale, 1 if tensor else a_shape[0],
                                  "a_scale", scalar=tensor)
