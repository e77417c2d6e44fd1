#!/usr/bin/env python3
"""The performance model against runs (issue 25, item 3; docs/history/,
"A model of a round (issue 25)"):

    bench/model_check.py [--build DIR | --agmm PATH] [--quick] [--only a,b,c,d] [--shape small|seed] [--rounds R] [--warmup W] [--json]

Runs the configurations the project measures, each twice in one sitting:
`agmm bench --mode fused,baseline --json` (the median round of each
schedule) and `agmm model --json` for the same problem, ranks and cores
(the prediction), and prints predicted against measured with the error
(predicted / measured - 1; |error| > 15% is a miss, in bold):

  a  shared memory: ag-gemm, gemm-rs, gemm-ar at 2, 3 and 4 ranks (more
     ranks than cores: --oversubscribe);
  b  the link emulator at 1, 5 and 25 Gbit/s, 20 us: ag-gemm at --n 256
     and at the shape's n; gemm-rs and gemm-ar at 1 Gbit/s, --n 256;
  c  namespace hosts over MPI (bench/model_netns.sh: veths at
     --netns-gbit, one rank per host on 2 and 3 hosts, 2 hosts x 2 ranks
     with and without the relay), ag-gemm at --n 256 and n, gemm-rs at
     --n 256 on 2 hosts; skipped, saying why, without root or mpirun;
  d  64, 256 and 1024 forked ranks at --m-local 1 --k 64 --n 64
     (--oversubscribe): the per-round and per-peer overheads. Prints the
     model's round_us and peer_us beside the ones the runs imply: a least
     squares fit of t / s = round_us + peer_us x (P - 1) over the runs'
     median rounds t, s the slowdown below.

The shape is --shape small (--m-local 512 --k 2048 --n 2048, the default:
the whole check in a few minutes) or seed (2048, 4096, 4096), dtype
--dtype (bf16). This machine's rates are measured by `agmm model` without
rate options (--measure-budget S each) once per problem (op, ranks, shape,
cores) and passed back (--gemm-rates, --copy-gbs, ...) for every
transport of that problem. Ranks of this host share its cores: where a
run has more threads (ranks x (comm + GEMM cores)) than cores, every
thread runs s = threads / cores times slower, and the machine given to
the model says so (its rates divided by s, its per-event times
multiplied; the table's "s"); --no-slowdown gives the rates as measured.

GEMM calibrated: rates measured by a brief timing of repeated calls are
the engine's rate in a warm cache, and on this shared host they move 2-3x
from one measurement to the next; so the prediction shown is made twice:
with the rates as measured (the last column's errors), and with them
scaled by one factor per configuration ("GEMM cal") so that the model's
GEMM alone takes what the run's own gemm-only round took (`agmm bench
--mode gemm-only`: the fused schedule's GEMM with every tile in place, no
communication; for MPI a shared-memory run of the same problem, since
bench refuses the mode under MPI). The calibrated error is then the
model's error on what it adds: the communication, the overlap, the
waits. --no-calibrate: the rates as measured only.

--quick: a tiny shape (64 x 256 x 256, tiles 32 x 64), 3 rounds, one
configuration per part and 8 and 32 ranks for d (the test
e2e_model_scripts_tables). --json: one JSON object instead of the table.
Exit 0 unless a run fails (1: its command and stderr printed) or the
usage is bad (2).
"""
import argparse
import datetime
import json
import os
import statistics
import subprocess
import sys

import bench_common

HERE = os.path.dirname(os.path.abspath(__file__))
NETNS = os.path.join(HERE, "model_netns.sh")
OPS = ("ag-gemm", "gemm-rs", "gemm-ar")
SHAPES = {"small": (512, 2048, 2048), "seed": (2048, 4096, 4096)}
MISS = 0.15


class Config:
    """One run: part (a-d), op, ranks, shape, and where: the emulated
    link (gbps, latency) or namespace hosts (hosts, per host, relay)."""

    def __init__(self, part, op, ranks, shape, link=None, hosts=None):
        self.part, self.op, self.ranks, self.shape = part, op, ranks, shape
        self.link, self.hosts = link, hosts

    def where(self):
        if self.hosts:
            h, r, relay = self.hosts
            rel = f", relay {'on' if relay else 'off'}" if r > 1 else ""
            return f"mpi {h} hosts x {r}{rel}"
        if self.link:
            return f"link {self.link[0]:g} Gbit/s {self.link[1]:g} us"
        return "shm"


def configs(o):
    m, k, n = o.shape_mkn
    s, nn = (m, k, n), (m, k, min(256, n))
    link_lat = 20.0
    if o.quick:
        return [Config("a", "ag-gemm", 2, s), Config("a", "gemm-rs", 2, s),
                Config("a", "gemm-ar", 2, s),
                Config("b", "ag-gemm", 2, s, link=(1.0, link_lat)),
                Config("c", "ag-gemm", 2, s, hosts=(2, 1, 1)),
                Config("d", "ag-gemm", 8, (1, 64, 64)),
                Config("d", "ag-gemm", 32, (1, 64, 64))]
    out = [Config("a", op, p, s) for p in (2, 3, 4) for op in OPS]
    out += [Config("b", "ag-gemm", 2, sh, link=(g, link_lat))
            for g in (1.0, 5.0, 25.0) for sh in (nn, s)]
    out += [Config("b", op, 2, nn, link=(1.0, link_lat))
            for op in ("gemm-rs", "gemm-ar")]
    for sh in (nn, s):
        out += [Config("c", "ag-gemm", h * r, sh, hosts=(h, r, relay))
                for h, r, relay in ((2, 1, 1), (3, 1, 1), (2, 2, 1), (2, 2, 0))]
    out.append(Config("c", "gemm-rs", 2, nn, hosts=(2, 1, 1)))
    out += [Config("d", "ag-gemm", p, (1, 64, 64)) for p in (64, 256, 1024)]
    return out


def problem(o, c):
    m, k, n = c.shape
    out = ["--op", c.op, "--ranks", str(c.ranks), "--m-local", str(m),
           "--k", str(k), "--n", str(n), "--dtype", o.dtype]
    if c.part != "d":
        out += o.tiles
    return out


def link_options(c):
    if not c.link:
        return []
    return ["--link-gbps", f"{c.link[0]:g}", "--link-latency-us",
            f"{c.link[1]:g}"]


def bench(o, c):
    """The run's bench JSON; None (after noting why in o.skipped) where
    namespace hosts can't be made."""
    rounds, warmup = (o.d_rounds, 1) if c.part == "d" else (o.rounds, o.warmup)
    modes = "fused,baseline" if c.hosts or c.part == "d" else \
        "fused,baseline,gemm-only"
    args = ["bench", *problem(o, c), *link_options(c), "--mode", modes,
            "--rounds", str(rounds), "--warmup", str(warmup), "--timeout",
            "600", "--json"]
    if c.ranks > o.cores:
        args.append("--oversubscribe")
    if not c.hosts:
        return bench_common.run_json([o.agmm, *args], "model_check.py")
    h, r, relay = c.hosts
    cmd = ["bash", NETNS, o.agmm, str(h), str(r), str(relay),
           f"{o.netns_gbit:g}", "--", *args]
    try:
        d = bench_common.run_json(cmd, "model_check.py",
                                  exit_on_failure=False)
        if d.get("transport") != "mpi":
            print(f"model_check.py: part c: agmm ran on {d.get('transport')} "
                  "under mpirun (built without MPI?): give --only a,b,d",
                  file=sys.stderr)
            raise SystemExit(1)
        return d
    except subprocess.CalledProcessError as e:
        if e.returncode == 77:
            o.skipped["c"] = e.stderr.strip().splitlines()[-1]
            return None
        print(f"model_check.py: exit {e.returncode}: {' '.join(cmd)}",
              file=sys.stderr)
        print(e.stderr.strip()[-4000:], file=sys.stderr)
        raise SystemExit(1)


def gemm_only_ms(o, c, b):
    """The median gemm-only round (the fused schedule's GEMM with every tile
    in place, no communication) of config c: from its own bench b, or (MPI,
    where bench refuses the mode) from a shared-memory run of the same
    problem and ranks, once per problem."""
    if "gemm-only" in b["modes"]:
        return b["modes"]["gemm-only"]["median_us"] / 1e3
    if c.part == "d":
        return None
    key = tuple(problem(o, c))
    if key not in o.gemm_only:
        args = ["bench", *problem(o, c), "--mode", "fused,gemm-only",
                "--rounds", str(o.rounds), "--warmup", str(o.warmup),
                "--timeout", "600", "--json"]
        if c.ranks > o.cores:
            args.append("--oversubscribe")
        d = bench_common.run_json([o.agmm, *args], "model_check.py")
        o.gemm_only[key] = d["modes"]["gemm-only"]["median_us"] / 1e3
    return o.gemm_only[key]


def measured_machine(o, prob):
    """This machine's rates for the problem `prob` (with its cores), measured
    by `agmm model` once per problem in this sitting."""
    key = tuple(prob)
    if key not in o.machines:
        ranks = prob[prob.index("--ranks") + 1]
        d = bench_common.run_json(
            [o.agmm, "model", *prob, "--transport", "shm", "--hosts", "1",
             "--ranks-per-host", ranks, "--measure-budget",
             f"{o.measure_budget:g}", "--json"], "model_check.py")
        if not d.get("rates_measured"):
            print("model_check.py: agmm model without rates did not measure "
                  "them (rates_measured false)", file=sys.stderr)
            raise SystemExit(1)
        o.machines[key] = d
    return o.machines[key]


def predict(o, c, b):
    """`agmm model`'s prediction for config c, with the cores bench b ran;
    also the slowdown s given to the model."""
    prob = problem(o, c) + ["--comm-cores", str(b["comm_cores"]),
                            "--gemm-cores", str(b["gemm_cores"])]
    meas = measured_machine(o, prob)
    threads = c.ranks * (b["comm_cores"] + b["gemm_cores"])
    slow = 1.0 if o.no_slowdown else max(1.0, threads / o.cores)
    if c.hosts:
        h, r, relay = c.hosts
        where = ["--transport", "mpi", "--hosts", str(h), "--ranks-per-host",
                 str(r), "--relay", "on" if relay else "off", "--link-gbps",
                 f"{o.netns_gbit:g}", "--link-latency-us",
                 f"{o.netns_latency_us:g}"]
    elif c.link:
        where = ["--transport", "link", "--hosts", "1", "--ranks-per-host",
                 str(c.ranks), *link_options(c)]
    else:
        where = ["--transport", "shm", "--hosts", "1", "--ranks-per-host",
                 str(c.ranks)]
    def run_model(rates):
        opts = bench_common.machine_options(meas["machine"], rates, slow)
        cmd = [o.agmm, "model", *prob, *where, *opts, "--json"]
        d = bench_common.run_json(cmd, "model_check.py")
        if d.get("rates_measured"):
            print("model_check.py: agmm model measured this host although "
                  "rates were given: " + " ".join(cmd), file=sys.stderr)
            raise SystemExit(1)
        return d
    raw = run_model(meas["rates"])
    # GEMM calibrated: the rates scaled so that the model's GEMM alone
    # takes what the run's gemm-only round took (docs/history/)
    g = gemm_only_ms(o, c, b)
    cal = 1.0
    if g and not o.no_calibrate and raw["fused"]["gemm_ms"] > 0:
        cal = raw["fused"]["gemm_ms"] / g
    d = raw if cal == 1.0 else run_model(
        [[r, v * cal] for r, v in meas["rates"]])
    return d, meas, slow, raw, cal, g


def row(o, c):
    b = bench(o, c)
    if b is None:
        return None
    p, meas, slow, raw, cal, g = predict(o, c, b)
    mf = b["modes"]["fused"]["median_us"] / 1e3
    mb = b["modes"]["baseline"]["median_us"] / 1e3
    pf, pb = p["fused"]["time_ms"], p["baseline"]["time_ms"]
    err = {"fused": pf / mf - 1, "baseline": pb / mb - 1,
           "ratio": (pf / pb) / (mf / mb) - 1}
    return {
        "part": c.part, "op": c.op, "ranks": c.ranks,
        "where": c.where() + (f", {o.netns_gbit:g} Gbit/s" if c.hosts else ""),
        "m_local": c.shape[0], "k": c.shape[1], "n": c.shape[2],
        "dtype": o.dtype, "hosts": c.hosts[0] if c.hosts else 1,
        "ranks_per_host": c.hosts[1] if c.hosts else c.ranks,
        "relay": bool(c.hosts[2]) if c.hosts else None,
        "link_gbps": (o.netns_gbit if c.hosts else
                      c.link[0] if c.link else None),
        "link_latency_us": (o.netns_latency_us if c.hosts else
                            c.link[1] if c.link else None),
        "comm_cores": b["comm_cores"], "gemm_cores": b["gemm_cores"],
        "slowdown": slow, "transport": b["transport"],
        "gemm_impl": b["gemm"]["impl"], "gemm_path": b["gemm"]["path"],
        "measured": {"fused_ms": mf, "baseline_ms": mb, "ratio": mf / mb},
        "predicted": {"fused_ms": pf, "baseline_ms": pb, "ratio": pf / pb,
                      "fused_bound": p["fused"]["bound"],
                      "baseline_bound": p["baseline"]["bound"],
                      "last_arrival_ms": p.get("last_arrival_ms"),
                      "gemm_before_last_ms": p.get("gemm_before_last_ms")},
        "error": err,
        "gemm_only_ms": g, "gemm_calibration": cal,
        "raw_predicted": {"fused_ms": raw["fused"]["time_ms"],
                          "baseline_ms": raw["baseline"]["time_ms"]},
        "raw_error": {"fused": raw["fused"]["time_ms"] / mf - 1,
                      "baseline": raw["baseline"]["time_ms"] / mb - 1},
        "miss": abs(err["fused"]) > MISS or abs(err["baseline"]) > MISS,
        "machine": meas["machine"], "rates": meas["rates"],
    }


def fit(rows):
    """Part d: t / s = round_us + peer_us x (P - 1), least squares over the
    runs, per schedule; with the model's round_us and peer_us."""
    d = [r for r in rows if r["part"] == "d"]
    if len(d) < 2:
        return None
    out = {"ranks": [r["ranks"] for r in d],
           "model_round_us": d[0]["machine"].get("round_us"),
           "model_peer_us": d[0]["machine"].get("peer_us"),
           "model_tile_us": d[0]["machine"].get("tile_us")}
    for sched in ("fused", "baseline"):
        x = [r["ranks"] - 1 for r in d]
        y = [r["measured"][f"{sched}_ms"] * 1e3 / r["slowdown"] for r in d]
        mx, my = statistics.fmean(x), statistics.fmean(y)
        sxx = sum((a - mx) ** 2 for a in x)
        b = sum((a - mx) * (c - my) for a, c in zip(x, y)) / sxx
        out[sched] = {"round_us": my - b * mx, "peer_us": b,
                      "per_rank_us": y}
    return out


def pct(e):
    s = f"{e * 100:+.1f}%"
    return f"**{s}**" if abs(e) > MISS else s


def markdown(res):
    lines = [f"model check: {res['when']}, {res['cores']} cores, load "
             f"{res['load'][0]:.2f} -> {res['load'][1]:.2f}, dtype "
             f"{res['dtype']}, {res['rounds']} rounds (warmup "
             f"{res['warmup']}); times are median rounds, ms; error = "
             "predicted / measured - 1, bold beyond 15%", "",
             "| part | op | ranks | where | m_local x k x n | s | GEMM cal | "
             "fused measured | fused predicted | error | baseline measured "
             "| baseline predicted | error | ratio measured | ratio "
             "predicted | bound (fused / baseline) | error at measured rates "
             "(fused / baseline) |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
             "---|---|"]
    for r in res["rows"]:
        m, p, e = r["measured"], r["predicted"], r["error"]
        lines.append(
            f"| {r['part']} | {r['op']} | {r['ranks']} | {r['where']} | "
            f"{r['m_local']} x {r['k']} x {r['n']} | {r['slowdown']:.3g} | "
            f"{r['gemm_calibration']:.3g} | "
            f"{m['fused_ms']:.3f} | {p['fused_ms']:.3f} | "
            f"{pct(e['fused'])} | {m['baseline_ms']:.3f} | "
            f"{p['baseline_ms']:.3f} | {pct(e['baseline'])} | "
            f"{m['ratio']:.3f} | {p['ratio']:.3f} | "
            f"{p['fused_bound']} / {p['baseline_bound']} | "
            f"{pct(r['raw_error']['fused'])} / "
            f"{pct(r['raw_error']['baseline'])} |")
    for part, why in sorted(res["skipped"].items()):
        lines.append(f"\npart {part} skipped: {why}")
    f = res["fit"]
    if f:
        lines.append(f"\nper-rank overheads (part d, ranks {f['ranks']}): "
                     "t / s = round_us + peer_us x (P - 1), least squares")
        lines.append(f"- the model's: round_us {f['model_round_us']}, "
                     f"peer_us {f['model_peer_us']}, tile_us (fused, per "
                     f"tile and peer) {f['model_tile_us']}")
        for sched in ("fused", "baseline"):
            g = f[sched]
            per = ", ".join(f"{v:.1f}" for v in g["per_rank_us"])
            lines.append(f"- {sched}, the runs': round_us "
                         f"{g['round_us']:.2f}, peer_us {g['peer_us']:.3f} "
                         f"(t / s per run, us: {per})")
    miss = [r for r in res["rows"] if r["miss"]]
    lines.append(f"\n{res['total'] - len(miss)} of {res['total']} "
                 "configurations within 15% (fused and baseline)"
                 + (": misses " + "; ".join(
                     f"{r['part']} {r['op']} {r['ranks']} ranks {r['where']} "
                     f"{r['m_local']}x{r['k']}x{r['n']}" for r in miss)
                    if miss else ""))
    return "\n".join(lines)


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="bench/model_check.py",
        description="agmm's performance model against runs "
                    "(docs/history/)")
    ap.add_argument("--build", default="build")
    ap.add_argument("--agmm", help="the agmm binary (default BUILD/agmm)")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="a,b,c,d")
    ap.add_argument("--shape", choices=sorted(SHAPES), default="small")
    ap.add_argument("--dtype", default="bf16")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--warmup", type=int)
    ap.add_argument("--d-rounds", type=int, default=3)
    ap.add_argument("--measure-budget", type=float)
    ap.add_argument("--netns-gbit", type=float, default=1.0)
    ap.add_argument("--netns-latency-us", type=float, default=50.0)
    ap.add_argument("--no-slowdown", action="store_true")
    ap.add_argument("--no-calibrate", action="store_true")
    ap.add_argument("--json", action="store_true")
    o = ap.parse_args(argv)
    parts = o.only.split(",")
    bad = [p for p in parts if p not in ("a", "b", "c", "d")]
    if bad or not parts:
        print(f"model_check.py: --only: {o.only!r}: a comma list of a, b, c, d",
              file=sys.stderr)
        return None
    o.parts = parts
    for name in ("rounds", "warmup", "d_rounds"):
        v = getattr(o, name)
        if v is not None and v < (0 if name == "warmup" else 1):
            print(f"model_check.py: --{name.replace('_', '-')}: {v}: "
                  f"{'>= 0' if name == 'warmup' else '>= 1'}", file=sys.stderr)
            return None
    if o.quick:
        o.shape_mkn, o.tiles = (64, 256, 256), ["--tile-m", "32", "--tile-n",
                                                "64"]
        o.rounds = o.rounds or 3
        o.warmup = 1 if o.warmup is None else o.warmup
        o.measure_budget = o.measure_budget or 0.2
    else:
        o.shape_mkn, o.tiles = SHAPES[o.shape], []
        o.rounds = o.rounds or 10
        o.warmup = 2 if o.warmup is None else o.warmup
        o.measure_budget = o.measure_budget or 1.0
    o.agmm = bench_common.agmm_path(o.build, o.agmm)
    o.cores = len(os.sched_getaffinity(0))
    o.machines, o.skipped, o.gemm_only = {}, {}, {}
    return o


def main(argv):
    o = parse(argv)
    if o is None:
        return 2
    load0 = os.getloadavg()[0]
    when = datetime.datetime.now(datetime.timezone.utc)
    rows = []
    todo = [c for c in configs(o) if c.part in o.parts]
    for i, c in enumerate(todo):
        if c.part == "c" and "c" in o.skipped:
            continue
        print(f"model_check.py: [{i + 1}/{len(todo)}] {c.part} {c.op} "
              f"{c.ranks} ranks {c.where()} {'x'.join(map(str, c.shape))}",
              file=sys.stderr, flush=True)
        r = row(o, c)
        if r is not None:
            rows.append(r)
    res = {"when": when.strftime("%Y-%m-%d %H:%M UTC"), "cores": o.cores,
           "load": [load0, os.getloadavg()[0]], "dtype": o.dtype,
           "shape": list(o.shape_mkn), "rounds": o.rounds,
           "warmup": o.warmup, "parts": o.parts, "rows": rows,
           "skipped": o.skipped, "fit": fit(rows), "total": len(rows),
           "within": sum(1 for r in rows if not r["miss"])}
    if o.json:
        print(json.dumps(res))
    else:
        print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
