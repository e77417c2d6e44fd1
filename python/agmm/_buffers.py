"""Arrays in and out of the C library without copies.

An input (A shard, weight) is passed by pointer when it is already what
the library reads: a C-contiguous, aligned CPU array of the plan's dtype
with the expected shape. That holds for
  - numpy.ndarray (and anything numpy.asarray takes without a copy: the
    buffer protocol, __array_interface__), and objects with __dlpack__
    (through numpy.from_dlpack),
  - torch.Tensor on the CPU (data_ptr()), torch is never imported here:
    a tensor is recognised only when the caller has imported torch.
A non-contiguous input (a transposed view, a slice with strides) is copied
once into a contiguous array; the wrong dtype or shape is an error (no
silent conversion). Outputs are float32, C-contiguous: allocated here
(numpy for numpy inputs, torch for torch inputs) or the caller's `out`,
which must already be exactly that (it is written in place, never copied).

dtypes: fp16 is numpy.float16 / torch.float16; fp32 is float32; bf16 is
torch.bfloat16, or for NumPy (which has no bfloat16) a uint16 array holding
the raw bf16 bits (bf16_from_float32 / bf16_to_float32 convert); int8 is
int8, its scales float32 (scales_ptr checks them).
"""
import ctypes
import os
import sys
import threading

import numpy as np

from . import _lib
from .errors import InvalidArgument, check

_NUMPY = {"fp16": np.dtype(np.float16), "bf16": np.dtype(np.uint16),
          "fp32": np.dtype(np.float32), "int8": np.dtype(np.int8)}
_TORCH = {"fp16": "float16", "bf16": "bfloat16", "fp32": "float32",
          "int8": "int8"}
# A valid address for empty arrays (0 rows): the library checks pointers
# for NULL even when it will read nothing.
_EMPTY = ctypes.create_string_buffer(64)
_EMPTY_PTR = ctypes.addressof(_EMPTY)


# Outputs the package allocates are new memory every call (the op must
# return fresh tensors): first touch costs a page fault per 4 KiB page
# (measured: 21 ms for a 64 MiB C, a few percent of a seed-shape round,
# paid inside the round by the GEMM workers). Transparent huge pages cut
# that to ~4 ms (the kernel still zeroes the memory): large outputs are
# advised MADV_HUGEPAGE before first touch, a hint the kernel may ignore
# (THP "never"); AGMM_HUGEPAGES=0 turns it off.
_HUGE_MIN = 4 << 20
_MADV_HUGEPAGE = 14
_PAGE = 4096
_madvise = None
if os.environ.get("AGMM_HUGEPAGES", "1") != "0":
    try:
        _madvise = ctypes.CDLL(None, use_errno=True).madvise
        _madvise.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
        _madvise.restype = ctypes.c_int
    except (OSError, AttributeError):
        _madvise = None


def _advise_huge(ptr, nbytes):
    if _madvise is None or nbytes < _HUGE_MIN:
        return
    start = (ptr + _PAGE - 1) // _PAGE * _PAGE
    end = (ptr + nbytes) // _PAGE * _PAGE
    if end > start:
        _madvise(start, end - start, _MADV_HUGEPAGE)  # a hint: result ignored


def empty_torch(shape, dtype):
    """torch.empty(shape, dtype=dtype), advised as the outputs are (a
    large new tensor the caller fills at once)."""
    t = torch_module()
    x = t.empty(shape, dtype=dtype)
    _advise_huge(x.data_ptr(), x.numel() * x.element_size())
    return x


def contiguous_torch(x):
    """x itself when C-contiguous, else its copy into an empty_torch
    tensor: torch's own .contiguous() gets fresh memory touched in 4 KiB
    pages (a 45 MB copy took 130 ms on the VMs of docs/history/,
    "Zen 5"; into an advised tensor 16-25 ms)."""
    if x.is_contiguous():
        return x
    c = empty_torch(tuple(x.shape), x.dtype)
    c.copy_(x)
    return c


_scratch = threading.local()


def scratch_torch(role, shape, dtype, like):
    """An uninitialized C-contiguous tensor for a temporary that never
    leaves its caller (a backward's transposed or converted operand, read
    by a GEMM and dropped): the memory of this role's previous tensor on
    this thread when it is large enough, else a new empty_torch tensor
    kept for the next call. Warm memory is what it buys: a fresh 45 MB
    tensor's first touch cost 90-230 ms on the VMs of docs/history/
    ("Zen 5"), with or without huge pages, a copy into warm memory 5 ms.
    One tensor per (role, dtype) and thread, the largest so far, until
    free_scratch() (agmm.torch.unregister_group calls it): the caller is
    done with a role's tensor before it asks for that role again. like: a
    tensor of the computation; unless it is a plain CPU tensor (a
    FakeTensor while tracing, say) nothing is cached (torch.empty)."""
    t = torch_module()
    shape = tuple(int(d) for d in shape)
    if type(like) is not t.Tensor or not like.is_cpu:
        return t.empty(shape, dtype=dtype)
    cache = getattr(_scratch, "d", None)
    if cache is None:
        cache = _scratch.d = {}
    n = 1
    for d in shape:
        n *= d
    key = (role, dtype)
    buf = cache.get(key)
    if buf is None or buf.numel() < n:
        cache.pop(key, None)  # the old one freed before the new one
        buf = cache[key] = empty_torch((max(1, n),), dtype)
    return buf[:n].view(shape)


def scratch_copy(role, src, dtype=None):
    """src copied (converted) into scratch_torch(role, ...) of src's shape
    and dtype (or the given one)."""
    out = scratch_torch(role, src.shape, dtype or src.dtype, src)
    out.copy_(src)
    return out


def free_scratch():
    """Drop this thread's scratch_torch tensors."""
    _scratch.d = {}


def torch_module():
    """The torch module if the caller imported it, else None."""
    return sys.modules.get("torch")


def is_torch(x):
    t = torch_module()
    return t is not None and isinstance(x, t.Tensor)


def dtype_of(x):
    """The agmm dtype name of an array or tensor, or None."""
    if is_torch(x):
        name = str(x.dtype).replace("torch.", "")
        for k, v in _TORCH.items():
            if v == name:
                return k
        return None
    dt = getattr(x, "dtype", None)
    for k, v in _NUMPY.items():
        if dt == v:
            return k
    return None


def _shape_str(shape):
    return "[" + ", ".join(str(int(s)) for s in shape) + "]"


def input_ptr(x, dtype, shape, what):
    """(address, owner) of x as a C-contiguous `dtype` array of `shape`.
    owner keeps the memory alive while the address is used (x itself, or
    the contiguous copy of a strided x)."""
    shape = tuple(int(s) for s in shape)
    if is_torch(x):
        t = torch_module()
        if x.device.type != "cpu":
            raise InvalidArgument("%s: a tensor on %s (agmm takes CPU tensors)"
                                  % (what, x.device))
        want = getattr(t, _TORCH[dtype])
        if x.dtype != want:
            raise InvalidArgument("%s: dtype %s, the plan's is %s (torch.%s)"
                                  % (what, x.dtype, dtype, _TORCH[dtype]))
        if tuple(x.shape) != shape:
            raise InvalidArgument("%s: shape %s, expected %s"
                                  % (what, _shape_str(x.shape), _shape_str(shape)))
        x = contiguous_torch(x)
        return (x.data_ptr() if x.numel() else _EMPTY_PTR), x
    a = x
    if not isinstance(a, np.ndarray):
        if hasattr(a, "__dlpack__") and not hasattr(a, "__array_interface__"):
            a = np.from_dlpack(a)
        else:
            a = np.asarray(a)
    if a.dtype != _NUMPY[dtype]:
        hint = " (bf16 from NumPy: a uint16 array of the raw bits, see " \
               "agmm.bf16_from_float32)" if dtype == "bf16" else ""
        raise InvalidArgument("%s: dtype %s, the plan's is %s (numpy.%s)%s"
                              % (what, a.dtype, dtype, _NUMPY[dtype], hint))
    if a.shape != shape:
        raise InvalidArgument("%s: shape %s, expected %s"
                              % (what, _shape_str(a.shape), _shape_str(shape)))
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = np.ascontiguousarray(a)
    return (a.ctypes.data if a.size else _EMPTY_PTR), a


def scales_ptr(s, count, what, scalar=False):
    """(address, owner) of int8 scales: a float32 array or CPU tensor of
    shape (count,), C-contiguous (a strided one is copied). scalar (a
    per-tensor scale, count 1): also a Python number or a 0-d float32
    array/tensor. Anything else raises InvalidArgument naming `what`, e.g.
    "a_scale: expected float32 of shape (16,), got shape (8,)"."""
    want = "float32 of shape (%d,)" % count
    if scalar:
        want += " or a number"
    if isinstance(s, bool) or s is None:
        raise InvalidArgument("%s: expected %s, got %r" % (what, want, s))
    if isinstance(s, (int, float)) and not isinstance(s, bool):
        if not scalar:
            raise InvalidArgument("%s: expected %s, got the number %r (a "
                                  "per-channel scale has one value per %s)"
                                  % (what, want, s, "row" if what.startswith("a")
                                     else "column"))
        a = np.array([s], dtype=np.float32)
        return a.ctypes.data, a
    if is_torch(s):
        if s.device.type != "cpu":
            raise InvalidArgument("%s: a tensor on %s (agmm takes CPU tensors)"
                                  % (what, s.device))
        t = torch_module()
        if s.dtype != t.float32:
            raise InvalidArgument("%s: expected %s, got %s" % (what, want, s.dtype))
        shape = tuple(s.shape)
        if scalar and shape == ():
            s = s.reshape(1)
            shape = (1,)
        if shape != (count,):
            raise InvalidArgument("%s: expected %s, got shape %s"
                                  % (what, want, shape))
        s = s.contiguous()
        return (s.data_ptr() if count else _EMPTY_PTR), s
    if not isinstance(s, np.ndarray) and not hasattr(s, "__array_interface__") \
            and not hasattr(s, "__dlpack__"):
        raise InvalidArgument("%s: expected %s, got %s" % (what, want,
                                                           type(s).__name__))
    a = np.from_dlpack(s) if not isinstance(s, np.ndarray) and \
        not hasattr(s, "__array_interface__") else np.asarray(s)
    if a.dtype != np.float32:
        raise InvalidArgument("%s: expected %s, got %s" % (what, want, a.dtype))
    if scalar and a.shape == ():
        a = a.reshape(1)
    if a.shape != (count,):
        raise InvalidArgument("%s: expected %s, got shape %s"
                              % (what, want, a.shape))
    if not (a.flags.c_contiguous and a.flags.aligned):
        a = np.ascontiguousarray(a)
    return (a.ctypes.data if a.size else _EMPTY_PTR), a


def check_scale_values(s, what):
    """Scales the library takes: finite and >= 0 (s: the owner that
    scales_ptr returned). InvalidArgument naming the first bad one."""
    a = s.numpy() if is_torch(s) else s
    bad = ~(np.isfinite(a) & (a >= 0))
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise InvalidArgument("%s[%d] = %r (scales are finite and >= 0)"
                              % (what, i, float(a[i])))


def output(out, shape, like, what="out", dtype="fp32"):
    """(address, array) of the output: `out` checked (float32 by default,
    C-contiguous, `shape`, writeable; never copied), or a new array of the
    kind of `like` (a torch tensor for a torch input, else numpy)."""
    shape = tuple(int(s) for s in shape)
    if out is None:
        if is_torch(like):
            t = torch_module()
            out = t.empty(shape, dtype=getattr(t, _TORCH[dtype]))
            _advise_huge(out.data_ptr(), out.numel() * out.element_size())
        else:
            out = np.empty(shape, dtype=_NUMPY[dtype])
            _advise_huge(out.ctypes.data, out.nbytes)
    elif is_torch(out):
        t = torch_module()
        want = getattr(t, _TORCH[dtype])
        if out.device.type != "cpu" or out.dtype != want \
                or tuple(out.shape) != shape or not out.is_contiguous():
            raise InvalidArgument(
                "%s: must be a contiguous CPU torch.%s tensor of shape %s "
                "(got %s %s %s%s)" % (what, _TORCH[dtype], _shape_str(shape),
                                      out.device, out.dtype,
                                      _shape_str(out.shape),
                                      "" if out.is_contiguous()
                                      else ", not contiguous"))
    else:
        if not isinstance(out, np.ndarray) or out.dtype != _NUMPY[dtype] \
                or out.shape != shape or not out.flags.c_contiguous \
                or not out.flags.writeable or not out.flags.aligned:
            raise InvalidArgument(
                "%s: must be a writeable C-contiguous numpy.%s array of shape "
                "%s (got %s)" % (what, _NUMPY[dtype], _shape_str(shape),
                                 _describe(out)))
    if is_torch(out):
        return (out.data_ptr() if out.numel() else _EMPTY_PTR), out
    return (out.ctypes.data if out.size else _EMPTY_PTR), out


def _describe(x):
    if isinstance(x, np.ndarray):
        flags = [] if x.flags.c_contiguous else ["not C-contiguous"]
        if not x.flags.writeable:
            flags.append("read-only")
        return "%s %s%s" % (x.dtype, _shape_str(x.shape),
                            (", " + ", ".join(flags)) if flags else "")
    return type(x).__name__


def bf16_from_float32(x):
    """bf16 bits (numpy uint16, same shape) of a float32 array, rounded to
    nearest even by the library's own conversion."""
    a = np.ascontiguousarray(x, dtype=np.float32)
    out = np.empty(a.shape, dtype=np.uint16)
    if a.size:
        check(_lib.fn.agmm_convert_from_fp32(_lib.DTYPES["bf16"], a.ctypes.data,
                                             out.ctypes.data, a.size),
              "bf16_from_float32")
    return out


def bf16_to_float32(bits):
    """float32 values of bf16 bits (a uint16 array): exact."""
    b = np.ascontiguousarray(bits, dtype=np.uint16)
    return (b.astype(np.uint32) << 16).view(np.float32)
