#!/usr/bin/env python3
"""Two builds of agmm side by side: is a change faster or slower?

    bench/ab_trees.py OLD_AGMM NEW_AGMM [--pairs N] -- BENCH ARGS...

Runs `OLD_AGMM bench ARGS --json` and `NEW_AGMM bench ARGS --json` in
alternation, N pairs (default 5), the first of each pair alternating too,
so that a shared machine's drift and noise hit both alike. For every mode
the bench timed it prints each build's median round (the median over
pairs of each run's median), and the paired ratio new/old: its median
and range over the pairs. A ratio below 1 means the new build is faster.
The GEMM engine and kernel of each build are printed as the bench reports
them. Exit 0 unless a run fails.
"""
import json
import statistics
import subprocess
import sys


def run(agmm, args):
    out = subprocess.run([agmm, "bench", *args, "--json"], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         text=True).stdout
    return json.loads(out)


def main(argv):
    if "--" not in argv or len(argv) < 3:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    cut = argv.index("--")
    head, args = argv[:cut], argv[cut + 1:]
    pairs = 5
    if "--pairs" in head:
        i = head.index("--pairs")
        pairs = int(head[i + 1])
        del head[i:i + 2]
    old, new = head
    res = {"old": [], "new": []}
    for i in range(pairs):
        order = ("old", "new") if i % 2 == 0 else ("new", "old")
        for which in order:
            res[which].append(run(old if which == "old" else new, args))
    first = res["new"][0]
    for which in ("old", "new"):
        g = res[which][0]["gemm"]
        print(f"{which}: {g['engine']} {g['version']} {g['impl']}, blas "
              f"{res[which][0]['blas']['kernel']}")
    print(f"{pairs} pairs: agmm bench {' '.join(args)}")
    print(f"{'mode':10s} {'old ms':>9s} {'new ms':>9s} {'new/old':>8s} "
          f"{'range':>13s}")
    for mode in first["modes"]:
        o = [r["modes"][mode]["median_us"] for r in res["old"]]
        n = [r["modes"][mode]["median_us"] for r in res["new"]]
        ratios = [b / a for a, b in zip(o, n)]
        print(f"{mode:10s} {statistics.median(o) / 1e3:9.3f} "
              f"{statistics.median(n) / 1e3:9.3f} "
              f"{statistics.median(ratios):8.3f} "
              f"{min(ratios):6.3f}-{max(ratios):6.3f}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
