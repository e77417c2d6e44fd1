#!/usr/bin/env bash
# One unit system in text output (issue 14): ms and GFLOP/s, "per rank"
# said; comm-only in GB/s; "paired" explained under the table; the emulated
# link named once; plurals; and the "nothing to overlap" line: never on a
# slow link, and on shared memory exactly when the printed numbers put the
# gather under 2% of a fused round (bench: comm-only vs fused).
#
# usage: tests/e2e/tool_units.sh AGMM_BINARY
set -u
AGMM=$1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tool_units.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
has() { grep -qF -- "$1" "$TMP/out"; }

timeout 120 "$AGMM" bench --ranks 2 --oversubscribe --m-local 64 --k 64 --n 64 --rounds 3 \
    --warmup 1 --mode fused,baseline,comm-only --link-gbps 1 --link-latency-us 5000 \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "bench with comm-only runs: $(cat "$TMP/err")"
check 'has "median_ms" && has "rate per rank" && ! grep -q "_us\|TFLOP\|GF/s" "$TMP/out"' \
      "bench table in ms and GFLOP/s per rank: $(grep -m1 '^mode' "$TMP/out")"
check 'grep -q "^comm-only .* GB/s " "$TMP/out"' "comm-only in GB/s: $(grep '^comm-only' "$TMP/out")"
check 'grep -q "^fused .* GFLOP/s " "$TMP/out"' "fused in GFLOP/s: $(grep '^fused' "$TMP/out")"
check 'grep -q "^(median): .*paired: median of each round" "$TMP/out"' "'paired' explained"
check '[ "$(grep -c "emulated link" "$TMP/out")" -eq 1 ]' \
      "the emulated link named once (got $(grep -c 'emulated link' "$TMP/out"))"
check '! has "overlap: the gather"' "a slow link has something to overlap: no 'nothing to overlap' line"

timeout 120 "$AGMM" run --ranks 1 --m-local 64 --k 32 --n 32 --gemm-engine openblas \
    >"$TMP/out" 2>"$TMP/err"
check 'has "agmm run: 1 rank (" && has "over 1 rank," && has "GFLOP/s per rank"' \
      "run: singular rank, per rank rate: $(cat "$TMP/out")"
check 'has ", 1 thread per GEMM call" && ! grep -q "1 threads\|1 ranks" "$TMP/out"' "plurals"

# Shared memory, a wide N: the gather is a sliver of the round. Whether it
# is under 2% is a measurement (under TSan, whose instrumented copies are
# slow while the GEMM libraries are not, it may not be), so the check is
# that the line agrees with the numbers the same output prints, never a
# timing expectation: with comm-only among the modes, the line is there iff
# comm-only's median < 2% of fused's; without it (3 extra comm-only rounds
# measure the gather), a line that is there states a share under 2%.
overlap_consistent() { # FILE: exit 0 when the overlap line agrees with the table
    python3 - "$1" <<'PY'
import re, sys
text = open(sys.argv[1]).read()
med = {}
for line in text.splitlines():
    f = line.split()
    if len(f) > 2 and f[0] in ("fused", "comm-only") and re.fullmatch(r"[0-9.]+", f[2]):
        med[f[0]] = float(f[2])  # columns: mode min_ms median_ms ...
m = re.search(r"^overlap: the gather \(comm-only\) takes ([0-9.]+)% of a fused round: "
              r"nothing to overlap here; to see overlap try --link-gbps 1 --n 256$", text, re.M)
if "comm-only" in med:
    want = med["comm-only"] < 0.02 * med["fused"]
    sys.exit(0 if bool(m) == want else 1)
# printed to 0.1%: a share just under 2% (say 1.98%) prints as 2.0
sys.exit(0 if (m is None or float(m.group(1)) <= 2.0) else 1)
PY
}
for modes in fused,baseline fused,comm-only; do
    timeout 120 "$AGMM" bench --ranks 2 --oversubscribe --m-local 256 --k 256 --n 2048 \
        --mode "$modes" --rounds 5 --warmup 1 >"$TMP/out" 2>"$TMP/err"
    check 'overlap_consistent "$TMP/out"' \
          "nothing-to-overlap line agrees with the table (--mode $modes): $(tail -n4 "$TMP/out")"
done
echo "tool_units: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
