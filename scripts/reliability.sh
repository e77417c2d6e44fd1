#!/usr/bin/env bash
# The reliability checks of docs/reliability.md, as CI runs them:
#   asan  the whole test suite built with clang -fsanitize=address,undefined
#         (LeakSanitizer included, in every rank), and the fuzz targets;
#   tsan  the whole test suite built with clang -fsanitize=thread;
#   fuzz  each libFuzzer target for FUZZ_SECONDS (default 30) from the seed
#         corpus (needs the asan build).
# usage: scripts/reliability.sh [asan] [tsan] [fuzz]   (default: all three)
# Build directories: build-asan, build-tsan. Needs clang and
# libclang-rt-14-dev (scripts/install-deps.sh installs them).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
SUPP=$ROOT/tests/sanitizers
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(asan tsan fuzz)

# llvm-symbolizer turns sanitizer stack traces into file:line.
[ -d /usr/lib/llvm-14/bin ] && export PATH=/usr/lib/llvm-14/bin:$PATH
# Every finding fails the process that made it (ranks included: the
# launcher reports the rank's non-zero exit). The suppression files hold
# findings in third-party code only, each explained there.
# exitcode=86: a rank that ASan, UBSan or LSan stops must not exit with 1,
# which the launcher takes for "the rank reported its failure itself" and
# does not name; with 86 it says "rank R exited with status 86".
# fast_unwind_on_malloc=0: allocation stacks unwound through OpenMPI's
# libraries (built without frame pointers), so that its leaks show the
# library frame that tests/sanitizers/lsan.supp names.
export ASAN_OPTIONS="detect_leaks=1:strict_string_checks=1:exitcode=86:fast_unwind_on_malloc=0"
export LSAN_OPTIONS="suppressions=$SUPP/lsan.supp:print_suppressions=0"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$SUPP/ubsan.supp"
export TSAN_OPTIONS="halt_on_error=1:second_deadlock_stack=1:suppressions=$SUPP/tsan.supp"

# The sanitizer builds include the MPI transport, and its tests run under
# mpirun with every rank sanitized; OpenMPI's own findings are suppressed
# by library (tests/sanitizers/README.md). The network-namespace suites
# are left out here: they exercise the same agmm code as e2e_mpi_one_host
# over other links (the main build runs them), and under the sanitizers
# they would add minutes to CI for no code path of agmm's own.
NO_NETNS='e2e_mpi_netns|e2e_mpi_net_faults'
# Two tests at a time (AGMM_TEST_JOBS): a sanitized suite spends most of its
# time waiting (ranks' deadlines, MPI start-up), a third of it on the CPU;
# the tests that time how soon a failure ends a run are RUN_SERIAL and run
# alone.
JOBS=${AGMM_TEST_JOBS:-2}
# -LE source: the tests that read only the source tree (the protocol model,
# the layer and format checks) answer the same in every build; the main
# build (scripts/test.sh) runs them.

configure() { # dir cmake-args...
    local dir=$1
    shift
    CC=clang cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DAGMM_WERROR=ON "$@" >/dev/null
    cmake --build "$dir" -j"$(nproc)"
}

for step in "${steps[@]}"; do
    case $step in
    asan)
        echo "== ASan + UBSan + LSan: the test suite"
        configure build-asan -DAGMM_SANITIZE=address,undefined -DAGMM_FUZZ=ON
        (cd build-asan && ctest --output-on-failure --timeout 900 -j"$JOBS" -LE source -E "$NO_NETNS")
        ;;
    tsan)
        echo "== TSan: the test suite"
        # MPI between the ranks of this host over TCP loopback, not vader:
        # vader's buffers are shared memory written by other processes,
        # which TSan cannot see; its (suppressed) reports there made the
        # symbolizer print "LLVMSymbolizer: error reading file" for the
        # mapped /dev/shm segment, on the stderr that tests check.
        export OMPI_MCA_btl=self,tcp
        configure build-tsan -DAGMM_SANITIZE=thread
        (cd build-tsan && ctest --output-on-failure --timeout 900 -j"$JOBS" -LE source -E "$NO_NETNS")
        ;;
    fuzz)
        [ -x build-asan/fuzz/fuzz_cli ] ||
            configure build-asan -DAGMM_SANITIZE=address,undefined -DAGMM_FUZZ=ON
        work=$(mktemp -d "${TMPDIR:-/tmp}/agmm_fuzz.XXXXXX")
        for target in cli plan; do
            echo "== libFuzzer: fuzz_$target for ${FUZZ_SECONDS}s"
            mkdir -p "$work/$target"
            # New inputs go to the scratch directory, crashes too; the
            # repository's corpus is only read.
            build-asan/fuzz/fuzz_$target -max_total_time="$FUZZ_SECONDS" \
                -print_final_stats=1 -artifact_prefix="$work/" \
                "$work/$target" "fuzz/corpus/$target" 2>"$work/log" || {
                tail -n 60 "$work/log"
                echo "fuzz_$target found a failing input (above); save it to" \
                     "fuzz/regressions/$target/ with the fix"
                exit 1
            }
            execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work/log")
            units=$(ls "$work/$target" | wc -l)
            echo "fuzz_$target: $execs executions in ${FUZZ_SECONDS}s, no" \
                 "failure; $units new corpus inputs"
        done
        rm -rf "$work"
        ;;
    *)
        echo "usage: $0 [asan] [tsan] [fuzz]" >&2
        exit 2
        ;;
    esac
done
