"""What the scenario files of the Python test worlds share
(rank_worker.py, int8_scenarios.py, epilogue_scenarios.py): small-integer
inputs (exact in fp32 whatever the order of the sums), the conversion of
a float32 array to a plan's dtype, numpy or torch, and C back as numpy."""
import numpy as np

import agmm

NP = {"fp16": np.float16, "fp32": np.float32}


def ints(seed, shape, lo=-3, hi=4):
    return np.random.default_rng(seed).integers(lo, hi, size=shape).astype(np.float32)


def as_dtype(x32, dtype, kind):
    """x32 (float32 numpy) as the plan's dtype, numpy or torch."""
    if kind == "torch":
        import torch
        t = torch.from_numpy(x32)
        return t.to({"fp16": torch.float16, "bf16": torch.bfloat16,
                     "fp32": torch.float32}[dtype])
    if dtype == "bf16":
        return agmm.bf16_from_float32(x32)  # uint16 bits
    return x32.astype(NP[dtype])


def to_numpy32(c):
    return c.numpy() if hasattr(c, "numpy") and not isinstance(c, np.ndarray) else c
