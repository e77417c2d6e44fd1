#!/usr/bin/env python3
"""The performance model's scripts end to end (issue 25): bench/model_project.py
--quick and bench/model_check.py --quick against the built agmm.

usage: model_scripts.py AGMM BENCH_DIR [nompi]   (nompi: agmm built without MPI)

model_project.py: every row of the quick grid present once (ops ag-gemm
and gemm-ar, the decode shape, 8 and 16 ranks, 1, 2 and 8 per host, 10
and 100 Gbit/s where there are several hosts, the relay on and off for
ag-gemm with several ranks on several hosts), each with positive finite
times, ratio = fused / baseline, speedup = 1 / ratio and named bounds; the
markdown has a table line per row and both summaries; a bad --ops exits 2
naming the option.

model_check.py: parts a (ag-gemm, gemm-rs, gemm-ar at 2 ranks), b (the
link) and d (8 and 32 ranks) each present, c (namespace hosts) present or
skipped with its reason (not run with nompi); every row's measured and predicted times
positive, its errors = predicted / measured - 1, its miss flag = an error
beyond 15%, its slowdown = threads / cores where that is above 1; the fit
of part d finite; the markdown of parts a and d has their rows and the
fit's lines; a bad --only exits 2 naming the option. No timing is judged.
"""
import json
import math
import os
import subprocess
import sys

BOUNDS = {"gemm", "link", "relay", "copy", "reduce", "overhead"}
fails = 0
checks = 0


def check(cond, what):
    global fails, checks
    checks += 1
    if not cond:
        fails += 1
        print("FAILED:", what)


def pos(x):
    return isinstance(x, (int, float)) and math.isfinite(x) and x > 0


def run(script, *args):
    p = subprocess.run([sys.executable, os.path.join(BENCH, script), "--agmm",
                        AGMM, *args], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, text=True, timeout=600)
    return p.returncode, p.stdout, p.stderr


def project():
    rc, out, err = run("model_project.py", "--quick", "--json")
    check(rc == 0, f"model_project.py --quick --json: exit {rc}: {err[-2000:]}")
    if rc != 0:
        return
    d = json.loads(out)
    want = set()
    for op in ("ag-gemm", "gemm-ar"):
        for p in (8, 16):
            for r in (1, 2, 8):
                if p % r:
                    continue
                h = p // r
                for g in ((10.0, 100.0) if h > 1 else (None,)):
                    relays = (True, False) if op == "ag-gemm" and r > 1 and \
                        h > 1 else (None,)
                    for relay in relays:
                        want.add((op, "decode", p, r, h, g, relay))
    got = [(x["op"], x["shape"], x["ranks"], x["ranks_per_host"], x["hosts"],
            x["link_gbps"], x["relay"]) for x in d["rows"]]
    check(len(got) == len(set(got)), "project: a row twice")
    check(set(got) == want, f"project: rows {sorted(set(got) ^ want, key=str)}"
          " missing or unexpected")
    for x in d["rows"]:
        w = f"project row {x['op']} {x['ranks']}/{x['ranks_per_host']}"
        check(pos(x["fused_ms"]) and pos(x["baseline_ms"]), f"{w}: times")
        if pos(x["fused_ms"]) and pos(x["baseline_ms"]):
            r = x["fused_ms"] / x["baseline_ms"]
            check(pos(x["ratio"]) and abs(x["ratio"] - r) <= 1e-9 * r,
                  f"{w}: ratio {x['ratio']} vs {r}")
            check(abs(x["speedup"] * x["ratio"] - 1) <= 1e-9,
                  f"{w}: speedup {x['speedup']}")
        check(x["fused_bound"] in BOUNDS and x["baseline_bound"] in BOUNDS,
              f"{w}: bounds {x['fused_bound']} {x['baseline_bound']}")
        check(x["m_local"] == 8 and x["k"] == 4096 and x["n"] == 4096,
              f"{w}: shape")
    s = d["summary"]
    check(set(s["stops_paying"]) == {"ag-gemm decode", "gemm-ar decode"},
          f"project summary keys {list(s['stops_paying'])}")
    for key, hits in s["stops_paying"].items():
        n = sum(1 for x in d["rows"] if f"{x['op']} {x['shape']}" == key
                and x["ratio"] >= 1)
        check(len(hits) == n, f"project summary {key}: {len(hits)} vs {n}")
    rc, md, err = run("model_project.py", "--quick")
    check(rc == 0, f"model_project.py --quick: exit {rc}: {err[-2000:]}")
    lines = [x for x in md.splitlines() if x.startswith("| ") and
             x[2:3].isdigit()]
    check(len(lines) == len(want), f"project markdown: {len(lines)} table "
          f"rows, want {len(want)}")
    check("Where fused stops paying" in md and
          "Where the relay is the bottleneck" in md, "project summaries")
    rc, _, err = run("model_project.py", "--quick", "--ops", "ag-gemm,foo")
    check(rc == 2 and "--ops" in err, f"--ops foo: exit {rc}, {err!r}")


def check_rows(d, parts):
    rows = d["rows"]
    for part, n in parts.items():
        have = [x for x in rows if x["part"] == part]
        check(len(have) == n, f"check part {part}: {len(have)} rows, want {n}")
    for x in rows:
        w = f"check row {x['part']} {x['op']} {x['ranks']} {x['where']}"
        m, p, e = x["measured"], x["predicted"], x["error"]
        ok = all(pos(v) for v in (m["fused_ms"], m["baseline_ms"],
                                  p["fused_ms"], p["baseline_ms"]))
        check(ok, f"{w}: times {m} {p}")
        if not ok:
            continue
        ef, eb = p["fused_ms"] / m["fused_ms"] - 1, \
            p["baseline_ms"] / m["baseline_ms"] - 1
        check(abs(e["fused"] - ef) < 1e-9 and abs(e["baseline"] - eb) < 1e-9,
              f"{w}: errors {e} vs {ef} {eb}")
        check(x["miss"] == (abs(ef) > 0.15 or abs(eb) > 0.15), f"{w}: miss")
        check(p["fused_bound"] in BOUNDS and p["baseline_bound"] in BOUNDS,
              f"{w}: bounds")
        threads = x["ranks"] * (x["comm_cores"] + x["gemm_cores"])
        want = max(1.0, threads / d["cores"])
        check(abs(x["slowdown"] - want) < 1e-9, f"{w}: slowdown "
              f"{x['slowdown']} vs {want}")
        check(x["rates"] and all(pos(r) and pos(g) for r, g in x["rates"]),
              f"{w}: measured rates {x['rates']}")


def check_model():
    only = ["--only", "a,b,d"] if NOMPI else []
    rc, out, err = run("model_check.py", "--quick", "--json", *only)
    check(rc == 0, f"model_check.py --quick --json: exit {rc}: {err[-2000:]}")
    if rc != 0:
        return
    d = json.loads(out)
    c = 0 if "c" in d["skipped"] or NOMPI else 1
    check(c == 1 or NOMPI or d["skipped"]["c"].strip() != "",
          "part c: no reason")
    for x in d["rows"]:
        check(x["transport"] == ("mpi" if x["part"] == "c" else "shm"),
              f"part {x['part']}: transport {x['transport']}")
    check_rows(d, {"a": 3, "b": 1, "c": c, "d": 2})
    check(sorted(x["op"] for x in d["rows"] if x["part"] == "a") ==
          ["ag-gemm", "gemm-ar", "gemm-rs"], "part a ops")
    check(d["total"] == len(d["rows"]) and d["within"] ==
          sum(1 for x in d["rows"] if not x["miss"]), "totals")
    f = d["fit"]
    check(f is not None and f["ranks"] == [8, 32], f"fit {f}")
    if f:
        for sched in ("fused", "baseline"):
            g = f[sched]
            check(all(isinstance(v, float) and math.isfinite(v)
                      for v in (g["round_us"], g["peer_us"])), f"fit {g}")
    rc, md, err = run("model_check.py", "--quick", "--only", "a,d")
    check(rc == 0, f"model_check.py --quick --only a,d: exit {rc}: "
          f"{err[-2000:]}")
    lines = [x for x in md.splitlines() if x.startswith("| a |") or
             x.startswith("| d |")]
    check(len(lines) == 5, f"check markdown: {len(lines)} rows of a and d")
    check("per-rank overheads" in md and "configurations within 15%" in md,
          "check markdown: fit and summary lines")
    rc, _, err = run("model_check.py", "--only", "a,x")
    check(rc == 2 and "--only" in err, f"--only a,x: exit {rc}, {err!r}")


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["nompi"]):
        print(__doc__.strip().splitlines()[3], file=sys.stderr)
        sys.exit(2)
    AGMM, BENCH = os.path.abspath(sys.argv[1]), sys.argv[2]
    NOMPI = sys.argv[3:] == ["nompi"]
    project()
    check_model()
    print(f"model_scripts: {checks - fails} passed, {fails} failed")
    sys.exit(1 if fails else 0)
