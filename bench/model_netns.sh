#!/usr/bin/env bash
# One agmm command across network-namespace hosts, for bench/model_check.py
# (part c): HOSTS namespaces made as tests/e2e/netns_hosts.sh makes them
# (one veth each into a bridge, 10.77.0.I/24, tc tbf at GBIT Gbit/s out of
# every host), PER_HOST ranks on each, mpirun in host 1 starting the ranks
# through the namespaces' launch agent, MPI over TCP on the veths only (as
# tests/e2e/mpi_netns.sh runs them), the all-gather's relay on or off
# (AGMM_MPI_RELAY=1|0). Prints the command's stdout (every rank's; agmm
# prints its JSON on rank 0 only); on failure the end of its stderr and
# exit 1. Traffic never leaves the namespaces; they are removed on any exit.
# Exit 77 with one line on stderr where they can't be made: not root, no
# ip, tc or mpirun, or the kernel refuses.
#
# usage: bench/model_netns.sh AGMM HOSTS PER_HOST RELAY GBIT -- AGMM_ARGS...
set -u
[ $# -ge 6 ] && [ "$6" = -- ] || {
    echo "usage: bench/model_netns.sh AGMM HOSTS PER_HOST RELAY(1|0) GBIT -- AGMM_ARGS..." >&2
    exit 2
}
AGMM=$(readlink -f "$1")
HOSTS=$2
PER_HOST=$3
RELAY=$4
NETNS_RATE="$(awk -v g="$5" 'BEGIN { printf "%dmbit", g * 1000 }')"
shift 6
TAG="agmq$$"
SW="$TAG-sw"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/model_netns.XXXXXX")
MPIRUN_PID=""

cleanup() {
    [ -n "$MPIRUN_PID" ] && kill -9 "$MPIRUN_PID" 2>/dev/null
    for i in $(seq 1 "$HOSTS"); do ip netns del "$TAG-h$i" 2>/dev/null; done
    ip netns del "$SW" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 1' INT TERM

skip() {
    echo "model_netns: $*" >&2
    exit 77
}
[ "$(id -u)" -eq 0 ] || skip "needs root to create network namespaces"
command -v ip >/dev/null || skip "iproute2 (ip) is not installed"
command -v tc >/dev/null || skip "tc (iproute2) is not installed"
command -v mpirun >/dev/null || skip "mpirun is not installed"
. "$(dirname "$0")/../tests/e2e/netns_hosts.sh"
ip netns add "$SW" 2>"$TMP/err" || skip "cannot create a network namespace: $(cat "$TMP/err")"
netns_make_hosts 2>"$TMP/err" || skip "cannot make the hosts: $(cat "$TMP/err")"
netns_write_agent

: >"$TMP/hosts"
for i in $(seq 1 "$HOSTS"); do echo "10.77.0.$i slots=$PER_HOST" >>"$TMP/hosts"; done
mkdir -p "$TMP/h1"
# mpirun in host 1 under that host's hostname, as the agent runs orted.
TMPDIR="$TMP/h1" ip netns exec "$TAG-h1" unshare --uts /bin/sh -c \
    'hostname "$0" && exec "$@"' "$TAG-h1" timeout 900 mpirun --allow-run-as-root \
    -np $((HOSTS * PER_HOST)) --hostfile "$TMP/hosts" --mca plm_rsh_agent "$TMP/agent" \
    --mca btl tcp,self,vader --mca btl_tcp_if_include 10.77.0.0/24 \
    --mca btl_vader_single_copy_mechanism none \
    --mca oob_tcp_if_include 10.77.0.0/24 -x AGMM_MPI_RELAY="$RELAY" \
    "$AGMM" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null &
MPIRUN_PID=$!
wait "$MPIRUN_PID"
rc=$?
MPIRUN_PID=""
if [ "$rc" -ne 0 ]; then
    echo "model_netns: mpirun exit $rc: agmm $*" >&2
    tail -c 4000 "$TMP/err" >&2
    exit 1
fi
cat "$TMP/out"
