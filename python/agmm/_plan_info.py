"""What a plan reports about itself: the GEMM engine it runs (GemmInfo,
agmm_plan_gemm_info) and what schedule="auto" did (ScheduleInfo,
agmm_plan_schedule_info), read from the library's structs."""
import ctypes
from dataclasses import dataclass

from . import _lib
from .errors import check


@dataclass(frozen=True)
class GemmInfo:
    """The GEMM engine a plan runs (agmm_gemm_info_t)."""
    engine: str            # "onednn" or "openblas"
    version: str           # the library's version
    impl: str              # the kernel it picked
    threads_per_call: int
    primitives_created: int
    path: str              # "native" or "f32": the GEMM path it runs
    chosen_by: str         # "forced", "only", "measured" or "cached"
    # (path, slowest rank's predicted GEMM time of a round in us, this
    # rank's GFLOP/s, impl) of each candidate measured: native, f32
    candidates: tuple
    choose_ms: float       # time this rank spent measuring
    # int8: "s8s8" or "u8s8", the variant of the native path it runs (the
    # candidates are then s8s8, u8s8); None for other dtypes
    int8_variant: object = None
    # where the epilogue runs: "none", "engine" (in the GEMM calls),
    # "pass" (an fp32 result, then a pass; gemm-rs: after the reduction)
    # or "mixed"
    epilogue: str = "none"
    # the instruction set of agmm's own epilogue pass on this CPU:
    # "x86-64-v4" (AVX-512), "x86-64-v3" (AVX2 with FMA) or "x86-64"
    epilogue_isa: str = "x86-64"


@dataclass(frozen=True)
class ScheduleInfo:
    """What schedule="auto" did so far (agmm_schedule_info_t)."""
    last: str              # "fused" or "baseline": the last auto round
    pick: str              # once decided: what later auto rounds run
    decided: bool
    trials: int
    fused_us: float        # best measured round (slowest rank), 0: none
    baseline_us: float
    reason: str


def gemm_info(handle):
    """GemmInfo of the plan `handle` (agmm_plan_gemm_info)."""
    info = _lib.GemmInfoC()
    check(_lib.fn.agmm_plan_gemm_info(handle, ctypes.byref(info)),
          "gemm_info")
    names = {v: k for k, v in _lib.PATHS.items()}
    cands = tuple((names.get(c.path, "invalid"), float(c.round_us),
                   float(c.gflops), _lib.text(c.impl))
                  for c in info.candidate[:info.candidates])
    return GemmInfo(_lib.text(info.name), _lib.text(info.version),
                    _lib.text(info.impl), int(info.threads_per_call),
                    int(info.primitives_created),
                    names.get(info.path, "invalid"),
                    _lib.text(info.chosen_by), cands,
                    float(info.choose_ms),
                    _lib.text(info.int8_variant)
                    if info.int8_variant else None,
                    _lib.text(info.epilogue) or "none",
                    _lib.text(info.epilogue_isa) or "x86-64")


def schedule_info(handle):
    """ScheduleInfo of the plan `handle` (agmm_plan_schedule_info)."""
    info = _lib.ScheduleInfoC()
    check(_lib.fn.agmm_plan_schedule_info(handle, ctypes.byref(info)),
          "schedule_info")
    sched = {v: k for k, v in _lib.SCHEDULES.items()}
    return ScheduleInfo(sched.get(info.last, "invalid"),
                        sched.get(info.pick, "invalid"),
                        bool(info.decided), int(info.trials),
                        float(info.fused_us), float(info.baseline_us),
                        _lib.text(info.reason))
