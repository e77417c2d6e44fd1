"""Start a world of Python ranks for a test: N independent processes, each
with its own environment as torchrun sets it (RANK, WORLD_SIZE,
LOCAL_RANK, MASTER_ADDR, MASTER_PORT: agmm_world_from_env joins them;
USE_LIBUV=0 as agmm launch sets it, for the gloo references on a torch
built without libuv),
or, with AGMM_PY_LAUNCH=mpi or a libagmm.so without agmm_world_join,
under mpirun. Each rank runs rank_worker.py (or the `worker` given); a world passes when every
rank exits 0 having printed "RANK r OK". Every world is bounded by a
deadline: ranks still running then are killed and the test fails. After
each world, nothing of its job may be left in /dev/shm.

The interpreter is the one running pytest (CTest runs /usr/bin/python3);
PYTHONPATH must name build/python (CTest sets it).
"""
import glob
import json
import os
import shutil
import signal
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "rank_worker.py")


def launch_mode():
    mode = os.environ.get("AGMM_PY_LAUNCH")
    if mode:
        return mode
    import agmm._lib as L
    return "join" if L.fn.has("agmm_world_join") else "mpi"


def _shm_left(job_hint):
    return [p for p in glob.glob("/dev/shm/agmm*") if job_hint in p]


def run_world(nranks, scenario, args, timeout=120, worker=WORKER):
    """Run `scenario` on `nranks` ranks; return their outputs. Fails the
    test (with every rank's output) unless every rank passed."""
    mode = launch_mode()
    from agmm.launch import free_port
    port = free_port()  # rank 0's gloo store (tp_worker.py) listens there
    args = dict(args)
    cmd = [sys.executable, worker, scenario, json.dumps(args)]
    base = {k: v for k, v in os.environ.items()
            if not k.startswith(("AGMM_RANK", "AGMM_WORLD_SIZE", "AGMM_JOB",
                                 "OMPI_", "PMIX_"))
            and k not in ("RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR",
                          "MASTER_PORT")}
    base.setdefault("USE_LIBUV", "0")
    procs = []
    if mode == "join":
        for r in range(nranks):
            env = dict(base, RANK=str(r), WORLD_SIZE=str(nranks),
                       LOCAL_RANK=str(r), LOCAL_WORLD_SIZE=str(nranks),
                       MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
            procs.append(subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE,
                                          stderr=subprocess.STDOUT, text=True,
                                          start_new_session=True))
    elif mode == "mpi":
        mpirun = shutil.which("mpirun")
        if not mpirun:
            pytest.skip("no agmm_world_join in libagmm.so and no mpirun")
        procs.append(subprocess.Popen(
            [mpirun, "--allow-run-as-root", "--oversubscribe", "--mca",
             "btl_vader_single_copy_mechanism", "none", "-np", str(nranks)] + cmd,
            env=base, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
            start_new_session=True))
    else:
        raise ValueError("AGMM_PY_LAUNCH=%s (join or mpi)" % mode)
    outs, codes, timed_out = [], [], False
    for p in procs:
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            for q in procs:
                try:
                    os.killpg(q.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
            out, _ = p.communicate()
        outs.append(out)
        codes.append(p.returncode)
    text = "\n".join("--- %s %d (exit %s)\n%s" % ("rank" if mode == "join" else
                                                  "mpirun", i, c, o)
                     for i, (c, o) in enumerate(zip(codes, outs)))
    assert not timed_out, "world did not finish in %ds:\n%s" % (timeout, text)
    assert all(c == 0 for c in codes), text
    joined = "\n".join(outs)
    for r in range(nranks):
        assert "RANK %d OK" % r in joined, text
    if mode == "join":
        left = _shm_left("tr-127.0.0.1-%d:" % port)
        assert not left, "left in /dev/shm: %s" % left
    return outs


@pytest.fixture
def world():
    return run_world
