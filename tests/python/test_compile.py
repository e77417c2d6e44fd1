"""torch.compile(fullgraph=True) of examples/tp_mlp.py's MLP at 2 ranks
(compile_worker.py): both forms, forward and forward + backward, backends
aot_eager and inductor, no graph break, agmm's ops in the graph, equal to
eager within bf16 rounding; the forward with int4 QuantizedWeights too
(torch.ops.agmm.*_wq, fake kernels). Registered by tests/CMakeLists.txt only where
the interpreter's torch has torch.compile (torch >= 2): Debian 13's 2.6.
"""
import os

import torch

from conftest import run_world

WORKER = os.path.join(os.path.dirname(os.path.abspath(__file__)), "compile_worker.py")


def test_torch_has_compile():
    # Registered for torch >= 2 only: it must have what the test needs.
    assert hasattr(torch, "compile") and hasattr(torch.compiler, "is_compiling")


def test_tp_mlp_compiles_without_graph_breaks_aot_eager():
    run_world(2, "mlp", dict(backends=["aot_eager"], h=64, i=96, m=8),
              timeout=600, worker=WORKER)


def test_tp_mlp_compiles_without_graph_breaks_inductor():
    run_world(2, "mlp", dict(backends=["inductor"], h=64, i=96, m=8),
              timeout=900, worker=WORKER)
