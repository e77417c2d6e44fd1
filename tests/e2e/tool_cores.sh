#!/usr/bin/env bash
# The cores a rank may use come from its CPU affinity (issue 14):
#   - under `taskset -c 0` the header says each rank may use 1 core;
#   - asking for more threads than that: `run` warns once on stderr and
#     still passes its check, `bench` refuses (exit 2) unless --oversubscribe;
#   - under mpirun (when built with MPI) the BLAS runs 1 thread per GEMM call.
#
# usage: tests/e2e/tool_cores.sh AGMM_BINARY [mpi]   (mpi: the build has MPI)
set -u
AGMM=$1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tool_cores.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }
SHAPE="--m-local 64 --k 32 --n 32 --timeout 30"

if ! command -v taskset >/dev/null; then echo "tool_cores: no taskset; skipped"; exit 0; fi
taskset -c 0 "$AGMM" run --ranks 2 $SHAPE --gemm-cores 2 >"$TMP/out" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "taskset run with 2 GEMM cores exits 0 (got $rc): $(cat "$TMP/err")"
check 'grep -q "^cores: each rank may use 1 core " "$TMP/out"' \
      "header says 1 core: $(grep '^cores' "$TMP/out")"
check '[ "$(grep -c "warning: --comm-cores/--gemm-cores: .*exceed the 1 core" "$TMP/err")" -eq 1 ]' \
      "exactly one thread-budget warning: $(cat "$TMP/err")"
check 'grep -q "PASS" "$TMP/out"' "the run still passes its check"

taskset -c 0 "$AGMM" bench --ranks 1 $SHAPE --gemm-cores 2 --rounds 1 --warmup 0 \
    >"$TMP/out" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 2 ]' "taskset bench with 2 GEMM cores refuses with 2 (got $rc)"
check 'grep -q "exceed the 1 core this process may use" "$TMP/err"' \
      "bench names the 1 usable core: $(cat "$TMP/err")"

taskset -c 0 "$AGMM" bench --ranks 1 $SHAPE --gemm-cores 2 --rounds 1 --warmup 0 \
    --mode fused --oversubscribe >"$TMP/out" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "bench --oversubscribe runs (got $rc): $(cat "$TMP/err")"

# Under MPI: one BLAS thread per GEMM call, as with forked ranks.
if [ "${2:-}" = mpi ] && command -v mpirun >/dev/null; then
    ROOT=""
    [ "$(id -u)" -eq 0 ] && ROOT="--allow-run-as-root"
    timeout 120 mpirun $ROOT --oversubscribe --bind-to none --mca btl_vader_single_copy_mechanism none -np 2 "$AGMM" run $SHAPE \
        --gemm-engine openblas >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
    check '[ $rc -eq 0 ]' "mpirun run exits 0 (got $rc): $(head -c 400 "$TMP/err")"
    check 'grep -q "^blas: .*, 1 thread per GEMM call" "$TMP/out"' \
          "under mpirun the BLAS has 1 thread per call: $(grep '^blas' "$TMP/out")"
else
    echo "tool_cores: no MPI in this build; MPI part skipped"
fi
echo "tool_cores: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
