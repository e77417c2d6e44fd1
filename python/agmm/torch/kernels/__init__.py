"""agmm.torch's CPU kernels: the code that runs agmm plans (fp.py,
int8.py, wq.py and wq_colpar.py for QuantizedWeights (their Functions:
autograd/wq.py), local.py's one-rank
local GEMMs, colpar.py's column-parallel ones, plain.py's plain calls),
silu_and_mul's row blocks (glu.py), the epilogue (epilogue.py), which
path a call takes (dispatch.py), the rounds a backward runs (calls.py)
and the QuantizedWeight ops' traced calls (wq_traced.py). Imports
distributed/ only (and torch.ops.agmm.* through the dispatcher).
"""
