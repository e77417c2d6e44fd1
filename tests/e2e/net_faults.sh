#!/usr/bin/env bash
# agmm across hosts under bad networks (issue 13): three network-namespace
# hosts (10.77.0.1-3/24, veths bridged in a fourth namespace), mpirun in
# host 1, one rank per host, MPI over TCP on the veths only. Traffic never
# leaves the namespaces this script creates; it removes them, its nft
# tables and every process in them on any exit.
#
# Cases (the host hit is 2 or 3, picked at random; the moment of every
# fault is random, after the run's first round):
#   loss1_out loss1_both loss5_out loss5_both
#               1% / 5% of packets dropped (nftables, `numgen random`) out
#               of the host, or out of and into it: must complete, checked.
#   flap        the host's link down for 2 s, then up: completes (TCP
#               retransmits; the stall is under --timeout and under the
#               launcher's keepalive) or fails cleanly; the table says which.
#   partition   the host's link down for good: non-zero exit, the host
#               named (mpirun: "lost communication with a remote daemon
#               ... on node 10.77.0.H"), mpirun itself exits.
#   kill        the host's rank SIGKILLed: non-zero, rank named.
#   stop        the host's rank SIGSTOPped: non-zero, "timed out", the rank
#               that timed out names itself and what it waited for.
# Every case: a completed run must check out; a failed one must exit
# non-zero within --timeout + MARGIN of the fault, with no outer timeout
# (a watchdog only reports a hang); then no process may be left in any of
# the namespaces and /dev/shm must hold no segment of its runs.
#
# mpirun runs with OOB TCP keepalive (1 s idle, 1 s interval, 3 probes):
# the launcher notices a daemon it no longer reaches after 3-4 s, under
# --timeout (8 s), and ends the job. See docs/mpi.md ("Failures across
# hosts") for why that order is needed.
#
# usage: tests/e2e/net_faults.sh AGMM_BINARY [CASE...]
#   AGMM_NET_FAULTS_RUNS=N   runs per case (default 1)
#   AGMM_TEST_SEED=S         repeat a run's fault times
#   AGMM_NET_FAULTS_LOSS_ROUNDS=R  rounds of the loss runs (default 60)
# Prints one line per run: case, host, outcome, seconds from the fault to
# mpirun's exit. Skips (exit 77) only where namespaces can't be created.
set -euo pipefail
TEST_NAME=net_faults TEST_ARGS="[CASE...]"
. "$(dirname "$0")/seeded.sh" # AGMM, SEED, RANDOM, TMP, tagged_pids
shift
ALL_CASES=(loss1_out loss1_both loss5_out loss5_both flap partition kill stop)
if [ $# -gt 0 ]; then CASES=("$@"); else CASES=("${ALL_CASES[@]}"); fi
RUNS=${AGMM_NET_FAULTS_RUNS:-1}
HOSTS=3
# Ranks per host (by hand: AGMM_NET_FAULTS_PER_HOST=2): ranks of a host
# share memory and relay each other's tiles (docs/mpi.md, "Relaying");
# kill and stop then hit every rank of the host.
PER=${AGMM_NET_FAULTS_PER_HOST:-1}
TIMEOUT=8 # agmm --timeout
MARGIN=${AGMM_TEST_SLACK:-12} # launcher teardown on a loaded 2-core machine
HANG=$((TIMEOUT + MARGIN + 60)) # the watchdog: past this a run has hung
TAG="agnf$$"
SW="$TAG-sw"
MPIRUN_PID=""

cleanup() {
    local rc=$?
    set +e
    [ -n "$MPIRUN_PID" ] && kill -9 "$MPIRUN_PID" 2>/dev/null
    for i in $(seq 1 $HOSTS); do
        ns="$TAG-h$i"
        ip netns pids "$ns" 2>/dev/null | xargs -r kill -9 2>/dev/null
        ip netns del "$ns" 2>/dev/null # its nft tables and qdiscs go with it
    done
    ip netns del "$SW" 2>/dev/null
    rm -rf "$TMP"
    exit $rc
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip() { echo "SKIP: net_faults: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
for t in ip tc nft mpirun; do
    command -v $t >/dev/null || skip "$t is not installed (scripts/install-deps.sh)"
done
. "$(dirname "$0")/netns_hosts.sh"
ip netns add "$SW" 2>"$TMP/err" || skip "cannot create a network namespace: $(cat "$TMP/err")"

# --- the hosts and the launch agent (netns_hosts.sh)
netns_make_hosts
netns_write_agent
mkdir -p "$TMP/h1"
for i in $(seq 1 $HOSTS); do echo "10.77.0.$i slots=$PER"; done >"$TMP/hosts"

# Segments our runs could have left: new since here and of a process that
# is gone (the ranks' window segments are agmm:<uid>:mpi:<pid>:m<id>);
# another test's or session's live segments on this machine do not count.
. "$(dirname "$0")/shm_left.sh"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }

# --- faults on host H (restored by heal before the next run)
loss() { # H PERCENT out|both
    local ns="$TAG-h$1"
    # Only ever inside the host's namespace (never this machine's own).
    ip netns exec "$ns" nft -f - <<EOF
table inet agmm_loss {
    chain out { type filter hook output priority 0; numgen random mod 100 < $2 counter drop; }
$([ "$3" = both ] && echo "    chain in { type filter hook input priority 0; numgen random mod 100 < $2 counter drop; }")
}
EOF
}
heal() {
    for i in $(seq 1 $HOSTS); do
        ip netns exec "$TAG-h$i" nft delete table inet agmm_loss 2>/dev/null || true
        ip -n "$TAG-h$i" link set "h$i" up
    done
}
# The agmm processes of host H (the rank mpirun started there).
ranks_of() { { ip netns pids "$TAG-h$1" | xargs -r ps -o pid=,comm= -p | awk '$2 == "agmm" { print $1 }'; } || true; }

# --- one run: mpirun in host 1, agmm run ARGS; sets rc, T_END, OUT, ERR
SHAPE=(--m-local 128 --k 128 --n 128 --tile-m 32 --tile-n 64 --comm-cores 0
       --gemm-cores 1 --oversubscribe --timeout $TIMEOUT)
# Several ranks per host: vader between them (under the host's own hostname,
# as mpi_netns.sh does: the namespaces share /dev/shm).
BTL=(--mca btl tcp,self)
[ "$PER" -gt 1 ] && BTL=(--mca btl tcp,self,vader --mca btl_vader_single_copy_mechanism none)
start_run() { # ARGS...
    TMPDIR="$TMP/h1" ip netns exec "$TAG-h1" unshare --uts /bin/sh -c \
        'hostname "$0" && exec "$@"' "$TAG-h1" mpirun --allow-run-as-root -np $((HOSTS * PER)) \
        --hostfile "$TMP/hosts" --mca plm_rsh_agent "$TMP/agent" \
        "${BTL[@]}" --mca btl_tcp_if_include 10.77.0.0/24 \
        --mca oob_tcp_if_include 10.77.0.0/24 \
        --mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 \
        --mca oob_tcp_keepalive_probes 3 \
        "$AGMM" run "${SHAPE[@]}" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null &
    MPIRUN_PID=$!
    T_START=$(now)
}
# Wait for the first round line (or the run's end); 0 when it came.
wait_first_round() {
    for _ in $(seq 600); do
        grep -q '^round' "$TMP/out" 2>/dev/null && return 0
        kill -0 "$MPIRUN_PID" 2>/dev/null || return 1
        sleep 0.05
    done
    return 1
}
finish_run() { # waits for mpirun; a watchdog kills it after HANG s (a hang)
    HUNG=0
    local t0=$SECONDS
    while kill -0 "$MPIRUN_PID" 2>/dev/null; do
        if [ $((SECONDS - t0)) -gt $HANG ]; then
            HUNG=1
            kill -9 "$MPIRUN_PID"
        fi
        sleep 0.05
    done
    T_END=$(now)
    rc=0
    wait "$MPIRUN_PID" || rc=$?
    MPIRUN_PID=""
}

pass=0
fail=0
RESULTS="$TMP/results"
: >"$RESULTS"
bad() {
    fail=$((fail + 1))
    echo "FAIL: $*"
    sed 's/^/  | /' "$TMP/err" | grep -v '^  | *-*$' | head -25
    tail -3 "$TMP/out" | sed 's/^/  | /'
}
# Nothing left in any namespace (the launcher, its daemons, the ranks),
# no /dev/shm segment of ours (shm_left.sh); then the hosts healed for the
# next run.
check_clean() { # what
    local left="" j
    # A daemon that just lost its lifeline is ending its ranks: up to 15 s
    # for the hosts to empty (a loaded machine is slow to get there).
    for ((j = 0; j < 150; j++)); do
        left=""
        for i in $(seq 1 $HOSTS); do
            left+=$({ ip netns pids "$TAG-h$i" | xargs -r ps -o pid=,comm= -p | tr '\n' ' '; } || true)
        done
        [ -z "$(echo "$left" | xargs)" ] && break
        sleep 0.1
    done
    left=$(echo "$left" | xargs)
    if [ -n "$left" ]; then
        bad "$1: processes left in the hosts: $left"
        for i in $(seq 1 $HOSTS); do ip netns pids "$TAG-h$i" | xargs -r kill -9 || true; done
        sleep 0.2
    fi
    local segs
    segs=$(shm_left)
    [ -z "$segs" ] || bad "$1: segments left in /dev/shm: $(echo "$segs" | xargs)"
    heal
}

# Rounds of the runs that must complete: enough for a few seconds.
LOSS_ROUNDS=${AGMM_NET_FAULTS_LOSS_ROUNDS:-60}

one_run() { # CASE RUN
    local c=$1 host=$((2 + RANDOM % 2)) delay_ms=$((300 + RANDOM % 1500))
    local what="$c (run $2, host $host)" outcome="" detect="-" want_ok=0 label=$c
    HUNG=0
    case $c in
    loss*)
        local pct=${c#loss}
        pct=${pct%%_*}
        loss "$host" "$pct" "${c##*_}"
        start_run --rounds "$LOSS_ROUNDS"
        finish_run
        want_ok=1
        # The packets the rules dropped (proof the loss was there).
        local dropped
        dropped=$(ip netns exec "$TAG-h$host" nft list table inet agmm_loss |
            sed -n 's/.*counter packets \([0-9]*\).*/\1/p' | paste -sd+ | bc)
        [ "${dropped:-0}" -gt 0 ] || bad "$what: no packet was dropped"
        label+=" ($dropped dropped)"
        ;;
    flap | partition | kill | stop)
        # flap must outlast the fault: rounds for ~12 s at the clean rate.
        local rounds=1000000
        [ "$c" = flap ] && rounds=$FLAP_ROUNDS
        start_run --rounds "$rounds"
        if ! wait_first_round; then
            finish_run
            bad "$what: the run ended before its first round (exit $rc)"
            check_clean "$what"
            return
        fi
        sleep "$(awk -v m=$delay_ms 'BEGIN { print m / 1000 }')"
        local victims=""
        if [ "$c" = kill ] || [ "$c" = stop ]; then victims=$(ranks_of "$host"); fi
        T_FAULT=$(now)
        case $c in
        flap | partition) ip -n "$TAG-h$host" link set "h$host" down ;;
        kill) echo "$victims" | xargs -r kill -KILL ;;
        stop) echo "$victims" | xargs -r kill -STOP ;;
        esac
        if { [ "$c" = kill ] || [ "$c" = stop ]; } && [ -z "$victims" ]; then
            kill -9 "$MPIRUN_PID" 2>/dev/null || true
            finish_run
            bad "$what: no agmm process found in host $host"
            check_clean "$what"
            return
        fi
        if [ "$c" = flap ]; then
            sleep 2
            ip -n "$TAG-h$host" link set "h$host" up
        fi
        finish_run
        detect="$(secs "$T_FAULT" "$T_END") s"
        ;;
    *)
        echo "net_faults: unknown case $c (one of ${ALL_CASES[*]})" >&2
        exit 2
        ;;
    esac
    local rank=$(((host - 1) * PER)) passes
    local host_ranks="$rank" # the ranks mpirun placed on the host (by slot)
    for i in $(seq 1 $((PER - 1))); do host_ranks+="|$((rank + i))"; done
    passes=$(grep -c 'PASS' "$TMP/out" || true)
    if [ "$HUNG" -eq 1 ]; then
        outcome="HANG"
        bad "$what: mpirun still running ${HANG}s after the fault (killed)"
    elif [ "$rc" -eq 0 ]; then
        outcome="completed, checked"
        local want_rounds=$LOSS_ROUNDS
        [ "$c" = flap ] && want_rounds=$FLAP_ROUNDS
        if [ "$passes" -ne "$want_rounds" ] || grep -q FAIL "$TMP/out"; then
            outcome="WRONG"
            bad "$what: exit 0 but $passes of $want_rounds rounds checked out"
        elif [ "$want_ok" -eq 0 ] && [ "$c" != flap ]; then
            bad "$what: exit 0 after a fatal fault"
        fi
        detect="- (run $(secs "$T_START" "$T_END") s)"
    else
        # Failed: in time, the failure named.
        local named=""
        case $c in
        partition) grep -q "lost communication with a remote daemon" "$TMP/err" &&
            grep -q "on node 10.77.0.$host" "$TMP/err" && named="host 10.77.0.$host" ;;
        kill) named=$(grep -oE "rank ($host_ranks) .*signal 9" "$TMP/err" | head -1 | cut -d' ' -f1-2 || true) ;;
        stop) named=$(grep -o '^agmm: rank [0-9]*: timed out [^(]*' "$TMP/err" | head -1 || true) ;;
        flap) named=$(grep -m1 -oE '^agmm: rank [0-9]+: [^(]*|lost communication with a remote daemon' "$TMP/err" || true) ;;
        esac
        outcome="failed (exit $rc): ${named:-nothing named}"
        if [ "$want_ok" -eq 1 ]; then
            bad "$what: exit $rc, must complete"
        elif [ -z "$named" ]; then
            bad "$what: exit $rc without naming the failed rank/host"
        elif [ "${detect%%.*}" -ge $((TIMEOUT + MARGIN)) ]; then
            bad "$what: exit $rc ${detect}s after the fault (limit $((TIMEOUT + MARGIN)) s)"
        fi
    fi
    local at
    at=$(awk -v m=$delay_ms 'BEGIN { printf "+%.1fs", m / 1000 }')
    [ "${c#loss}" = "$c" ] || at="start"
    printf '%-26s host %d  fault at %-6s %-62s %s\n' "$label" "$host" "$at" "$outcome" \
        "$detect" | tee -a "$RESULTS"
    check_clean "$what"
}

# The clean rate, for the flap run's length (it must outlast the fault).
start_run --rounds 200
wait_first_round || true
t_first=$(now)
finish_run
if [ "$rc" -ne 0 ] || [ "$(grep -c PASS "$TMP/out")" -ne 200 ]; then
    bad "a clean run on $HOSTS hosts (exit $rc)"
    exit 1
fi
check_clean "clean run"
clean_s=$(secs "$t_first" "$T_END")
FLAP_ROUNDS=$(awk -v s="$clean_s" 'BEGIN { n = int(199 * 12 / (s > 0.1 ? s : 0.1)); print (n < 200 ? 200 : (n > 50000 ? 50000 : n)) }')
echo "net_faults: a clean run: 199 rounds in ${clean_s}s; flap runs $FLAP_ROUNDS rounds (~12 s)"

for c in "${CASES[@]}"; do
    for r in $(seq 1 "$RUNS"); do
        before=$fail
        one_run "$c" "$r"
        [ "$fail" -eq "$before" ] && pass=$((pass + 1))
    done
done
echo "net_faults: $pass runs ok, $fail failures (seed $SEED)"
[ "$fail" -eq 0 ]
