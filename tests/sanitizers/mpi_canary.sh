#!/usr/bin/env bash
# The TSan build's MPI canary: test_recreate linked with a data race planted
# in the MPI progress thread (AGMM_PLANT_PROGRESS_RACE, src/transport/mpi/
# mpi.c) runs under mpirun with the build's suppressions (TSAN_OPTIONS as
# scripts/reliability.sh sets them). Passes only if the job fails AND
# ThreadSanitizer reported a data race with the progress thread's frame:
# OpenMPI's suppressions must not hide agmm's own races.
#
# usage: tests/sanitizers/mpi_canary.sh MPIRUN TEST_RECREATE_PLANTED
set -u
MPIRUN=$1
PROG=$2
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
out=$(mktemp "${TMPDIR:-/tmp}/mpi_canary.XXXXXX")
trap 'rm -f "$out"' EXIT
timeout 60 "$MPIRUN" --oversubscribe -np 2 "$PROG" 5 >"$out" 2>&1
rc=$?
if [ "$rc" -ne 0 ] && grep -q "WARNING: ThreadSanitizer: data race" "$out" &&
    grep -q "agmm_mpi_progress_main" "$out"; then
    echo "PASS: the planted race in the MPI progress thread was reported (mpirun exit $rc)"
    exit 0
fi
echo "FAIL: the planted race in the MPI progress thread was not reported" \
     "(mpirun exit $rc; want non-zero and a TSan data race naming" \
     "agmm_mpi_progress_main)"
tail -n 40 "$out"
exit 1
