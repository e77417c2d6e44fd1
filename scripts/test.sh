#!/usr/bin/env bash
# Build and run the whole test suite (what CI runs).
# AGMM_BUILD_DIR: the build directory (default build).
# AGMM_TEST_EXCLUDE: a CTest regular expression of tests to leave out
#   (scripts/debian13.sh leaves out the suites that only repeat there what
#   Debian 12 checks with the same code).
# AGMM_TEST_NOONEDNN=1 (CI sets it) also builds without the oneDNN engine
# (-DAGMM_ONEDNN=OFF, into build-noonednn: what a machine without
# libdnnl-dev gets) and runs its unit and end-to-end tests; the network
# namespace, fault, stress and screenshot tests are left to the main build
# (they do not touch the GEMM engine and take most of the suite's time).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${AGMM_BUILD_DIR:-build}
exclude=()
[ -z "${AGMM_TEST_EXCLUDE:-}" ] || exclude=(-E "$AGMM_TEST_EXCLUDE")
scripts/build.sh
(cd "$dir" && ctest --output-on-failure --timeout 600 "${exclude[@]}")
if [ "${AGMM_TEST_NOONEDNN:-0}" = 1 ]; then
    echo "== without oneDNN (-DAGMM_ONEDNN=OFF)"
    AGMM_BUILD_DIR=$dir-noonednn scripts/build.sh -DAGMM_ONEDNN=OFF
    (cd "$dir-noonednn" &&
        ctest --output-on-failure --timeout 600 -E 'e2e_mpi_netns|e2e_mpi_net_faults|e2e_faults|e2e_stress|e2e_trace_svg_screenshot')
fi
