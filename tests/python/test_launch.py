"""agmm.launch.spawn: each rank's variables; the first rank to fail ends
the others (which would otherwise sleep for a minute) and its status is
the job's, 128 + N for a signal; a job past its timeout ends with 124; a
world joined through the variables runs; free_port can be listened on."""
import json
import os
import socket
import sys

import pytest

import agmm.launch

SLEEPER = """
import json, os, signal, sys, time
r = int(os.environ["RANK"])
path = os.path.join(sys.argv[1], "rank%d" % r)
with open(path + ".tmp", "w") as f:
    json.dump({k: os.environ[k] for k in os.environ
               if k.startswith(("AGMM_", "RANK", "WORLD", "LOCAL", "MASTER", "USE_LIBUV"))}
              | {"pid": os.getpid()}, f)
os.rename(path + ".tmp", path)
# Every rank's file before anyone fails: a rank ended before it wrote its
# file (a slow start on a loaded machine) would leave the test nothing to
# check.
until = time.monotonic() + 30
while time.monotonic() < until and not all(
        os.path.exists(os.path.join(sys.argv[1], "rank%d" % q))
        for q in range(int(os.environ["WORLD_SIZE"]))):
    time.sleep(0.01)
how = sys.argv[2]
if how == "ok":
    sys.exit(0)
if r == 1 and how == "exit":
    time.sleep(0.5)
    sys.exit(3)
if r == 1 and how == "kill":
    time.sleep(0.5)
    os.kill(os.getpid(), signal.SIGKILL)
time.sleep(60)
"""


def _alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open("/proc/%d/stat" % pid) as f:  # a zombie is not running
        return f.read().split(") ")[1][0] != "Z"


def _run(tmp_path, how, nranks=3, **kw):
    st = agmm.launch.spawn(nranks, [sys.executable, "-c", SLEEPER,
                                    str(tmp_path), how], grace_s=1.0, **kw)
    ranks = []
    for r in range(nranks):
        with open(tmp_path / ("rank%d" % r)) as f:
            ranks.append(json.load(f))
    return st, ranks


def test_every_rank_gets_its_variables(tmp_path):
    st, ranks = _run(tmp_path, "ok")
    assert st == 0
    ports = {e["MASTER_PORT"] for e in ranks}
    jobs = {e["AGMM_JOB"] for e in ranks}
    assert len(ports) == 1 and len(jobs) == 1
    for r, e in enumerate(ranks):
        assert e["RANK"] == e["AGMM_RANK"] == e["LOCAL_RANK"] == str(r)
        assert e["WORLD_SIZE"] == e["AGMM_WORLD_SIZE"] == "3"
        assert e["LOCAL_WORLD_SIZE"] == "3" and e["MASTER_ADDR"] == "127.0.0.1"
        # torch.distributed's store without libuv (Debian 13's torch has none)
        assert e["USE_LIBUV"] == "0"


def test_the_users_use_libuv_is_kept(tmp_path):
    st, ranks = _run(tmp_path, "ok", nranks=1,
                     env=dict(os.environ, USE_LIBUV="1"))
    assert st == 0 and ranks[0]["USE_LIBUV"] == "1"


@pytest.mark.parametrize("how,status", [("exit", 3), ("kill", 128 + 9)])
def test_first_failure_ends_the_others(tmp_path, capfd, how, status):
    st, ranks = _run(tmp_path, how)
    assert st == status
    assert not any(_alive(e["pid"]) for e in ranks)
    err = capfd.readouterr().err
    assert ("rank 1 exited with status 3" if how == "exit"
            else "rank 1 was killed by signal 9 (SIGKILL)") in err


def test_timeout_ends_the_job(tmp_path, capfd):
    # 5 s: long enough for both ranks to start and write their files.
    st, ranks = _run(tmp_path, "sleep", nranks=2, timeout_s=5.0)
    assert st == 124
    assert not any(_alive(e["pid"]) for e in ranks)
    assert "ran past 5s" in capfd.readouterr().err


def test_a_world_joins_through_the_variables(tmp_path):
    code = ("import agmm\n"
            "with agmm.World.from_env(timeout=30) as w:\n"
            "    w.barrier()\n"
            "    assert (w.rank, w.size) == (int(__import__('os').environ"
            "['RANK']), 2)\n")
    assert agmm.launch.spawn(2, [sys.executable, "-c", code]) == 0


def test_free_port_can_be_listened_on():
    port = agmm.launch.free_port()
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", port))
        s.listen()


def test_no_ranks_is_refused():
    with pytest.raises(ValueError, match="nranks"):
        agmm.launch.spawn(0, [sys.executable, "-c", "pass"])
