#!/usr/bin/env bash
# Build and run the whole test suite (what CI runs).
# AGMM_TEST_NOONEDNN=1 (CI sets it) also builds without the oneDNN engine
# (-DAGMM_ONEDNN=OFF, into build-noonednn: what a machine without
# libdnnl-dev gets) and runs its unit and end-to-end tests; the network
# namespace, fault, stress and screenshot tests are left to the main build
# (they do not touch the GEMM engine and take most of the suite's time).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
(cd build && ctest --output-on-failure --timeout 600)
if [ "${AGMM_TEST_NOONEDNN:-0}" = 1 ]; then
    echo "== without oneDNN (-DAGMM_ONEDNN=OFF)"
    cmake -S . -B build-noonednn -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGMM_ONEDNN=OFF >/dev/null
    cmake --build build-noonednn -j"$(nproc)"
    (cd build-noonednn &&
        ctest --output-on-failure --timeout 600 -E 'e2e_mpi_netns|e2e_mpi_net_faults|e2e_faults|e2e_stress|e2e_trace_svg_screenshot')
fi
