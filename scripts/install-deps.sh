#!/usr/bin/env bash
# Install what agmm needs to build and test on Debian 12 (run as root, or
# with sudo available). Skips apt-get when everything is already there.
set -euo pipefail
pkgs=(build-essential cmake pkg-config libopenblas-dev libopenmpi-dev
      libdnnl-dev # the oneDNN GEMM engine (optional: the build works without)
      libhwloc-dev # placement's topology (optional: without it --bind auto binds nothing)
      openmpi-bin iproute2 procps python3
      # the Python package's tests (tests/python: pytest under /usr/bin/python3)
      python3-numpy python3-torch python3-pytest
      nftables # tests: packet loss between namespace hosts (e2e_mpi_net_faults)
      chromium # tests: the trace SVG rendered headless (e2e_trace_svg_screenshot)
      valgrind # tests: the leak check of joined and forked ranks (e2e_joined_valgrind)
      # scripts/reliability.sh: clang's sanitizers and libFuzzer
      clang libclang-rt-14-dev llvm-14
      clang-format) # scripts/format.sh (unit_sources_clang_formatted): version 14
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
