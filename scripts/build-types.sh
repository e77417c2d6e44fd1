#!/usr/bin/env bash
# Build agmm (library, tool, tests, bench, examples, fuzz replays) once per
# build type and compiler, with warnings as errors, each into a scratch
# directory that is removed afterwards. Exits non-zero if any build fails or
# prints a warning (compiler, linker or CMake). Builds only: no tests.
#
# usage: scripts/build-types.sh [--cc=COMPILER]... [TYPE|all]... [-- CMAKE-ARGS...]
#   TYPE       Release, Debug, RelWithDebInfo, MinSizeRel; all = the four
#              (default: Release)
#   --cc=CC    compiler to build with, repeatable (default: $CC, else cc);
#              a clang also builds each type with the libFuzzer targets
#              (-DAGMM_FUZZ=ON -DAGMM_SANITIZE=address,undefined)
#   CMAKE-ARGS passed to every configure step, e.g. -DAGMM_ONEDNN=OFF
# e.g. scripts/build-types.sh --cc=gcc --cc=clang all
set -euo pipefail
cd "$(dirname "$0")/.."

types=() ccs=() extra=()
while [ $# -gt 0 ]; do
    case $1 in
    --cc=?*) ccs+=("${1#--cc=}") ;;
    all) types+=(Release Debug RelWithDebInfo MinSizeRel) ;;
    Release | Debug | RelWithDebInfo | MinSizeRel) types+=("$1") ;;
    --) shift; extra=("$@"); break ;;
    *)
        echo "build-types.sh: '$1' is not a build type (Release, Debug, RelWithDebInfo, MinSizeRel, all), --cc=COMPILER or --" >&2
        exit 2
        ;;
    esac
    shift
done
[ ${#types[@]} -gt 0 ] || types=(Release)
[ ${#ccs[@]} -gt 0 ] || ccs=("${CC:-cc}")

scratch=$(mktemp -d "${TMPDIR:-/tmp}/agmm-build-types.XXXXXX")
trap 'rm -rf "$scratch"' EXIT

failed=()
build() { # name cc cmake-args...
    local name=$1 cc=$2 dir="$scratch/build" log="$scratch/build.log"
    shift 2
    echo "== $name: $("$cc" --version | head -1)"
    if ! { CC=$cc cmake -S . -B "$dir" -DAGMM_WERROR=ON "$@" "${extra[@]}" &&
        cmake --build "$dir" -j"${JOBS:-$(nproc)}"; } >"$log" 2>&1; then
        grep -E -i -B2 -A6 'error|warning' "$log" | head -60 || tail -30 "$log"
        echo "== $name: FAILED"
        failed+=("$name")
    elif grep -E -i -A6 'warning' "$log"; then
        echo "== $name: built, but with the warnings above"
        failed+=("$name")
    else
        echo "== $name: ok, no warnings"
    fi
    rm -rf "$dir" "$log"
}
for cc in "${ccs[@]}"; do
    for type in "${types[@]}"; do
        build "$type/$cc" "$cc" -DCMAKE_BUILD_TYPE="$type"
        # clang: the libFuzzer targets too, in the build they need
        if "$cc" --version 2>/dev/null | grep -qi clang; then
            build "$type/$cc/fuzz" "$cc" -DCMAKE_BUILD_TYPE="$type" \
                -DAGMM_FUZZ=ON -DAGMM_SANITIZE=address,undefined
        fi
    done
done
if [ ${#failed[@]} -gt 0 ]; then
    echo "build-types.sh: failed or warned: ${failed[*]}" >&2
    exit 1
fi
