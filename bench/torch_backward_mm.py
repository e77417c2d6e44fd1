#!/usr/bin/env python3
"""The matmuls of a plain-TP layer's backward as torch's autograd makes
them, alone on one thread (docs/history/, "Plain TP's dx
all-reduced"): for x [rows, h], a column-parallel weight w [h, i_r] and
the output gradient g [rows, i_r]:

  dx share     g @ w.t()          (a transposed view of the weight)
  dx, w^T      g @ w^T            (w^T made contiguous once, as agmm's
                                   backward caches it)
  dW fresh     x.t() @ g          (a fresh [h, i_r] output, as autograd's)
  dW advised   the same into an output advised for huge pages and made
               new each call (agmm._buffers.empty_torch, what
               kernels/local.py's local_mm writes into)
  fresh alone  torch.empty(h, i_r).zero_(): the first touch of the pages

    PYTHONPATH=build/python bench/torch_backward_mm.py [--hidden 4096]
        [--inter-local 5504] [--rows 8,4096] [--reps 5] [--dtype bf16]

Prints the median ms of each per row count. Exit 2 for bad arguments.
"""
import argparse
import statistics
import time

import torch

from agmm._buffers import empty_torch


def median_ms(fn, reps):
    fn()  # warm
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--inter-local", type=int, default=5504)
    p.add_argument("--rows", default="8,4096")
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--dtype", choices=["bf16", "fp32"], default="bf16")
    a = p.parse_args()
    try:
        rows = [int(r) for r in a.rows.split(",")]
    except ValueError:
        p.error("--rows: %r (allowed: positive integers, comma-separated)" % a.rows)
    for name, v in (("--hidden", a.hidden), ("--inter-local", a.inter_local),
                    ("--reps", a.reps)) + tuple(("--rows", r) for r in rows):
        if v < 1:
            p.error("%s: %d (at least 1)" % (name, v))
    torch.set_num_threads(1)
    dt = {"bf16": torch.bfloat16, "fp32": torch.float32}[a.dtype]
    h, n = a.hidden, a.inter_local
    w = torch.randn(h, n).to(dt)
    wt = w.t().contiguous()
    print("torch %s, 1 thread, h %d, i_r %d, %s, median of %d (ms)"
          % (torch.__version__, h, n, a.dtype, a.reps))
    print("%6s %12s %12s %12s %12s %12s" % ("rows", "dx share", "dx, w^T",
                                           "dW fresh", "dW advised",
                                           "fresh alone"))
    for m in rows:
        x = torch.randn(m, h).to(dt)
        g = torch.randn(m, n).to(dt)
        xt = x.t().contiguous()
        cols = [
            median_ms(lambda: g @ w.t(), a.reps),
            median_ms(lambda: g @ wt, a.reps),
            median_ms(lambda: x.t() @ g, a.reps),
            median_ms(lambda: torch.mm(xt, g, out=empty_torch((h, n), dt)), a.reps),
            median_ms(lambda: torch.empty(h, n, dtype=dt).zero_(), a.reps),
        ]
        print("%6d %12.1f %12.1f %12.1f %12.1f %12.1f" % ((m,) + tuple(cols)),
              flush=True)


if __name__ == "__main__":
    main()
