"""agmm.World: the ranks taking part, one World per process.

Ways to get one (each a collective: every rank makes the same call):
  World.from_env(timeout)          the launcher's environment: AGMM_RANK /
                                   AGMM_WORLD_SIZE / AGMM_JOB, or torchrun's
                                   RANK / WORLD_SIZE / MASTER_ADDR /
                                   MASTER_PORT (agmm_world_from_env; agmm
                                   launch sets both, and AGMM_BIND_CPUS,
                                   which pins the rank's workers); under
                                   mpirun, the MPI world
  World.join(rank, size, job, timeout)   explicit (agmm_world_join)
  World.mpi(timeout)               MPI_COMM_WORLD (agmm_world_create_mpi)

A World owns the plans made from it: close() (or leaving its `with`
block) destroys the plans still open, in the order they were made, then
the world. Both are collective, so every rank closes at the same point.
Nothing is destroyed by the garbage collector (a collective call at an
arbitrary moment could wait on ranks that never make it); worlds still
open when the interpreter exits are closed by an atexit hook.
"""
import atexit
import ctypes
import os
import threading
import weakref

from . import _lib
from .errors import BadState, InvalidArgument, check, missing

_open_worlds = weakref.WeakSet()
_open_lock = threading.Lock()


def _timeout(t):
    t = 60.0 if t is None else float(t)
    if not t > 0:
        raise InvalidArgument("timeout: %r (allowed: seconds > 0)" % (t,))
    return t


class World:
    """A world of ranks (see the module doc). Use the class methods."""

    def __init__(self, handle, kind):
        self._h = handle
        self.kind = kind  # "join", "env", "mpi"
        self._plans = []  # open plans, in the order they were made
        self._pid = os.getpid()  # a forked child does not own it
        self.rank = _lib.fn.agmm_world_rank(handle)
        self.size = _lib.fn.agmm_world_size(handle)
        self.transport = _lib.text(_lib.fn.agmm_world_transport_name(handle))
        with _open_lock:
            _open_worlds.add(self)

    # ------------------------------------------------------------ making
    @classmethod
    def join(cls, rank, size, job, timeout=60.0):
        """Join world `job` as `rank` of `size` (ranks started by anyone
        on this host; every rank passes the same size and job)."""
        if not isinstance(job, str) or not job:
            raise InvalidArgument("job: %r (a non-empty name)" % (job,))
        opts = _lib.JoinOptsC(int(rank), int(size), job.encode(),
                              _timeout(timeout))
        f = _lib.fn.agmm_world_join
        if f is None:
            raise missing("agmm_world_join")
        h = ctypes.c_void_p()
        check(f(ctypes.byref(opts), ctypes.byref(h)), "world join")
        return cls(h.value, "join")

    @classmethod
    def from_env(cls, timeout=60.0):
        """The world the environment describes: agmm_world_from_env (AGMM_*
        or torchrun's variables); under an MPI launcher with no such
        variables, the MPI world."""
        import os
        f = _lib.fn.agmm_world_from_env
        have_env = any(v in os.environ for v in
                       ("AGMM_RANK", "AGMM_WORLD_SIZE", "RANK", "WORLD_SIZE"))
        if (f is None or not have_env) and \
                _lib.fn.agmm_mpi_launcher_detected():
            return cls.mpi(timeout)
        if f is None:
            raise missing("agmm_world_from_env")
        h = ctypes.c_void_p()
        check(f(_timeout(timeout), ctypes.byref(h)), "world from env")
        return cls(h.value, "env")

    @classmethod
    def mpi(cls, timeout=60.0):
        """The MPI world (MPI_COMM_WORLD; initialises MPI if needed)."""
        h = ctypes.c_void_p()
        check(_lib.fn.agmm_world_create_mpi(None, None, _timeout(timeout),
                                            ctypes.byref(h)),
              "world create mpi")
        return cls(h.value, "mpi")

    # ------------------------------------------------------------- using
    @property
    def handle(self):
        """The agmm_world_t pointer (int); BadState once closed."""
        if self._h is None:
            raise BadState("world: used after close()")
        return self._h

    @property
    def closed(self):
        return self._h is None

    def set_timeout(self, timeout):
        """The default wait timeout of barriers, plans and rounds (local:
        set the same on every rank)."""
        _lib.fn.agmm_world_set_timeout(self.handle, _timeout(timeout))

    def barrier(self, timeout=None):
        check(_lib.fn.agmm_world_barrier(self.handle,
                                         0.0 if timeout is None else float(timeout)),
              "barrier")

    def allgather(self, data):
        """Collective: every rank's `data` (bytes, the same length on every
        rank, at most 1024) as a list ordered by rank. For small control
        data only."""
        raw = self.allgather_raw(data)
        n = len(raw) // self.size if self.size else 0
        return [raw[r * n:(r + 1) * n] for r in range(self.size)]

    def allgather_raw(self, data, buf=None):
        """allgather(), the ranks' bytes joined in rank order (one bytes
        object). buf: a ctypes buffer of exactly len(data) * size bytes to
        gather into (reused by callers that gather the same size often),
        or None."""
        data = bytes(data)
        n = len(data)
        if buf is None or len(buf) != n * self.size:
            buf = ctypes.create_string_buffer(n * self.size or 1)
        check(_lib.fn.agmm_world_allgather(self.handle, data, buf, n),
              "allgather")
        return buf.raw[:n * self.size]

    def abort(self, message):
        """End the run on every rank: their agmm calls return
        AGMM_ERR_ABORTED naming this rank and `message`."""
        if self._h is not None:
            _lib.fn.agmm_world_abort(self._h, str(message).encode())

    def plan(self, m_local, k, n, dtype="bf16", **options):
        """A plan (collective; see agmm.Plan for the arguments)."""
        from .plan import Plan
        return Plan(self, m_local, k, n, dtype, **options)

    # ------------------------------------------------------------- ending
    def close(self):
        """Collective: destroy the plans still open, then the world. An
        MPI world finalises MPI (a world aborted by any rank's failure
        ends the MPI job instead: agmm_world_destroy). Idempotent."""
        if self._h is None:
            return
        err = None
        for p in list(self._plans):
            try:
                p.close()
            except Exception as e:  # keep going: the world must still go
                err = err or e
        h, self._h = self._h, None
        with _open_lock:
            _open_worlds.discard(self)
        _lib.fn.agmm_world_destroy(h)
        if err is not None:
            raise err

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False

    def __repr__(self):
        if self._h is None:
            return "<agmm.World closed>"
        return "<agmm.World rank %d of %d, %s>" % (self.rank, self.size,
                                                   self.transport)


@atexit.register
def _close_open_worlds():
    with _open_lock:
        # A child forked from the process that made a world inherits the
        # object, not the world: closing it would end the parent's.
        worlds = [w for w in _open_worlds if w._pid == os.getpid()]
    for w in worlds:
        try:
            w.close()
        except Exception:
            pass
