"""The package's ctypes declarations match include/agmm.h: a C program
compiled against the headers prints every structure's size and every
field's offset and size, and the enum values; they must equal what
python/agmm/_lib.py declares (a field added to a structure in agmm.h
without the package following fails here). Needs AGMM_CC and
AGMM_INCLUDE (CTest sets them)."""
import ctypes
import os
import subprocess

import pytest

import agmm
from agmm import _lib

STRUCTS = {
    "agmm_plan_desc_t": _lib.PlanDescC,
    "agmm_gemm_info_t": _lib.GemmInfoC,
    "agmm_schedule_info_t": _lib.ScheduleInfoC,
    "agmm_trace_summary_t": _lib.TraceSummaryC,
}
if _lib.fn.has("agmm_world_join"):
    STRUCTS["agmm_join_opts_t"] = _lib.JoinOptsC
STRUCTS["agmm_run_args_t"] = _lib.RunArgsC

ENUMS = {}
for table, prefix in ((_lib.DTYPES, "AGMM_DTYPE_"), (_lib.WEIGHTS, "AGMM_WEIGHTS_"),
                      (_lib.ENGINES, "AGMM_GEMM_ENGINE_"),
                      (_lib.SCHEDULES, "AGMM_SCHEDULE_"), (_lib.OPS, "AGMM_OP_"),
                      (_lib.PATHS, "AGMM_GEMM_PATH_"), (_lib.SCALES, "AGMM_SCALE_"),
                      (_lib.QUANT_AXES, "AGMM_QUANT_"),
                      (_lib.WDTYPES, "AGMM_WDTYPE_"),
                      (_lib.ACTIVATIONS, "AGMM_ACT_")):
    for name, value in table.items():
        ENUMS[prefix + name.upper().replace("-", "_")] = value
for value, name in enumerate(_lib.STATUS_NAMES):
    ENUMS[name] = value


def test_structs_and_enums_match_the_header(tmp_path):
    cc, inc = os.environ.get("AGMM_CC"), os.environ.get("AGMM_INCLUDE")
    if not cc or not inc:
        pytest.skip("AGMM_CC / AGMM_INCLUDE not set (CTest sets them)")
    lines = ["#include <stddef.h>", "#include <stdio.h>", "#include <agmm.h>",
             "int main(void) {"]
    for cname, cls in STRUCTS.items():
        lines.append('printf("%s size %%zu\\n", sizeof(%s));' % (cname, cname))
        for field, _ in cls._fields_:
            lines.append('printf("%s.%s %%zu %%zu\\n", offsetof(%s, %s), '
                         'sizeof(((%s *)0)->%s));'
                         % (cname, field, cname, field, cname, field))
    for name in ENUMS:
        lines.append('printf("%s %%d\\n", (int)%s);' % (name, name))
    lines += ["return 0;", "}"]
    src = tmp_path / "abi.c"
    src.write_text("\n".join(lines) + "\n")
    exe = tmp_path / "abi"
    subprocess.run([cc, "-std=c11", "-I", inc, str(src), "-o", str(exe)], check=True)
    got = dict(line.split(" ", 1) for line in
               subprocess.run([str(exe)], check=True, capture_output=True,
                              text=True).stdout.splitlines())
    want = {}
    for cname, cls in STRUCTS.items():
        want[cname] = "size %d" % ctypes.sizeof(cls)
        for field, _ in cls._fields_:
            f = getattr(cls, field)
            want["%s.%s" % (cname, field)] = "%d %d" % (f.offset, f.size)
    for name, value in ENUMS.items():
        want[name] = str(value)
    diff = {k: (want[k], got.get(k)) for k in want if got.get(k) != want[k]}
    assert not diff, "python/agmm/_lib.py vs include/agmm.h (package, C): %s" % diff


def test_engine_words_are_the_librarys():
    """_lib.ENGINES is made from agmm_gemm_engine_name at import (kinds 0,
    1, ... until "invalid"), each name parsing back with
    agmm_gemm_engine_from_name; a word it lacks is refused as before."""
    from agmm._plan_desc import code_of
    assert list(_lib.ENGINES.items()) == [("auto", 0), ("onednn", 1),
                                          ("openblas", 2), ("wq", 3)]
    for name, kind in _lib.ENGINES.items():
        assert _lib.fn.agmm_gemm_engine_from_name(name.encode()) == kind
    assert _lib.fn.agmm_gemm_engine_from_name(b"mkl") == -1
    with pytest.raises(agmm.InvalidArgument) as e:
        code_of("mkl", _lib.ENGINES, "gemm_engine")
    assert e.value.args[0] == \
        "gemm_engine: 'mkl' (allowed: auto, onednn, openblas, wq)", e.value


def test_package_loads_the_build_trees_library():
    assert os.path.exists(agmm.library_path())
    assert agmm.__version__ == _lib.text(_lib.fn.agmm_version())


def test_blas_info_names_kernel_and_advice():
    """blas_info() is the library's agmm_blas_* answers; advice is None or
    one line naming the OPENBLAS_CORETYPE to set, and None when the
    variable is set (the user chose the kernel)."""
    info = agmm.blas_info()
    assert info.name and info.kernel, info
    assert info.threads == _lib.fn.agmm_blas_threads()
    if info.advice is not None:
        assert "\n" not in info.advice and info.kernel in info.advice, info
        assert "set OPENBLAS_CORETYPE=" in info.advice, info
        assert not os.environ.get("OPENBLAS_CORETYPE"), info
    assert agmm.blas_info() == info


def test_bf16_helpers_round_to_nearest_even():
    import numpy as np
    x = np.array([1.0, -2.5, 3.140625, 1.00390625, 1.01171875], np.float32)
    bits = agmm.bf16_from_float32(x)
    assert bits.dtype == np.uint16
    # 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1.0);
    # 1 + 3 * 2^-8 is halfway between 1 + 2^-7 and 1 + 2^-6: even is 1 + 2^-6.
    assert agmm.bf16_to_float32(bits).tolist() == [1.0, -2.5, 3.140625, 1.0, 1.015625]


def test_errors_carry_status_and_message():
    import numpy as np
    try:
        agmm.World.join(0, 1, "bad/name", timeout=1)
    except agmm.Error as e:
        assert e.status_name in ("AGMM_ERR_INVALID_ARG", "AGMM_ERR_UNSUPPORTED"), e
        assert str(e).startswith(e.status_name + ": ")
    else:
        raise AssertionError("a job name with '/' was accepted")
    with pytest.raises(agmm.InvalidArgument):
        agmm.World.join(0, 1, "x", timeout=0)
    with pytest.raises(ValueError):  # InvalidArgument is a ValueError
        agmm.plan.dtype_name("int4")
    assert np.dtype(np.float16)  # numpy present


def test_large_outputs_allocated_and_writable():
    """Outputs of 4 MiB and more get the huge-page hint (_buffers.py):
    still ordinary writable float32 arrays of the input's kind."""
    import numpy as np
    import torch
    from agmm import _buffers
    for like in (np.zeros(1, np.float16), torch.zeros(1, dtype=torch.float16)):
        ptr, out = _buffers.output(None, (1024, 2048), like)
        assert type(out).__module__.split(".")[0] == type(like).__module__.split(".")[0]
        assert tuple(out.shape) == (1024, 2048) and ptr != 0
        out[...] = 3.0
        assert float(out.sum()) == 3.0 * 1024 * 2048
