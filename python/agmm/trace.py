"""agmm.Trace: a plan's timeline from Python (agmm_trace_*, docs/tracing.md).

    trace = agmm.Trace(plan, max_rounds=16)   # local: record from now on
    ... plan.run(...) ...
    trace.gather()                            # collective: events to rank 0
    if world.rank == 0:
        for s in trace.summaries():           # per round and rank
            print(s.round, s.rank, s.round_us, s.gemm_wait_us, s.comm_busy_us)
        trace.write("run.json", "run.svg")
    trace.close()                             # local; plan.close() does it too

One trace per plan; it is destroyed before its plan (Plan.close closes the
plan's traces first).
"""
import ctypes
from dataclasses import dataclass

from . import _lib
from .errors import BadState, InvalidArgument, check


@dataclass
class TraceSummary:
    """One rank's view of one traced round (agmm_trace_summary_t): the
    round (1-based), its schedule, the rank's agmm_plan_run time, its GEMM
    workers' waits and work (conversion + GEMM) summed, the time any of its
    puts was in progress and the part of that hidden behind GEMM work."""
    round: int
    rank: int
    schedule: str
    round_us: float
    gemm_wait_us: float
    gemm_busy_us: float
    comm_busy_us: float
    comm_hidden_us: float


_SCHEDULE_NAMES = {v: k for k, v in _lib.SCHEDULES.items()}


class Trace:
    def __init__(self, plan, max_rounds=64):
        if int(max_rounds) < 1:
            raise InvalidArgument("max_rounds: %d (at least 1)" % max_rounds)
        self.plan = plan
        h = ctypes.c_void_p()
        check(_lib.fn.agmm_trace_create(plan.handle, int(max_rounds),
                                        ctypes.byref(h)), "trace create")
        self._h = h.value
        self.gathered = False
        if not hasattr(plan, "_traces"):
            plan._traces = []
        plan._traces.append(self)

    @property
    def handle(self):
        if self._h is None:
            raise BadState("trace: used after close()")
        return self._h

    def gather(self):
        """Collective: stop recording and gather every rank's events on
        rank 0 (agmm_trace_gather)."""
        check(_lib.fn.agmm_trace_gather(self.handle), "trace gather")
        self.gathered = True

    def rounds(self):
        """Rank 0 after gather(): the rounds recorded (0 elsewhere)."""
        return int(_lib.fn.agmm_trace_rounds(self.handle))

    def summary(self, round_index, rank):
        """Rank 0 after gather(): round `round_index` (0-based) on `rank`."""
        s = _lib.TraceSummaryC()
        check(_lib.fn.agmm_trace_summary(self.handle, int(round_index), int(rank),
                                         ctypes.byref(s)), "trace summary")
        return TraceSummary(s.round, int(rank),
                            _SCHEDULE_NAMES.get(s.schedule, str(s.schedule)),
                            s.round_us, s.gemm_wait_us, s.gemm_busy_us,
                            s.comm_busy_us, s.comm_hidden_us)

    def summaries(self):
        """Rank 0 after gather(): every round's summary on every rank."""
        size = self.plan.world.size
        return [self.summary(i, r) for i in range(self.rounds())
                for r in range(size)]

    def counts(self):
        """Rank 0 after gather(): (events kept, events dropped), all ranks."""
        ev, dr = ctypes.c_uint64(), ctypes.c_uint64()
        _lib.fn.agmm_trace_counts(self.handle, ctypes.byref(ev), ctypes.byref(dr))
        return int(ev.value), int(dr.value)

    def write(self, json_path=None, svg_path=None):
        """Rank 0 after gather(): the Chrome trace JSON and/or the SVG
        timeline (agmm_trace_write; other ranks: nothing)."""
        enc = (lambda p: None if p is None else str(p).encode())
        check(_lib.fn.agmm_trace_write(self.handle, enc(json_path), enc(svg_path)),
              "trace write")

    def close(self):
        """Local: stop recording and free (agmm_trace_destroy). Idempotent."""
        if self._h is None:
            return
        _lib.fn.agmm_trace_destroy(self._h)
        self._h = None
        try:
            self.plan._traces.remove(self)
        except (AttributeError, ValueError):
            pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False
