#!/usr/bin/env bash
# agmm on the MPI transport, one host: `mpirun -np P agmm run` with 2, 3
# and 4 ranks (oversubscribed), uneven and empty shards, partial tiles,
# several dtypes and both weight modes, several rounds with new inputs,
# each checked against the reference; bad command lines under mpirun; and
# a rank killed or stopped mid-run ending the job with a non-zero exit and
# a message within the timeout, never a hang; the fault hook's modes in
# both schedules.
#
# With TEST_RECREATE (tests/unit/test_recreate.c): an abort's reason reaches
# the peer's message.
#
# usage: tests/e2e/mpi_e2e.sh AGMM_BINARY [TEST_RECREATE] [PART]
# PART: "checked" (the checked runs, relaying, bench, trace, bad command
# lines: no timing asserted, so CTest runs them beside other tests),
# "failures" (the killed, stopped and faulty ranks, each asserted to end
# within a limit: CTest runs them alone), or "all" (the default).
set -u
AGMM=$(readlink -f "$1")
RECREATE=${2:+$(readlink -f "$2")}
PART=${3:-all}
case $PART in all | checked | failures) ;; *) echo "FAIL: PART $PART: one of all, checked, failures"; exit 2 ;; esac
command -v mpirun >/dev/null || { echo "FAIL: mpirun not found (scripts/install-deps.sh)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# No CMA single copy (ptrace may be restricted in containers).
export OMPI_MCA_btl_vader_single_copy_mechanism=none
# A failed run must end within its --timeout 3 plus this (mpirun's start,
# MPI_Init, the rounds before the fault, teardown); sanitizer builds set
# AGMM_TEST_SLACK (tests/CMakeLists.txt).
LIMIT=$((3 + ${AGMM_TEST_SLACK:-17}))
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mpi_e2e.XXXXXX")
MP=""
trap '[ -n "$MP" ] && kill -9 $MP 2>/dev/null; rm -rf "$TMP"' EXIT
pass=0
fail=0
ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $*"
    sed 's/^/  | /' "$TMP/out" "$TMP/err" | grep -v '^  | *-*$' | head -20
}
# stderr is empty but for the OpenBLAS kernel advice (agmm_blas_advice),
# which the OpenBLAS engine says at most once a job (rank 0) where the
# BLAS runs an old kernel for this CPU.
# The launcher's own messages, searched with its line wrapping undone:
# OpenMPI 5's prterun wraps "... exited on" / "signal 9 (Killed)." at 72
# columns where OpenMPI 4's mpirun printed one line.
# Every process below pid $1, children before grandchildren.
descendants() {
    local p
    for p in $(pgrep -P "$1"); do
        echo "$p"
        descendants "$p"
    done
}
launcher_says() { tr '\n' ' ' <"$TMP/err" | tr -s ' ' | grep -qE -- "$1"; }
quiet_err() {
    [ "$(grep -c 'warning: OpenBLAS runs its .* kernel' "$TMP/err")" -le 1 ] &&
        [ "$(grep -vc 'warning: OpenBLAS runs its .* kernel' "$TMP/err")" -eq 0 ]
}
mpi() { # mpi NP ARGS...
    local np=$1
    shift
    timeout 120 mpirun --oversubscribe -np "$np" "$AGMM" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
}

if [ "$PART" != failures ]; then
# --- checked runs: "NP | ARGS"
runs=(
    "2 | --m-local 300,77 --k 96 --n 70 --tile-m 32 --tile-n 32 --rounds 3"
    "2 | --m-local 64,0 --k 33 --n 17 --tile-m 7 --dtype fp32 --comm-cores 1 --gemm-cores 2 --rounds 2"
    "3 | --m-local 100,0,37 --k 80 --n 50 --tile-m 16 --tile-n 16 --dtype bf16 --weights per-rank --rounds 3"
    "3 | --m-local 1,65,9 --k 64 --n 64 --tile-m 8 --dtype fp32 --comm-cores 1 --gemm-cores 1 --rounds 2"
    "4 | --m-local 65,1,0,130 --k 96 --n 70 --tile-m 16 --tile-n 32 --weights per-rank --rounds 3"
    "4 | --m-local 40 --k 48 --n 40 --tile-m 5 --dtype bf16 --comm-cores 1 --gemm-cores 2 --rounds 2"
    # several weights from one gather, rows changing every round (0 and
    # the most included): fused and baseline alternate (auto), empty and
    # short tiles on posted receives
    "2 | --m-local 40,24 --k 32 --n 48,16,40 --tile-m 8 --tile-n 16 --m-local-per-round 40,0,13,7,24 --rounds 6 --dtype bf16"
    "3 | --m-local 30,0,17 --k 24 --n 20,8 --tile-m 4 --m-local-per-round 0,30,5,1,17 --rounds 5 --comm-cores 0 --gemm-cores 2"
    # the epilogue: bias, activation, a 16-bit C
    "2 | --m-local 30,17 --k 40 --n 32,16 --tile-m 8 --bias --activation relu --out-dtype bf16 --rounds 2"
    # GEMM + reduce-scatter: fused and baseline alternate (auto)
    "2 | --op gemm-rs --m-local 37,20 --k 50 --n 40 --tile-m 8 --tile-n 16 --rounds 4"
    "2 | --op gemm-rs --m-local 0,19 --k 33 --k-local 33,0 --n 17 --tile-m 4 --dtype fp32 --comm-cores 0 --gemm-cores 2 --rounds 3"
    "3 | --op gemm-rs --m-local 7,0,12 --k 41 --k-local 20,0,21 --n 50 --tile-m 4 --tile-n 16 --dtype bf16 --comm-cores 1 --gemm-cores 2 --rounds 4"
    # GEMM + all-reduce: the same, every rank's whole C checked and the
    # same bytes on every rank
    "2 | --op gemm-ar --m-local 37,20 --k 50 --n 40 --tile-m 8 --tile-n 16 --rounds 4"
    "2 | --op gemm-ar --m-local 0,19 --k 33 --k-local 33,0 --n 17 --tile-m 4 --dtype fp32 --comm-cores 0 --gemm-cores 2 --rounds 3"
    "3 | --op gemm-ar --m-local 7,0,12 --k 41 --k-local 20,0,21 --n 50 --tile-m 4 --tile-n 16 --dtype bf16 --comm-cores 1 --gemm-cores 2 --rounds 4"
    # gemm-rs, rows changing every round (all 0, one rank's 0, the most):
    # empty and short tiles, empty bulk puts on posted receives
    "2 | --op gemm-rs --m-local 37,20 --k 50 --n 40 --tile-m 8 --tile-n 16 --m-local-per-round 37,0,13,7,20 --rounds 6 --dtype bf16"
    "3 | --op gemm-rs --m-local 30,0,17 --k 41 --n 24 --tile-m 4 --m-local-per-round 0,30,5,1,17 --rounds 5 --comm-cores 0 --gemm-cores 2 --dtype fp32"
    # gemm-ar, the same rows: empty reduced tiles and rows on posted receives
    "3 | --op gemm-ar --m-local 30,0,17 --k 41 --n 24 --tile-m 4 --m-local-per-round 0,30,5,1,17 --rounds 5 --comm-cores 0 --gemm-cores 2 --dtype fp32"
    "2 | --op gemm-ar --m-local 37,20 --k 50 --n 40 --tile-m 8 --tile-n 16 --m-local-per-round 37,0,13,7,20 --rounds 6 --dtype bf16"
)
# Every checked run with every GEMM engine built in ("gemm engines: ..."
# of --version).
engines=$("$AGMM" --version | sed -n 's/^gemm engines: //p')
# W8A8 int8 (oneDNN only): the rows travel with their scales (posted
# receives of rows + scale, rows per call, several weights), and gemm-rs.
case " $engines " in
*" onednn "*)
    runs+=(
        "3 | --m-local 30,0,17 --k 37 --n 20,8 --tile-m 4 --dtype int8 --a-scale tensor --m-local-per-round 0,30,5,1,17 --rounds 5"
        "2 | --m-local 40,24 --k 64 --n 48 --tile-m 8 --tile-n 16 --dtype int8 --comm-cores 1 --gemm-cores 2 --rounds 3"
        "3 | --op gemm-rs --m-local 7,0,12 --k 41 --k-local 20,0,21 --n 50 --tile-m 4 --tile-n 16 --dtype int8 --w-scale tensor --rounds 4"
        "3 | --op gemm-ar --m-local 7,0,12 --k 41 --k-local 20,0,21 --n 50 --tile-m 4 --tile-n 16 --dtype int8 --w-scale tensor --rounds 4"
        "2 | --op gemm-rs --m-local 9,14 --k 40 --n 24 --tile-m 4 --dtype int8 --bias --activation gelu-erf --out-dtype bf16 --rounds 3"
        "2 | --op gemm-ar --m-local 9,14 --k 40 --n 24 --tile-m 4 --bias --activation relu --out-dtype bf16 --rounds 3"
        "3 | --op gemm-rs --m-local 30,0,17 --k 41 --n 24 --tile-m 4 --dtype int8 --a-scale tensor --m-local-per-round 0,30,5,1,17 --rounds 5"
    )
    ;;
esac
# Quantized weights (W4A16 / W8A16: agmm's wq engine, whatever engines are
# built): every op, shards and k parts uneven, rows per call, a gated
# activation, zero points; each round checked against the dequantized
# weight. The k parts are multiples of the group (no group straddles the
# k split).
runs+=(
    "3 | --m-local 33,0,9 --k 160 --n 48 --tile-m 8 --tile-n 16 --weight-dtype int4 --group-size 32 --m-local-per-round 33,0,1,9 --rounds 4 --dtype bf16"
    "2 | --m-local 5,12 --k 128 --n 64 --tile-m 4 --weight-dtype int8 --zero-point --group-size 0 --bias --activation silu-mul --out-dtype bf16 --rounds 3"
    "3 | --op gemm-rs --m-local 7,0,12 --k 160 --k-local 64,32,64 --n 48 --tile-m 4 --tile-n 16 --weight-dtype int4 --zero-point --group-size 32 --rounds 3"
    "2 | --op gemm-ar --m-local 9,14 --k 256 --n 40 --tile-m 4 --weight-dtype int4 --group-size 128 --bias --activation relu --out-dtype fp16 --rounds 3"
)
for row in "${runs[@]}"; do
  for engine in $engines; do
    case "$row" in *"--dtype int8"*) [ "$engine" = onednn ] || continue ;; esac
    np=${row%%|*}
    args="${row#*|} --gemm-engine $engine"
    case "$row" in *--weight-dtype*) # the wq engine whatever is built: once
        [ "$engine" = "${engines%% *}" ] || continue
        args="${row#*|} --gemm-engine auto" ;;
    esac
    # shellcheck disable=SC2086
    mpi $np run $args --oversubscribe --timeout 30
    rounds=$(echo "$args" | sed -n 's/.*--rounds \([0-9]*\).*/\1/p')
    if [ "$rc" -eq 0 ] && [ "$(grep -c PASS "$TMP/out")" -eq "$rounds" ] &&
        grep -q "ranks (mpi)" "$TMP/out" && quiet_err; then
        ok
    else
        bad "mpirun -np $np agmm run $args (exit $rc)"
    fi
  done
done

# --- relaying (src/transport/mpi/mpi_relay.c): with "hosts" of K
# consecutive ranks (test hook AGMM_TEST_MPI_HOST_SIZE: the same code as
# across hosts, on this one), an all-gather tile goes over MPI once per
# other host, to one rank there that forwards it to the others through
# shared memory. "NP | K | ARGS": uneven hosts (3+1, 2+2+1), empty shards,
# per-call rows, several weights, both schedules (auto), comm threads or
# not; gemm-rs is not relayed (each peer gets its own partials) but runs
# on the same mixed world, and so does gemm-ar (its window also holds the
# partial slots, so it is not declared replicated: its reduced rows go to
# every peer directly). Every rank's counters must say relay on, and
# the ag runs must have forwarded tiles.
relay_runs=(
    "4 | 2 | --m-local 65,1,0,130 --k 96 --n 70 --tile-m 16 --tile-n 32 --weights per-rank --rounds 3"
    "4 | 2 | --m-local 40 --k 48 --n 40 --tile-m 5 --dtype bf16 --comm-cores 1 --gemm-cores 2 --rounds 3"
    "3 | 2 | --m-local 100,0,37 --k 80 --n 50 --tile-m 16 --tile-n 16 --dtype bf16 --rounds 3"
    "4 | 3 | --m-local 30,0,17,9 --k 24 --n 20,8 --tile-m 4 --m-local-per-round 0,30,5,1,17 --rounds 5 --comm-cores 0 --gemm-cores 2"
    "5 | 2 | --m-local 16,8,0,24,5 --k 32 --n 24 --tile-m 4 --dtype fp32 --rounds 4"
    "4 | 2 | --op gemm-rs --m-local 7,0,12,5 --k 41 --n 50 --tile-m 4 --tile-n 16 --dtype bf16 --rounds 4"
    "4 | 2 | --op gemm-ar --m-local 7,0,12,5 --k 41 --n 50 --tile-m 4 --tile-n 16 --dtype bf16 --comm-cores 1 --gemm-cores 1 --rounds 4"
    "4 | 2 | --op gemm-rs --m-local 30,0,17,9 --k 41 --n 24 --tile-m 4 --m-local-per-round 0,30,5,1,17 --rounds 5 --comm-cores 0 --gemm-cores 2"
    # hosts of 1: every gemm-rs partial on a posted receive, rows per round
    # (empty and short tiles, empty bulk puts)
    "3 | 1 | --op gemm-rs --m-local 30,0,17 --k 41 --n 24 --tile-m 4 --m-local-per-round 0,30,5,1,17,0,3 --rounds 7 --comm-cores 0 --gemm-cores 2 --dtype fp32"
    # and every gemm-ar reduced tile and row block (empty beyond the round's)
    "3 | 1 | --op gemm-ar --m-local 30,0,17 --k 41 --n 24 --tile-m 4 --m-local-per-round 0,30,5,1,17,0,3 --rounds 7 --comm-cores 0 --gemm-cores 2 --dtype fp32"
    "4 | 1 | --op gemm-ar --m-local 30,0,17,9 --k 41 --n 24 --tile-m 4 --m-local-per-round 0,30,5,1,17 --rounds 5 --comm-cores 1 --gemm-cores 1 --dtype bf16"
)
engine1=${engines%% *}
# int8 rows forwarded by the relays with their scales (oneDNN only).
case " $engines " in
*" onednn "*) relay_runs+=("4 | 2 | --m-local 40,0,17,9 --k 50 --n 40 --tile-m 5 --dtype int8 --gemm-engine onednn --rounds 3") ;;
esac
# int4 rows relayed (the weight stays local: the same tiles as bf16's)
relay_runs+=("4 | 2 | --m-local 30,0,17,9 --k 128 --n 48 --tile-m 4 --weight-dtype int4 --group-size 64 --gemm-engine auto --m-local-per-round 0,30,5,1,17 --rounds 5 --dtype bf16")
for row in "${relay_runs[@]}"; do
    np=${row%%|*}
    rest=${row#*|}
    k=${rest%%|*}
    np=${np// /}
    k=${k// /}
    args="${rest#*|}"
    case "$args" in *--gemm-engine*) ;; *) args="$args --gemm-engine $engine1" ;; esac
    # shellcheck disable=SC2086
    timeout 120 mpirun --oversubscribe -np $np -x AGMM_TEST_MPI_HOST_SIZE=$k -x AGMM_MPI_COUNTERS=1 \
        "$AGMM" run $args --oversubscribe --timeout 30 >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    rounds=$(echo "$args" | sed -n 's/.*--rounds \([0-9]*\).*/\1/p')
    fwd=$(sed -n 's/.*relay on: \([0-9]*\) tiles forwarded.*/\1/p' "$TMP/err" | awk '{s += $1} END {print s + 0}')
    fwd_ok=$([ "$fwd" -gt 0 ] && echo 1 || echo 0) # ag: some; gemm-rs/-ar: none
    case "$args" in *gemm-rs* | *gemm-ar*) fwd_ok=$([ "$fwd" -eq 0 ] && echo 1 || echo 0) ;; esac
    if [ "$rc" -eq 0 ] && [ "$(grep -c PASS "$TMP/out")" -eq "$rounds" ] &&
        [ "$(grep -c 'relay on' "$TMP/err")" -eq "$np" ] && [ "$fwd_ok" = 1 ] &&
        [ "$(grep -c 'warning: OpenBLAS runs its .* kernel' "$TMP/err")" -le 1 ] &&
        [ "$(grep -v 'counters:' "$TMP/err" | grep -vc 'warning: OpenBLAS runs its .* kernel')" -eq 0 ]; then
        ok
    else
        bad "relay: hosts of $k, mpirun -np $np agmm run $args (exit $rc, forwarded ${fwd:-none})"
    fi
done
# The same world with AGMM_MPI_RELAY=0: every remote rank gets its own copy.
timeout 120 mpirun --oversubscribe -np 4 -x AGMM_TEST_MPI_HOST_SIZE=2 -x AGMM_MPI_COUNTERS=1 -x AGMM_MPI_RELAY=0 \
    "$AGMM" run --m-local 40 --k 48 --n 40 --tile-m 8 --rounds 2 --schedule fused --oversubscribe --timeout 30 \
    >"$TMP/out" 2>"$TMP/err" </dev/null
rc=$?
if [ "$rc" -eq 0 ] && [ "$(grep -c PASS "$TMP/out")" -eq 2 ] && [ "$(grep -c 'relay off: 0 tiles' "$TMP/err")" -eq 4 ] &&
    [ "$(grep -c 'mpi: 20 tile puts' "$TMP/err")" -eq 4 ]; then
    ok
else
    bad "AGMM_MPI_RELAY=0: want 20 MPI tile puts per rank (5 tiles x 2 remote ranks x 2 rounds) and none forwarded (exit $rc)"
fi

# bench under MPI: both modes, JSON, only rank 0 prints (one line).
mpi 2 bench --m-local 96,40 --k 64 --n 64 --tile-m 16 --rounds 3 --warmup 1 --json
if [ "$rc" -eq 0 ] && [ "$(wc -l <"$TMP/out")" -eq 1 ] &&
    grep -q '"transport":"mpi"' "$TMP/out" && grep -q '"ratio_fused_over_baseline"' "$TMP/out"; then
    ok
else
    bad "mpirun -np 2 agmm bench --json (exit $rc)"
fi

# bench --mode all under MPI: every mode that applies there (issue 13 #5).
mpi 2 bench --m-local 96,40 --k 64 --n 64 --tile-m 16 --rounds 2 --warmup 1 --json --mode all
if [ "$rc" -eq 0 ] && grep -q '"fused":{' "$TMP/out" && grep -q '"baseline":{' "$TMP/out" &&
    grep -q '"auto":{' "$TMP/out" && grep -q '"comm-only":{' "$TMP/out" &&
    ! grep -q '"gemm-only":{' "$TMP/out"; then
    ok
else
    bad "mpirun -np 2 agmm bench --mode all: want fused, baseline, auto, comm-only (exit $rc)"
fi

# --trace under MPI: rank 0 gathers every rank's events (posted receives).
mpi 3 run --oversubscribe --m-local 64,0,30 --k 64 --n 64 --tile-m 16 --rounds 2 \
    --trace "$TMP/t.json"
if [ "$rc" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1]));
e=d["traceEvents"] if isinstance(d,dict) else d
sys.exit(0 if {0, 1, 2} <= {x.get("pid") for x in e} else 1)' "$TMP/t.json"; then
    ok
else
    bad "mpirun -np 3 agmm run --trace (exit $rc)"
fi

# --- bad command lines under mpirun: exit 2, one agmm line (rank 0 only)
bads=(
    "--ranks 3 | --ranks: 3 given but the MPI launcher started 2 ranks"
    "--m-local 1,2,3 | --m-local: 3 values given but --ranks is 2"
    "--transport tcp | --transport: one of shm, mpi"
)
for row in "${bads[@]}"; do
    args=${row%%|*}
    want=${row#*| }
    # shellcheck disable=SC2086
    mpi 2 run $args
    if [ "$rc" -eq 2 ] && [ "$(grep -c '^agmm: ' "$TMP/err")" -eq 1 ] && grep -qF -- "$want" "$TMP/err"; then
        ok
    else
        bad "mpirun -np 2 agmm run $args: want exit 2 and one line '$want' (exit $rc)"
    fi
done
# --transport mpi without a launcher: a world of one rank.
timeout 60 "$AGMM" run --transport mpi --m-local 40 --k 32 --n 32 --tile-m 8 >"$TMP/out" 2>"$TMP/err"
rc=$?
if [ "$rc" -eq 0 ] && grep -q "1 ranks (mpi)\|1 rank (mpi)" "$TMP/out"; then ok; else bad "agmm run --transport mpi (singleton, exit $rc)"; fi

fi # checked

if [ "$PART" != checked ]; then
# --- a rank killed (KILL) or stuck (STOP) mid-run: non-zero exit, a message,
# within --timeout (3 s) plus launcher slack; never a hang.
# With "hosts" of 2 (relaying on, 4 ranks) a dead or stuck relay also ends
# the job: its host peer waits for forwarded tiles until the timeout.
for case in KILL STOP KILL:relay STOP:relay; do
    sig=${case%%:*}
    np=3 env=()
    [ "$case" != "$sig" ] && np=4 env=(-x AGMM_TEST_MPI_HOST_SIZE=2)
    timeout $((LIMIT + 40)) mpirun --oversubscribe -np $np "${env[@]}" "$AGMM" run --oversubscribe --m-local 256 \
        --k 256 --n 256 --tile-m 32 --rounds 1000000 --no-check --timeout 3 \
        >"$TMP/out" 2>"$TMP/err" </dev/null &
    MP=$!
    for _ in $(seq 300); do [ "$(wc -l <"$TMP/out")" -ge 3 ] && break; sleep 0.1; done
    # The ranks are the launcher's children (OpenMPI 4's mpirun) or its
    # child's (OpenMPI 5's mpirun runs prterun): any agmm below $MP.
    victim=$(for p in $(descendants "$MP"); do
        [ "$(cat "/proc/$p/comm" 2>/dev/null)" = agmm ] && echo "$p"
    done | sed -n 2p)
    start=$(date +%s)
    [ -n "$victim" ] && kill -"$sig" "$victim"
    wait "$MP"
    rc=$?
    MP=""
    took=$(($(date +%s) - start))
    [ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
    want="exited on signal 9"
    [ "$sig" = STOP ] && want="timed out"
    if [ -n "$victim" ] && [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le "$LIMIT" ] &&
        launcher_says "$want" && ! grep -qE '^agmm: rank [0-9]+: *$' "$TMP/err"; then
        ok
    else
        bad "rank sent SIG$sig ($case): exit $rc after ${took}s, want non-zero within $LIMIT s and '$want'"
    fi
done

# --- the fault hook (AGMM_FAULT, src/common/fault.h) on MPI, both
# schedules of both operations: rank 1 misbehaves before its 18th put
# (tiles or bulk data, and acks); the job ends non-zero within the
# timeout, saying so.
faults=(
    "exit  | Exit code: *3"
    "kill  | rank 1 .*exited on signal 9"
    "error | agmm: rank 1: AGMM_FAULT: injected error before put 18"
    "hang  | agmm: rank [02]: timed out"
)
# A failed job spends most of its seconds waiting (mpirun's start and
# teardown, the peers' --timeout), not on the CPU, so two run side by side
# (both schedules of a case; two of the relay's), each into its own files,
# and are checked once both have ended, each against its own time. Not
# more: under TSan, 8 jobs at once (24 ranks on 2 cores) made the ranks'
# start-up all-gathers of control data outlast --timeout 3.
# fault_job ID NP ARGS...: mpirun NP ARGS in the background; its output,
# exit status and seconds in $TMP/ID.{out,err,rc,took}.
fault_job() {
    local id=$1 np=$2
    shift 2
    (
        start=$(date +%s)
        timeout $((LIMIT + 40)) mpirun --oversubscribe -np "$np" "$@" \
            >"$TMP/$id.out" 2>"$TMP/$id.err" </dev/null
        echo $? >"$TMP/$id.rc"
        echo $(($(date +%s) - start)) >"$TMP/$id.took"
    ) &
}
# fault_result ID: its files become $TMP/out and $TMP/err (what
# launcher_says and bad read); sets rc and took.
fault_result() {
    cp "$TMP/$1.out" "$TMP/out"
    cp "$TMP/$1.err" "$TMP/err"
    rc=$(cat "$TMP/$1.rc")
    took=$(cat "$TMP/$1.took")
}
for op in ag-gemm gemm-rs gemm-ar; do
  for row in "${faults[@]}"; do
    mode=${row%%|*}
    mode=${mode// /}
    want=${row#*| }
    for sched in fused baseline; do
      fault_job "$op.$sched.$mode" 3 -x AGMM_FAULT="rank=1,after_puts=17,mode=$mode" \
          "$AGMM" run --oversubscribe --m-local 64 --k 32 --n 32 --tile-m 8 --rounds 50 \
          --timeout 3 --op $op --schedule $sched
    done
    wait
    for sched in fused baseline; do
      fault_result "$op.$sched.$mode"
      if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le "$LIMIT" ] && launcher_says "$want" &&
          { [ "$mode" = error ] || grep -q "agmm: rank 1: AGMM_FAULT: $mode before put 18" "$TMP/err"; }; then
          ok
      else
          bad "AGMM_FAULT mode=$mode --op $op --schedule $sched under mpirun: exit $rc after ${took}s, want non-zero within $LIMIT s and /$want/"
      fi
    done
  done
done

# The same modes in a relay's forwards (progress thread): "hosts" of 2,
# rank 2 has no rows of its own, so past its first round's acks its puts
# are the tiles of rank 0 it forwards to rank 3.
for i in 0 2; do
  for row in "${faults[@]:i:2}"; do
    mode=${row%%|*}
    mode=${mode// /}
    fault_job "relay.$mode" 4 -x AGMM_TEST_MPI_HOST_SIZE=2 -x AGMM_FAULT="rank=2,after_puts=17,mode=$mode" \
        "$AGMM" run --oversubscribe --m-local 64,64,0,64 --k 32 --n 32 --tile-m 8 --rounds 50 \
        --timeout 3 --schedule fused
  done
  wait
  for row in "${faults[@]:i:2}"; do
    mode=${row%%|*}
    mode=${mode// /}
    want=${row#*| }
    want=${want//rank 1/rank 2}
    # hang: the relay's progress thread stops, so its own waits for
    # messages (acks) stall too: any rank, the relay included, may be the
    # first to time out. The relay must then say its own progress thread
    # is stuck rather than blame a peer alone.
    want=${want//\[02\]/[0-3]}
    fault_result "relay.$mode"
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] && [ "$took" -le "$LIMIT" ] && launcher_says "$want" &&
        { [ "$mode" = error ] || grep -q "agmm: rank 2: AGMM_FAULT: $mode before put 18" "$TMP/err"; } &&
        { [ "$mode" != hang ] || ! grep -q "agmm: rank 2: timed out" "$TMP/err" ||
          grep -q "agmm: rank 2: timed out.*progress thread has been stuck for" "$TMP/err"; }; then
        ok
    else
        bad "AGMM_FAULT mode=$mode in a relay's forwards: exit $rc after ${took}s, want non-zero within $LIMIT s and /$want/"
    fi
  done
done

# --- every abort message carries its reason: rank 1 aborts while rank 0
# waits in a barrier; rank 0's line must say why (it printed "agmm: rank 0: "
# and nothing else when its error buffer was also the format's argument).
if [ -n "$RECREATE" ]; then
    timeout 120 mpirun --oversubscribe -np 2 "$RECREATE" abort-message >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
        grep -q '^agmm: rank 0: .*rank 1 aborted: test_recreate: planted abort' "$TMP/err" &&
        ! grep -qE '^agmm: rank [0-9]+: *$' "$TMP/err"; then
        ok
    else
        bad "an abort's reason in the peer's message (exit $rc)"
    fi
fi

# --- a barrier that times out names who did not arrive: rank 2 never
# enters it; ranks 0 and 1 time out after 2 s, and their line names rank 2
# (MPI's collectives do not say; agmm's arrival messages do, mpi_coll.c).
if [ -n "$RECREATE" ]; then
    timeout 60 mpirun --oversubscribe -np 3 "$RECREATE" barrier-late >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ] &&
        grep -q '^agmm: rank [01]: timed out in a barrier (rank 2 did not arrive)' "$TMP/err"; then
        ok
    else
        bad "a timed-out barrier names the rank that did not arrive (exit $rc)"
    fi
fi

# --- nothing left behind: the same-host windows' segments
# (/dev/shm/agmm:<uid>:mpi:<pid>:m<id>) are unlinked once mapped; a rank
# killed inside a window's allocation (the kill and stop cases above, at a
# random moment) leaves its segment named until the next MPI world on this
# host removes it. After one more run, no segment of a process that is
# gone may remain (only those count: another user of this machine may be
# running right now).
mpi 2 run --m-local 16 --k 16 --n 16 --rounds 1 --oversubscribe --timeout 30
[ "$rc" -eq 0 ] || bad "a clean run after the failure cases (exit $rc)"
left=""
for f in $(ls /dev/shm 2>/dev/null | grep '^agmm:[0-9]*:mpi:'); do
    pid=$(echo "$f" | cut -d: -f4)
    kill -0 "$pid" 2>/dev/null || left="$left $f"
done
if [ -z "$left" ]; then ok; else bad "segments left in /dev/shm:$left"; fi
fi # failures

echo "mpi_e2e ($PART): $pass passed, $fail failed"
[ "$fail" -eq 0 ]
