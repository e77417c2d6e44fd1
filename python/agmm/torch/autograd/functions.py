"""Autograd of agmm.torch's fp ops: the Autograd kernels registered for
torch.ops.agmm.fused_all_gather_matmul, fused_matmul_reduce_scatter and
fused_matmul_all_reduce. Each forward calls the op itself below autograd
(so the round is agmm's, and a FakeTensor reaches the Meta kernel); each
backward runs its communication through agmm too:

  all-gather + matmul   C_r = gather(A) @ B_r (+ b_r, act):
      dA_shard = my rows of sum_r dZ_r @ B_r^T: one gemm-rs round (A := dZ_r
                 of every weight side by side, W := the B_i^T stacked)
      dB_r     = gather(A)^T @ dZ_r (local; the forward's gathered A)
  matmul + reduce-scatter  C = my rows of sum_r A_r @ B_r (+ b, act):
      dA_r     = gather(dZ) @ B_r^T: one ag-gemm round (fused_all_gather_matmul
                 of dZ with B_r^T, returning the gathered dZ; B_r^T padded
                 with zero columns to the largest k_local when they differ,
                 found by one small all-gather)
      dB_r     = A_r^T @ gather(dZ) (local)
  matmul + all-reduce   C = sum_r A_r @ B_r (+ b, act), the same on every rank:
      dA_r     = dZ @ B_r^T, dB_r = A_r^T @ dZ (local: dZ, the gradient of
                 the replicated output, is taken to be the same on every rank,
                 as Megatron's all-reduce has it)
  The local GEMMs (dB, and the all-reduce's dA) run through agmm's engine
  on a one-rank plan where it applies (kernels/local.py's local_mm).
  dZ = d(act)/dz * dC (the epilogue's activation differentiated at the
  saved pre-activation z = C + bias, float32); db = dZ summed over this
  rank's rows (the ranks' shares are not summed: that is the caller's
  data-parallel reduction, as for any replicated parameter).

The gathered A a forward returns is not differentiable (its gradient would
need another reduce-scatter). Every rank must run the same backward (the
same inputs requiring grad), as every collective; the all-gather op's
backward also all-gathers every rank's rows (one small collective).
Gradients have their inputs' dtypes; the backward's GEMMs run in the
weights' dtype (dZ converted to it).
"""
import torch

from ..._buffers import scratch_copy, scratch_torch
from ..kernels.epilogue import apply_epilogue, epilogue_backward
from ..kernels.fp import allgather_ints, reduce_core
from ..distributed.groups import DT, as_rows, get_group, meta_world
from ..distributed.plan_cache import backward_weight, reduce_key
from ..kernels.dispatch import plain_cpu
from ..kernels.calls import all_gather_round, all_reduce_round, reduce_scatter_round
from ..kernels.local import local_mm


class _BelowAutograd:
    """Run an op's next kernel below autograd (torch 1.13's
    _AutoDispatchBelowAutograd is a guard object, not a context manager)."""

    def __enter__(self):
        self._guard = torch._C._AutoDispatchBelowAutograd()

    def __exit__(self, *exc):
        del self._guard


def below_autograd(fn, *args, **kwargs):
    with _BelowAutograd():
        return fn(*args, **kwargs)


def _as_is(t, dt):
    """Can t be a GEMM operand of dtype dt without a copy?"""
    return t.dtype == dt and t.is_contiguous()


def _grad_z(zs, gys, acts, ys):
    """Each output's dZ: float32 through its activation's backward; with
    none, the output gradient itself in its own dtype (its consumers
    convert it once, into the GEMMs' dtype)."""
    return [(gy if a is None else epilogue_backward(z, gy, a))
            if gy is not None else  # a gated z is twice y's width
            torch.zeros_like(z if z is not None else y, dtype=torch.float32)
            for z, gy, a, y in zip(zs, gys, acts, ys)]


def _mm(x, y, dtype):
    """x @ y in the weights' dtype (as torch's own layer would), through
    agmm's engine where it applies (kernels/local.py's local_mm)."""
    return local_mm(x, [y], dtype)[0]


class AllGatherMatmul(torch.autograd.Function):
    @staticmethod
    def forward(ctx, info, a2, *rest):
        group, return_A, acts, dts = info
        nw = len(acts)
        Bs, biases = list(rest[:nw]), list(rest[nw:])
        need_A = return_A or any(B.requires_grad for B in Bs)
        # With no activation there is nothing to keep but the outputs: the
        # op writes them in their dtypes (in the round where it can,
        # kernels/fp.py's lib_epilogue), not a float32 C converted after it.
        plain = all(a is None for a in acts)
        A_g, zs = below_autograd(torch.ops.agmm.fused_all_gather_matmul, a2, Bs, 0,
                                 group, return_A=need_A, biases=biases,
                                 out_dtypes=list(dts) if plain else
                                 [torch.float32] * nw)
        ys = zs if plain else [apply_epilogue(z, None, a, d)
                               for z, a, d in zip(zs, acts, dts)]
        ctx.info = info
        ctx.nw = nw
        ctx.bias_grad = [b is not None and b.requires_grad for b in biases]
        ctx.save_for_backward(A_g if need_A else None, *Bs,
                              *[z if a is not None else None for z, a in zip(zs, acts)],
                              *ys)
        ctx.rows = int(a2.shape[0])
        ctx.a_dtype = a2.dtype
        if A_g is not None:
            ctx.mark_non_differentiable(A_g)
        return (A_g if return_A else None, *ys)

    @staticmethod
    def backward(ctx, _gA, *gys):
        group, _, acts, _ = ctx.info
        nw = ctx.nw
        saved = ctx.saved_tensors
        A_g, Bs = saved[0], list(saved[1:1 + nw])
        zs, ys = list(saved[1 + nw:1 + 2 * nw]), list(saved[1 + 2 * nw:])
        gzs = _grad_z([z if z is not None else y for z, y in zip(zs, ys)],
                      gys, acts, ys)
        dt = Bs[0].dtype
        if not plain_cpu(list(saved) + list(gys)):
            return _ag_traced_backward(ctx, group, A_g, Bs, gzs, dt)
        # Each dZ_i converted to the weights' dtype once, for both GEMMs:
        # with several weights straight into its columns of the reduce-
        # scatter's A ([rows, sum n_i], no cat; warm scratch memory).
        if nw > 1:
            gz = scratch_torch("ag-bwd-dz", (int(gzs[0].shape[0]),
                                             sum(int(t.shape[1]) for t in gzs)),
                               dt, gzs[0])
            gds, c0 = [], 0
            for t in gzs:
                c1 = c0 + int(t.shape[1])
                gds.append(gz[:, c0:c1])
                gds[-1].copy_(t)
                c0 = c1
        else:
            gds = [gzs[0] if _as_is(gzs[0], dt)
                   else scratch_copy("ag-bwd-dz", gzs[0], dt)]
            gz = gds[0]
        dA = None
        if ctx.needs_input_grad[1]:
            g = get_group(group)
            W = backward_weight(g.cache, Bs)  # [sum n_i, k]
            serial = g.cache.lookup(reduce_key("gemm-rs", (),
                                         int(W.shape[0]), int(W.shape[1]),
                                         DT[dt][1]), [W])
            everyone = allgather_ints(g.world, [ctx.rows, serial])
            ks = [int(W.shape[0])] * g.world.size
            dA = reduce_core(g, [o[1] for o in everyone], "gemm-rs",
                             gz, W, [o[0] for o in everyone],
                             ks).to(ctx.a_dtype)
        # gather(A)^T made contiguous once for every weight's dB (torch's
        # matmul is slower on the transposed view), in this thread's
        # scratch (_buffers.scratch_torch: warm memory, as gz above).
        At = scratch_copy("ag-bwd-at", A_g.t()) if any(ctx.needs_input_grad[2:2 + nw]) else None
        # Every weight's dB from one local plan (one pass of A^T).
        want = [i for i in range(nw) if ctx.needs_input_grad[2 + i]]
        # A dZ already contiguous in dt (an output gradient in the weights'
        # dtype) is taken as it is, not as its column slice of gz (which
        # a plan's weight would copy again).
        got = local_mm(At, [gzs[i] if _as_is(gzs[i], dt) else gds[i] for i in want],
                       dt) if want else []
        dBs = [None] * nw
        for i, d in zip(want, got):
            dBs[i] = d
        dbs = [gz.sum(0, dtype=torch.float32) if want else None
               for gz, want in zip(gzs, ctx.bias_grad)]
        return (None, dA, *dBs, *dbs)


def _ag_traced_backward(ctx, group, A_g, Bs, gzs, dt):
    """AllGatherMatmul's backward in torch ops and torch.ops.agmm.* only
    (traceable: torch.compile's AOTAutograd, FakeTensor): dA_shard from
    backward_round "ag" (a fused_matmul_reduce_scatter; every rank's shard
    the same size, as the fake kernels take them), the dB local matmuls."""
    nw = len(Bs)
    gds = [g.to(dt) for g in gzs]
    dA = None
    if ctx.needs_input_grad[1]:
        gz = gds[0] if nw == 1 else torch.cat(gds, 1)
        (dA,) = torch.ops.agmm.backward_round(gz, Bs, "ag", group, ctx.a_dtype)
    At = A_g.t() if any(ctx.needs_input_grad[2:2 + nw]) else None
    dBs = [(At @ gds[i]).to(dt) if ctx.needs_input_grad[2 + i] else None
           for i in range(nw)]
    dbs = [gz.sum(0, dtype=torch.float32) if want else None
           for gz, want in zip(gzs, ctx.bias_grad)]
    return (None, dA, *dBs, *dbs)


def backward_round(gz, Bs, kind, group_name, out_dtype):
    """torch.ops.agmm.backward_round's CPU kernel: the round of a traced
    backward against the weights' B^T kept per weight version
    (plan_cache.backward_weight), so that a compiled backward finds the
    same plan every step (a B^T made in the graph would be a new tensor,
    and a new plan, each step). kind "ag": [my rows of sum_r gz_r @ W_r]
    (fused_matmul_reduce_scatter, W = the B_i^T stacked); "rs": [gather(gz),
    gather(gz) @ B^T] (fused_all_gather_matmul); "cp": [sum_r gz_r @ W_r]
    (fused_matmul_all_reduce). Outputs in out_dtype."""
    W = backward_weight(get_group(group_name).cache, list(Bs))
    if kind == "ag":
        return [reduce_scatter_round(gz, W, group_name, out_dtype)]
    if kind == "rs":
        g_all, (d,) = all_gather_round(gz, W, group_name, True, out_dtype)
        return [g_all, d]
    if kind == "cp":
        return [all_reduce_round(gz, W, group_name, out_dtype)]
    raise ValueError("backward_round: kind %r" % (kind,))


def backward_round_fake(gz, Bs, kind, group_name, out_dtype):
    from ..kernels.fp import row_split
    from ..kernels.epilogue import out_dtype as _out_dtype
    out_dtype = _out_dtype(out_dtype)  # (a ScalarType code on torch 1.13)
    P, rank = meta_world(group_name)
    rows, k = int(gz.shape[0]), int(Bs[0].shape[0])
    if kind == "ag":
        return [gz.new_empty((row_split(rows, P)[rank], k), dtype=out_dtype)]
    if kind == "rs":
        return [gz.new_empty((rows * P, int(gz.shape[1]))),
                gz.new_empty((rows * P, k), dtype=out_dtype)]
    return [gz.new_empty((rows, k), dtype=out_dtype)]


class _ReduceBase(torch.autograd.Function):
    """Shared by the reduce-scatter and the all-reduce: forward runs
    `ctx.op(A, B, bias)`, the rest of the arguments in info."""

    @staticmethod
    def _forward(ctx, op_call, info, A, B, bias):
        act, dt = info[-2], info[-1]
        z = below_autograd(op_call, A, B, bias)
        y = apply_epilogue(z, None, act, dt)
        ctx.info = info
        ctx.bias_grad = bias is not None and bias.requires_grad
        ctx.save_for_backward(A, B, z if act is not None else None, y)
        return y


class MatmulReduceScatter(_ReduceBase):
    @staticmethod
    def forward(ctx, info, A, B, bias):
        group, scatter_dim = info[0], info[1]
        return _ReduceBase._forward(
            ctx, lambda a, b, bb: torch.ops.agmm.fused_matmul_reduce_scatter(
                a, b, "sum", scatter_dim, group, bias=bb,
                out_dtype=torch.float32), info, A, B, bias)

    @staticmethod
    def backward(ctx, gy):
        group, sd, act, _ = ctx.info
        A, B, z, y = ctx.saved_tensors
        gz = epilogue_backward(z if z is not None else y, gy, act)
        nd = A.dim()
        dd = sd + nd if sd < 0 else sd
        # The scatter dimension first, the rest folded into rows.
        gzm = gz if dd == 0 else gz.movedim(dd, 0)
        n = int(B.shape[1])
        dt = B.dtype
        if not plain_cpu([A, B, z, y, gy]):
            return _rs_traced_backward(ctx, group, A, B, gzm, dd, dt)
        g = get_group(group)
        k = int(A.shape[-1])
        # One ag-gemm round has one column count: with uneven k_local the
        # ranks pad B_r^T with zero columns to the largest k.
        kmax = max(o[0] for o in allgather_ints(g.world, [k]))
        Bt = backward_weight(g.cache, [B], kmax)  # [n, kmax]
        want_A, want_B = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
        dA = dB = None
        if want_A or want_B:
            # dA in A's dtype straight from the round (the plan's own
            # epilogue: one rounding of the float32 product, as .to()).
            out = [A.dtype]
            gz_all, (dA2,) = torch.ops.agmm.fused_all_gather_matmul(
                scratch_copy("rs-bwd-dz", gzm.reshape(-1, n), dt), [Bt], 0, group,
                return_A=True, out_dtypes=out)
            am = A if dd == 0 else A.movedim(dd, 0)
            if want_A:
                dA = dA2[:, :k].reshape(list(am.shape)).to(A.dtype)
                dA = dA if dd == 0 else dA.movedim(0, dd)
            if want_B:
                dB = _mm(scratch_copy("rs-bwd-at", as_rows(am).t()), gz_all, dt)
        db = gz.reshape(-1, n).sum(0) if ctx.bias_grad else None
        return None, dA, dB, db


def _rs_traced_backward(ctx, group, A, B, gzm, dd, dt):
    """MatmulReduceScatter's backward in torch ops and torch.ops.agmm.*
    only (traceable): backward_round "rs", one fused_all_gather_matmul of
    dZ with B^T (every
    rank's k_local the same, as one round needs: no padding, which would
    take an all-gather of the k's), dB local."""
    n = int(B.shape[1])
    want_A, want_B = ctx.needs_input_grad[1], ctx.needs_input_grad[2]
    dA = dB = None
    if want_A or want_B:
        gz_all, dA2 = torch.ops.agmm.backward_round(
            gzm.reshape(-1, n).to(dt), [B], "rs", group, A.dtype)
        am = A if dd == 0 else A.movedim(dd, 0)
        if want_A:
            dA = dA2.reshape(list(am.shape))
            dA = dA if dd == 0 else dA.movedim(0, dd)
        if want_B:
            dB = (as_rows(am).t() @ gz_all).to(dt)
    db = gzm.reshape(-1, n).sum(0) if ctx.bias_grad else None
    return None, dA, dB, db


class MatmulAllReduce(_ReduceBase):
    @staticmethod
    def forward(ctx, info, A, B, bias):
        group = info[0]
        return _ReduceBase._forward(
            ctx, lambda a, b, bb: torch.ops.agmm.fused_matmul_all_reduce(
                a, b, "sum", group, bias=bb, out_dtype=torch.float32),
            info, A, B, bias)

    @staticmethod
    def backward(ctx, gy):
        group, act, _ = ctx.info
        A, B, z, y = ctx.saved_tensors
        gz = epilogue_backward(z if z is not None else y, gy, act)
        n = int(B.shape[1])
        gz2 = gz.reshape(-1, n)
        dt = B.dtype
        if not plain_cpu([A, B, z, y, gy]):  # traceable: torch's matmuls
            g2 = gz2.to(dt)
            dA = (g2 @ B.t()).view(list(A.shape)).to(A.dtype) \
                if ctx.needs_input_grad[1] else None
            dB = (as_rows(A).t() @ g2).to(dt) if ctx.needs_input_grad[2] else None
            return None, dA, dB, (gz2.sum(0) if ctx.bias_grad else None)
        # B^T contiguous, kept per weight (backward_weight) for the local GEMM.
        dA = _mm(gz2, backward_weight(get_group(group).cache, [B]), dt).view(
            list(A.shape)).to(A.dtype) if ctx.needs_input_grad[1] else None
        dB = _mm(as_rows(A).t(), gz2, dt) if ctx.needs_input_grad[2] else None
        db = gz2.sum(0) if ctx.bias_grad else None
        return None, dA, dB, db
