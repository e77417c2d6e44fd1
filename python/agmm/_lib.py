"""The C library, loaded with ctypes: where it is found, the prototypes of
the functions the package calls, and the structures it passes.

Loading. The first of:
  1. $AGMM_LIBRARY (a path to libagmm.so),
  2. the path _libpath.py names: CMake writes the build tree's libagmm.so
     for the copy in build/python, the installed one (relative to this
     directory, so the installed tree can move) for `cmake --install`;
     setup.py (pip install .) the copy inside the package, libagmm.so.0.1
     beside this file,
  3. a libagmm.so.* in this directory (a pip-installed package whose
     _libpath.py is missing),
  4. the loader's search path (libagmm.so.0.1, e.g. in /usr/lib).
The library is loaded RTLD_GLOBAL: an MPI build's libagmm.so pulls in
libmpi, whose plugins resolve libmpi's symbols from the global scope.

ctypes.CDLL (not PyDLL) releases the GIL for the duration of every call,
so another Python thread runs while a round is in agmm_plan_run.

The structures mirror include/agmm.h by hand; tests/python/test_abi.py
compiles a C program printing every field's offset and size and the enum
values, and compares them with what is declared here. agmm_plan_desc_t is
allocated with spare room after it (see PlanDesc), so a field added at the
end of the C structure (zero, i.e. its default, after
agmm_plan_desc_init) can never make agmm_plan_desc_init write past it.
"""
import ctypes
import os

try:  # written by CMake (build tree, cmake --install) or setup.py (pip)
    from . import _libpath
except ImportError:  # the source tree (python/agmm): AGMM_LIBRARY or the loader
    _libpath = None

_c = ctypes
c_int, c_int64, c_uint64, c_double = _c.c_int, _c.c_int64, _c.c_uint64, _c.c_double
c_char_p, c_void_p, c_size_t = _c.c_char_p, _c.c_void_p, _c.c_size_t


def _candidates():
    env = os.environ.get("AGMM_LIBRARY")
    if env:
        return [env]
    out = []
    here = os.path.dirname(os.path.abspath(__file__))
    if _libpath is not None and _libpath.LIBRARY:
        path = _libpath.LIBRARY
        if not os.path.isabs(path):
            path = os.path.normpath(os.path.join(here, path))
        out.append(path)
    out += sorted(os.path.join(here, f) for f in os.listdir(here)
                  if f.startswith("libagmm.so.")
                  and os.path.join(here, f) not in out)
    out.append(getattr(_libpath, "SONAME", None) or "libagmm.so")
    return out


def _load():
    errors = []
    for path in _candidates():
        try:
            return _c.CDLL(path, mode=_c.RTLD_GLOBAL), path
        except OSError as e:
            errors.append("%s: %s" % (path, e))
    raise ImportError("agmm: cannot load libagmm.so (set AGMM_LIBRARY to "
                      "its path): " + "; ".join(errors))


lib, path = _load()

# agmm_status_t, in order (AGMM_OK = 0).
STATUS_NAMES = (
    "AGMM_OK", "AGMM_ERR_INVALID_ARG", "AGMM_ERR_NO_MEMORY",
    "AGMM_ERR_TOO_LARGE", "AGMM_ERR_SYSTEM", "AGMM_ERR_TIMEOUT",
    "AGMM_ERR_ABORTED", "AGMM_ERR_MISMATCH", "AGMM_ERR_BAD_STATE",
    "AGMM_ERR_UNSUPPORTED", "AGMM_ERR_TRANSPORT", "AGMM_ERR_CHECK_FAILED",
)
STATUS = {name: i for i, name in enumerate(STATUS_NAMES)}

DTYPES = {"fp16": 0, "bf16": 1, "fp32": 2, "int8": 3}
WEIGHTS = {"shared": 0, "per-rank": 1}
# ENGINES (agmm_gemm_engine_kind_t's names) is the library's: below.
WDTYPES = {"same": 0, "int8": 1, "int4": 2}     # agmm_wdtype_t
AQUANTS = {"none": 0, "int8": 1}                 # agmm_aquant_t
PATHS = {"auto": 0, "native": 1, "f32": 2}
SCHEDULES = {"fused": 0, "baseline": 1, "auto": 2}
OPS = {"ag-gemm": 0, "gemm-rs": 1, "gemm-ar": 2}
SCALES = {"channel": 0, "tensor": 1}            # agmm_scale_t (int8 plans)
QUANT_AXES = {"rows": 0, "cols": 1, "tensor": 2}  # agmm_quant_axis_t
ACTIVATIONS = {"none": 0, "relu": 1, "gelu-tanh": 2, "gelu-erf": 3,
               "silu": 4, "silu-mul": 5,
               "gelu-tanh-mul": 6}            # agmm_activation_t
GATED = ("silu-mul", "gelu-tanh-mul")  # W [gate | up] of n, C of n / 2


class PlanDescC(_c.Structure):
    """agmm_plan_desc_t (include/agmm.h)."""
    _fields_ = [
        ("nranks", c_int),
        ("m_local", _c.POINTER(c_int64)),
        ("k", c_int64),
        ("n", c_int64),
        ("tile_m", c_int64),
        ("tile_n", c_int64),
        ("dtype", c_int),
        ("weights", c_int),
        ("comm_workers", c_int),
        ("gemm_workers", c_int),
        ("timeout_s", c_double),
        ("gemm_engine", c_int),
        ("op", c_int),
        ("k_local", _c.POINTER(c_int64)),
        ("n_weights", c_int),
        ("n_list", _c.POINTER(c_int64)),
        ("gemm_path", c_int),
        ("a_scale", c_int),   # agmm_scale_t, INT8 plans only
        ("w_scale", c_int),
        ("activation", c_int),  # the epilogue: agmm_activation_t,
        ("out_dtype", c_int),   # C's dtype (agmm_plan_desc_init: fp32),
        ("bias", c_int),        # a per-column bias (agmm_plan_set_bias)
        ("activations", _c.POINTER(c_int)),  # one per weight, or NULL
        ("weight_dtype", c_int),       # agmm_wdtype_t (quantized weights)
        ("group_size", c_int64),
        ("weight_zero_point", c_int),
        ("a_quant", c_int),            # agmm_aquant_t
    ]


class RunArgsC(_c.Structure):
    """agmm_run_args_t (issue 11: several weights, per-call rows, the
    gathered A; issue 22: an INT8 plan's A scales, and the gathered ones)."""
    _fields_ = [
        ("schedule", c_int),
        ("a_local", c_void_p),
        ("c", _c.POINTER(c_void_p)),
        ("m_rows", _c.POINTER(c_int64)),
        ("a_gathered", c_void_p),
        ("a_scale", _c.POINTER(_c.c_float)),
        ("a_gathered_scale", _c.POINTER(_c.c_float)),
    ]


class PlanDesc(_c.Structure):
    """A PlanDescC with 512 spare bytes after it (see the module doc)."""
    _fields_ = [("d", PlanDescC), ("_spare", _c.c_char * 512)]


class GemmCandidateC(_c.Structure):
    """agmm_gemm_info_t's struct agmm_gemm_candidate."""
    _fields_ = [
        ("path", c_int),
        ("round_us", c_double),
        ("gflops", c_double),
        ("impl", _c.c_char * 64),
    ]


class GemmInfoC(_c.Structure):
    """agmm_gemm_info_t."""
    _fields_ = [
        ("engine", c_int),
        ("name", c_char_p),
        ("version", c_char_p),
        ("impl", _c.c_char * 128),
        ("threads_per_call", c_int),
        ("primitives_created", c_uint64),
        ("path", c_int),
        ("chosen_by", c_char_p),
        ("candidates", c_int),
        ("candidate", GemmCandidateC * 2),
        ("choose_ms", c_double),
        ("int8_variant", c_char_p),
        ("epilogue", c_char_p),
        ("epilogue_isa", c_char_p),
    ]


class ScheduleInfoC(_c.Structure):
    """agmm_schedule_info_t."""
    _fields_ = [
        ("last", c_int),
        ("pick", c_int),
        ("decided", c_int),
        ("trials", c_int),
        ("fused_us", c_double),
        ("baseline_us", c_double),
        ("reason", _c.c_char * 200),
    ]


class TraceSummaryC(_c.Structure):
    """agmm_trace_summary_t (one rank's view of one traced round)."""
    _fields_ = [
        ("round", c_int),
        ("schedule", c_int),
        ("round_us", c_double),
        ("gemm_wait_us", c_double),
        ("gemm_busy_us", c_double),
        ("comm_busy_us", c_double),
        ("comm_hidden_us", c_double),
    ]


class JoinOptsC(_c.Structure):
    """agmm_join_opts_t (the world of processes started elsewhere)."""
    _fields_ = [
        ("rank", c_int),
        ("size", c_int),
        ("job", c_char_p),
        ("timeout_s", c_double),
    ]


P = c_void_p  # opaque handles (agmm_world_t *, agmm_plan_t *)
_PP = _c.POINTER(c_void_p)

# name: (restype, argtypes). Functions a given build may lack (the join
# API before it lands, say) are looked up lazily: calling one that is not
# there raises agmm.Unsupported.
_PROTOS = {
    "agmm_status_str": (c_char_p, [c_int]),
    "agmm_status_describe": (c_char_p, [c_int]),
    "agmm_last_error": (c_char_p, []),
    "agmm_version": (c_char_p, []),
    "agmm_dtype_size": (c_size_t, [c_int]),
    "agmm_gemm_engine_name": (c_char_p, [c_int]),
    "agmm_gemm_engine_from_name": (c_int, [c_char_p]),
    "agmm_gemm_engine_available": (c_int, [c_int]),
    "agmm_gemm_path_available": (c_int, [c_int, c_int, c_int]),
    "agmm_world_rank": (c_int, [P]),
    "agmm_world_size": (c_int, [P]),
    "agmm_world_transport_name": (c_char_p, [P]),
    "agmm_world_set_timeout": (None, [P, c_double]),
    "agmm_world_barrier": (c_int, [P, c_double]),
    "agmm_world_allgather": (c_int, [P, c_void_p, c_void_p, c_size_t]),
    "agmm_world_abort": (None, [P, c_char_p]),
    "agmm_world_create_mpi": (c_int, [c_void_p, c_void_p, c_double, _PP]),
    "agmm_mpi_launcher_detected": (c_int, []),
    "agmm_world_destroy": (None, [P]),
    "agmm_world_join": (c_int, [_c.POINTER(JoinOptsC), _PP]),
    "agmm_world_from_env": (c_int, [c_double, _PP]),
    "agmm_cleanup": (c_int, [c_char_p, _c.POINTER(c_int)]),
    "agmm_plan_desc_init": (None, [_c.POINTER(PlanDesc)]),
    "agmm_plan_desc_check": (c_int, [_c.POINTER(PlanDesc)]),
    "agmm_plan_bytes_per_rank": (c_uint64, [_c.POINTER(PlanDesc)]),
    "agmm_k_split": (c_int64, [c_int64, c_int, c_int]),
    "agmm_plan_desc_k_part": (c_int, [_c.POINTER(PlanDesc), c_int,
                                      _c.POINTER(c_int64),
                                      _c.POINTER(c_int64)]),
    "agmm_plan_pd_create": (c_int, [_c.POINTER(PlanDesc), _PP]),
    "agmm_plan_pd_destroy": (None, [P]),
    "agmm_plan_pd_bytes_per_rank": (c_uint64, [P]),
    "agmm_plan_pd_call_rows": (c_int, [P, c_int, _c.POINTER(c_int64),
                                       _c.POINTER(c_int64),
                                       _c.POINTER(c_int64)]),
    "agmm_plan_pd_tiles": (c_int64, [P, c_int]),
    "agmm_default_workers": (c_int, [c_int, c_int, c_int, _c.POINTER(c_int),
                                     _c.POINTER(c_int)]),
    "agmm_plan_create": (c_int, [P, _c.POINTER(PlanDesc), _PP]),
    "agmm_plan_set_weight": (c_int, [P, c_void_p]),
    "agmm_plan_run": (c_int, [P, c_int, c_void_p, c_void_p]),
    "agmm_plan_schedule_info": (c_int, [P, _c.POINTER(ScheduleInfoC)]),
    "agmm_plan_destroy": (c_int, [P]),
    "agmm_plan_gemm_info": (c_int, [P, _c.POINTER(GemmInfoC)]),
    "agmm_plan_set_weight_i": (c_int, [P, c_int, c_void_p]),
    "agmm_run_args_init": (None, [_c.POINTER(RunArgsC)]),
    "agmm_plan_run_args": (c_int, [P, _c.POINTER(RunArgsC)]),
    "agmm_plan_weights": (c_int, [P]),
    "agmm_plan_cols": (c_int64, [P, c_int]),
    "agmm_plan_rows": (c_int64, [P]),
    "agmm_plan_row_offset": (c_int64, [P, c_int]),
    "agmm_convert_from_fp32": (c_int, [c_int, c_void_p, c_void_p, c_size_t]),
    "agmm_scale_name": (c_char_p, [c_int]),
    "agmm_quantize": (c_int, [c_void_p, c_int, c_int64, c_int64, c_int64, c_int,
                              c_void_p, c_void_p]),
    "agmm_quantize_weight": (c_int, [c_void_p, c_int64, c_int64, c_int,
                                     c_int64, c_int, c_void_p, c_void_p,
                                     c_void_p]),
    "agmm_plan_set_weight_scaled": (c_int, [P, c_int, c_void_p, c_void_p]),
    "agmm_plan_set_weight_quantized": (c_int, [P, c_int, c_void_p, c_void_p,
                                               c_void_p]),
    "agmm_plan_set_bias": (c_int, [P, c_int, c_void_p]),
    "agmm_activation_name": (c_char_p, [c_int]),
    "agmm_blas_name": (c_char_p, []),
    "agmm_blas_kernel": (c_char_p, []),
    "agmm_blas_threads": (c_int, []),
    "agmm_blas_advice": (c_char_p, []),
    "agmm_trace_create": (c_int, [P, c_int, _PP]),
    "agmm_trace_gather": (c_int, [P]),
    "agmm_trace_write": (c_int, [P, c_char_p, c_char_p]),
    "agmm_trace_rounds": (c_int, [P]),
    "agmm_trace_summary": (c_int, [P, c_int, c_int, _c.POINTER(TraceSummaryC)]),
    "agmm_trace_counts": (None, [P, _c.POINTER(c_uint64), _c.POINTER(c_uint64)]),
    "agmm_trace_destroy": (None, [P]),
}


class _Funcs:
    """Attribute access to the prototyped C functions; a missing one
    resolves to None (has() says whether it is there)."""

    def __getattr__(self, name):
        restype, argtypes = _PROTOS[name]
        try:
            fn = getattr(lib, name)
        except AttributeError:
            fn = None
        else:
            fn.restype, fn.argtypes = restype, argtypes
        setattr(self, name, fn)
        return fn

    def has(self, name):
        return getattr(self, name) is not None


fn = _Funcs()


def text(b):
    """A C string (bytes or None) as str."""
    return b.decode("utf-8", "replace") if b else ""


def _engines():
    """{name: kind} of the GEMM engine kinds, in kind order: the library's
    names (agmm_gemm_engine_name of 0, 1, ... until "invalid"), as the
    CLI's --gemm-engine words."""
    out = {}
    for kind in range(64):
        name = text(fn.agmm_gemm_engine_name(kind))
        if name == "invalid":
            break
        out[name] = kind
    return out


ENGINES = _engines()  # {"auto": 0, "onednn": 1, "openblas": 2, "wq": 3}
