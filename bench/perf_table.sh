#!/usr/bin/env bash
# Reproduces the first tables of agmm against its gather-then-GEMM peer
# (docs/performance.md, "The first Zen 5 VM"; the sitting in full in
# docs/history/2026-11-29-operations-engines-paths.md, "Results"): every
# figure there comes from one of the commands below (printed as they run),
# and the raw output lands in OUT_DIR. Run from a build directory or pass it:
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
#    The same with the oneDNN engine in bf16 (prepared weight): 32- and
#    128-row calls against one call (issue 9: tile calls as fast as one).
run tile_gemm_bf16 env ENGINE=onednn DTYPE=bf16 "$BUILD/bench/agmm_tile_gemm" \
    2048 4096 4096 "$ROUNDS" 32 128
#    gemm-only/monolithic at --tile-m 32, bf16 (the GEMM part of a fused
#    round without communication, against one call over the gathered rows).
run tile32 "$AGMM" bench --dtype bf16 --tile-m 32 --mode gemm-only \
    --rounds "$ROUNDS" --warmup 2 --json
# 6. Issue 9: agmm next to the gather-then-GEMM peer (bench/ag_peer.c:
#    MPI_Allgather + one oneDNN matmul, or + convert + one OpenBLAS sgemm)
#    in the same sitting: bf16 seed and decode shapes against oneDNN (when
#    the peer has it; else OpenBLAS), fp16 (run 1) against OpenBLAS.
PEER=$BUILD/bench/agmm_ag_peer
if [ -x "$PEER" ] && command -v mpirun >/dev/null; then
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_btl_vader_single_copy_mechanism=none
    MPIRUN="mpirun --oversubscribe -np 2"
    run bf16 "$AGMM" bench --dtype bf16 --rounds "$ROUNDS" --warmup 4 --json
    run peer_bf16 $MPIRUN "$PEER" --dtype bf16 --rounds "$ROUNDS" --warmup 2 --json
    run bf16_decode "$AGMM" bench --dtype bf16 --m-local 16 \
        --rounds $((ROUNDS * 4)) --warmup 4 --json
    run peer_bf16_decode $MPIRUN "$PEER" --dtype bf16 --m-local 16 \
        --rounds $((ROUNDS * 4)) --warmup 4 --json
    run peer_fp16 $MPIRUN "$PEER" --dtype fp16 --engine openblas \
        --rounds "$ROUNDS" --warmup 2 --json
fi

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
print("| shape | mode | median ms | min ms | max ms | stdev ms | of peak |")
print("|---|---|---|---|---|---|---|")
for name in ("default", "link", "decode"):
    j = json.load(open(f"{out}/{name}.out"))
    for mode, s in j["modes"].items():
        f = s.get("fraction_of_peak")
        print(f'| {name} | {mode} | {s["median_us"]/1e3:.1f} | {s["min_us"]/1e3:.1f} '
              f'| {s["max_us"]/1e3:.1f} | {s["stdev_us"]/1e3:.1f} '
              f'| {"-" if f is None else f"{f:.3f}"} |')
import os
pairs = [("fp16 seed", "default", "peer_fp16"), ("bf16 seed", "bf16", "peer_bf16"),
         ("bf16 m-local 16", "bf16_decode", "peer_bf16_decode")]
if all(os.path.exists(f"{out}/{p}.out") for _, _, p in pairs):
    print()
    print("agmm fused against the gather-then-GEMM peer (same sitting; ms, "
          "median [min-max]; peak per core as bench measured it):")
    print()
    print("| shape | agmm fused | peer | peer engine (impl) | fused/peer "
          "| fused of peak | peer of peak | peak GF/s (instr) |")
    print("|---|---|---|---|---|---|---|---|")
    for what, a, p in pairs:
        j, q = json.load(open(f"{out}/{a}.out")), json.load(open(f"{out}/{p}.out"))
        f, r = j["modes"]["fused"], q["round"]
        peak = j["peak_gflops_per_core"]
        print(f'| {what} | {f["median_us"]/1e3:.1f} [{f["min_us"]/1e3:.1f}-'
              f'{f["max_us"]/1e3:.1f}] | {r["median_us"]/1e3:.1f} '
              f'[{r["min_us"]/1e3:.1f}-{r["max_us"]/1e3:.1f}] '
              f'| {q["library"]} ({q["impl"]}) '
              f'| {f["median_us"]/r["median_us"]:.3f} | {f["fraction_of_peak"]:.3f} '
              f'| {q["gflops_per_core"]/peak:.3f} | {peak:.1f} ({j["peak_instr"]}) |')
PY
fi
