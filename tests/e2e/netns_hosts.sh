# Sourced by the network-namespace tests (mpi_netns.sh, net_faults.sh):
# HOSTS "hosts" h1..hN, each a namespace "$TAG-hI" with one veth into a
# bridge in "$SW" (made by the caller, so it can skip when namespaces can't
# be made), address 10.77.0.I/24, NETNS_RATE (tc's units; default 1gbit)
# out of every host with tc tbf;
# and "$TMP/agent", an ssh stand-in for mpirun's launch agent that runs a
# command inside a host's namespace. Traffic stays inside the namespaces.
# Needs TAG, SW, HOSTS and TMP set; the caller's trap removes "$TAG-*".

netns_make_hosts() {
    ip -n "$SW" link add br0 type bridge
    ip -n "$SW" link set br0 up
    local i ns
    for i in $(seq 1 "$HOSTS"); do
        ns="$TAG-h$i"
        ip netns add "$ns"
        ip link add "h$i" netns "$ns" type veth peer name "p$i" netns "$SW"
        ip -n "$SW" link set "p$i" master br0 up
        ip -n "$ns" link set lo up
        ip -n "$ns" addr add "10.77.0.$i/24" dev "h$i"
        ip -n "$ns" link set "h$i" up
        # NETNS_RATE (1 Gbit/s) out of every host (so each direction of
        # every link).
        ip netns exec "$ns" tc qdisc add dev "h$i" root tbf rate "${NETNS_RATE:-1gbit}" burst 1mb latency 20ms
    done
}

# "agent [opts] HOST COMMAND", like ssh, in HOST's namespace (HOST is
# 10.77.0.I), with a session directory per host and a hostname of its own
# ("$TAG-hI", in a UTS namespace) as on real hosts. The namespaces share
# /dev/shm, and OpenMPI names its shared-memory segments after the
# hostname (vader_segment.<hostname>.<job>.<local rank>): with one hostname
# for every host, two ranks per host crashed in their first collective,
# each host's local rank 0 mapping the other's segment.
netns_write_agent() {
    cat >"$TMP/agent" <<EOF
#!/bin/sh
while [ \$# -gt 0 ]; do case "\$1" in -*) shift ;; *) break ;; esac; done
host=\$1; shift
export TMPDIR="$TMP/h\${host##*.}"; mkdir -p "\$TMPDIR"
exec ip netns exec "$TAG-h\${host##*.}" unshare --uts /bin/sh -c "hostname $TAG-h\${host##*.}; \$*"
EOF
    chmod +x "$TMP/agent"
}

