"""agmm.torch's autograd layer: the torch.autograd.Functions of the fp ops
(functions.py), column_parallel_matmul (colpar.py), silu_and_mul
(glu.py) and the ops with QuantizedWeights (wq.py). Imports kernels/ and distributed/, never library/ (a backward
reaches an op through torch.ops.agmm.*, or kernels/calls.py).
"""
