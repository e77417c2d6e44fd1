#!/usr/bin/env bash
# Build and run the whole test suite (what CI runs).
#   AGMM_BUILD_DIR      the build directory (default build)
#   AGMM_TEST_EXCLUDE   a CTest regular expression of tests to leave out
#                       (scripts/debian13.sh leaves out the suites that only
#                       repeat there what Debian 12 checks with the same code)
#   AGMM_TEST_JOBS      tests run at once (default 2; tests marked RUN_SERIAL
#                       always run alone)
#   AGMM_TEST_SOURCE=0  leave out the tests that read only the source tree
#                       (label "source": the protocol model, the layer and
#                       format checks), for a second build of the same tree
#   AGMM_TEST_NOONEDNN=1 (CI sets it) also builds without the oneDNN engine
#                       (-DAGMM_ONEDNN=OFF, into <build dir>-noonednn: what a
#                       machine without libdnnl-dev gets) and runs its unit
#                       and end-to-end tests, two at a time; the network
#                       namespace, fault, stress, screenshot and pip tests,
#                       the killed, stopped and faulty MPI ranks
#                       (e2e_mpi_one_host_failures), the launcher's and the
#                       tool's signal tests and the source-only ones are
#                       left to the main build (what they check is not the
#                       GEMM engine's).
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${AGMM_BUILD_DIR:-build}
args=(--output-on-failure --timeout 600 -j"${AGMM_TEST_JOBS:-2}")
[ -z "${AGMM_TEST_EXCLUDE:-}" ] || args+=(-E "$AGMM_TEST_EXCLUDE")
[ "${AGMM_TEST_SOURCE:-1}" = 1 ] || args+=(-LE source)
scripts/build.sh
(cd "$dir" && ctest "${args[@]}")
if [ "${AGMM_TEST_NOONEDNN:-0}" = 1 ]; then
    echo "== without oneDNN (-DAGMM_ONEDNN=OFF)"
    AGMM_BUILD_DIR=$dir-noonednn scripts/build.sh -DAGMM_ONEDNN=OFF
    (cd "$dir-noonednn" &&
        ctest --output-on-failure --timeout 600 -j2 -LE source \
            -E 'e2e_mpi_netns|e2e_mpi_net_faults|e2e_mpi_one_host_failures|e2e_faults|e2e_stress|e2e_launch_ranks_env_signals|e2e_tool_signals|e2e_trace_svg_screenshot|e2e_pip_install')
fi
