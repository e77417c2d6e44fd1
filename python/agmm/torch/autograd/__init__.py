"""agmm.torch's autograd layer: the torch.autograd.Functions of the fp ops
(functions.py), column_parallel_matmul (colpar.py) and silu_and_mul
(glu.py). Imports kernels/ and distributed/, never library/ (a backward
reaches an op through torch.ops.agmm.*, or kernels/calls.py).
"""
