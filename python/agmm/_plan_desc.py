"""What an agmm.Plan is made from: names to the library's codes (dtype,
op, engine, ...), per-rank lists, and the default split of the cores into
comm and GEMM workers. plan.py re-exports dtype_name and default_workers.
"""
import ctypes

from . import _lib
from .errors import InvalidArgument, check


def code_of(value, table, what):
    if value not in table:
        raise InvalidArgument("%s: %r (allowed: %s)"
                              % (what, value, ", ".join(table)))
    return table[value]


def dtype_name(dtype):
    """'fp16' / 'bf16' / 'fp32' / 'int8' from a name, a numpy or a torch
    dtype."""
    names = {"float16": "fp16", "bfloat16": "bf16", "float32": "fp32",
             "int8": "int8"}
    if isinstance(dtype, str):
        d = dict(names, half="fp16", float="fp32").get(dtype, dtype)
    else:
        text = str(dtype)
        if not text.startswith("torch."):  # numpy.float16, numpy.dtype("int8")
            try:
                import numpy
                text = numpy.dtype(dtype).name
            except TypeError:
                pass
        d = names.get(text.replace("torch.", ""))
    if d not in _lib.DTYPES:
        raise InvalidArgument("dtype: %r (allowed: fp16, bf16, fp32, int8, or "
                              "the numpy/torch float16, bfloat16, float32, int8)"
                              % (dtype,))
    return d


def default_workers(nranks, comm=None):
    """(comm_workers, gemm_workers) by the library's default core split, as
    the agmm tool makes it (agmm_default_workers; docs/cli.md): cores =
    this process's CPU affinity, ranks = the ranks on this host
    (LOCAL_WORLD_SIZE as torchrun sets it, Open MPI's
    OMPI_COMM_WORLD_LOCAL_SIZE, else the world size); comm = 1 if
    2 x ranks <= cores else 0 (unless given); gemm = max(1, cores // ranks
    - comm). A rank agmm launch bound (AGMM_BIND_CPUS set) owns its
    affinity: it counts alone."""
    import os
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        cores = os.cpu_count() or 1
    local = nranks
    for var in ("LOCAL_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_SIZE"):
        v = os.environ.get(var, "")
        if v.isdigit() and int(v) >= 1:
            local = int(v)
            break
    if os.environ.get("AGMM_BIND_CPUS"):
        local = 1
    c, g = ctypes.c_int(), ctypes.c_int()
    check(_lib.fn.agmm_default_workers(max(1, cores), local,
                                       -1 if comm is None else int(comm),
                                       ctypes.byref(c), ctypes.byref(g)),
          "default_workers")
    return c.value, g.value


def int_list(values, count, what):
    if isinstance(values, int):
        values = [values] * count
    values = [int(v) for v in values]
    if len(values) != count:
        raise InvalidArgument("%s: %d values for %d ranks" % (what, len(values), count))
    return values
