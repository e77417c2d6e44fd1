"""agmm.torch: the fused ops of a tensor-parallel layer PyTorch users know
(torch.ops.symm_mem's names and arguments), on CPU tensors.

    import agmm.torch
    agmm.torch.register_group("tp", world)      # or the default: from env
    A, [C] = agmm.torch.fused_all_gather_matmul(A_shard, [B], gather_dim=0,
                                                 group_name="tp")

The signature and results follow torch.ops.symm_mem.fused_all_gather_matmul
(which has no CPU kernel): A_shard [..., k] is gathered along gather_dim
across the group's ranks (in rank order, as torch.cat(all_gather(A_shard),
gather_dim)), each B_i [k, n_i] multiplies it, and the op returns
(A_gathered or None, [C_i]). Differences, all by design:
  - none in C_i's dtype: A's, as torch's (agmm accumulates in fp32 and
    rounds once; out_dtype=torch.float32 keeps the sums);
  - shards may differ in size along gather_dim (agmm allows uneven shards;
    torch requires equal ones): each call all-gathers every rank's shape (a
    few bytes, one small collective), which also turns a shape mismatch
    into an error on every rank instead of a hang;
  - gather_dim != 0 costs a copy of A_shard into gather_dim-first layout
    (torch does the same) and C comes back as a view in the original
    layout;
  - a B that is not C-contiguous (B = W.t()) is copied once per plan and
    weight version.
It is registered as the custom op torch.ops.agmm.fused_all_gather_matmul
(torch.library, CPU kernel in Python; torch 1.13 allows it), and this
module's function runs it: on plain CPU tensors (no FakeTensor, subclass
or dispatch mode, not tracing: kernels/dispatch.py's plain_cpu) without
the dispatcher, by the plain call of kernels/plain.py when no input needs a
gradient (the CPU kernel's results and errors, with less Python per call:
it reuses what the previous call with the same arguments checked and
found) or else by calling the op's Autograd kernel itself
(docs/history/, "The op's own cost"); otherwise through
torch.ops.agmm.*, so FakeTensor and tracing see the op.

Plans are cached per group, per (k, [n_i], dtype) and per weights
(data_ptr, version counter, strides of each B): a weight changed in place
(its _version moves) is set again; a new weight tensor gets a new plan.
With per-call rows (agmm_plan_run_args) one plan serves every row count
up to its capacity (each rank's largest rows so far, rounded up to a power
of two) and is replaced by a larger one when a call needs more. Several
weights share one plan and one gather. return_A: the library fills
A_gathered in the same round (agmm_run_args_t.a_gathered). A plan lives
as long as its weights: it is closed at the group's next plan creation
after they are gone on every rank, or, where register_group was given a
plan_cache_size (PLAN_CACHE_SIZE, None, by default: no bound), when it is
the least recently used beyond it. Plans are created, reused and closed
identically on every rank because every rank makes the same calls in the
same order; the cache is closed with the group (unregister_group, or the
world's close()).

W8A8 (issue 22), PyTorch's scaled ops with int8 in place of fp8:
  fused_all_gather_scaled_matmul(A_shard, Bs, A_scale, B_scales,
      gather_dim=0, group_name=None, out_dtypes=None) -> (A_gathered, [C_i])
  fused_scaled_matmul_reduce_scatter(A, B, A_scale, B_scale,
      reduce_op="sum", scatter_dim=0, group_name=None, out_dtype=None) -> C
(torch.ops.agmm.*). Scales are float32 and laid out as torch's: A_scale
[*A.shape[:-1], 1] per row or one element per tensor (each rank's own),
B_scale [1, n] per column or one element; every rank and every weight of
a call must use one layout for A and one for the weights (a shape that
reads either way, one row or one column, goes with the others). Outputs
float32, or bfloat16 converted after the round; no other out dtype, no
gather/scatter dimension but 0, no reduce_op but "sum". int8 plans are
cached like the others, also keyed by the scale layouts; a B_scale
changed in place or replaced sets the weight again. A_gathered is the
int8 rows (torch returns no gathered scales either).

The layer's other ops (issue 23), with torch's argument names:
  fused_matmul_reduce_scatter(A, B, reduce_op="sum", scatter_dim=0,
      group_name=None) -> C   (gemm-rs: A [M, ..., k_local[rank]], B
      [k_local[rank], n], C this rank's rows [M_rank, ..., n])
  fused_matmul_all_reduce(A, B, reduce_op="sum", group_name=None) -> C
      (gemm-ar: C = sum_r A_r @ B_r [M, ..., n] on every rank)
The fp ops take bias=None, activation=None ("relu", "gelu-tanh",
"gelu-erf", "silu"; on the all-gather op also the gated "silu-mul" or
"silu_mul" and "gelu-tanh-mul": B [k, 2i] = [gate | up], C [..., i] =
act(gate) * up, differentiable) and out_dtype=None (A's dtype; float32,
bfloat16, float16),
applied once to the final result (kernels/epilogue.py's apply_epilogue;
the all-gather op's by its plan inside the round where it can:
kernels/fp.py's lib_epilogue), and have autograd (autograd/functions.py)
and fake kernels (library/ops.py: shapes only, for FakeTensor tracing).

The package, along PyTorch's own seams (each layer imports only the ones
below it; tests/python/import_graph.py checks it, docs/design.md):
  library/       torch.library: the schemas, each op's kernels and fake
                 kernels (ops.py, wq_ops.py), torch.ops.symm_mem.* under
                 agmm (symm.py, torch 2.6);
  autograd/      torch.autograd.Functions of the fp ops (functions.py),
                 column_parallel_matmul (colpar.py), silu_and_mul (glu.py),
                 the ops with QuantizedWeights (wq.py);
  kernels/       the CPU kernels, the code that runs agmm plans: fp.py,
                 int8.py, wq.py (QuantizedWeights),
                 wq_colpar.py, local.py (one-rank local GEMMs), colpar.py
                 (column_parallel_matmul's), glu.py (silu_and_mul's row
                 blocks), plain.py
                 (the plain calls), epilogue.py, dispatch.py (which path a
                 call takes; torch.compile: every call a torch.ops.agmm.*
                 node), calls.py (the rounds a backward runs), wq_traced.py;
  distributed/   the groups and their worlds (groups.py) and the plan
                 cache (plan_cache.py: the one module that holds it).

An agmm.QuantizedWeight (int4/int8, grouped scales) may stand for any
weight of the three fp ops (the all-gather op: every weight of the call,
one format): agmm's weight kernels, the input's and bias's gradients from
the dequantized weight, none for the weight (kernels/wq.py,
autograd/wq.py); under
tracing (torch.compile, FakeTensor) the forward is torch.ops.agmm.*_wq,
which take the weights by their op_id and have fake kernels
(library/wq_ops.py).

column_parallel_matmul(A, Bs, group_name=None) -> [A @ B_i] is plain
tensor parallelism's column-parallel GEMMs on an input every rank holds
whole: local in the forward; its backward all-reduces the input's
gradient (Megatron's "f") in one fused_matmul_all_reduce round
(autograd/colpar.py).

silu_and_mul(gate, up) -> (silu(gate.float()) * up.float()).to(gate.dtype)
is a Llama MLP's gated activation between the two, differentiable, bit
for bit torch's expression, with no whole-size float32 temporary
(autograd/glu.py: the expression's fresh tensors cost more in page touching
than in arithmetic on a VM; examples/tp_mlp.py trains through it).
"""
import torch

from .distributed.groups import (DEFAULT_GROUP, group_plans, register_group,
                                 unregister_group)
from .distributed.plan_cache import PLAN_CACHE_SIZE
from .kernels.epilogue import ACTIVATIONS
from .kernels.dispatch import needs_grad as _needs_grad, plain_cpu as _plain_cpu
from .kernels.fp import plan_op_available
from .kernels.int8 import (int8_out_dtype as _int8_out_dtype,
                           int8_out_dtypes as _int8_out_dtypes)
from .kernels import plain as _plain
from .autograd import wq as _wq
from .autograd.glu import silu_and_mul
from .autograd import colpar as _colpar
from .library import ops as _ops  # registers torch.ops.agmm.*
from .library import symm as _symm
from ..qweight import QuantizedWeight as _QW

REGISTERED_OP = True  # torch.ops.agmm.fused_all_gather_matmul exists
# torch.ops.symm_mem.fused_all_gather_matmul / fused_matmul_reduce_scatter
# run agmm's CPU kernels, where torch defines them (torch 2.6:
# library/symm.py).
SYMM_MEM_CPU = _symm.register()


def _name(group_name):
    return DEFAULT_GROUP if group_name is None else group_name


def _list_or_none(value, count):
    """None, or one value per weight (a single value repeated)."""
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return list(value)
    return [value] * count


def fused_all_gather_matmul(A_shard, Bs, gather_dim=0, group_name=None,
                            return_A=True, bias=None, activation=None,
                            out_dtype=None):
    """(A_gathered or None, [C_i]) with A_gathered = cat of every rank's
    A_shard along gather_dim and C_i = act_i(A_gathered @ Bs[i] + bias_i)
    (A's dtype, or out_dtype_i). bias, activation and out_dtype: one value
    for every weight or a list of one per weight (None: none; a bias is
    [n_i]). Runs torch.ops.agmm.fused_all_gather_matmul (differentiable
    in A_shard, Bs and the biases); group_name None: the default group (the
    world from the environment)."""
    Bs = list(Bs)
    # QuantizedWeights first: autograd/wq.py makes its own dispatch check
    # (plain_cpu: a few us a call at decode), so none is made here.
    if any(isinstance(B, _QW) for B in Bs):
        return _wq.fused_all_gather_matmul(
            A_shard, Bs, int(gather_dim), _name(group_name), return_A, bias,
            activation, out_dtype)
    if bias is None and activation is None and out_dtype is None:
        ts = [A_shard] + Bs  # the inference call without an epilogue
        if _plain_cpu(ts) and not _needs_grad(ts):
            return _plain.ag_plain(A_shard, Bs, int(gather_dim),
                                         _name(group_name), return_A)
    nw = len(Bs)
    if isinstance(bias, torch.Tensor):
        bias = [bias] * nw
    acts = _list_or_none(activation, nw)
    args = (A_shard, Bs, int(gather_dim), _name(group_name))
    kw = dict(return_A=return_A, biases=None if bias is None else list(bias),
              activations=None if acts is None else
              ["" if a is None else a for a in acts],
              out_dtypes=_list_or_none(out_dtype, nw))
    ts = [A_shard] + Bs + (kw["biases"] or [])
    if _plain_cpu(ts):
        if not _needs_grad(ts):  # inference: kernels/plain.py
            return _plain.ag_plain(*args, **kw)
        return _ops.ag_autograd(*args, plain=True, **kw)
    return torch.ops.agmm.fused_all_gather_matmul(*args, **kw)


def fused_matmul_reduce_scatter(A, B, reduce_op="sum", scatter_dim=0,
                                group_name=None, bias=None, activation=None,
                                out_dtype=None):
    """GEMM + reduce-scatter (agmm's op "gemm-rs"): this rank's rows along
    scatter_dim of act(sum_r A_r @ B_r + bias), A_r [..., k_local[r]] (rank
    r's slice of the inner dimension), B_r [k_local[r], n], bias [n] added
    once to the reduced rows. Rows are split as agmm_k_split splits them
    (equal when the ranks divide them, as torch requires; else the first
    ones one more). A's dtype, or out_dtype. Calls
    torch.ops.agmm.fused_matmul_reduce_scatter (differentiable)."""
    args = (A, B, str(reduce_op), int(scatter_dim), _name(group_name))
    kw = dict(bias=bias, activation=activation, out_dtype=out_dtype)
    if isinstance(B, _QW):  # an agmm.QuantizedWeight: autograd/wq.py
        return _wq.fused_matmul_reduce(
            "gemm-rs", "fused_matmul_reduce_scatter", A, B, *args[2:], **kw)
    if _plain_cpu([A, B, bias]):
        if not _needs_grad([A, B, bias]):  # inference: kernels/plain.py
            return _plain.rs_plain(*args, **kw)
        return _ops.rs_autograd(*args, plain=True, **kw)
    return torch.ops.agmm.fused_matmul_reduce_scatter(*args, **kw)


def fused_matmul_all_reduce(A, B, reduce_op="sum", group_name=None, bias=None,
                            activation=None, out_dtype=None):
    """GEMM + all-reduce (agmm's op "gemm-ar"): act(sum_r A_r @ B_r + bias)
    [..., n] on every rank, A_r [..., k_local[r]], B_r [k_local[r], n],
    in A's dtype or out_dtype. Runs torch.ops.agmm.fused_matmul_all_reduce (differentiable; the
    backward takes grad_out to be the same on every rank). Raises
    agmm.Unsupported when this agmm has no op "gemm-ar"
    (plan_op_available("gemm-ar"))."""
    args = (A, B, str(reduce_op), _name(group_name))
    kw = dict(bias=bias, activation=activation, out_dtype=out_dtype)
    if isinstance(B, _QW):  # an agmm.QuantizedWeight: autograd/wq.py
        return _wq.fused_matmul_reduce(
            "gemm-ar", "fused_matmul_all_reduce", A, B, args[2], None, args[3],
            **kw)
    if _plain_cpu([A, B, bias]):
        if not _needs_grad([A, B, bias]) and plan_op_available("gemm-ar"):
            return _plain.ar_plain(*args, **kw)
        return _ops.ar_autograd(*args, plain=True, **kw)
    return torch.ops.agmm.fused_matmul_all_reduce(*args, **kw)


def column_parallel_matmul(A, Bs, group_name=None, activation=None):
    """[C_i] = [A @ B_i for B_i in Bs] on this rank, no communication: A
    [..., k] the same on every rank (plain tensor parallelism's input),
    B_i [k, n_i] this rank's columns of weight i, C_i in A's dtype
    (agmm's engine on a one-rank plan where the product is large enough,
    else torch's matmul: kernels/local.py's local_mm). Differentiable: the
    backward returns A's whole gradient on every rank, sum over ranks of
    sum_i dC_i @ B_i^T, from one
    GEMM + all-reduce round through agmm (fused_matmul_all_reduce of the
    dC_i side by side against the B_i^T stacked), and each B_i's own
    gradient A^T @ dC_i; every rank must run it. Without it a replicated
    input's gradient is this rank's share (the all-reduce is the
    caller's). Ranks may hold different n_i.

    activation: None, or one activation for every C_i: "relu",
    "gelu-tanh", "gelu-erf", "silu", or a gated one, "silu_mul" or
    "gelu_tanh_mul" (or with hyphens), for which each B_i's n_i columns
    are [gate | up] halves and C_i = act(A @ gate_i) * (A @ up_i)
    [..., n_i / 2] (a Llama MLP's gate and up in one call). In inference on agmm's decode
    kernels (QuantizedWeights; bf16 weights at up to 32 rows) it is the
    GEMM's epilogue: from the float32 sums, rounded once, the [rows, n_i]
    product never written. Elsewhere (a gradient wanted, torch.compile,
    other dtypes or rows) C_i is the product in A's dtype, then the
    activation (silu_and_mul for "silu_mul"), differentiable."""
    if activation is not None:
        return _colpar.column_parallel_matmul_act(A, Bs, _name(group_name),
                                                  activation)
    return _colpar.column_parallel_matmul(A, Bs, _name(group_name))


def fused_all_gather_scaled_matmul(A_shard, Bs, A_scale, B_scales, gather_dim=0,
                                   group_name=None, out_dtypes=None,
                                   return_A=True):
    """W8A8: (A_gathered or None, [C_i]) with A_gathered = cat of every
    rank's int8 A_shard along dim 0 and C_i = (A_gathered @ Bs[i]) scaled
    by the rows' and the columns' scales. A_shard int8 [..., k]; A_scale
    float32 [*A_shard.shape[:-1], 1] (per row) or one element (per rank's
    shard); Bs[i] int8 [k, n_i] with B_scales[i] float32 [1, n_i] (per
    column) or one element. out_dtypes: None (float32), one dtype or one
    per weight, float32 or bfloat16 (converted after the round). Calls
    torch.ops.agmm.fused_all_gather_scaled_matmul."""
    Bs, B_scales = list(Bs), list(B_scales)
    outs = _int8_out_dtypes(out_dtypes, len(Bs)) if len(Bs) else []
    return torch.ops.agmm.fused_all_gather_scaled_matmul(
        A_shard, Bs, A_scale, B_scales, int(gather_dim),
        _name(group_name), outs,
        return_A=return_A)


def fused_scaled_matmul_reduce_scatter(A, B, A_scale, B_scale, reduce_op="sum",
                                       scatter_dim=0, group_name=None,
                                       out_dtype=None):
    """W8A8 GEMM + reduce-scatter: this rank's rows of sum_r (A_r @ B_r)
    scaled, A_r int8 [M, ..., k_local[r]] (rank r's slice of the inner
    dimension), A_scale float32 [M, ..., 1] (per row) or one element,
    B_r int8 [k_local[r], n] with B_scale float32 [1, n] or one element.
    The rows are split along dimension 0 as agmm_k_split does (equal when
    the ranks divide it, as torch requires; else the first ones one more).
    out_dtype: None/float32 or bfloat16. Calls
    torch.ops.agmm.fused_scaled_matmul_reduce_scatter."""
    _int8_out_dtype(out_dtype, "out_dtype")
    return torch.ops.agmm.fused_scaled_matmul_reduce_scatter(
        A, B, A_scale, B_scale, str(reduce_op), int(scatter_dim),
        _name(group_name), out_dtype)


__all__ = ["fused_all_gather_matmul", "fused_matmul_reduce_scatter",
           "fused_matmul_all_reduce", "fused_all_gather_scaled_matmul",
           "silu_and_mul", "column_parallel_matmul",
           "fused_scaled_matmul_reduce_scatter", "register_group",
           "unregister_group", "group_plans", "plan_op_available",
           "ACTIVATIONS", "PLAN_CACHE_SIZE", "DEFAULT_GROUP", "REGISTERED_OP",
           "SYMM_MEM_CPU"]
