#!/usr/bin/env bash
# One unit system in text output (issue 14): ms and GFLOP/s, "per rank"
# said; comm-only in GB/s; "paired" explained under the table; the emulated
# link named once; plurals; and the "nothing to overlap" line when the
# gather is under 2% of a fused round (bench: comm-only vs fused), not when
# the link is slow.
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
    --warmup 1 --mode fused,baseline,comm-only --link-gbps 1 >"$TMP/out" 2>"$TMP/err"
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

# Shared memory, a wide N: the gather is a sliver of the round.
timeout 120 "$AGMM" bench --ranks 2 --oversubscribe --m-local 256 --k 256 --n 2048 \
    --rounds 5 --warmup 1 >"$TMP/out" 2>"$TMP/err"
check 'grep -q "^overlap: the gather (comm-only) takes .* nothing to overlap here; to see overlap try --link-gbps 1 --n 256$" "$TMP/out"' \
      "nothing-to-overlap line: $(tail -n2 "$TMP/out")"
echo "tool_units: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
