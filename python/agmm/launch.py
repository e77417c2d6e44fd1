"""Start a world of ranks on this host from Python, as `agmm launch` does
(without its placement): `nranks` copies of a program, rank r with
AGMM_RANK/AGMM_WORLD_SIZE/AGMM_JOB and torchrun's RANK, LOCAL_RANK,
WORLD_SIZE, LOCAL_WORLD_SIZE, MASTER_ADDR=127.0.0.1 and MASTER_PORT, a
port the OS has just found free (so a rank may host a torch.distributed
store there: `init_process_group(init_method="env://")`), and USE_LIBUV=0
unless the environment sets it (torch 2.4+ asks its store for libuv by
default, and a torch built without it, as Debian 13's, fails the
rendezvous; the store without libuv works on every torch).

    import sys, agmm.launch
    if "RANK" not in os.environ:              # not started by a launcher
        sys.exit(agmm.launch.spawn(2, [sys.executable] + sys.argv))

The first rank to fail ends the others: they get SIGTERM, then SIGKILL
after `grace_s`, and spawn returns that rank's status (128 + N for a
signal N), having said on stderr which rank ended how. Ranks die with the
launching process (PR_SET_PDEATHSIG), and the job's leftover /dev/shm
segments are removed at the end (agmm_cleanup).
"""
import ctypes
import os
import signal
import socket
import subprocess
import sys
import time

__all__ = ["free_port", "spawn"]


def free_port(host="127.0.0.1"):
    """A TCP port on `host` that nothing listens on now (the OS's choice;
    it stays free unless someone takes it before it is used)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return s.getsockname()[1]


def _die_with_parent():
    """In the child, before exec: SIGKILL when the launcher dies."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def _how(rank, code):
    if code < 0:
        return "rank %d was killed by signal %d (%s)" % (
            rank, -code, signal.Signals(-code).name)
    return "rank %d exited with status %d" % (rank, code)


def _end(procs, grace_s):
    """SIGTERM to the ranks still running, SIGKILL after grace_s; reap all."""
    for p in procs:
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
    end = time.monotonic() + grace_s
    for p in procs:
        try:
            p.wait(timeout=max(0.0, end - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def spawn(nranks, argv, env=None, grace_s=2.0, timeout_s=None, job=None):
    """Run `argv` as `nranks` ranks; return 0 when every rank exited 0, else
    the first failure's status. `env` (default os.environ) is each rank's
    base environment; `timeout_s` ends the job (status 124) when reached."""
    if nranks < 1:
        raise ValueError("nranks: %r (at least 1)" % (nranks,))
    base = dict(os.environ if env is None else env)
    job = job or "pylaunch-%d" % os.getpid()
    port = str(free_port())
    procs = []
    try:
        for r in range(nranks):
            e = dict(base, AGMM_RANK=str(r), AGMM_WORLD_SIZE=str(nranks),
                     AGMM_JOB=job, RANK=str(r), LOCAL_RANK=str(r),
                     WORLD_SIZE=str(nranks), LOCAL_WORLD_SIZE=str(nranks),
                     MASTER_ADDR="127.0.0.1", MASTER_PORT=port)
            e.setdefault("USE_LIBUV", "0")
            procs.append(subprocess.Popen(argv, env=e,
                                          preexec_fn=_die_with_parent))
        status = 0
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        while None in [p.poll() for p in procs]:  # poll each: reap and see
            bad = [(r, p.returncode) for r, p in enumerate(procs)
                   if p.returncode not in (None, 0)]
            if bad:
                rank, code = bad[0]
                print("agmm.launch: %s; ending the other ranks" % _how(rank, code),
                      file=sys.stderr, flush=True)
                status = 128 - code if code < 0 else code
                break
            if deadline is not None and time.monotonic() > deadline:
                print("agmm.launch: the job ran past %gs; ending it" % timeout_s,
                      file=sys.stderr, flush=True)
                status = 124
                break
            time.sleep(0.02)
        if not status:
            bad = [(r, p.returncode) for r, p in enumerate(procs)
                   if p.returncode != 0]
            if bad:
                print("agmm.launch: %s" % _how(*bad[0]), file=sys.stderr,
                      flush=True)
                status = 128 - bad[0][1] if bad[0][1] < 0 else bad[0][1]
    finally:
        _end(procs, grace_s)
        try:
            from . import cleanup
            cleanup(job)
        except Exception as e:  # the job's status matters more; say it
            print("agmm.launch: cleanup of job %s: %s" % (job, e),
                  file=sys.stderr, flush=True)
    return status
