#!/usr/bin/env bash
# End-to-end runs of the performance paths, each checked against the
# reference by `agmm run` (exit 0 and every round PASS): odd sizes, uneven
# and empty shards, partial tiles, every dtype; the fused GEMM over whole
# shares (shared memory: tiles are there at once) and over runs of tiles as
# they arrive (emulated slow link), with and without comm threads; auto;
# and `agmm bench --json` printing every mode and ratio. No timing is
# asserted.
#
# usage: tests/e2e/perf_paths.sh AGMM_BINARY
set -u
AGMM=$1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/perf_paths.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0

ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

# Every GEMM engine built in ("gemm engines: ..." of --version): the
# fused schedule takes different paths with each (per-tile calls with
# oneDNN, coalesced runs and whole shares with OpenBLAS).
ENGINES=$("$AGMM" --version | sed -n 's/^gemm engines: //p')

# run ARGS...: with each engine, must exit 0 with a PASS on every round and
# no FAIL.
run() {
    local engine
    for engine in $ENGINES; do run1 --gemm-engine "$engine" "$@"; done
}
run1() {
    timeout 120 "$AGMM" run --oversubscribe --timeout 30 "$@" >"$TMP/out" 2>"$TMP/err"
    local rc=$?
    local rounds passes
    rounds=$(grep -c '^round ' "$TMP/out")
    passes=$(grep -c 'PASS' "$TMP/out")
    if [ $rc -ne 0 ] || [ "$rounds" -eq 0 ] || [ "$passes" -ne "$rounds" ]; then
        bad "agmm run $* (exit $rc, $passes of $rounds rounds pass): $(tail -n 3 "$TMP/out" "$TMP/err" | tr '\n' '~')"
        return 1
    fi
    ok
}

ODD="--ranks 3 --m-local 301,0,77 --k 67 --n 93 --tile-m 16 --tile-n 20"
for dtype in fp16 bf16 fp32; do
    for sched in fused baseline; do
        run $ODD --dtype $dtype --schedule $sched --rounds 2
    done
done
# More GEMM workers than column blocks: row groups, blocks that do not merge.
run $ODD --n 20 --gemm-cores 2 --comm-cores 0 --schedule fused --rounds 2
run $ODD --n 20 --gemm-cores 2 --comm-cores 1 --dtype fp32 --schedule fused
# Auto: trials alternate, then the pick; every round still checked.
run --ranks 2 --m-local 130,67 --k 33 --n 45 --tile-m 32 --rounds 6 -v
if grep -q 'schedule auto ran .*measured fused' "$TMP/err"; then ok; else
    bad "auto: no decision line in --verbose output: $(tr '\n' '~' <"$TMP/err")"; fi

# Emulated link: slow enough that tiles arrive one by one during the GEMM.
LINK="--link-gbps 0.05 --link-latency-us 200"
for cc in 0 1; do
    run --ranks 2 --m-local 257,130 --k 64 --n 40 --tile-m 16 --tile-n 16 \
        --comm-cores $cc --gemm-cores 1 --schedule fused --rounds 3 $LINK
    # An emulated run says so once, in its first header line (issue 14).
    if [ "$(grep -c 'emulated link' "$TMP/out")" -ne 1 ] ||
       ! head -n1 "$TMP/out" | grep -q 'emulated link: 0.05 Gbit/s, 200 us'; then
        bad "emulated run: 'emulated link' not exactly once, in the first line: $(grep -c 'emulated link' "$TMP/out") lines; first: $(head -n1 "$TMP/out")"
    else ok; fi
done
run --ranks 3 --m-local 100,0,50 --k 40 --n 24 --tile-m 8 --dtype bf16 \
    --schedule baseline --rounds 2 $LINK
run --ranks 2 --m-local 64 --k 32 --n 32 --tile-m 8 --schedule auto --rounds 5 $LINK

# bench --json: every mode and ratio key, the BLAS, and the link.
bench_json() {
    timeout 120 "$AGMM" bench --oversubscribe --rounds 2 --warmup 4 --json "$@" \
        >"$TMP/json" 2>"$TMP/err"
}
bench_json --m-local 96 --k 48 --n 64 --tile-m 16 --mode all
for key in '"modes":{"fused":{' '"baseline":{' '"auto":{' '"gemm-only":{' \
           '"monolithic":{' '"comm-only":{' '"median_us":' \
           '"ratio_fused_over_baseline":' '"ratio_gemm_over_monolithic":' \
           '"ratio_fused_over_bound":' '"kernel":' '"threads_per_call":' \
           '"pick":"' '"link":null'; do
    if grep -qF -- "$key" "$TMP/json"; then ok; else
        bad "bench --json lacks $key: $(head -c 400 "$TMP/json")"; fi
done
if python3 -c 'import json,sys; json.load(open(sys.argv[1]))' "$TMP/json" 2>/dev/null ||
   ! command -v python3 >/dev/null; then ok; else bad "bench --json is not valid JSON"; fi
bench_json --m-local 64 --k 32 --n 32 --tile-m 8 --mode comm-only $LINK
if grep -qF '"kind":"emulated link"' "$TMP/json" && grep -qF '"comm-only":{' "$TMP/json" &&
   ! grep -qF '"fused":{' "$TMP/json"; then ok; else
    bad "bench --mode comm-only with an emulated link: $(head -c 400 "$TMP/json")"; fi

echo "perf_paths: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
