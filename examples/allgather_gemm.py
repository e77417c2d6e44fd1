#!/usr/bin/python3
"""One rank of an all-gather + GEMM from Python (README.md, "From
Python"): start it once per rank with torchrun's variables (RANK,
WORLD_SIZE, MASTER_ADDR, MASTER_PORT) or agmm's (AGMM_RANK,
AGMM_WORLD_SIZE, AGMM_JOB), PYTHONPATH=build/python; `agmm launch -n 2
-- /usr/bin/python3 examples/allgather_gemm.py` sets both. Each rank checks
its C against NumPy and the torch op against torch.cat(all_gather) @ B."""
# readme-snippet: begin
import numpy as np
import torch
import agmm
import agmm.torch

def shard(rank, rows=64, k=32):                # rank r's rows of A (fp16)
    return np.random.default_rng(rank).standard_normal((rows, k)).astype(np.float16)

w = np.random.default_rng(99).standard_normal((32, 16)).astype(np.float16)

with agmm.World.from_env(timeout=60) as world:  # joins the other ranks
    a = shard(world.rank)
    with world.plan(m_local=64, k=32, n=16, dtype="fp16") as plan:
        plan.set_weight(w)                     # [k, n], the same on every rank
        c = plan.run(a)                        # [64 * size, 16] float32

    # A PyTorch op, on this world (plans cached per shape and weight).
    agmm.torch.register_group("tp", world)
    A, [C] = agmm.torch.fused_all_gather_matmul(
        torch.from_numpy(a), [torch.from_numpy(w)], gather_dim=0, group_name="tp")

    full = np.concatenate([shard(r) for r in range(world.size)])
    ref = full.astype(np.float32) @ w.astype(np.float32)
    assert np.allclose(c, ref, rtol=1e-2, atol=1e-2)
    assert np.array_equal(A.numpy(), full) and np.allclose(C.numpy(), ref, 1e-2, 1e-2)
    print(f"rank {world.rank} of {world.size}: C {list(c.shape)} ok")
# readme-snippet: end
