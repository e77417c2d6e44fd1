"""agmm.torch's ops with agmm.QuantizedWeight weights (issue 48 item 5) at
2 ranks (torch_wq_scenarios.py, run by rank_worker.py): forward against
the exactly dequantized product within check_wq.h's bound, the input's
gradient against torch autograd in float64, int4 G 32 symmetric and int8
asymmetric over all of k, bf16 and float32 A, 1 and 33 rows and an empty
shard; refusals by name, tracing refused, the plan cache, silu_mul,
column_parallel_matmul's activation= (fused in the local plans' epilogue)."""
import pytest

from conftest import run_world


@pytest.mark.parametrize("part", ["ag", "gemm-rs", "gemm-ar", "colpar", "misc"])
def test_torch_ops_take_quantized_weights(part):
    run_world(2, "torch_wq", dict(part=part, torch=True), timeout=300)
