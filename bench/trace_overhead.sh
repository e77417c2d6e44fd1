#!/usr/bin/env bash
# What tracing costs, measured with `agmm bench`: three variants run
# interleaved, REPS times each, so machine noise hits all of them alike:
#   none   an agmm built without tracing (e.g. main), if AGMM_NONE is given
#   off    this agmm, no --trace (the hooks cost one branch each)
#   on     this agmm with --trace and --trace-svg (files written per run)
# For each variant: the median over runs of bench's fused and baseline
# medians, and the spread (min..max) of the runs; then the ratios to `off`.
#
# usage: bench/trace_overhead.sh AGMM [AGMM_NONE] [-- extra bench options]
# env:   REPS (default 5)
set -euo pipefail
AGMM=$1; shift
NONE=""
if [ $# -gt 0 ] && [ "$1" != "--" ]; then NONE=$1; shift; fi
[ "${1:-}" = "--" ] && shift
REPS=${REPS:-5}
SHAPE=(--m-local 512 --k 1024 --n 1024 --tile-m 64 --tile-n 256
       --rounds 20 --warmup 3 "$@")
TMP=$(mktemp -d "${TMPDIR:-/tmp}/agmm_trace_overhead.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

variants=(off on)
[ -n "$NONE" ] && variants=(none off on)
for ((i = 1; i <= REPS; i++)); do
    for v in "${variants[@]}"; do
        case $v in
        none) "$NONE" bench "${SHAPE[@]}" --json ;;
        off) "$AGMM" bench "${SHAPE[@]}" --json ;;
        on) "$AGMM" bench "${SHAPE[@]}" --json --trace "$TMP/t.json" \
                --trace-svg "$TMP/t.svg" ;;
        esac >"$TMP/$v.$i.json"
    done
done
"$AGMM" bench "${SHAPE[@]}" --help >/dev/null # the shape parses
python3 - "$TMP" "$REPS" "${variants[@]}" <<'PY'
import json, statistics, sys
tmp, reps, variants = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
res = {}
for v in variants:
    runs = [json.load(open("%s/%s.%d.json" % (tmp, v, i)))
            for i in range(1, reps + 1)]
    res[v] = {m: [r["modes"][m]["median_us"] for r in runs]
              for m in ("fused", "baseline")}
    kernel = runs[0]["blas"]["kernel"]
print("agmm bench, %d runs per variant, interleaved; BLAS kernel %s"
      % (reps, kernel))
print("%-6s %-9s %12s %12s %12s %8s" % ("trace", "mode", "median_us",
                                         "min_us", "max_us", "vs off"))
for v in variants:
    for m in ("fused", "baseline"):
        xs = res[v][m]
        med = statistics.median(xs)
        off = statistics.median(res["off"][m])
        print("%-6s %-9s %12.1f %12.1f %12.1f %8.3f"
              % (v, m, med, min(xs), max(xs), med / off))
PY
