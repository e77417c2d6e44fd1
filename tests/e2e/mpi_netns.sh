#!/usr/bin/env bash
# agmm across hosts: every "host" is a network namespace with one veth
# (10.77.0.N/24) into a switch namespace that bridges them; each host's
# egress is limited to 1 Gbit/s with tc. mpirun runs in host 1 and starts
# one rank per host through a launch agent that enters the host's namespace
# (plm_rsh_agent), MPI over TCP on the veths only. Traffic never leaves the
# namespaces this script creates, and it removes them on any exit.
#
# Checks: `agmm run` on 2 and 3 hosts (uneven shards, checked; no rank
# shares a host: no tile through shared memory) for both operations
# (gemm-rs: both schedules, an empty row part and an empty K part), on 2
# hosts x 2 ranks (same-host tiles through shared memory, none through TCP:
# agmm's counters and the hosts' loopback bytes), `agmm bench` of both
# operations on 2 hosts at M_LOCAL=2048, K=4096, N=256 (prints the ratio;
# timing is never asserted). Skips (exit 77) only where namespaces can't be
# created.
#
# usage: tests/e2e/mpi_netns.sh AGMM_BINARY [bench-rounds]
set -u
AGMM=$(readlink -f "$1")
ROUNDS=${2:-5}
HOSTS=3
TAG="agmm$$"
SW="$TAG-sw"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/mpi_netns.XXXXXX")
MPIRUN_PID=""

cleanup() {
    [ -n "$MPIRUN_PID" ] && kill -9 "$MPIRUN_PID" 2>/dev/null
    for i in $(seq 1 $HOSTS); do ip netns del "$TAG-h$i" 2>/dev/null; done
    ip netns del "$SW" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip() { echo "SKIP: mpi_netns: $*"; exit 77; }
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v tc >/dev/null || skip "tc (iproute2) is not installed"
command -v mpirun >/dev/null || skip "mpirun is not installed"
. "$(dirname "$0")/netns_hosts.sh"
ip netns add "$SW" 2>"$TMP/err" || skip "cannot create a network namespace: $(cat "$TMP/err")"

# --- the hosts
set -e
netns_make_hosts
ip -n "$TAG-h1" neigh flush dev h1 # (no ping needed: mpirun fails loudly if unreachable)
set +e

# --- the launch agent
netns_write_agent

pass=0
fail=0
# mpirun_on N ARGS...: agmm ARGS on hosts 1..N, PER_HOST ranks each
# (default 1; ranks of one host share memory: vader for MPI itself, and
# agmm's same-host puts, transport/mpi/mpi_node.c). Every rank prints its
# counters (AGMM_MPI_COUNTERS=1) on stderr.
mpirun_on() {
    local n=$1 per=${PER_HOST:-1}
    shift
    : >"$TMP/hosts"
    for i in $(seq 1 "$n"); do echo "10.77.0.$i slots=$per" >>"$TMP/hosts"; done
    mkdir -p "$TMP/h1"
    # mpirun in host 1 under that host's hostname, as the agent runs orted
    TMPDIR="$TMP/h1" ip netns exec "$TAG-h1" unshare --uts /bin/sh -c \
        'hostname "$0" && exec "$@"' "$TAG-h1" timeout 300 mpirun --allow-run-as-root -np $((n * per)) \
        --hostfile "$TMP/hosts" --mca plm_rsh_agent "$TMP/agent" \
        --mca btl tcp,self,vader --mca btl_tcp_if_include 10.77.0.0/24 \
        --mca btl_vader_single_copy_mechanism none \
        --mca oob_tcp_if_include 10.77.0.0/24 -x AGMM_MPI_COUNTERS=1 ${KEEPALIVE:-} \
        ${RELAY:+-x AGMM_MPI_RELAY=$RELAY} \
        "$AGMM" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null &
    MPIRUN_PID=$!
    wait "$MPIRUN_PID"
    rc=$?
    MPIRUN_PID=""
}
ok() { pass=$((pass + 1)); }
bad() {
    fail=$((fail + 1))
    echo "FAIL: $*"
    sed 's/^/  | /' "$TMP/out" "$TMP/err" | head -30
}

# counter RANK WHAT: from rank RANK's counter line (mpi_node.c), WHAT one
# of host (ranks on its host), shm, mpi (tile puts), shmbytes.
counter() {
    local re
    case $2 in
    host) re='\([0-9]*\) ranks on this host.*' ;;
    shm) re='.*shm: \([0-9]*\) tile puts.*' ;;
    mpi) re='.*mpi: \([0-9]*\) tile puts.*' ;;
    fwd) re='.*relay [onf]*: \([0-9]*\) tiles forwarded.*' ;;
    shmbytes) re='.*shm: [0-9]* tile puts, \([0-9]*\) bytes.*' ;;
    esac
    sed -n "s/^agmm: rank $1: counters: $re/\1/p" "$TMP/err" | head -1
}
lo_bytes() { # bytes received on host I's loopback (TCP inside that host)
    ip netns exec "$TAG-h$1" cat /sys/class/net/lo/statistics/rx_bytes
}

# One rank per host: no rank shares a host, so every tile goes over MPI
# (namespaces share /dev/shm; agmm must still not treat them as one host).
for n in 2 3; do
    m=$([ "$n" = 2 ] && echo 300,77 || echo 200,0,131)
    mpirun_on "$n" run --m-local "$m" --k 256 --n 160 --tile-m 32 --tile-n 64 \
        --dtype bf16 --rounds 2 --timeout 60 --oversubscribe
    alone=1
    for r in $(seq 0 $((n - 1))); do
        [ "$(counter $r host)" = 1 ] && [ "$(counter $r shm)" = 0 ] || alone=0
    done
    # mpirun's keepalive is left at its defaults here: rank 0 warns (once)
    if [ "$rc" -eq 0 ] && [ "$(grep -c 'PASS' "$TMP/out")" -eq 2 ] &&
        grep -q "$n ranks (mpi)" "$TMP/out" && [ "$alone" = 1 ] &&
        [ "$(grep -c "^agmm: rank 0: warning: $n hosts, and mpirun notices a lost host only after 480 s" "$TMP/err")" = 1 ]; then
        ok
    else
        bad "run on $n hosts (exit $rc)"
    fi
    # GEMM + reduce-scatter: round 1 fused, round 2 baseline (auto), each
    # checked; on 3 hosts an empty row part and an empty K part.
    k=$([ "$n" = 2 ] && echo 100,156 || echo 100,156,0)
    mpirun_on "$n" run --op gemm-rs --m-local "$m" --k 256 --k-local "$k" \
        --n 160 --tile-m 32 --tile-n 64 --dtype bf16 --rounds 2 --timeout 60 \
        --oversubscribe
    if [ "$rc" -eq 0 ] && [ "$(grep -c 'PASS' "$TMP/out")" -eq 2 ] &&
        grep -q "fused (auto)" "$TMP/out" && grep -q "baseline (auto)" "$TMP/out" &&
        grep -q "$n ranks (mpi)" "$TMP/out"; then ok; else bad "gemm-rs run on $n hosts (exit $rc)"; fi
done

# 2 hosts x 2 ranks, fused rounds: tiles between the ranks of a host go
# through shared memory, never through TCP, and each tile crosses to the
# other host once (relaying, transport/mpi/mpi_relay.c): to one rank there,
# which forwards it to the other. Every rank's counters: 2 ranks on its
# host, as many tile puts through shm (to its one same-host peer) as over
# MPI (to its relay on the other host), and the host's relays forward
# every tile that came over MPI; with AGMM_MPI_RELAY=0, twice as many over
# MPI (to both ranks of the other host) and none forwarded. And each
# host's loopback, where TCP between its own ranks would run, carries less
# than a tenth of the tile bytes its ranks put to each other (control
# messages only: acks, barriers, mpirun's own traffic).
for relay in 1 0; do
lo1=$(lo_bytes 1)
lo2=$(lo_bytes 2)
# With the keepalive settings of docs/mpi.md: no warning.
RELAY=$relay KEEPALIVE="--mca oob_tcp_keepalive_time 1 --mca oob_tcp_keepalive_intvl 1 --mca oob_tcp_keepalive_probes 3" \
PER_HOST=2 mpirun_on 2 run --m-local 300,77,150,64 --k 256 --n 160 --tile-m 32 \
    --tile-n 64 --dtype bf16 --rounds 3 --schedule fused --timeout 60 --oversubscribe
lo=$(($(lo_bytes 1) - lo1 + $(lo_bytes 2) - lo2))
shm_bytes=0
split=1
mpi_sum=0
fwd_sum=0
for r in 0 1 2 3; do
    [ "$(counter $r host)" = 2 ] || split=0
    sp=$(counter $r shm)
    mp=$(counter $r mpi)
    fw=$(counter $r fwd)
    # equal tile counts per peer: 1 same-host peer, 1 relay on the other
    # host (2 ranks there without relaying)
    [ -n "$sp" ] && [ -n "$mp" ] && [ -n "$fw" ] && [ "$sp" -gt 0 ] &&
        [ "$mp" -eq $(((2 - relay) * sp)) ] || split=0
    mpi_sum=$((mpi_sum + ${mp:-0}))
    fwd_sum=$((fwd_sum + ${fw:-0}))
    shm_bytes=$((shm_bytes + $(counter $r shmbytes)))
done
[ "$fwd_sum" -eq $((relay * mpi_sum)) ] || split=0
if [ "$rc" -eq 0 ] && [ "$(grep -c 'PASS' "$TMP/out")" -eq 3 ] &&
    grep -q "4 ranks (mpi)" "$TMP/out" && [ "$split" = 1 ] && ! grep -q "agmm: warning" "$TMP/err" &&
    [ "${shm_bytes:-0}" -gt 0 ] && [ "$lo" -lt $((shm_bytes / 10)) ]; then
    ok
    echo "2 hosts x 2 ranks (relay $relay): same-host tiles through shm: $shm_bytes bytes; MPI tile puts $mpi_sum, forwarded $fwd_sum; loopback TCP: $lo bytes"
else
    bad "run on 2 hosts x 2 ranks, AGMM_MPI_RELAY=$relay (exit $rc; shm tile bytes ${shm_bytes:-?}, loopback bytes $lo, MPI puts $mpi_sum, forwarded $fwd_sum; counters:"
    grep counters "$TMP/err"
fi
done

# The benchmark: fused vs MPI_Allgather + GEMM over the 1 Gbit/s link.
mpirun_on 2 bench --m-local 2048 --k 4096 --n ${AGMM_NETNS_N:-256} --dtype fp32 \
    --rounds "$ROUNDS" --warmup 1 --json --timeout 120
ratio=$(sed -n 's/.*"ratio_fused_over_baseline":\([0-9.]*\).*/\1/p' "$TMP/out")
if [ "$rc" -eq 0 ] && [ -n "$ratio" ] && grep -q '"transport":"mpi"' "$TMP/out"; then
    ok
    echo "bench on 2 hosts (1 Gbit/s): $(cat "$TMP/out")"
else
    bad "bench on 2 hosts (exit $rc)"
fi

# GEMM + reduce-scatter over the same link (fused: the tiles' puts overlap
# the next tile's GEMM; baseline: the whole GEMM, then the puts).
mpirun_on 2 bench --op gemm-rs --m-local 2048 --k 4096 --n ${AGMM_NETNS_N:-256} \
    --dtype fp32 --rounds "$ROUNDS" --warmup 1 --json --timeout 120
ratio=$(sed -n 's/.*"ratio_fused_over_baseline":\([0-9.]*\).*/\1/p' "$TMP/out")
if [ "$rc" -eq 0 ] && [ -n "$ratio" ] && grep -q '"transport":"mpi"' "$TMP/out" &&
    grep -q '"op":"gemm-rs"' "$TMP/out"; then
    ok
    echo "gemm-rs bench on 2 hosts (1 Gbit/s): $(cat "$TMP/out")"
else
    bad "gemm-rs bench on 2 hosts (exit $rc)"
fi

# By hand (AGMM_NETNS_2X2_BENCH=1; minutes on a 2-core machine): the same
# benchmark on 2 hosts x 2 ranks (issue 13's target: fused/baseline <= 0.75
# at 1 Gbit/s, the baseline being MPI_Allgatherv with vader inside a host).
if [ "${AGMM_NETNS_2X2_BENCH:-0}" = 1 ]; then
    RELAY=${AGMM_MPI_RELAY:-} PER_HOST=2 mpirun_on 2 bench --m-local 2048 --k 4096 --n ${AGMM_NETNS_N:-256} \
        --dtype fp32 --rounds "$ROUNDS" --warmup 1 --json --timeout 300 --oversubscribe
    if [ "$rc" -eq 0 ] && grep -q '"ratio_fused_over_baseline"' "$TMP/out"; then
        ok
        echo "bench on 2 hosts x 2 ranks (1 Gbit/s): $(cat "$TMP/out")"
        grep counters "$TMP/err"
    else
        bad "bench on 2 hosts x 2 ranks (exit $rc)"
    fi
fi

echo "mpi_netns: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
