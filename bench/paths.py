#!/usr/bin/env python3
"""The GEMM paths side by side, in one sitting (docs/performance.md,
"GEMM paths"):

    bench/paths.py [--build DIR] [--sets N] [--mpirun CMD] -- BENCH ARGS...

For the bench arguments given (shape, --dtype, --op; rounds and warmup
too), runs in alternation, N sets (default 3), each set in a rotated order:

  - `agmm bench ARGS --gemm-path P` for P = auto, native, f32 (native and
    auto skipped where the engine has no native path for the dtype), the
    fused and baseline modes;
  - for ag-gemm, the gather-then-GEMM peers (bench/ag_peer.c, under
    mpirun): `--engine onednn` (the dtype as it is: bf16 native) and
    `--engine onednn-f32` (gather, convert to fp32, one fp32 matmul).

Prints, per run kind, the median over sets of each run's median round (ms)
with the range over sets, the path auto chose and how, the kernel that
ran, and the ratios of agmm's fused round to each peer's and to the
native / f32 runs, each paired within a set (median and range). Exit 0
unless a run fails.
"""
import os
import statistics
import subprocess
import sys

import bench_common
from bench_common import medians_ms, value


def run_json(cmd):
    """A refused run raises (main drops "agmm native" where there is none)."""
    return bench_common.run_json(cmd, "paths.py", exit_on_failure=False)


def main(argv):
    opts = bench_common.parse(argv, __doc__)
    if opts is None:
        return 2
    sets, mpirun, args = opts["sets"], opts["mpirun"], opts["args"]
    agmm, peer = opts["agmm"], opts["peer"]
    dtype = value(args, "--dtype", "fp16")
    op = value(args, "--op", "ag-gemm")
    kinds = {}
    for path in ("auto", "native", "f32"):
        if dtype == "fp32" and path != "auto":
            continue
        kinds["agmm " + path] = [agmm, "bench", *args, "--gemm-path", path,
                                 "--mode", "fused,baseline", "--json"]
    if op == "ag-gemm" and os.path.exists(peer):
        shape = []
        for name in ("--m-local", "--k", "--n", "--dtype"):
            if name in args:
                shape += [name, value(args, name, "")]
        rw = ["--rounds", value(args, "--rounds", "10"),
              "--warmup", value(args, "--warmup", "2")]
        ranks = value(args, "--ranks", "2")
        for eng in ("onednn", "onednn-f32"):
            kinds["peer " + eng] = [*mpirun, "-np", ranks, peer, "--engine",
                                    eng, *shape, *rw, "--json"]
    names = list(kinds)
    res = {k: [] for k in names}
    for s in range(sets):
        order = names[s % len(names):] + names[:s % len(names)]
        for k in order:
            if k not in kinds:  # refused in an earlier set
                continue
            try:
                res[k].append(run_json(kinds[k]))
            except subprocess.CalledProcessError as e:
                if k != "agmm native":
                    print(f"paths.py: exit {e.returncode}: {' '.join(e.cmd)}"
                          f"\n{e.stderr.strip()[-4000:]}", file=sys.stderr)
                    return 1
                # no native path here: refused; the set goes on
                del kinds[k]
                names.remove(k)
                res.pop(k)
    print(f"{sets} sets: {' '.join(args)}")

    def med(k, mode=None):
        return medians_ms(res[k], mode)

    rows = {}
    for k in names:
        if k.startswith("agmm"):
            g = res[k][0]["gemm"]
            for mode in ("fused", "baseline"):
                rows[f"{k} {mode}"] = (med(k, mode), g["impl"],
                                       f"{g['path']} ({g['chosen_by']})")
        else:
            rows[k] = (med(k), res[k][0].get("impl", ""), "")
    for k, (v, impl, how) in rows.items():
        print(f"  {k:24s} {statistics.median(v):10.3f} ms "
              f"[{min(v):.3f}-{max(v):.3f}]  {impl} {how}")
    if "agmm auto fused" in rows:
        base = rows["agmm auto fused"][0]
        for k in rows:
            if k == "agmm auto fused" or k.endswith("baseline"):
                continue
            r = [a / b for a, b in zip(base, rows[k][0])]
            print(f"  auto fused / {k:20s} {statistics.median(r):6.3f} "
                  f"[{min(r):.3f}-{max(r):.3f}]")
    auto = res.get("agmm auto")
    if auto:
        g = auto[0]["gemm"]
        print(f"  auto chose {g['path']} ({g['chosen_by']}, "
              f"{g['choose_ms']:.1f} ms of a {g['plan_create_ms']:.1f} ms "
              f"plan creation): " + ", ".join(
                  f"{c['path']} {c['gflops']:.0f} GF/s ({c['impl']})"
                  for c in g["candidates"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
