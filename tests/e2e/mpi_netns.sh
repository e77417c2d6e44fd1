#!/usr/bin/env bash
# agmm across hosts: every "host" is a network namespace with one veth
# (10.77.0.N/24) into a switch namespace that bridges them; each host's
# egress is limited to 1 Gbit/s with tc. mpirun runs in host 1 and starts
# one rank per host through a launch agent that enters the host's namespace
# (plm_rsh_agent), MPI over TCP on the veths only. Traffic never leaves the
# namespaces this script creates, and it removes them on any exit.
#
# Checks: `agmm run` on 2 and 3 hosts (uneven shards, checked), for both
# operations (gemm-rs: both schedules, an empty row part and an empty K
# part), `agmm bench` of both operations on 2 hosts at M_LOCAL=2048,
# K=4096, N=256 (prints the ratio; timing is never asserted). Skips (exit 77) only where namespaces can't be created.
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
# mpirun_on N ARGS...: agmm ARGS on hosts 1..N, one rank each.
mpirun_on() {
    local n=$1
    shift
    : >"$TMP/hosts"
    for i in $(seq 1 "$n"); do echo "10.77.0.$i slots=1" >>"$TMP/hosts"; done
    mkdir -p "$TMP/h1"
    TMPDIR="$TMP/h1" ip netns exec "$TAG-h1" timeout 300 mpirun --allow-run-as-root -np "$n" \
        --hostfile "$TMP/hosts" --mca plm_rsh_agent "$TMP/agent" \
        --mca btl tcp,self --mca btl_tcp_if_include 10.77.0.0/24 \
        --mca oob_tcp_if_include 10.77.0.0/24 \
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

for n in 2 3; do
    m=$([ "$n" = 2 ] && echo 300,77 || echo 200,0,131)
    mpirun_on "$n" run --m-local "$m" --k 256 --n 160 --tile-m 32 --tile-n 64 \
        --dtype bf16 --rounds 2 --timeout 60 --oversubscribe
    if [ "$rc" -eq 0 ] && [ "$(grep -c 'PASS' "$TMP/out")" -eq 2 ] &&
        grep -q "$n ranks (mpi)" "$TMP/out"; then ok; else bad "run on $n hosts (exit $rc)"; fi
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

echo "mpi_netns: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
