#!/usr/bin/env python3
"""The int8 (W8A8) targets of issue 22 in one sitting (docs/history/,
"int8 (W8A8)"):

    bench/int8.py [--build DIR] [--sets N] [--mpirun CMD] -- BENCH ARGS...

For the bench arguments given (shape, --op, rounds and warmup, a link to
emulate; --a-scale / --w-scale go to the int8 run only; --dtype, --mode,
--gemm-path and --json are set here), runs N sets (default 3), each set in
a rotated order:

  - `agmm bench ARGS --dtype int8 --mode fused,baseline --json`;
  - `agmm bench ARGS --dtype bf16 --gemm-path native --mode fused,baseline
    --json` (the bf16 kernel int8 is set against);
  - for ag-gemm without link emulation (no --link-gbps) and one row count
    for every rank, the gather-then-GEMM peers (bench/ag_peer.c, under
    mpirun, the same shape, rounds and warmup): `--engine onednn-int8`
    (the W8A8 user: gather int8 rows + scales, one s8 x s8 matmul) and
    `--engine onednn --dtype bf16` (bf16 native).

Prints, per run kind, the median over sets of each run's median round (ms)
with the range over sets and the engine's impl (oneDNN's kernel); the
ratios int8 fused / int8 peer, int8 fused / bf16 native peer, int8 fused /
int8 baseline and int8 fused / bf16 native fused, each paired within a set
(median and range over sets); and int8 fused's fraction_of_peak (of the
kernel that ran: TDPBSSD for an AMX kernel, else VPDPBUSD zmm) and
fraction_of_vnni_peak (of VPDPBUSD zmm, the reference the targets are
stated against), median and range, with the peak instructions and their
measured GOP/s. Exit 0 unless a run fails (1: its command and stderr are
printed), 2 for bad usage.
"""
import os
import sys

import bench_common
from bench_common import drop, medians_ms, spread, value


def run_json(cmd):
    return bench_common.run_json(cmd, "int8.py")


def main(argv):
    opts = bench_common.parse(argv, __doc__)
    if opts is None:
        return 2
    sets, mpirun, args = opts["sets"], opts["mpirun"], opts["args"]
    agmm, peer = opts["agmm"], opts["peer"]
    base = drop(args, ("--dtype", "--mode", "--gemm-path"))
    both = ["--mode", "fused,baseline", "--json"]
    kinds = {
        "int8": [agmm, "bench", *base, "--dtype", "int8", *both],
        "bf16 native": [agmm, "bench", *drop(base, ("--a-scale", "--w-scale")),
                        "--dtype", "bf16", "--gemm-path", "native", *both],
    }
    op = value(args, "--op", "ag-gemm")
    one_count = all("," not in value(args, o, "") for o in ("--m-local", "--n"))
    peers = (op == "ag-gemm" and "--link-gbps" not in args and one_count
             and os.path.exists(peer))
    if peers:
        shape = []
        for name in ("--m-local", "--k", "--n"):
            if name in args:
                shape += [name, value(args, name, "")]
        rw = ["--rounds", value(args, "--rounds", "20"),  # bench's defaults
              "--warmup", value(args, "--warmup", "5")]
        np_ = ["-np", value(args, "--ranks", "2")]
        kinds["peer onednn-int8"] = [*mpirun, *np_, peer, "--engine",
                                     "onednn-int8", *shape, *rw, "--json"]
        kinds["peer onednn bf16"] = [*mpirun, *np_, peer, "--engine", "onednn",
                                     "--dtype", "bf16", *shape, *rw, "--json"]
    names = list(kinds)
    res = {k: [] for k in names}
    for s in range(sets):
        order = names[s % len(names):] + names[:s % len(names)]
        for k in order:
            res[k].append(run_json(kinds[k]))
    print(f"{sets} sets: {' '.join(args)}")
    if not peers:
        print("  (no peers: " + ("gemm-rs" if op != "ag-gemm" else
                                 "link emulated" if "--link-gbps" in args else
                                 "a row or column list" if not one_count else
                                 f"no {peer}") + ")")

    def med(k, mode=None):
        return medians_ms(res[k], mode)

    rows = {}
    for k in ("int8", "bf16 native"):
        g = res[k][0]["gemm"]
        for mode in ("fused", "baseline"):
            rows[f"{k} {mode}"] = (med(k, mode),
                                   f"{g['engine']} {g['version']} {g['impl']}")
    for k in names:
        if k.startswith("peer"):
            r0 = res[k][0]
            rows[k] = (med(k), f"{r0.get('library', '')} {r0.get('impl', '')}")
    print("  run (median round, ms: median over sets [range])")
    for k, (v, impl) in rows.items():
        print(f"  {k:22s} {spread(v, '{:.3f}'):28s} {impl}")
    print("  paired within a set (median [range] over sets)")
    fused = rows["int8 fused"][0]
    for k in ("peer onednn-int8", "peer onednn bf16", "int8 baseline",
              "bf16 native fused"):
        if k not in rows:
            continue
        r = [a / b for a, b in zip(fused, rows[k][0])]
        print(f"  int8 fused / {k:20s} {spread(r, '{:.3f}')}")
    runs = res["int8"]
    fp = [r["modes"]["fused"]["fraction_of_peak"] or 0 for r in runs]
    pk = [r["peak_gflops_per_core"] for r in runs]
    print(f"  int8 fused fraction_of_peak      {spread(fp, '{:.3f}')} "
          f"of {runs[0]['peak_instr'] or 'none'} "
          f"({spread(pk, '{:.0f}')} GOP/s per core)")
    fv = [r["modes"]["fused"].get("fraction_of_vnni_peak") or 0 for r in runs]
    vk = [r.get("peak_vnni_gops_per_core", 0) for r in runs]
    if all(x > 0 for x in vk):
        print(f"  int8 fused fraction_of_vnni_peak {spread(fv, '{:.3f}')} "
              f"of VPDPBUSD zmm ({spread(vk, '{:.0f}')} GOP/s per core)")
    else:
        print("  int8 fused fraction_of_vnni_peak: no VNNI peak "
              "(the CPU has no AVX512_VNNI)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
