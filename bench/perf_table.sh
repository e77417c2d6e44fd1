#!/usr/bin/env bash
# Reproduces the table of docs/performance.md: every figure there comes from
# one of the commands below (printed as they run), and the raw output lands
# in OUT_DIR. Run from a build directory or pass it:
#
#   bench/perf_table.sh [BUILD_DIR [OUT_DIR [ROUNDS]]]   (build, perf-out, 5)
#
# Each `agmm bench` times all its modes side by side, rounds alternating,
# so machine noise hits every mode alike; the ratios are of medians from
# that one invocation. The machine's OPENBLAS_CORETYPE / OPENBLAS_L2_SIZE are
# left as they are; the BLAS kernel that ran is in every output.
set -eu
BUILD=${1:-build}
OUT=${2:-perf-out}
ROUNDS=${3:-5}
AGMM=$BUILD/agmm
mkdir -p "$OUT"

run() { # NAME COMMAND...
    local name=$1
    shift
    echo "\$ $*" | tee "$OUT/$name.cmd"
    "$@" | tee "$OUT/$name.out"
}

# 1. The original example's shape, 2 ranks, 1 GEMM core each.
run default "$AGMM" bench --mode all --rounds "$ROUNDS" --warmup 4 --json
# 2. Emulated 1 Gbit/s link, 20 us latency, N = 256.
run link "$AGMM" bench --mode all --n 256 --link-gbps 1 --link-latency-us 20 \
    --rounds $((ROUNDS * 2)) --warmup 4 --json
# 3. Decode-like shape.
run decode "$AGMM" bench --mode all --m-local 128 --rounds $((ROUNDS * 4)) --warmup 4 --json
# 4. Signal ping-pong on shared memory.
run pingpong "$BUILD/bench/agmm_pingpong" 10000 31
# 5. One GEMM call per row tile against one call (why runs are coalesced).
run tile_gemm "$BUILD/bench/agmm_tile_gemm" 2048 4096 4096 "$ROUNDS"

if command -v python3 >/dev/null; then
    python3 - "$OUT" <<'PY'
import json, sys
out = sys.argv[1]
keys = [("fused_over_baseline", "fused/baseline"),
        ("gemm_over_monolithic", "gemm-only/monolithic"),
        ("fused_over_bound", "fused/max(comm-only,gemm-only)"),
        ("auto_over_best", "auto/min(fused,baseline)")]
print()
print("Ratios: of the medians, then [the median of per-round ratios].")
print()
print("| shape | " + " | ".join(k[1] for k in keys) + " | auto pick | kernel |")
print("|---|" + "---|" * (len(keys) + 2))
for name in ("default", "link", "decode"):
    j = json.load(open(f"{out}/{name}.out"))
    cells = []
    for k, _ in keys:
        v, pv = j.get("ratio_" + k), j["paired"].get(k)
        cells.append("n/a" if v is None else f"{v:.3f} [{pv:.3f}]")
    print(f"| {name} | " + " | ".join(cells) +
          f' | {j["auto"]["pick"]} | {j["blas"]["name"]} {j["blas"]["kernel"]} |')
print()
print("| shape | mode | median ms | min ms | max ms | stdev ms |")
print("|---|---|---|---|---|---|")
for name in ("default", "link", "decode"):
    j = json.load(open(f"{out}/{name}.out"))
    for mode, s in j["modes"].items():
        print(f'| {name} | {mode} | {s["median_us"]/1e3:.1f} | {s["min_us"]/1e3:.1f} '
              f'| {s["max_us"]/1e3:.1f} | {s["stdev_us"]/1e3:.1f} |')
PY
fi
