"""The plans' epilogue through the package: Plan(bias=, activation=,
out_dtype=), set_bias, run() returning C in the out dtype (bf16 from
NumPy as uint16 bits), checked against NumPy in float64 on 1 and 2 ranks
(epilogue_scenarios.py), and the names and defaults without a world."""
import numpy as np
import pytest

import agmm
from agmm import _lib
from conftest import run_world


def test_activation_names_and_default_out_dtype():
    f = _lib.fn.agmm_activation_name
    assert [_lib.text(f(v)) for v in sorted(_lib.ACTIVATIONS.values())] == \
        list(_lib.ACTIVATIONS)
    assert _lib.text(f(99)) == "invalid"
    d = _lib.PlanDesc()
    _lib.fn.agmm_plan_desc_init(d)
    assert d.d.out_dtype == _lib.DTYPES["fp32"]  # 0 would be fp16
    assert d.d.activation == 0 and d.d.bias == 0
    import inspect
    sig = inspect.signature(agmm.Plan.__init__).parameters
    assert sig["bias"].default is False
    assert sig["activation"].default == "none"
    assert sig["out_dtype"].default == "fp32"


@pytest.mark.parametrize("nranks", [1, 2])
def test_epilogue_against_numpy(nranks):
    m_local = [9, 6][:nranks]
    run_world(nranks, "epilogue", dict(m_local=m_local, k=20, n=24, torch=True))


@pytest.mark.parametrize("nranks", [1, 2])
def test_gated_activation_against_torch(nranks):
    """silu-mul / gelu-tanh-mul: W [gate | up] of 2i columns, C of i."""
    run_world(nranks, "glu", dict(m_local=[9, 6][:nranks], k=20, i=13,
                                  torch=True))


@pytest.mark.parametrize("nranks", [1, 2])
def test_gated_activation_torch_op_and_autograd(nranks):
    """agmm.torch.fused_all_gather_matmul(activation="silu_mul"): forward
    and gradients against torch's F.silu(x @ Wg) * (x @ Wu)."""
    run_world(nranks, "glu_torch", dict(m=7, k=20, i=13, torch=True))
