"""agmm from Python: the operations of a tensor-parallel layer (all-gather
+ GEMM, GEMM + reduce-scatter, GEMM + all-reduce) across processes, over
the C library libagmm.so (ctypes; no compiled extension), and PyTorch ops
over them (agmm.torch). docs/python.md is the guide.

    import agmm, numpy as np
    with agmm.World.from_env() as world:            # RANK/WORLD_SIZE/... set
        with world.plan(m_local=64, k=256, n=128, dtype="fp16") as plan:
            plan.set_weight(w)                       # [k, n] float16
            c = plan.run(a)                          # a: [64, k] float16
                                                     # c: [64 * size, n] float32

NumPy arrays and PyTorch CPU tensors go in and out without copies when
they are C-contiguous and of the plan's dtype (bf16 from NumPy: uint16
bits). The GIL is released while a round runs. Errors raise agmm.Error
subclasses with the library's status and message. The PyTorch ops are in
agmm.torch (imported on demand: `import agmm.torch`). agmm.blas_info()
says which BLAS kernel runs and, when it is an old one for this CPU, what
to set. W8A8: dtype="int8" plans take int8 A and W with float32 scales
(or float ones, quantized by agmm.quantize, the library's agmm_quantize);
agmm.int8_available() says whether this build's engine runs them.
Quantized weights (int4/int8 with group scales, agmm.quantize_weight,
agmm.QuantizedWeight.from_gptq / from_awq): agmm.qweight.
"""
from dataclasses import dataclass
from typing import Optional

from . import _lib
from ._buffers import bf16_from_float32, bf16_to_float32
from .errors import (Aborted, BadState, CheckFailed, Error, InvalidArgument,
                     Mismatch, OutOfMemory, SystemCallError, Timeout, TooLarge,
                     TransportError, Unsupported)
from .plan import GemmInfo, Plan, ScheduleInfo
from .qweight import QuantizedWeight, quantize_weight
from .quant import quantize
from .trace import Trace, TraceSummary
from .world import World

__version__ = _lib.text(_lib.fn.agmm_version())

__all__ = [
    "World", "Plan", "GemmInfo", "ScheduleInfo", "Error", "InvalidArgument",
    "OutOfMemory", "TooLarge", "SystemCallError", "Timeout", "Aborted",
    "Mismatch", "BadState", "Unsupported", "TransportError", "CheckFailed",
    "bf16_from_float32", "bf16_to_float32", "library_path", "cleanup",
    "gemm_path_available", "int8_available", "quantize", "BlasInfo",
    "blas_info", "QuantizedWeight", "quantize_weight", "Trace", "TraceSummary", "__version__",
]


def library_path():
    """The path libagmm.so was loaded from."""
    return _lib.path


def gemm_path_available(engine="auto", dtype="bf16", path="native"):
    """Can `engine` run GEMM path `path` ("auto", "native", "f32") for
    `dtype` on this CPU (agmm_gemm_path_available)? Native bf16 needs
    oneDNN; native fp16 a oneDNN with a native fp16 matmul here."""
    from .plan import dtype_name
    return bool(_lib.fn.agmm_gemm_path_available(
        _lib.ENGINES[engine], _lib.DTYPES[dtype_name(dtype)],
        _lib.PATHS[path]))


def int8_available(engine="auto"):
    """Can `engine` run int8 (W8A8) plans here? int8 needs the oneDNN
    engine (OpenBLAS has no int8 GEMM): "auto" resolves to oneDNN when it
    is built in, else OpenBLAS, which refuses int8 plans; and the engine
    must say it has a path for int8 (agmm_gemm_path_available)."""
    kind = _lib.ENGINES[engine]
    if kind == _lib.ENGINES["auto"]:
        kind = _lib.ENGINES["onednn"] if \
            _lib.fn.agmm_gemm_engine_available(_lib.ENGINES["onednn"]) \
            else _lib.ENGINES["openblas"]
    if kind != _lib.ENGINES["onednn"] or \
            not _lib.fn.agmm_gemm_engine_available(kind):
        return False
    return bool(_lib.fn.agmm_gemm_path_available(kind, _lib.DTYPES["int8"],
                                                 _lib.PATHS["auto"]))


def cleanup(job):
    """Remove what a crashed job named `job` left in /dev/shm (only when no
    live process holds it; agmm_cleanup). Returns the count removed."""
    import ctypes
    from .errors import check, missing
    f = _lib.fn.agmm_cleanup
    if f is None:
        raise missing("agmm_cleanup")
    removed = ctypes.c_int(0)
    check(f(str(job).encode(), ctypes.byref(removed)), "cleanup")
    return removed.value


@dataclass(frozen=True)
class BlasInfo:
    """The BLAS the library links (agmm_blas_* in agmm_ext.h)."""
    name: str               # "OpenBLAS 0.3.21"
    kernel: str             # the kernel it runs ("SkylakeX"), or "unknown"
    threads: int            # threads per call, -1 where it cannot say
    advice: Optional[str]   # what to set when the kernel is an old one for
                            # this CPU (agmm_blas_advice), else None


def blas_info():
    """The BLAS's name, kernel, threads per call and advice (BlasInfo)."""
    f = _lib.fn
    advice = f.agmm_blas_advice() if f.has("agmm_blas_advice") else None
    return BlasInfo(name=_lib.text(f.agmm_blas_name()),
                    kernel=_lib.text(f.agmm_blas_kernel()),
                    threads=int(f.agmm_blas_threads()),
                    advice=_lib.text(advice) if advice else None)
