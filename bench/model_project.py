#!/usr/bin/env python3
"""The performance model's projection to 1024 ranks (issue 25, item 4;
docs/history/, "A model of a round (issue 25)"):

    bench/model_project.py [--build DIR | --agmm PATH] [--quick] [--json] [--ops OPS] [--ranks LIST] [--per-host LIST] [--gbps LIST] [--shapes seed,decode] [--gemm-rates ROWS:GF,...] [--measure]

Runs `agmm model --json` on described machines only (nothing is measured
unless --measure): MPI between hosts, --per-host ranks on each host
(sharing memory), every host one full-duplex link of --gbps Gbit/s with
--link-latency-us; for every op of --ops, shape of --shapes (seed:
--m-local 2048 --k 4096 --n 4096; decode: --m-local --decode-rows, the
same k and n; --dtype bf16), rank count of --ranks (8, 16, 64, 256,
1024), ranks per host of --per-host (1, 2, 8; those dividing the ranks)
and link rate (10, 25, 100, 400 Gbit/s; one host: no link, one row), and
for ag-gemm with several ranks on each of several hosts, the relay on and
off (docs/design.md, "Relaying the all-gather across hosts"). Every rank
has --comm-cores 1 and --gemm-cores 1.

The machine: --gemm-rates (default DEFAULT_RATES below: bf16 native, AMX,
measured on this project's host) and, where given, --call-us --copy-gbs
--reduce-gbs --convert-gbs --msg-us --round-us --peer-us --tile-us; the rest is the
model's default (docs/model.md). --measure takes the rates and the
machine's scalars from `agmm model` measuring this host instead (per op
and shape, at 2 ranks).

Prints, per op and shape, a table of fused and baseline ms, their ratio
(fused / baseline), the speedup (baseline / fused) and the bounds; then
where fused stops paying (ratio >= 1) and where the relay is the
bottleneck (the fused round bound by the relay, or more than 0.5% slower
with the relay than without). --json: one JSON object instead. --quick: the decode shape,
ag-gemm and gemm-ar, 8 and 16 ranks, 1, 2 and 8 per host, 10 and 100
Gbit/s (the test e2e_model_scripts_tables). Exit 0 unless a run fails (1:
its command and stderr printed) or the usage is bad (2).
"""
import argparse
import json
import os
import sys
import time

import bench_common

# bf16 native (oneDNN 2.6.3 brg:avx512_core_amx_bf16) GF/s of one call of
# ROWS rows, k = 4096, on one thread, as the path choice times them (a
# 256-column weight slice, 512 at <= 32 rows; best of 3): `agmm bench
# --ranks 1 --m-local R --tile-m R --k 4096 --n 4096 --dtype bf16 --rounds
# 1 --warmup 0 --mode fused --json`, gemm.candidates[native].gflops, on
# the Xeon family 6 model 207 of docs/history/, 2026-12-02 01:07 UTC
# (load 10: another tenant's build; AMX rates swing 2x on that host).
DEFAULT_RATES = "1:13,8:165,16:250,32:225,64:310,128:755,256:670,512:590"
SHAPES = {"seed": 2048, "decode": None}  # m_local (decode: --decode-rows)
EVEN = 0.005  # the relay on is "slower" than off beyond this fraction
# The grid's options: (default, default with --quick).
GRID = {"ops": ("ag-gemm,gemm-rs,gemm-ar", "ag-gemm,gemm-ar"),
        "ranks": ("8,16,64,256,1024", "8,16"), "per_host": ("1,2,8", "1,2,8"),
        "gbps": ("10,25,100,400", "10,100"), "shapes": ("seed,decode", "decode")}
SCALARS = ("call_us", "copy_gbs", "reduce_gbs", "convert_gbs", "msg_us",
           "round_us", "peer_us", "tile_us")


def ints(s, name):
    try:
        v = [int(x) for x in s.split(",")]
    except ValueError:
        v = []
    if not v or any(x < 1 for x in v):
        raise argparse.ArgumentTypeError(f"{name}: {s!r}: a comma list of "
                                         "integers >= 1")
    return v


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="bench/model_project.py",
        description="agmm's performance model projected to 1024 ranks "
                    "(docs/history/)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--agmm", help="the agmm binary (default BUILD/agmm)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--json", action="store_true")
    for name in GRID:
        ap.add_argument("--" + name.replace("_", "-"))
    ap.add_argument("--decode-rows", type=int, default=8)
    ap.add_argument("--k", type=int, default=4096)
    ap.add_argument("--n", type=int, default=4096)
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--comm-cores", type=int, default=1)
    ap.add_argument("--gemm-cores", type=int, default=1)
    ap.add_argument("--link-latency-us", type=float, default=10.0)
    ap.add_argument("--gemm-rates", default=DEFAULT_RATES)
    ap.add_argument("--measure", action="store_true")
    ap.add_argument("--measure-budget", type=float, default=1.0)
    for key in SCALARS:
        ap.add_argument("--" + key.replace("_", "-"), type=float)
    o = ap.parse_args(argv)
    for name, (full, quick) in GRID.items():  # given, else the defaults
        if getattr(o, name) is None:
            setattr(o, name, quick if o.quick else full)
    try:
        o.ops = o.ops.split(",")
        bad = [x for x in o.ops if x not in ("ag-gemm", "gemm-rs", "gemm-ar")]
        if bad:
            raise argparse.ArgumentTypeError(
                f"--ops: {bad[0]!r}: ag-gemm, gemm-rs or gemm-ar")
        o.shapes = o.shapes.split(",")
        bad = [x for x in o.shapes if x not in SHAPES]
        if bad:
            raise argparse.ArgumentTypeError(f"--shapes: {bad[0]!r}: seed "
                                             "or decode")
        o.ranks = ints(o.ranks, "--ranks")
        o.per_host = ints(o.per_host, "--per-host")
        try:
            gbps = [float(x) for x in o.gbps.split(",")]
        except ValueError:
            gbps = []
        if not gbps or any(g <= 0 for g in gbps):
            raise argparse.ArgumentTypeError(f"--gbps: {o.gbps!r}: a comma "
                                             "list of Gbit/s, each > 0")
        o.gbps = gbps
        if o.decode_rows < 1:
            raise argparse.ArgumentTypeError("--decode-rows: >= 1")
    except argparse.ArgumentTypeError as e:
        print(f"model_project.py: {e}", file=sys.stderr)
        return None
    o.agmm = bench_common.agmm_path(o.build, o.agmm)
    return o


def machine(o, op, m_local):
    """The options describing the machine: given, or (--measure) this
    host's, measured once per op and rows."""
    if not o.measure:
        out = ["--gemm-rates", o.gemm_rates]
        for key in SCALARS:
            v = getattr(o, key)
            if v is not None:
                out += ["--" + key.replace("_", "-"), f"{v:g}"]
        return out
    key = (op, m_local)
    if key not in o.measured:
        d = bench_common.run_json(
            [o.agmm, "model", "--op", op, "--ranks", "2", "--m-local",
             str(m_local), "--k", str(o.k), "--n", str(o.n), "--dtype",
             o.dtype, "--comm-cores", str(o.comm_cores), "--gemm-cores",
             str(o.gemm_cores), "--measure-budget", f"{o.measure_budget:g}",
             "--json"], "model_project.py")
        o.measured[key] = bench_common.machine_options(d["machine"],
                                                       d["rates"])
    return o.measured[key]


def grid(o):
    """(op, shape, m_local, ranks, per host, hosts, gbps, relay) of every
    row: one host has no link (gbps None); relay None where it can't
    apply (one rank per host, one host, or not ag-gemm)."""
    for op in o.ops:
        for shape in o.shapes:
            m = SHAPES[shape] or o.decode_rows
            for p in o.ranks:
                for r in o.per_host:
                    if p % r:
                        continue
                    h = p // r
                    relays = [1, 0] if op == "ag-gemm" and r > 1 and h > 1 \
                        else [None]
                    for g in (o.gbps if h > 1 else [None]):
                        for relay in relays:
                            yield op, shape, m, p, r, h, g, relay


def run(o, op, shape, m, p, r, h, g, relay):
    cmd = [o.agmm, "model", "--op", op, "--ranks", str(p), "--m-local",
           str(m), "--k", str(o.k), "--n", str(o.n), "--dtype", o.dtype,
           "--comm-cores", str(o.comm_cores), "--gemm-cores",
           str(o.gemm_cores), "--transport", "mpi", "--hosts", str(h),
           "--ranks-per-host", str(r), "--relay",
           "off" if relay == 0 else "on", *machine(o, op, m), "--json"]
    if g:  # one host has no link between hosts
        cmd[-1:-1] = ["--link-gbps", f"{g:g}", "--link-latency-us",
                      f"{o.link_latency_us:g}"]
    t0 = time.monotonic()
    d = bench_common.run_json(cmd, "model_project.py")
    took = time.monotonic() - t0
    if d.get("rates_measured"):
        print("model_project.py: agmm model measured this host although "
              "rates were given: " + " ".join(cmd), file=sys.stderr)
        raise SystemExit(1)
    f, b = d["fused"]["time_ms"], d["baseline"]["time_ms"]
    return {"op": op, "shape": shape, "m_local": m, "k": o.k, "n": o.n,
            "dtype": o.dtype, "ranks": p, "ranks_per_host": r, "hosts": h,
            "link_gbps": g,
            "relay": None if relay is None else bool(relay),
            "fused_ms": f, "baseline_ms": b, "ratio": f / b,
            "speedup": b / f, "fused_bound": d["fused"]["bound"],
            "baseline_bound": d["baseline"]["bound"],
            "last_arrival_ms": d.get("last_arrival_ms"),
            "gemm_before_last_ms": d.get("gemm_before_last_ms"),
            "model_s": took}


def where(row):
    g = row["link_gbps"]
    rel = ("" if row["relay"] is None else
           ", relay on" if row["relay"] else ", relay off")
    link = f"{g:g} Gbit/s" if g else "one host"
    return (f"{row['ranks']} ranks, {row['ranks_per_host']} per host, "
            f"{link}{rel}")


def summary(rows):
    """Where fused stops paying, and where the relay is the bottleneck."""
    out = {"stops_paying": {}, "relay_bound": [], "relay_slower": [],
           "best_speedup": {}}
    for row in rows:
        key = f"{row['op']} {row['shape']}"
        out["stops_paying"].setdefault(key, [])
        best = out["best_speedup"].get(key)
        if best is None or row["speedup"] > best["speedup"]:
            out["best_speedup"][key] = {"speedup": row["speedup"],
                                        "where": where(row)}
        if row["ratio"] >= 1:
            out["stops_paying"][key].append(
                {"where": where(row), "ranks": row["ranks"],
                 "ratio": row["ratio"]})
        if row["fused_bound"] == "relay":
            out["relay_bound"].append({"case": key, "where": where(row),
                                       "ratio": row["ratio"]})
    pair = {}
    for row in rows:
        if row["relay"] is not None:
            k = (row["op"], row["shape"], row["ranks"],
                 row["ranks_per_host"], row["link_gbps"])
            pair.setdefault(k, {})[row["relay"]] = row
    for k, two in pair.items():
        # slower by more than EVEN (agmm model calls a ratio within it even)
        if len(two) == 2 and \
                two[True]["fused_ms"] > two[False]["fused_ms"] * (1 + EVEN):
            out["relay_slower"].append(
                {"case": f"{k[0]} {k[1]}",
                 "where": where(two[True]).replace(", relay on", ""),
                 "on_ms": two[True]["fused_ms"],
                 "off_ms": two[False]["fused_ms"]})
    return out


def markdown(res):
    mach = " ".join(res["machine"])
    if res["measured"]:
        r0 = res["rows"][0]
        mach = (f"measured here by agmm model ({r0['op']}, --m-local "
                f"{r0['m_local']}: {mach}; each op and shape its own)")
    lines = [f"model projection: {len(res['rows'])} rows in "
             f"{res['seconds']:.1f} s; machine: {mach}; "
             f"{res['comm_cores']} comm + {res['gemm_cores']} GEMM cores per "
             f"rank, link latency {res['link_latency_us']:g} us; ratio = "
             "fused / baseline, speedup = baseline / fused"]
    rows = res["rows"]
    for key in dict.fromkeys(f"{r['op']} {r['shape']}" for r in rows):
        sel = [r for r in rows if f"{r['op']} {r['shape']}" == key]
        s0 = sel[0]
        lines += ["", f"### {s0['op']}, {s0['shape']} (--m-local "
                  f"{s0['m_local']} --k {s0['k']} --n {s0['n']} --dtype "
                  f"{s0['dtype']})", "",
                  "| ranks | per host | hosts | Gbit/s | relay | fused ms | "
                  "baseline ms | ratio | speedup | bound (fused / baseline) |",
                  "|---|---|---|---|---|---|---|---|---|---|"]
        for r in sel:
            relay = "-" if r["relay"] is None else "on" if r["relay"] else "off"
            g = f"{r['link_gbps']:g}" if r["link_gbps"] else "-"
            lines.append(
                f"| {r['ranks']} | {r['ranks_per_host']} | {r['hosts']} | "
                f"{g} | {relay} | {r['fused_ms']:.3f} | "
                f"{r['baseline_ms']:.3f} | {r['ratio']:.3f} | "
                f"{r['speedup']:.2f} | {r['fused_bound']} / "
                f"{r['baseline_bound']} |")
    s = res["summary"]
    lines += ["", "Where fused stops paying (ratio >= 1):"]
    for key, hits in s["stops_paying"].items():
        best = s["best_speedup"][key]
        tail = (f"; best speedup {best['speedup']:.2f} ({best['where']})")
        sel = [r for r in rows if f"{r['op']} {r['shape']}" == key]
        if not hits:
            lines.append(f"- {key}: nowhere on this grid" + tail)
        elif len(hits) <= 6:
            lines.append(f"- {key}: " + "; ".join(
                f"{h['where']} ({h['ratio']:.3f})" for h in hits) + tail)
        else:  # many: how many rows of each rank count
            per = ", ".join(
                f"{p} ranks {sum(1 for h in hits if h['ranks'] == p)} of "
                f"{sum(1 for r in sel if r['ranks'] == p)}"
                for p in dict.fromkeys(r["ranks"] for r in sel))
            lines.append(f"- {key}: {len(hits)} of {len(sel)} rows ({per}; "
                         "the rows are in the table above)" + tail)
    lines += ["", "Where the relay is the bottleneck:"]
    if not s["relay_bound"] and not s["relay_slower"]:
        lines.append("- nowhere on this grid (no fused round bound by the "
                     "relay, none slower with it)")
    for h in s["relay_bound"]:
        lines.append(f"- {h['case']}, {h['where']}: the fused round is "
                     f"bound by the relay (ratio {h['ratio']:.3f})")
    for h in s["relay_slower"]:
        lines.append(f"- {h['case']}, {h['where']}: fused {h['on_ms']:.3f} "
                     f"ms with the relay, {h['off_ms']:.3f} ms without "
                     f"({(h['on_ms'] / h['off_ms'] - 1) * 100:+.1f}%)")
    return "\n".join(lines)


def main(argv):
    o = parse(argv)
    if o is None:
        return 2
    o.measured = {}
    t0 = time.monotonic()
    rows = [run(o, *cell) for cell in grid(o)]
    res = {"rows": rows, "seconds": time.monotonic() - t0,
           # the first row's machine (--measure: measured for its op, rows)
           "machine": machine(o, rows[0]["op"], rows[0]["m_local"])
           if rows else [], "measured": o.measure,
           "comm_cores": o.comm_cores, "gemm_cores": o.gemm_cores,
           "link_latency_us": o.link_latency_us, "summary": summary(rows)}
    print(json.dumps(res) if o.json else markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
