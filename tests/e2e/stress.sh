#!/usr/bin/env bash
# Stress through the tool: `agmm run` for many rounds at small random
# shapes, with the inputs changing every round (round r uses seed + r) and
# every round of every rank checked against the reference; 2..4 ranks with
# 1..3 threads each, oversubscribing the cores, random tile sizes, uneven
# and empty shards, every dtype and weight mode. Every round must pass
# (zero wrong outputs), and nothing may be left behind.
#
# usage: tests/e2e/stress.sh AGMM_BINARY [CONFIGS [ROUNDS]]   (default 6 1000)
# AGMM_TEST_SEED=S repeats a run (the seed is printed).
set -u
TEST_NAME=stress TEST_ARGS="[CONFIGS [ROUNDS]]"
. "$(dirname "$0")/seeded.sh" # AGMM, SEED, RANDOM, TMP, tagged_pids
CONFIGS=${2:-6}
ROUNDS=${3:-1000}

pass=0
fail=0
survived=0
dtypes=(fp16 bf16 fp32)
weights=(shared per-rank)
for ((i = 0; i < CONFIGS; i++)); do
    ranks=$((2 + RANDOM % 3))
    m=""
    for ((r = 0; r < ranks; r++)); do
        rows=$((RANDOM % 5 == 0 ? 0 : 1 + RANDOM % 48))
        m+="${m:+,}$rows"
    done
    [ "${m//[,0]/}" ] || m="${m%0}1" # at least one row
    comm=$((RANDOM % 2))
    gemm=$((1 + RANDOM % 2))
    args=(run --ranks $ranks --m-local "$m" --k $((1 + RANDOM % 48))
          --n $((1 + RANDOM % 48)) --tile-m $((1 + RANDOM % 12))
          --tile-n $((1 + RANDOM % 16)) --dtype "${dtypes[RANDOM % 3]}"
          --weights "${weights[RANDOM % 2]}" --comm-cores $comm
          --gemm-cores $gemm --oversubscribe --rounds "$ROUNDS"
          --seed $((SEED * 100 + i)) --timeout 60)
    start=$(date +%s)
    timeout 600 "$AGMM" "${args[@]}" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    secs=$(($(date +%s) - start))
    passed=$(grep -cE '^round [0-9]+: .* PASS$' "$TMP/out")
    failed=$(grep -cE '^round [0-9]+: .* FAIL$' "$TMP/out")
    if [ $rc -eq 0 ] && [ "$passed" -eq "$ROUNDS" ] && [ "$failed" -eq 0 ]; then
        pass=$((pass + 1))
        survived=$((survived + passed))
        echo "  agmm ${args[*]}: $passed rounds passed in ${secs}s"
    else
        fail=$((fail + 1))
        echo "FAIL: agmm ${args[*]}: exit $rc, $passed rounds passed," \
             "$failed failed, want $ROUNDS passed"
        grep -m5 -E 'FAIL|rank [0-9]+:' "$TMP/out" "$TMP/err"
    fi
done

left=$(tagged_pids)
if [ -n "$left" ]; then
    fail=$((fail + 1)); echo "FAIL: agmm processes left: $(echo "$left" | tr '\n' ' ')"
else
    pass=$((pass + 1))
fi

echo "stress: $survived rounds checked and passed on every rank (seed $SEED)"
echo "stress: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
