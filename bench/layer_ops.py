#!/usr/bin/env python3
"""The operation targets of issues 23 and 24 in one sitting
(docs/history/, "The tensor-parallel layer"):

    bench/layer_ops.py [--build DIR] [--sets N] [--mpirun CMD] [--epilogue] [--bind] -- BENCH ARGS...

For the bench arguments given (shape, --op, --dtype, rounds and warmup, a
link to emulate; --mode and --json are set here), runs N sets (default 3),
each set in a rotated order:

  - `agmm bench ARGS --mode fused,baseline --json` (plain: fp32 C, no
    bias, no activation);
  - with --epilogue: the same with `--bias --activation silu --out-dtype
    bf16` (the epilogue against no epilogue, paired);
  - with --bind: the same with `--bind none` (the default binding, auto,
    against none, paired);
  - for --op gemm-ar without link emulation and one row count for every
    rank: the peer (bench/ag_peer.c under mpirun, the same shape, dtype,
    rounds and warmup, `--op gemm-ar`: one oneDNN GEMM, then
    MPI_Allreduce).

Prints, per run kind, the median over sets of each run's median round (ms)
with the range over sets, the engine's impl and the fused round's
fraction of the core's peak; the ratios fused / peer, fused / baseline,
epilogue fused / plain fused and bind-none fused / auto fused, each paired
within a set (median and range over sets). Exit 0 unless a run fails (1:
its command and stderr are printed), 2 for bad usage.
"""
import os
import sys

import bench_common
from bench_common import drop, medians_ms, spread, value

EPILOGUE = ["--bias", "--activation", "silu", "--out-dtype", "bf16"]


def main(argv):
    head = argv[:argv.index("--")] if "--" in argv else argv
    epilogue, bind = "--epilogue" in head, "--bind" in head
    argv = [a for a in argv if a not in ("--epilogue", "--bind")
            or argv.index(a) > (argv.index("--") if "--" in argv else -1)]
    opts = bench_common.parse(argv, __doc__)
    if opts is None:
        return 2
    sets, mpirun, args = opts["sets"], opts["mpirun"], opts["args"]
    agmm, peer = opts["agmm"], opts["peer"]
    base = [agmm, "bench", *drop(args, ("--mode",)), "--mode",
            "fused,baseline", "--json"]
    kinds = {"plain": base}
    if epilogue:
        kinds["epilogue"] = base + EPILOGUE
    if bind:
        kinds["bind none"] = base + ["--bind", "none"]
    op = value(args, "--op", "ag-gemm")
    one_count = all("," not in value(args, o, "") for o in ("--m-local", "--n"))
    peers = (op == "gemm-ar" and "--link-gbps" not in args and one_count
             and os.path.exists(peer))
    if peers:
        shape = []
        for name in ("--m-local", "--k", "--n", "--dtype"):
            if name in args:
                shape += [name, value(args, name, "")]
        rw = ["--rounds", value(args, "--rounds", "20"),  # bench's defaults
              "--warmup", value(args, "--warmup", "5")]
        kinds["peer"] = [*mpirun, "-np", value(args, "--ranks", "2"), peer,
                         "--op", "gemm-ar", *shape, *rw, "--json"]
    names = list(kinds)
    res = {k: [] for k in names}
    for s in range(sets):
        order = names[s % len(names):] + names[:s % len(names)]
        for k in order:
            res[k].append(bench_common.run_json(kinds[k], "layer_ops.py"))
    print(f"{sets} sets: {' '.join(args)}")

    def med(k, mode=None):
        return medians_ms(res[k], mode)

    rows = {}
    for k in names:
        r0 = res[k][0]
        if k == "peer":
            rows[k] = (med(k), f"{r0.get('library', '')} {r0.get('impl', '')}",
                       None)
            continue
        g = r0["gemm"]
        impl = f"{g['engine']} {g['version']} {g['impl']}"
        fp = [r["modes"]["fused"].get("fraction_of_peak") or 0 for r in res[k]]
        for mode in ("fused", "baseline"):
            rows[f"{k} {mode}"] = (med(k, mode), impl,
                                   fp if mode == "fused" else None)
    print("  run (median round, ms: median over sets [range]), impl, "
          "fused fraction of peak")
    for k, (v, impl, fp) in rows.items():
        f = f"  of peak {spread(fp, '{:.3f}')}" if fp else ""
        print(f"  {k:18s} {spread(v, '{:.3f}'):28s} {impl}{f}")
    p0 = res["plain"][0]
    print(f"  peak: {p0['peak_instr']} {p0['peak_gflops_per_core']:.0f} "
          f"G/s per core")
    print("  paired within a set (median [range] over sets)")
    fused = rows["plain fused"][0]
    for k in ("peer", "plain baseline", "epilogue fused", "bind none fused"):
        if k not in rows:
            continue
        r = [a / b for a, b in zip(rows[k][0] if k.startswith(("epi", "bind"))
                                   else fused,
                                   fused if k.startswith(("epi", "bind"))
                                   else rows[k][0])]
        what = (f"{k} / plain fused" if k.startswith(("epi", "bind"))
                else f"plain fused / {k}")
        print(f"  {what:34s} {spread(r, '{:.3f}')}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
