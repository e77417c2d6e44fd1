#!/usr/bin/python3
"""Decode at the memory wall: the plain tensor-parallel Llama MLP
(examples/tp_mlp.py's TPMLP, form "tp": x [B, h] on every rank, gate and up
local, down + all-reduce) over a stack of L layers, each layer's weights
its own (a model's layers stream from DRAM one after the other), in each
weight format (--weights bf16,int8,int4[,int4a8,int8a8]: tensors, or agmm.QuantizedWeights
run by agmm's weight kernels), timed against its floor.

usage: PYTHONPATH=build/python /usr/bin/python3 bench/decode_mlp.py
           [--agmm build/agmm] [--ranks 2] [--hidden 4096] [--inter 11008]
           [--layers 4] [--rows 1,8,32] [--weights bf16,int8,int4]
           [--reps 10] [--warmup 2] [--json FILE]

A step is one forward of every layer on x [B, h] (bf16, no gradient); a
layer's time is the step's over L, the slowest rank's (every rank times
its own step after a barrier). The floor of a layer is
  max(weight bytes per rank / the DRAM read rate of one core,
      FLOPs per rank / the peak of the instruction the kernel multiplies with)
both measured by `agmm bench --json` on this machine before the ranks
start (dram_read_gbps_per_core: a read loop over 8x the L3 on one core;
the peaks of VFMADD231PS, VDPBF16PS and VPDPBUSD; the floor takes the
faster of the first two for every format but the a8 ones (A quantized to
int8: the int8 dot's, VPDPBUSD): bf16 multiplies with VDPBF16PS where the
CPU has it, and
agmm's int4 / int8 kernels do for bf16 rows where their measurement picks
the dot kernel, else the FMA, whose own floor is then higher: the bench
prints each peak it measured). The report: per
format and B, the median layer time [min-max], the weight MB per rank,
the GB/s that makes, the floor and the fraction of it, and each format's
time over bf16's. Formats alternate rep by rep blocks (--pairs) so drift
hits them alike. Do not read timings from a busy host.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "examples"))

FORMATS = {"bf16": "dense", "int8": "int8", "int4": "int4",
           "int8a8": "int8-a8", "int4a8": "int4-a8"}  # a8: W8A8 / W4A8


def split(n, P):
    sizes = [n // P + (1 if r < n % P else 0) for r in range(P)]
    return [(sum(sizes[:r]), sum(sizes[:r + 1])) for r in range(P)]


def measured_rates(agmm_bin):
    """(dram GB/s per core, [(instr, GFLOP/s per core)]) from agmm bench."""
    peaks, dram = {}, None
    # fp32 FMA's peak; bf16's dot where it has one; the a8 formats' kernel's
    # (VPDPBUSD where it runs: an int4 weight with A quantized to int8; not
    # --dtype int8, which needs oneDNN)
    for extra in (["--dtype", "fp32"], ["--dtype", "bf16"],
                  ["--dtype", "bf16", "--weight-dtype", "int4", "--a-quant", "int8"]):
        out = subprocess.run(
            [agmm_bin, "bench", "--m-local", "1", "--k", "256", "--n", "256"] +
            extra + ["--rounds", "1", "--warmup", "0", "--json"],
            check=True, capture_output=True, text=True).stdout
        d = json.loads(out)
        dram = d["dram_read_gbps_per_core"] if dram is None else dram
        for pk in d.get("peaks", []):
            peaks[pk["instr"]] = pk["gflops"]
    return dram, sorted(peaks.items())


def weight_bytes(layer):
    n = 0
    for w in (layer.w_gate_up, layer.w_gate, layer.w_up, layer.w_down):
        if w is None:  # quantized "tp": w_gate_up instead of w_gate, w_up
            continue
        n += w.nbytes if hasattr(w, "nbytes") and not torch.is_tensor(w) \
            else w.numel() * w.element_size()
    return n


def slowest(world, seconds):
    import struct
    return max(struct.unpack("<d", b)[0]
               for b in world.allgather(struct.pack("<d", seconds)))


def run_rank(args):
    import agmm
    import agmm.torch as at
    from tp_mlp import TPMLP
    torch.set_num_threads(1)
    with agmm.World.from_env(timeout=args.timeout) as world:
        at.register_group("tp", world)
        P, me = world.size, world.rank
        h, i = args.hidden, args.inter
        stacks = {}
        for fmt in args.weights:
            layers = []
            for li in range(args.layers):
                g = torch.Generator().manual_seed(1000 + li)
                full = [torch.randn(h, i, generator=g) / h ** 0.5,
                        torch.randn(h, i, generator=g) / h ** 0.5,
                        torch.randn(i, h, generator=g) / i ** 0.5]
                layers.append(TPMLP(h, i, me, P, mode="tp", dtype=torch.bfloat16,
                                    full=full, weights=FORMATS[fmt]).eval())
                del full
            stacks[fmt] = layers
        results = []
        for B in args.rows:
            x = torch.randn(B, h, generator=torch.Generator().manual_seed(B)
                            ).to(torch.bfloat16)
            times = {fmt: [] for fmt in args.weights}

            def step(layers):
                y = x
                with torch.no_grad():
                    for layer in layers:
                        y = layer(y)
                return y

            for fmt in args.weights:          # plans made, pages warm
                for _ in range(args.warmup):
                    step(stacks[fmt])
            for _ in range(args.pairs):
                for fmt in args.weights:
                    for _ in range(args.reps):
                        world.barrier()
                        t0 = time.perf_counter()
                        step(stacks[fmt])
                        times[fmt].append(
                            slowest(world, time.perf_counter() - t0) / args.layers)
            lo, hi = split(i, P)[me]
            flops = 2.0 * B * h * (hi - lo) * 3
            for fmt in args.weights:
                ts = sorted(times[fmt])
                wb = weight_bytes(stacks[fmt][0])
                results.append({"weights": fmt, "rows": B,
                                "median_ms": statistics.median(ts) * 1e3,
                                "min_ms": ts[0] * 1e3, "max_ms": ts[-1] * 1e3,
                                "weight_bytes_per_rank": wb,
                                "flops_per_rank": flops})
        at.unregister_group("tp")
    return results if me == 0 else None


def report(results, args, dram, peaks):
    print("decode MLP, plain TP: h %d, i %d, %d ranks, %d layers, bf16 x, "
          "one core per rank" % (args.hidden, args.inter, args.ranks, args.layers))
    print("measured per core: DRAM read %.1f GB/s; peaks %s" % (
        dram, ", ".join("%s %.0f GFLOP/s" % p for p in peaks)))
    print("%-6s %4s %10s %19s %8s %7s %9s %8s %8s" % (
        "fmt", "B", "median_ms", "[min-max]", "MB/rank", "GB/s", "floor_ms",
        "of_floor", "x_bf16"))
    base = {r["rows"]: r["median_ms"] for r in results if r["weights"] == "bf16"}
    for r in results:
        mb = r["weight_bytes_per_rank"] / 1e6
        # The fastest instruction measured (VDPBF16PS where the CPU has it)
        # for every format: bf16 runs oneDNN's or agmm's bf16 dot, and the
        # int4 / int8 weight kernels take VDPBF16PS for bf16 rows where
        # their per-process measurement says it is faster (else the FMA:
        # the floor is then below that kernel's own, never above).
        # The a8 formats (A quantized to int8) multiply with the int8 dot:
        # its peak (VPDPBUSD, int8 ops counted as FLOPs are).
        int8 = {i: g for i, g in peaks if "PDPBUSD" in i or "AMX" in i}
        peak = max(int8.values()) if r["weights"].endswith("a8") and int8 \
            else max(g for i, g in peaks if i not in int8)
        floor = max(r["weight_bytes_per_rank"] / (dram * 1e9),
                    r["flops_per_rank"] / (peak * 1e9)) * 1e3
        r.update(floor_ms=floor, of_floor=floor / r["median_ms"],
                 gbps=r["weight_bytes_per_rank"] / (r["median_ms"] * 1e6))
        x = r["median_ms"] / base[r["rows"]] if r["rows"] in base else float("nan")
        r["over_bf16"] = x
        print("%-6s %4d %10.3f %8.3f-%-10.3f %8.1f %7.1f %9.3f %8.2f %8.2f" % (
            r["weights"], r["rows"], r["median_ms"], r["min_ms"], r["max_ms"], mb,
            r["gbps"], floor, r["of_floor"], x))


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--agmm", default="build/agmm")
    p.add_argument("--ranks", type=int, default=2)
    p.add_argument("--hidden", type=int, default=4096)
    p.add_argument("--inter", type=int, default=11008)
    p.add_argument("--layers", type=int, default=4)
    p.add_argument("--rows", default="1,8,32")
    p.add_argument("--weights", default="bf16,int8,int4")
    p.add_argument("--reps", type=int, default=10)
    p.add_argument("--warmup", type=int, default=2)
    p.add_argument("--pairs", type=int, default=2)
    p.add_argument("--timeout", type=float, default=600)
    p.add_argument("--json", default=None)
    p.add_argument("--_out", default=None, help=argparse.SUPPRESS)
    args = p.parse_args()
    try:
        args.rows = [int(v) for v in args.rows.split(",")]
        assert all(v >= 1 for v in args.rows)
    except (ValueError, AssertionError):
        p.error("--rows: %r (allowed: positive integers, comma-separated)" % args.rows)
    args.weights = args.weights.split(",")
    for w in args.weights:
        if w not in FORMATS:
            p.error("--weights: %r (allowed: %s)" % (w, ", ".join(FORMATS)))
    for name in ("layers", "reps", "pairs", "ranks"):
        if getattr(args, name) < 1:
            p.error("--%s: %d (at least 1)" % (name, getattr(args, name)))
    if "RANK" in os.environ or "AGMM_RANK" in os.environ:
        res = run_rank(args)
        if res is not None:
            with open(args._out, "w") as f:
                json.dump(res, f)
        return 0
    import tempfile
    import agmm.launch
    dram, peaks = measured_rates(args.agmm)
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, "results.json")
        argv = [sys.executable] + sys.argv + ["--_out", out]
        rc = agmm.launch.spawn(args.ranks, argv)
        if rc != 0:
            return rc
        with open(out) as f:
            results = json.load(f)
    report(results, args, dram, peaks)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"args": vars(args), "dram_gbps_per_core": dram,
                       "peaks": peaks, "results": results}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
