#!/usr/bin/env bash
# Install what agmm needs to build and test on Debian 12 (bookworm) or
# Debian 13 (trixie) (run as root, or with sudo available). Skips apt-get
# when everything is already there.
#
# AGMM_DEPS names the groups to install (default: all of them):
#   build        compiler, CMake, OpenBLAS, oneDNN, hwloc, OpenMPI
#   python       NumPy, PyTorch, pytest; pip, setuptools, wheel and venv
#                (pip install .), Python's headers (torch.compile's C++)
#   tests        what the end-to-end suites use beyond that: network
#                namespaces (iproute2), nftables, valgrind
#   browser      chromium (the trace SVG's screenshot test)
#   reliability  clang with its sanitizer runtimes and libFuzzer
#                (scripts/reliability.sh)
#   format       clang-format (scripts/format.sh; its pinned version is
#                Debian 12's 14, so the check runs there)
set -euo pipefail
. /etc/os-release
groups=${AGMM_DEPS:-build python tests browser reliability format}

pkgs=()
for g in $groups; do
    case $g in
    build)
        pkgs+=(build-essential cmake pkg-config libopenblas-dev
               libopenmpi-dev openmpi-bin
               libdnnl-dev  # the oneDNN GEMM engine (optional: the build works without)
               libhwloc-dev # placement's topology (optional: --bind auto binds nothing)
               procps git) ;;
    python)
        pkgs+=(python3 python3-numpy python3-torch python3-pytest
               python3-dev python3-pip python3-setuptools python3-wheel python3-venv)
        # torch.compile's inductor compiles C++ against torch's headers
        # (torch/include links to /usr/include/ATen...): torch 2 only.
        case ${VERSION_CODENAME:-} in
        bookworm) ;;
        *) pkgs+=(libtorch-dev) ;;
        esac ;;
    tests)
        pkgs+=(iproute2 nftables valgrind) ;;
    browser)
        pkgs+=(chromium) ;;
    reliability)
        # The sanitizer runtimes and llvm-symbolizer of the release's clang.
        case ${VERSION_CODENAME:-} in
        bookworm) pkgs+=(clang libclang-rt-14-dev llvm-14) ;;
        *) pkgs+=(clang libclang-rt-dev llvm) ;;
        esac ;;
    format)
        pkgs+=(clang-format) ;;
    *)
        echo "install-deps.sh: AGMM_DEPS: unknown group '$g' (allowed: build python tests browser reliability format)" >&2
        exit 2 ;;
    esac
done

missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
