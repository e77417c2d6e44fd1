"""One rank of test_symm_mem.py: torch.ops.symm_mem.fused_all_gather_matmul
and fused_matmul_reduce_scatter (PyTorch's async-TP ops, torch 2.6) on CPU
tensors, run by agmm's kernels, against the same products from gloo
collectives; the default group's name resolved to agmm's default world, a
registered group's name to its world, an unknown group refused by name.
Prints "RANK r OK".
"""
import torch
import torch.distributed as dist

import agmm
import agmm.torch as at


def main():
    dist.init_process_group("gloo")  # env:// (USE_LIBUV=0 from the launcher)
    P, me = dist.get_world_size(), dist.get_rank()
    assert at.SYMM_MEM_CPU
    ops = torch.ops.symm_mem
    wname = dist.group.WORLD.group_name
    g = torch.Generator().manual_seed(5)
    for dt in (torch.float32, torch.bfloat16):
        shards = [torch.randn(6, 32, generator=g).to(dt) for _ in range(P)]
        Bs = [torch.randn(32, 16, generator=g).to(dt),
              torch.randn(32, 8, generator=g).to(dt)]
        # all-gather + matmul: torch's schema and results (A, [C_i])
        A, Cs = ops.fused_all_gather_matmul(shards[me], Bs, 0, wname)
        full = torch.cat(shards)
        assert torch.equal(A, full)
        for B, C in zip(Bs, Cs):
            ref = full @ B
            assert C.dtype == dt and C.shape == ref.shape, (C.dtype, C.shape)
            e = ((C.float() - ref.float()).abs().max() / ref.float().abs().max()).item()
            assert e <= (1e-5 if dt == torch.float32 else 2e-2), (dt, e)
        # gather_dim 1
        s3 = [torch.randn(2, 3, 32, generator=g).to(dt) for _ in range(P)]
        A, (C,) = ops.fused_all_gather_matmul(s3[me], [Bs[0]], 1, wname)
        assert A.shape == (2, 3 * P, 32) and torch.equal(A, torch.cat(s3, 1))
        assert C.shape == (2, 3 * P, 16)
        # matmul + reduce-scatter against gloo's all_reduce of A_r @ B_r
        a = torch.randn(4 * P, 24, generator=g)
        b = torch.randn(24, 12, generator=g)
        mine_a = (a + me).to(dt)  # every rank's own
        c = ops.fused_matmul_reduce_scatter(mine_a, b.to(dt), "sum", 0, wname)
        tot = mine_a.float() @ b.to(dt).float()
        dist.all_reduce(tot)
        ref = tot[me * 4:(me + 1) * 4]
        assert c.dtype == dt and c.shape == ref.shape, (c.dtype, c.shape)
        e = ((c.float() - ref).abs().max() / ref.abs().max()).item()
        assert e <= (1e-5 if dt == torch.float32 else 2e-2), (dt, e)
    # a group registered under a torch group's name
    sub = dist.new_group(list(range(P)))
    try:
        ops.fused_all_gather_matmul(shards[me], Bs, 0, sub.group_name)
        raise AssertionError("an unregistered group ran")
    except agmm.InvalidArgument as ex:
        assert "register_group" in str(ex), ex
    from agmm.torch.distributed.groups import _groups
    at.register_group(sub.group_name, _groups["default"].world)  # the same ranks
    A, (C,) = ops.fused_all_gather_matmul(shards[me], [Bs[0]], 0, sub.group_name)
    assert torch.equal(A, torch.cat(shards))
    at.unregister_group(sub.group_name)
    at.unregister_group("default")
    dist.destroy_process_group()
    print("RANK %d OK" % me, flush=True)


if __name__ == "__main__":
    main()
