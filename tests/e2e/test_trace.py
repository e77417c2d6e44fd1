#!/usr/bin/env python3
"""Tests of `agmm run/bench --trace FILE.json --trace-svg FILE.svg`.

  test_trace.py AGMM json         the Chrome trace JSON: one GEMM event
                                  coverage per work item, one put per
                                  (tile, peer), named threads, events inside
                                  their rounds; the summary in --json; the SVG
                                  parses as XML; no temporary file left.
  test_trace.py AGMM screenshot CHROMIUM
                                  the SVG rendered by headless Chromium is not
                                  blank: it shows the put and GEMM colours.

Prints "name: N passed, M failed" and exits 1 on any failure.
"""
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
import zlib
from collections import Counter

PASSED = 0
FAILED = 0


def check(cond, what):
    global PASSED, FAILED
    if cond:
        PASSED += 1
    else:
        FAILED += 1
        print("FAIL: " + what)
    return cond


def run_agmm(agmm, args, cwd):
    p = subprocess.run([agmm] + args, cwd=cwd, capture_output=True, text=True,
                       timeout=240)
    check(p.returncode == 0,
          "agmm %s: exit %d; stderr: %s" % (" ".join(args), p.returncode,
                                            p.stderr[-800:]))
    return p


ESIZE = {"fp16": 2, "bf16": 2, "fp32": 4}


def check_trace(path, label, k):
    """Every assertion about one trace file."""
    with open(path) as f:
        doc = json.load(f)
    meta = doc["otherData"]
    P, G, C = meta["ranks"], meta["gemm_workers"], meta["comm_workers"]
    tiles, m_local = meta["tiles"], meta["m_local"]
    blocks, total = meta["col_blocks"], meta["total_tiles"]
    check(sum(tiles) == total, label + ": tiles add up to total_tiles")
    evs = doc["traceEvents"]

    # Threads are named "rank R gemm g" / "rank R comm c", tid = lane.
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in evs
             if e.get("ph") == "M" and e["name"] == "thread_name"}
    want = {}
    for r in range(P):
        for g in range(G):
            want[(r, g)] = "rank %d gemm %d" % (r, g)
        for c in range(C):
            want[(r, G + c)] = "rank %d comm %d" % (r, c)
    check(names == want, label + ": thread names %s" % sorted(names.values()))

    real = [e for e in evs if e.get("ph") in ("X", "i")]
    check(all(e["ts"] >= 0 for e in real), label + ": timestamps >= 0")
    check(all(e["dur"] >= 0 for e in real if e["ph"] == "X"),
          label + ": durations >= 0")
    check(all((e["pid"], e["tid"]) in want for e in real),
          label + ": every event on a named thread")

    rounds = {}  # (rank, round) -> round event
    for e in real:
        if e.get("cat") == "round":
            key = (e["pid"], e["args"]["round"])
            check(key not in rounds, label + ": one round event per rank "
                  "and round %s" % (key,))
            rounds[key] = e
    nrounds = max(rd for (_, rd) in rounds) if rounds else 0
    check(nrounds >= 1 and len(rounds) == P * nrounds,
          label + ": %d round events for %d ranks" % (len(rounds), P))

    # Every event lies inside its rank's round (1 us slack for rounding).
    outside = [e for e in real if e.get("cat") != "round" and not (
        rounds[(e["pid"], e["args"]["round"])]["ts"] - 1 <= e["ts"] and
        e["ts"] + e.get("dur", 0) <= rounds[(e["pid"], e["args"]["round"])]["ts"]
        + rounds[(e["pid"], e["args"]["round"])]["dur"] + 1)]
    check(not outside, label + ": %d events outside their round, e.g. %s"
          % (len(outside), outside[:1]))

    schedules = Counter()
    for (r, rd), rev in sorted(rounds.items()):
        sched = rev["args"]["schedule"]
        schedules[sched] += 1
        mine = [e for e in real if e["pid"] == r and e["args"]["round"] == rd]
        tag = "%s: rank %d round %d (%s)" % (label, r, rd, sched)
        # GEMM events cover every (global tile, column block) exactly once.
        cover = Counter()
        for e in mine:
            if e["name"] != "gemm":
                continue
            g0, g1 = e["args"]["gtiles"]
            j0, j1 = e["args"]["blocks"]
            for gt in range(g0, g1):
                for j in range(j0, j1):
                    cover[(gt, j)] += 1
        items = {(gt, j) for gt in range(total) for j in range(blocks)}
        check(set(cover) == items and all(v == 1 for v in cover.values()),
              tag + ": GEMM coverage: %d items, %d covered, max %d" % (
                  len(items), len(cover), max(cover.values(), default=0)))
        puts = Counter()
        for e in mine:
            if e["name"] == "put":
                puts[(tuple(e["args"]["tiles"]), e["args"]["peer"])] += 1
        peers = [q for q in range(P) if q != r]
        if sched == "fused":
            want_puts = {((t, t + 1), q) for t in range(tiles[r]) for q in peers}
            pubs = Counter((tuple(e["args"]["tiles"]), e["args"]["peer"])
                           for e in mine if e["name"] == "publish tile")
            check(set(pubs) == want_puts and all(v == 1 for v in pubs.values()),
                  tag + ": one tile publish per (tile, peer)")
        else:
            want_puts = {((0, tiles[r]), q) for q in peers}
            shard = m_local[r] * k * ESIZE[meta["dtype"]]
            check(all(e["args"]["bytes"] == shard for e in mine
                      if e["name"] == "put"), tag + ": shard put bytes")
        check(set(puts) == want_puts and all(v == 1 for v in puts.values()),
              tag + ": one put per (tile, peer): got %d, want %d" % (
                  sum(puts.values()), len(want_puts)))
        acks = [e for e in mine if e["name"] == "publish ack"]
        check(sorted(e["args"]["peer"] for e in acks) == peers,
              tag + ": one ack publish per peer")
        for e in mine:
            if e["name"] == "wait tile":
                a = e["args"]
                check(0 <= a["from"] < P and a["from"] != r and
                      0 <= a["index"] < tiles[a["from"]],
                      tag + ": wait names a remote tile %s" % a)

    summ = meta["summary"]
    check(len(summ) == P * nrounds, label + ": summary per round and rank")
    check(all(0 <= s["comm_hidden_us"] <= s["comm_busy_us"] + 1e-3 and
              s["gemm_wait_us"] >= 0 and s["round_us"] > 0 for s in summ),
          label + ": summary values in range")
    return doc, schedules


def check_svg(path, label, ranks):
    root = ET.parse(path).getroot()
    check(root.tag == "{http://www.w3.org/2000/svg}svg", label + ": svg root")
    ns = "{http://www.w3.org/2000/svg}"
    rects = root.findall(ns + "rect")
    texts = " ".join(t.text or "" for t in root.iter(ns + "text"))
    check(len(rects) > 10, label + ": %d rects" % len(rects))
    for r in range(ranks):
        check("rank %d" % r in texts, label + ": lane group 'rank %d'" % r)
    for word in ("put", "wait", "GEMM", "round 1"):
        check(word in texts, label + ": text %r (legend/axis)" % word)
    check(" ms" in texts or " us" in texts, label + ": time axis labels")


def test_json(agmm):
    d = tempfile.mkdtemp(prefix="agmm_trace.")
    try:
        # Uneven shards, partial tiles, 2 rounds, a comm thread.
        a = ["run", "--ranks", "2", "--m-local", "100,37", "--k", "64",
             "--n", "200", "--tile-m", "16", "--tile-n", "48",
             "--comm-cores", "1", "--gemm-cores", "1", "--oversubscribe",
             "--rounds", "2", "--json", "--trace", "a.json",
             "--trace-svg", "a.svg"]
        p = run_agmm(agmm, a, d)
        out = json.loads(p.stdout)
        check(out["pass"] is True, "a: run passes its check")
        tr = out.get("trace", {})
        check(tr.get("json") == "a.json" and tr.get("svg") == "a.svg",
              "a: --json names the trace files")
        summ = tr.get("summary", [])
        check(len(summ) == 4 and all(
            s["hidden_share"] is None or 0 <= s["hidden_share"] <= 1
            for s in summ), "a: --json summary per round and rank")
        check_trace(os.path.join(d, "a.json"), "a", 64)
        check_svg(os.path.join(d, "a.svg"), "a", 2)

        # 3 ranks, one empty, no comm threads (GEMM workers put), 2 GEMM
        # workers coalescing runs, fp32 (no conversion).
        b = ["run", "--ranks", "3", "--m-local", "50,0,33", "--k", "32",
             "--n", "100", "--tile-m", "8", "--tile-n", "20", "--dtype",
             "fp32", "--comm-cores", "0", "--gemm-cores", "2",
             "--oversubscribe", "--trace", "b.json"]
        p = run_agmm(agmm, b, d)
        check("trace summary per round and rank" in p.stdout,
              "b: text summary printed")
        check_trace(os.path.join(d, "b.json"), "b", 32)

        # bench: fused and baseline rounds alternate, all traced.
        c = ["bench", "--ranks", "2", "--m-local", "64,40", "--k", "48",
             "--n", "96", "--tile-m", "16", "--tile-n", "32",
             "--comm-cores", "1", "--gemm-cores", "2", "--oversubscribe",
             "--rounds", "2", "--warmup", "1", "--trace", "c.json",
             "--trace-svg", "c.svg"]
        p = run_agmm(agmm, c, d)
        check("median over the timed rounds" in p.stdout,
              "c: bench prints the trace summary")
        _, scheds = check_trace(os.path.join(d, "c.json"), "c", 48)
        # The 2 timed rounds of each mode; warmup rounds are not traced.
        check(scheds == Counter({"fused": 4, "baseline": 4}),
              "c: 2 fused + 2 baseline rounds on 2 ranks: %s" % dict(scheds))
        check_svg(os.path.join(d, "c.svg"), "c", 2)

        # oneDNN (cheap calls), no comm thread: one call over all rows up to
        # AGMM_AG_WHOLE_ROWS (512, ops/ag_gemm/ag_gemm.h) when the peer's
        # tiles arrive within the time the worker's own puts took
        # (share_arrives_within, ops/ag_gemm/fused.c), a call per tile
        # otherwise; above 512 rows always a call per tile. Arrival is
        # timing (CI once saw the peer late, [1, 1, 1, 1]), so the rule is
        # checked where every tile counts as arrived, bench's gemm-only part
        # (its fused rounds; the baseline ones are the monolithic GEMM); in
        # a run with the puts each rank covers its 4 tiles one way or the
        # other, and a rank that split them looked before the peer's last
        # put had ended (the look follows the rank's own puts; a put's event
        # ends after its signal is raised; one host, one clock).
        files = ["a.json", "a.svg", "b.json", "c.json", "c.svg"]
        engines = subprocess.run([agmm, "--version"], capture_output=True,
                                 text=True).stdout

        def calls(name, schedule, pid=0):
            """Tile spans of rank pid's GEMM calls per round of `schedule`."""
            if name + ".json" not in files:
                files.append(name + ".json")
            with open(os.path.join(d, name + ".json")) as f:
                ev = [e for e in json.load(f)["traceEvents"]
                      if e.get("name") == "gemm" and e.get("ph") == "X" and
                      e["pid"] == pid and e["args"]["schedule"] == schedule]
            spans = {}
            for e in ev:
                g = e["args"]["gtiles"]
                spans.setdefault(e["args"]["round"], []).append(g[1] - g[0])
            return [sorted(v) for _, v in sorted(spans.items())]

        def last_put_end(name, pid):
            """Per round: when rank pid's last put ended (us)."""
            with open(os.path.join(d, name + ".json")) as f:
                ev = [e for e in json.load(f)["traceEvents"]
                      if e.get("name") == "put" and e.get("ph") == "X" and
                      e["pid"] == pid]
            end = {}
            for e in ev:
                r = e["args"]["round"]
                end[r] = max(end.get(r, 0), e["ts"] + e["dur"])
            return [v for _, v in sorted(end.items())]

        shape = ["--ranks", "2", "--k", "64", "--n", "64", "--tile-m", "128",
                 "--gemm-engine", "onednn", "--comm-cores", "0",
                 "--gemm-cores", "1", "--oversubscribe"]
        if "onednn" in engines.split("gemm engines:")[-1].split("\n")[0]:
            for name, rows, want in (("d", "200,200", [[4]] * 2),
                                     ("e", "300,300", [[1] * 6] * 2)):
                run_agmm(agmm, ["bench", "--m-local", rows, "--mode",
                                "gemm-only", "--rounds", "2", "--warmup", "0",
                                "--trace", name + ".json"] + shape, d)
                got = calls(name, "fused")
                check(got == want, "%s: M %d, gemm-only: calls %s, want %s"
                      % (name, 2 * int(rows.split(",")[0]), got, want))
            run_agmm(agmm, ["run", "--m-local", "200,200", "--schedule",
                            "fused", "--rounds", "3", "--trace", "f.json"]
                     + shape, d)
            ends = [last_put_end("f", r) for r in (0, 1)]
            for r in (0, 1):
                got = calls("f", "fused", r)
                check(len(got) == 3 and all(s in ([4], [1] * 4) for s in got),
                      "f: M 400 with puts, rank %d: 4 tiles in each of 3 "
                      "rounds: %s" % (r, got))
                split = [i for i, s in enumerate(got) if s == [1] * 4]
                check(all(ends[1 - r][i] > ends[r][i] for i in split),
                      "f: rank %d split rounds %s only when its peer's last "
                      "put ended after its own (ends %s)" % (r, split, ends))
        left = sorted(os.listdir(d))
        check(left == sorted(files),
              "only the trace files are left: %s" % left)
    finally:
        shutil.rmtree(d, ignore_errors=True)


def read_png(path):
    """(width, height, rows of (r, g, b)) of an 8-bit RGB/RGBA PNG."""
    with open(path, "rb") as f:
        data = f.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat = 8, b""
    while pos < len(data):
        n, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + n]
        if kind == b"IHDR":
            w, h, depth, ctype, _, _, interlace = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat += body
        pos += 12 + n
    assert depth == 8 and ctype in (2, 6) and interlace == 0, \
        "unsupported PNG (depth %d, colour type %d)" % (depth, ctype)
    bpp = 3 if ctype == 2 else 4
    raw = zlib.decompress(idat)
    stride = w * bpp
    rows, prev = [], bytearray(stride)
    for y in range(h):
        ft = raw[y * (stride + 1)]
        cur = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = cur[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if ft == 1:
                cur[i] = (cur[i] + a) & 255
            elif ft == 2:
                cur[i] = (cur[i] + b) & 255
            elif ft == 3:
                cur[i] = (cur[i] + (a + b) // 2) & 255
            elif ft == 4:
                pa, pb, pc = abs(b - c), abs(a - c), abs(a + b - 2 * c)
                pr = a if pa <= pb and pa <= pc else (b if pb <= pc else c)
                cur[i] = (cur[i] + pr) & 255
        rows.append([tuple(cur[x * bpp:x * bpp + 3]) for x in range(w)])
        prev = cur
    return w, h, rows


def test_screenshot(agmm, chromium):
    if not check(chromium and os.path.exists(chromium),
                 "chromium found (install it: scripts/install-deps.sh)"):
        return
    d = tempfile.mkdtemp(prefix="agmm_shot.")
    try:
        run_agmm(agmm, ["run", "--ranks", "2", "--m-local", "256,64", "--k",
                        "128", "--n", "256", "--tile-m", "16", "--tile-n", "64",
                        "--comm-cores", "1", "--gemm-cores", "1",
                        "--oversubscribe", "--no-check", "--rounds", "2",
                        "--trace-svg", "t.svg"], d)
        png = os.path.join(d, "t.png")
        env = dict(os.environ, HOME=d)
        cmd = [chromium, "--headless", "--no-sandbox", "--disable-gpu",
               "--disable-quic", "--no-first-run",
               "--disable-background-networking", "--disable-component-update",
               "--disable-sync", "--user-data-dir=" + os.path.join(d, "prof"),
               "--screenshot=" + png, "--window-size=1200,800",
               "file://" + os.path.join(d, "t.svg")]
        p = subprocess.run(cmd, cwd=d, env=env, capture_output=True, text=True,
                           timeout=120)
        if not check(p.returncode == 0 and os.path.exists(png),
                     "chromium screenshot: exit %d: %s" % (p.returncode,
                                                            p.stderr[-600:])):
            return
        w, h, rows = read_png(png)
        check((w, h) == (1200, 800), "screenshot is 1200x800: %dx%d" % (w, h))
        colours = Counter(px for row in rows for px in row)
        white = colours.get((255, 255, 255), 0)
        check(len(colours) >= 5, "screenshot has %d colours" % len(colours))
        check(white < 0.97 * w * h, "screenshot is not blank (%.1f%% white)"
              % (100.0 * white / (w * h)))

        def near(rgb):
            return sum(n for px, n in colours.items()
                       if max(abs(px[i] - rgb[i]) for i in range(3)) <= 6)
        check(near((0x2c, 0xa0, 0x2c)) >= 200, "GEMM green is drawn")
        # Puts are short next to the GEMMs (a sanitizer build's GEMMs are
        # slower still), so their bars are thin: a few of them drawn.
        check(near((0x1f, 0x77, 0xb4)) >= 40, "put blue is drawn")
        check(near((0, 0, 0)) >= 100, "text is drawn")
    finally:
        shutil.rmtree(d, ignore_errors=True)


def main():
    if len(sys.argv) < 3 or sys.argv[2] not in ("json", "screenshot"):
        print(__doc__)
        return 2
    agmm, what = sys.argv[1], sys.argv[2]
    if what == "json":
        test_json(agmm)
    else:
        test_screenshot(agmm, sys.argv[3] if len(sys.argv) > 3 else "")
    print("test_trace %s: %d passed, %d failed" % (what, PASSED, FAILED))
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
