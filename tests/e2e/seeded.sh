# Sourced by the randomized shell tests (stress.sh, faults.sh) with the
# test's arguments: checks that $1 is the agmm binary (usage names
# $TEST_ARGS after it), sets AGMM to its absolute path, a seed (printed;
# AGMM_TEST_SEED=S repeats a run), RANDOM seeded with it, and a scratch
# directory $TMP removed at exit. $TEST_NAME names the test. Also tags the
# processes the test starts (proc_tag.sh: tagged_pids).
if [ $# -lt 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 AGMM_BINARY $TEST_ARGS" >&2
    exit 2
fi
AGMM=$(readlink -f "$1")
. "$(dirname "${BASH_SOURCE[0]}")/proc_tag.sh"
SEED=${AGMM_TEST_SEED:-$(( $(date +%s) % 100000 ))}
RANDOM=$SEED
TMP=$(mktemp -d "${TMPDIR:-/tmp}/agmm_$TEST_NAME.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
echo "$TEST_NAME: seed $SEED (AGMM_TEST_SEED=$SEED repeats this run)"
