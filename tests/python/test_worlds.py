"""The Python package across processes (issue 12): 2, 3 and 4 ranks started
independently (conftest.py), all-gather + GEMM in fp16/bf16/fp32 with
NumPy arrays and torch tensors against NumPy, uneven and empty shards,
several rounds; the torch op against torch.cat(all_gather) @ B; the GIL
released during a round; errors as exceptions."""
import os
import re

import pytest

import agmm
from conftest import run_world

ALL_DTYPES = ["fp16", "bf16", "fp32"]


@pytest.mark.parametrize("nranks,m_local", [
    (2, [37, 20]),          # uneven
    (3, [17, 0, 9]),        # an empty shard
    (4, [5, 12, 1, 8]),     # tiles of different fill
])
def test_allgather_gemm_every_dtype_numpy_and_torch(nranks, m_local):
    run_world(nranks, "gemm", dict(
        m_local=m_local, k=40, n=24, rounds=4, tile_m=8, tile_n=16,
        dtypes=ALL_DTYPES, kinds=["numpy", "torch"], schedule="auto",
        torch=True))


@pytest.mark.parametrize("schedule", ["fused", "baseline"])
def test_allgather_gemm_each_schedule(schedule):
    run_world(2, "gemm", dict(
        m_local=[64, 31], k=64, n=48, rounds=3, tile_m=16, tile_n=16,
        dtypes=["bf16"], kinds=["numpy"], schedule=schedule))


@pytest.mark.parametrize("gemm_path", ["native", "f32"])
def test_allgather_gemm_each_gemm_path(gemm_path):
    """A forced path runs (and says so); auto's measurement is checked by
    test_allgather_gemm_every_dtype_numpy_and_torch."""
    if not agmm.gemm_path_available("auto", "bf16", gemm_path):
        assert gemm_path == "native"  # f32 is always there
        pytest.skip("this build's engine has no native bf16 path (no oneDNN)")
    run_world(2, "gemm", dict(
        m_local=[33, 20], k=48, n=40, rounds=2, tile_m=16, tile_n=16,
        dtypes=["bf16", "fp32"], kinds=["numpy"], schedule="auto",
        gemm_path=gemm_path))


def test_gemm_reduce_scatter():
    run_world(3, "gemm_rs", dict(m_local=[10, 0, 7], k=30, n=20, rounds=3))


def test_gemm_all_reduce():
    run_world(3, "gemm_ar", dict(m_local=[10, 0, 7], k=30, n=20, rounds=3))


@pytest.mark.parametrize("nranks", [1, 3])
def test_gemm_reduce_scatter_rows_per_call(nranks):
    run_world(nranks, "rs_rows", dict(calls=6))


@pytest.mark.parametrize("nranks", [1, 3])
def test_gemm_all_reduce_rows_per_call(nranks):
    run_world(nranks, "rs_rows", dict(calls=6, op="gemm-ar"))


@pytest.mark.parametrize("nranks", [2, 3, 4])
def test_torch_op_matches_cat_all_gather_matmul(nranks):
    run_world(nranks, "op", dict(calls=6, torch=True))


def test_round_releases_the_gil(tmp_path):
    run_world(2, "gil", dict(flag=str(tmp_path / "go"), timeout=20))


def test_errors_are_exceptions_with_status():
    run_world(2, "errors", dict())


@pytest.mark.parametrize("nranks", [2, 3])
def test_several_weights_rows_per_call_gathered_a(nranks):
    run_world(nranks, "rows", dict(calls=6))


def test_missing_rank_is_a_timeout_naming_it():
    """Rank 1 of 2 never starts: rank 0's join raises agmm.Timeout (also a
    TimeoutError) whose message names rank 1; nothing left in /dev/shm."""
    import glob
    job = "pytest-missing-%d" % os.getpid()
    with pytest.raises(agmm.Timeout) as e:
        agmm.World.join(0, 2, job, timeout=1.5)
    assert isinstance(e.value, TimeoutError)
    assert e.value.status_name == "AGMM_ERR_TIMEOUT"
    assert re.search(r"rank(\(s\))? 1\b", e.value.message), e.value.message
    assert not [p for p in glob.glob("/dev/shm/agmm*") if ":%s:" % job in p]
