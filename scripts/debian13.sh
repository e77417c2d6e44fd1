#!/usr/bin/env bash
# agmm on Debian 13 (trixie: oneDNN 3.7, PyTorch 2.6, Python 3.13, gcc 14,
# OpenMPI 5), from a Debian 12 machine, in a root made with debootstrap.
#
# usage: scripts/debian13.sh [check]      the README's commands inside the
#                                         root: install, build, the suite
#        scripts/debian13.sh run CMD ARGS...  one command inside the root,
#                                         in this tree (same path), with
#                                         AGMM_BUILD_DIR=build-debian13
#        scripts/debian13.sh shell        an interactive shell there
#        scripts/debian13.sh setup        make (or check) the root only
#
# The root is kept under $AGMM_DEBIAN13_ROOT (default
# /var/tmp/agmm-debian13) and reused; it is made anew when absent or broken
# (no marker of a finished debootstrap, or its shell does not start).
# $AGMM_DEBIAN13_MIRROR is the Debian mirror (default: deb.debian.org).
# Runs as root (debootstrap, chroot, mounts).
#
# Every mount (/proc, /sys, /dev, a /dev/shm and /tmp of the root's own,
# this tree and its git directory) is made inside a private mount namespace
# (unshare -m) that ends with the command: nothing is left mounted on any
# exit path, a kill included, and the host's /dev/shm and /tmp are not
# shared with the root's ranks.
#
# OpenMPI 5.0.7 (Debian 13) prints "Unable to find reachable pairing
# between local and remote interfaces" from its TCP BTL at every mpirun on a
# host whose interface has both IPv4 and IPv6 addresses (open-mpi/ompi
# issue 14079; this project's machines are such hosts), on the stderr that
# the MPI tests check: commands in the root run with
# OMPI_MCA_btl_tcp_disable_family=6, the workaround docs/mpi.md gives users.
#
# The tree is built in build-debian13 (scripts/build.sh and scripts/test.sh
# read AGMM_BUILD_DIR), beside the host's build: its compiler, oneDNN and
# Python differ.
set -euo pipefail
cd "$(dirname "$0")/.."
TOP=$PWD
ROOT=${AGMM_DEBIAN13_ROOT:-/var/tmp/agmm-debian13}
MIRROR=${AGMM_DEBIAN13_MIRROR:-http://deb.debian.org/debian}
MARK=.agmm-debian13-ok
BUILD_DIR=build-debian13
DEBIAN12_ONLY='e2e_mpi_netns_hosts|e2e_mpi_net_faults|e2e_faults_end_run_naming_rank|e2e_stress_every_round_passes|e2e_trace_svg_screenshot'

die() { echo "debian13.sh: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, chroot and mounts)"
case "${1:-check}" in
    check | run | shell | setup) ;;
    *) die "unknown command '${1}' (allowed: check, run CMD ARGS..., shell, setup)" ;;
esac
cmd=${1:-check}
[ $# -gt 0 ] && shift
[ "$cmd" != run ] || [ $# -gt 0 ] || die "run needs a command (run CMD ARGS...)"

root_ok() {
    [ -f "$ROOT/$MARK" ] && chroot "$ROOT" /bin/true 2>/dev/null
}

# Anything of ours still mounted under the root (a namespace of another
# running command shows none here: its mounts are private).
root_busy() {
    awk -v r="$ROOT/" 'index($2 "/", r) == 1 { found = 1 } END { exit !found }' /proc/mounts
}

make_root() {
    command -v debootstrap >/dev/null || {
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap
    }
    root_busy && die "$ROOT has mounts on it; unmount them before it is made anew"
    echo "== debian13: making the root in $ROOT (debootstrap trixie from $MIRROR)"
    rm -rf "$ROOT.new"
    debootstrap --variant=minbase --include=ca-certificates trixie "$ROOT.new" "$MIRROR" \
        >"$ROOT.log" 2>&1 || {
        tail -n 20 "$ROOT.log" >&2
        die "debootstrap failed (whole log: $ROOT.log)"
    }
    # The root's apt reads the same mirror, with the security updates.
    cat >"$ROOT.new/etc/apt/sources.list" <<EOF
deb $MIRROR trixie main
deb $MIRROR trixie-updates main
deb ${MIRROR%/debian}/debian-security trixie-security main
EOF
    touch "$ROOT.new/$MARK"
    rm -rf "$ROOT"
    mv "$ROOT.new" "$ROOT"
}

# One command in the root, in a mount namespace of its own.
in_root() { # [-i] CMD ARGS...
    local git_dir
    git_dir=$(git -C "$TOP" rev-parse --path-format=absolute --git-common-dir 2>/dev/null || true)
    cp /etc/resolv.conf "$ROOT/etc/resolv.conf" 2>/dev/null || true
    AGMM_ROOT="$ROOT" AGMM_TOP="$TOP" AGMM_GIT="$git_dir" \
        unshare --mount --propagation private -- bash -euc '
        R=$AGMM_ROOT
        mount -t proc proc "$R/proc"
        mount --rbind /sys "$R/sys"
        mount --rbind /dev "$R/dev"
        mount -t tmpfs -o mode=1777 shm "$R/dev/shm"
        mount -t tmpfs -o mode=1777 tmp "$R/tmp"
        mkdir -p "$R$AGMM_TOP"
        mount --bind "$AGMM_TOP" "$R$AGMM_TOP"
        # The git directory of a worktree lives elsewhere: mount it too.
        case "$AGMM_GIT" in
        "" | "$AGMM_TOP"/*) ;;
        *) mkdir -p "$R$AGMM_GIT" && mount --bind "$AGMM_GIT" "$R$AGMM_GIT" ;;
        esac
        exec chroot "$R" /usr/bin/env -i \
            HOME=/root PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
            TERM="${TERM:-dumb}" LANG=C.UTF-8 CI="${CI:-}" \
            OMPI_MCA_btl_tcp_disable_family=6 \
            AGMM_BUILD_DIR='"$BUILD_DIR"' \
            bash -c "cd \"\$0\" && exec \"\$@\"" "$AGMM_TOP" "$@"
    ' bash "$@"
}

# Setup under a lock, so that commands started together make the root once.
exec 9>"$ROOT.lock"
flock 9
root_ok || make_root
flock -u 9

case $cmd in
setup)
    echo "debian13.sh: root ready in $ROOT ($(chroot "$ROOT" cat /etc/debian_version))"
    ;;
shell)
    in_root bash -i
    ;;
run)
    in_root "$@"
    ;;
check)
    # The README's two commands in this root's build directory. The
    # packages: scripts/install-deps.sh's groups for building and the
    # suites run here (not chromium, the sanitizers' clang or the pinned
    # clang-format). install-deps.sh runs under the lock: two checks never
    # run apt at once.
    start=$SECONDS
    flock 9
    in_root env AGMM_DEPS="build python tests" scripts/install-deps.sh
    flock -u 9
    echo "== debian13: dependencies in $((SECONDS - start)) s"
    in_root bash -c 'scripts/build.sh && "$AGMM_BUILD_DIR"/agmm run'
    # Left to Debian 12 (same code, not the platform's): the network
    # namespace, fault and stress suites, the trace's screenshot in
    # chromium.
    # The source-only tests too (label "source"), and two tests at a time.
    in_root env AGMM_TEST_EXCLUDE="$DEBIAN12_ONLY" AGMM_TEST_SOURCE=0 AGMM_TEST_JOBS=2 \
        scripts/test.sh
    echo "== debian13: passed in $((SECONDS - start)) s"
    ;;
esac
