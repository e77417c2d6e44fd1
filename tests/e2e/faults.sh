#!/usr/bin/env bash
# Fault tests: a rank that stops publishing (hangs), exits early with an
# error, fails a put (in the fused schedule's tile puts or the baseline's
# bulk puts), or is killed (SIGKILL) by the fault hook or from
# outside at a random moment; the launcher killed or interrupted. Every
# case must end the whole run
#   - with a non-zero exit,
#   - within its timeout (--timeout + the launcher's 2 s grace + slack),
#   - with a message naming the failed rank (launcher cases: saying what
#     happened),
# and leave no process this test started (tests/e2e/proc_tag.sh) and no
# /dev/shm segment of its runs (tests/e2e/shm_left.sh).
#
# The moment of each injected fault is random (the put number, the delay
# before a kill); the seed is printed, AGMM_TEST_SEED=S repeats a run.
#
# usage: tests/e2e/faults.sh AGMM_BINARY [TRIALS]   (TRIALS per mode, default 2)
set -u
# A rank the hook ends with _exit (mode=exit) leaves its worker threads
# unjoined on purpose; under TSan (scripts/reliability.sh) its _exit
# interceptor reports that as a "thread leak" and changes the exit status
# from 3 to 66, which failed a gemm-ar case once in CI when a worker had
# already finished. Only leak reports are off here; races still fail.
if [ -n "${TSAN_OPTIONS:-}" ]; then
    export TSAN_OPTIONS="$TSAN_OPTIONS:report_thread_leaks=0"
fi
TEST_NAME=faults TEST_ARGS="[TRIALS]"
. "$(dirname "$0")/seeded.sh" # AGMM, SEED, RANDOM, TMP, tagged_pids
TRIALS=${2:-2}

# The shape: 3 ranks on however many cores, 8 row tiles per rank, so each
# rank makes 8 tiles x 2 peers = 16 puts per round.
RANKS=3
ROUNDS=50
PUTS=$((ROUNDS * 8 * (RANKS - 1)))   # fused: a put per tile per peer
BULK_PUTS=$((ROUNDS * (RANKS - 1)))   # baseline: one bulk put per peer
TIMEOUT=${AGMM_TEST_TIMEOUT:-3} # --timeout of every run
GRACE=2
SLACK=${AGMM_TEST_SLACK:-20} # a loaded 2-core machine, sanitizer builds
# The fault hook is in both schedules' put paths of both operations: each
# is run (the killed-from-outside cases below run the all-gather's fused
# one). gemm-rs with this shape makes the same puts: 8 partial tiles per
# peer's block per round (fused), one bulk put per peer (baseline);
# gemm-ar twice as many (its reduced tiles or rows to every peer too), so
# a fault drawn below these counts fires for it as well.
BASE=(run --ranks $RANKS --m-local 64 --k 32 --n 32 --tile-m 8 --tile-n 8
      --timeout $TIMEOUT --oversubscribe)

pass=0
fail=0
injected=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL: $*"; }

. "$(dirname "$0")/shm_left.sh" # shm_left: segments our runs left

# Nothing of ours may be left once the launcher has returned.
check_leftovers() { # what
    local left
    left=$(tagged_pids)
    if [ -n "$left" ]; then
        bad "$1: agmm processes left: $(echo "$left" | tr '\n' ' ')"
        kill -9 $left 2>/dev/null
    else
        ok
    fi
    left=$(shm_left)
    if [ -n "$left" ]; then
        bad "$1: /dev/shm segments left: $(echo "$left" | tr '\n' ' ')"
    else
        ok
    fi
}

# check_run WHAT RC SECONDS LIMIT PATTERN [ERR]: non-zero, in time, message
# (in ERR, default $TMP/err).
check_run() {
    local what=$1 rc=$2 secs=$3 limit=$4 pattern=$5 err=${6:-$TMP/err}
    injected=$((injected + 1))
    if [ "$rc" -eq 0 ]; then
        bad "$what: exit 0"
    else
        ok
    fi
    if [ "$secs" -gt "$limit" ]; then
        bad "$what: took ${secs}s, limit ${limit}s"
    else
        ok
    fi
    if grep -qE -- "$pattern" "$err"; then
        ok
    else
        bad "$what: stderr lacks /$pattern/: $(head -c 600 "$err" | tr '\n' '~')"
    fi
    check_leftovers "$what"
    echo "  $what: exit $rc after ${secs}s"
}

# Faults injected through the library's hook (src/common/fault.c).
# mode | pattern the stderr must match (RANK is the faulty rank). A hung
# rank is named by whoever times out first: a peer waiting for its data, or
# one waiting in the tool's per-round barrier, which lists the ranks that
# did not arrive (the hung one, and maybe a peer stuck waiting for it).
cases=(
    "hang  | timed out waiting for ((tile -?[0-9]+|ack of round -?[0-9]+|shard|partial tile -?[0-9]+|partial rows|reduced tile -?[0-9]+|reduced rows|row count of round -?[0-9]+) from rank RANK|(all-gather )?barrier -?[0-9]+ of all ranks \(ranks? ([0-9]+, )*RANK(, [0-9]+)* did not arrive\))"
    "exit  | rank RANK exited with status 3"
    "kill  | rank RANK was killed by signal 9"
    "error | rank RANK: AGMM_FAULT: injected error"
)
# fault_run ID FAULT OP SCHED COMM_CORES: one run with AGMM_FAULT=FAULT;
# its stdout, stderr, exit status and seconds in $TMP/ID.{out,err,rc,secs}.
fault_run() {
    local id=$1 start rc
    start=$(date +%s)
    AGMM_FAULT="$2" timeout 120 "$AGMM" "${BASE[@]}" --op "$3" --schedule "$4" --rounds $ROUNDS \
        --comm-cores "$5" --gemm-cores 1 >"$TMP/$id.out" 2>"$TMP/$id.err" </dev/null
    rc=$?
    echo $rc >"$TMP/$id.rc"
    echo $(($(date +%s) - start)) >"$TMP/$id.secs"
}

# Every case's checks, once its run is over: ended in time naming the
# rank, no leftovers, and the fault fired (the hook says so) at the chosen
# put.
check_fault() { # id what mode rank after pattern
    local id=$1 what=$2 mode=$3 rank=$4 after=$5 pattern=$6
    check_run "$what" "$(cat "$TMP/$id.rc")" "$(cat "$TMP/$id.secs")" $((TIMEOUT + GRACE + SLACK)) \
        "${pattern//RANK/$rank}" "$TMP/$id.err"
    if [ "$mode" = error ] ||
        grep -q "rank $rank: AGMM_FAULT: $mode before put $((after + 1))\$" "$TMP/$id.err"; then
        ok
    else
        bad "$what: the hook did not report firing at put $((after + 1))"
    fi
}

# The cases of one operation. Those that fail fast run one after the
# other, each checked as it ends. A hung rank's run spends its seconds idle
# (its peers wait out --timeout), so an operation's hang cases, both
# schedules, then run side by side (4 runs of 3 ranks at TRIALS 2) and are
# checked once all have ended: the leftover checks then cover the batch.
# Each run's time is still its own, against the same limit.
for op in ag-gemm gemm-rs gemm-ar; do
  hangs=()
  for sched in fused baseline; do
    puts=$PUTS
    [ $sched = baseline ] && puts=$BULK_PUTS
    for row in "${cases[@]}"; do
      mode=${row%%|*}
      mode=${mode// /}
      pattern=${row#*| }
      for ((trial = 0; trial < TRIALS; trial++)); do
        rank=$((RANDOM % RANKS))
        after=$(((RANDOM * 32768 + RANDOM) % puts))
        # Half the trials put from a comm thread, half from the GEMM thread.
        what="--op $op --schedule $sched mode=$mode rank=$rank after_puts=$after comm-cores=$((trial % 2))"
        id="$op.$sched.$mode.$trial"
        if [ "$mode" = hang ]; then
            hangs+=("$id|$what|$mode|$rank|$after|$sched|$((trial % 2))|$pattern")
        else
            fault_run "$id" "rank=$rank,after_puts=$after,mode=$mode" $op $sched $((trial % 2))
            check_fault "$id" "$what" $mode $rank $after "$pattern"
        fi
      done
    done
  done
  for h in "${hangs[@]}"; do
    IFS='|' read -r id what mode rank after sched comm pattern <<<"$h"
    fault_run "$id" "rank=$rank,after_puts=$after,mode=$mode" $op $sched $comm &
  done
  wait
  for h in "${hangs[@]}"; do
    IFS='|' read -r id what mode rank after sched comm pattern <<<"$h"
    check_fault "$id" "$what" "$mode" "$rank" "$after" "$pattern"
  done
done

# start_long: an agmm run that would last minutes, in the background; sets
# $launcher and waits until its ranks exist.
start_long() {
    "$AGMM" "${BASE[@]}" --schedule fused --rounds 100000000 >"$TMP/out" 2>"$TMP/err" </dev/null &
    launcher=$!
    SHM_JOBS+=" fork-$launcher"
    local i
    for ((i = 0; i < 200; i++)); do
        [ "$(pgrep -P $launcher | wc -l)" -eq $RANKS ] && return 0
        sleep 0.05
    done
    return 1
}

# A rank killed from outside at a random moment.
for ((trial = 0; trial < TRIALS + 1; trial++)); do
    start_long || bad "kill: the ranks did not start"
    delay=$(printf '0.%02d' $((10 + RANDOM % 90)))
    sleep "$delay"
    mapfile -t kids < <(pgrep -P $launcher)
    victim=${kids[RANDOM % ${#kids[@]}]}
    start=$(date +%s)
    kill -9 "$victim"
    wait $launcher
    rc=$?
    secs=$(($(date +%s) - start))
    check_run "SIGKILL of pid $victim after ${delay}s" $rc $secs \
        $((GRACE + SLACK)) "rank [0-9]+ was killed by signal 9"
done

# A rank crashing (SIGSEGV) with core dumps on: the run ends as for a kill,
# and the core leaves out the windows (MADV_DONTDUMP: every rank's copy
# of every window is mapped in each rank; until issue 12 this was a heap of
# nranks x MemTotal bytes, which dumping would read and so allocate). The
# core size limit bounds the damage if it did not.
core_pattern=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
if [ -z "$core_pattern" ] || [[ "$core_pattern" == *"/"* || "$core_pattern" == "|"* ]]; then
    echo "  core dump check not run: core_pattern '$core_pattern' does not" \
         "write into the working directory"
else
    old_limit=$(ulimit -c)
    mkdir -p "$TMP/cores"
    cd "$TMP/cores"
    ulimit -c 262144 # KiB: 256 MiB
    # Under a sanitizer its own SIGSEGV handler would catch the signal and
    # print a report before exiting. In CI, TSan's handler once stopped
    # after the report's first lines (a signal sent from outside lands at
    # any point, possibly inside the runtime's own locks) and never exited,
    # so a peer's timeout ended the run and the launcher never saw the rank
    # end. What this case checks is ours (the launcher's report, the
    # core's size), so the handler is off here: the kernel ends the rank
    # with signal 11 as in a normal build.
    saved_asan=${ASAN_OPTIONS-} saved_tsan=${TSAN_OPTIONS-}
    [ -n "$saved_asan" ] && export ASAN_OPTIONS="$saved_asan:handle_segv=0"
    [ -n "$saved_tsan" ] && export TSAN_OPTIONS="$saved_tsan:handle_segv=0"
    start_long || bad "SIGSEGV: the ranks did not start"
    [ -n "$saved_asan" ] && export ASAN_OPTIONS="$saved_asan"
    [ -n "$saved_tsan" ] && export TSAN_OPTIONS="$saved_tsan"
    sleep 0.$((10 + RANDOM % 80))
    mapfile -t kids < <(pgrep -P $launcher)
    start=$(date +%s)
    kill -SEGV "${kids[RANDOM % ${#kids[@]}]}"
    wait $launcher
    rc=$?
    secs=$(($(date +%s) - start))
    ulimit -c "$old_limit"
    cd - >/dev/null
    check_run "SIGSEGV with core dumps on" $rc $secs $((GRACE + SLACK)) \
        "rank [0-9]+ (was killed by signal 11|exited with status [0-9]+)" # a sanitizer run outside scripts/reliability.sh keeps its handler
    core_kib=$(du -sk "$TMP/cores" | cut -f1)
    if [ "$core_kib" -lt 65536 ]; then
        ok
    else
        bad "SIGSEGV with core dumps on: ${core_kib} KiB of core files"
    fi
    echo "  core files: ${core_kib} KiB on disk"
fi

# The launcher interrupted (Ctrl-C): every rank stops.
start_long || bad "SIGINT: the ranks did not start"
sleep 0.$((10 + RANDOM % 80))
start=$(date +%s)
kill -INT $launcher
wait $launcher
rc=$?
secs=$(($(date +%s) - start))
check_run "SIGINT to the launcher" $rc $secs $((GRACE + SLACK)) \
    "interrupted by signal 2"

# The launcher itself killed: its ranks die with it (PR_SET_PDEATHSIG).
# Killed after the plan exists: a rank that dies while its windows are
# being made leaves its segment named until `agmm cleanup` (by design,
# transport/shm/window.c), and nobody is left to run it here.
start_long || bad "launcher kill: the ranks did not start"
for ((i = 0; i < 600; i++)); do
    grep -q '^round 1:' "$TMP/out" && break
    sleep 0.05
done
sleep 0.$((10 + RANDOM % 80))
kill -9 $launcher
{ wait $launcher; } 2>/dev/null
injected=$((injected + 1))
for ((i = 0; i < 100; i++)); do
    [ -z "$(tagged_pids)" ] && break
    sleep 0.05
done
check_leftovers "SIGKILL to the launcher"

echo "faults: $injected faults injected, each ended the run as required" \
     "or is reported above (seed $SEED)"
echo "faults: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
