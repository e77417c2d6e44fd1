"""agmm.torch's torch.library layer: the schemas of torch.ops.agmm.*, each
op's CPU, Autograd and fake kernels registered (ops.py; the
QuantizedWeight ops: wq_ops.py), and agmm's CPU kernels under
torch.ops.symm_mem.* (symm.py). Imports autograd/, kernels/ and
distributed/; nothing below imports it.
"""
