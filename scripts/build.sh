#!/usr/bin/env bash
# Configure and build agmm (Release with debug info, warnings as errors)
# into ./build, or into $AGMM_BUILD_DIR (scripts/debian13.sh builds into
# build-debian13). Extra arguments go to CMake's configure step.
set -euo pipefail
cd "$(dirname "$0")/.."
dir=${AGMM_BUILD_DIR:-build}
cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGMM_WERROR=ON "$@" >/dev/null
cmake --build "$dir" -j"$(nproc)"
