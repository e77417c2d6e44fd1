#!/usr/bin/env bash
# Worlds of processes started by a shell loop (no launcher): the joined
# program (examples/joined_allgather_gemm.c, fp16/bf16/fp32, uneven shards,
# several rounds, every element checked against agmm_reference) started N
# times, and the failure cases of issue 12. After every case no segment of
# the case's job is left in /dev/shm and no rank process is left running.
# Nothing here is timed: a timeout only bounds how long a hang may last.
#
# usage: joined.sh JOINED_EXE AGMM_EXE CASE
#   CASE: ok2 ok3 ok4 torch missing killed exit mismatch twojobs leftover badenv
#         readme ulimit valgrind
set -u
exe=$1 agmm=$2 case=$3
job="jt-$case-$$"
uid=$(id -u)
tmp=$(mktemp -d "${TMPDIR:-/tmp}/joined.XXXXXX")
pids=()
cleanup_all() {
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null; done
  rm -rf "$tmp"
  ls /dev/shm 2>/dev/null | grep "^agmm:$uid:$job" | while read -r f; do rm -f "/dev/shm/$f"; done
}
trap cleanup_all EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $2"; fi; }
segs() { ls /dev/shm 2>/dev/null | grep "^agmm:$uid:$1:" || true; }

# start RANK SIZE [ARGS...]: one rank in the background, agmm's variables.
start() {
  local r=$1 n=$2
  shift 2
  AGMM_RANK=$r AGMM_WORLD_SIZE=$n AGMM_JOB=$job "$exe" "$@" \
    >"$tmp/out.$r" 2>"$tmp/err.$r" &
  pids+=($!)
  eval "pid_$r=$!"
}
# finish: wait for every started rank; rc.R holds each exit status. A rank
# still running after 120 s is a hang: killed and reported.
finish() {
  for i in "${!pids[@]}"; do
    local p=${pids[$i]} waited=0
    while kill -0 "$p" 2>/dev/null && [ $waited -lt 1200 ]; do sleep 0.1; waited=$((waited+1)); done
    if kill -0 "$p" 2>/dev/null; then
      check false "process $p still running after 120 s (hang)"
      kill -KILL "$p"
    fi
  done
  for r in $(seq 0 $((${#pids[@]} - 1))); do
    wait "${pids[$r]}"; echo $? >"$tmp/rc.$r"
  done
  pids=()
}
rc() { cat "$tmp/rc.$1"; }
show() { for f in "$tmp"/err.* "$tmp"/out.*; do [ -s "$f" ] && { echo "--- $f"; cat "$f"; }; done; }
clean_after() { check '[ -z "$(segs "$job")" ]' "no segment of $job left: $(segs "$job")"; }

ok_run() { # N
  local n=$1
  for r in $(seq 0 $((n - 1))); do start "$r" "$n"; done
  finish
  for r in $(seq 0 $((n - 1))); do
    check '[ "$(rc $r)" = 0 ]' "rank $r of $n exit 0 (got $(rc $r))"
    check 'grep -q "rank $r of $n: 9 rounds (fp16, bf16, fp32) match the reference" "$tmp/out.$r"' \
      "rank $r of $n checked every round"
  done
}

case $case in
ok2) ok_run 2 ;;
ok3) ok_run 3 ;;
ok4) ok_run 4 ;;
torch)
  # As torchrun sets them: no AGMM_* variables; the job comes from the
  # rendezvous point. The segments are then named after it.
  for r in 0 1; do
    RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 \
      MASTER_PORT=$((20000 + $$ % 20000)) "$exe" >"$tmp/out.$r" 2>"$tmp/err.$r" &
    pids+=($!)
  done
  finish
  for r in 0 1; do
    check '[ "$(rc $r)" = 0 ]' "torchrun-style rank $r exit 0 (got $(rc $r))"
  done
  job="tr-127.0.0.1-$((20000 + $$ % 20000))"
  ;;
missing)
  # Rank 2 of 3 never starts: both others fail, naming it, at their timeout
  # (10 s: rank 1 must have joined by then, however slowly it starts).
  start 0 3 --timeout 10
  start 1 3 --timeout 10
  finish
  for r in 0 1; do
    check '[ "$(rc $r)" = 1 ]' "rank $r exit 1 (got $(rc $r))"
    check 'grep -q "rank(s) 2 did not join within 10 s (joined: 0, 1)" "$tmp/err.$r"' \
      "rank $r names the missing rank"
  done
  ;;
killed)
  # Rank 2 dies (SIGKILL) in its second round: the others fail naming it.
  start 0 3 --timeout 60
  start 1 3 --timeout 60
  start 2 3 --timeout 60 --die-at-round 2
  finish
  check '[ "$(rc 2)" = 137 ]' "rank 2 was killed (got $(rc 2))"
  for r in 0 1; do
    check '[ "$(rc $r)" = 1 ]' "rank $r exit 1 (got $(rc $r))"
    check 'grep -q "rank 2 (pid $pid_2) ended without leaving job" "$tmp/err.$r"' \
      "rank $r names the dead rank and its pid"
  done
  clean_after
  # Killed from outside while the survivor is not in a wait: it notices
  # at its next collective call.
  start 0 2 --hold "$tmp/go"
  start 1 2 --hold "$tmp/go"
  for _ in $(seq 600); do
    [ -e "$tmp/go.0.joined" ] && [ -e "$tmp/go.1.joined" ] && break
    sleep 0.05
  done
  kill -KILL "$pid_1"
  touch "$tmp/go"
  finish
  check '[ "$(rc 0)" = 1 ]' "survivor exit 1 (got $(rc 0))"
  check 'grep -q "rank 1 (pid $pid_1) ended without leaving job" "$tmp/err.0"' \
    "survivor names the killed rank and its pid"
  ;;
exit)
  # Ending with exit() and no agmm_world_destroy: after the plans are gone
  # that is a clean exit (the exit handler leaves the world; nothing is
  # left behind); in the middle of a plan the peers fail at once naming
  # the rank, as for a crash.
  start 0 2 --no-destroy
  start 1 2 --no-destroy
  finish
  for r in 0 1; do check '[ "$(rc $r)" = 0 ]' "rank $r without destroy exit 0 (got $(rc $r))"; done
  clean_after
  start 0 3 --timeout 60
  start 1 3 --timeout 60 --exit-at-round 4
  start 2 3 --timeout 60
  finish
  check '[ "$(rc 1)" = 5 ]' "rank 1 exited (got $(rc 1))"
  for r in 0 2; do
    check '[ "$(rc $r)" = 1 ]' "rank $r exit 1 (got $(rc $r))"
    check 'grep -q "rank 1 (pid $pid_1) ended without leaving job" "$tmp/err.$r"' \
      "rank $r names the rank that exited mid-plan"
  done
  ;;
mismatch)
  start 0 2 --timeout 30
  start 1 3 --timeout 30
  finish
  for r in 0 1; do
    check '[ "$(rc $r)" = 1 ]' "rank $r exit 1 (got $(rc $r))"
    check 'grep -q "was started with world size [23], the ranks already there with [23]" "$tmp/err.$r"' \
      "rank $r says the sizes differ"
  done
  ;;
twojobs)
  # Job A holds the name (formed, waiting for a file); a second run with the
  # same name fails naming a holder; cleanup leaves the live job alone.
  start 0 2 --hold "$tmp/go"
  start 1 2 --hold "$tmp/go"
  for _ in $(seq 600); do
    [ -e "$tmp/go.0.joined" ] && [ -e "$tmp/go.1.joined" ] && break
    sleep 0.05
  done
  check '[ -e "$tmp/go.0.joined" ] && [ -e "$tmp/go.1.joined" ]' "job A formed"
  AGMM_RANK=0 AGMM_WORLD_SIZE=2 AGMM_JOB=$job "$exe" --timeout 10 >"$tmp/b.out" 2>"$tmp/b.err"
  b=$?
  check '[ $b = 1 ]' "second run exit 1 (got $b)"
  check 'grep -Eq "job .$job. is in use by another run \(pid ($pid_0|$pid_1), its rank [01]\)" "$tmp/b.err"' \
    "second run names a holder pid: $(cat "$tmp/b.err")"
  out=$("$agmm" cleanup --job "$job")
  check '[ "$out" = "agmm cleanup: removed 0 leftover segments of job '"'$job'"'" ]' \
    "cleanup keeps the live job's segment: $out"
  check '[ -n "$(segs "$job")" ]' "live job's control segment still there"
  touch "$tmp/go"
  finish
  for r in 0 1; do check '[ "$(rc $r)" = 0 ]' "job A rank $r exit 0 (got $(rc $r))"; done
  ;;
leftover)
  # A SIGKILLed job leaves its control segment: the next run removes it and
  # proceeds; `agmm cleanup` removes another one, and a window segment of a
  # dead pid, but not one of a live pid.
  start 0 2 --timeout 60
  for _ in $(seq 600); do [ -n "$(segs "$job")" ] && break; sleep 0.05; done
  kill -KILL "$pid_0"
  finish
  check '[ "$(segs "$job")" = "agmm:$uid:$job:0:ctl" ]' "the killed job left its control segment: $(segs "$job")"
  ok_run 2
  clean_after
  start 0 2 --timeout 60
  for _ in $(seq 600); do [ -n "$(segs "$job")" ] && break; sleep 0.05; done
  kill -KILL "$pid_0"
  finish
  sh -c 'exit 0' & dead=$!; wait $dead
  (umask 077; : >"/dev/shm/agmm:$uid:$job:$dead:w0"; : >"/dev/shm/agmm:$uid:$job:$$:w1")
  out=$("$agmm" cleanup --job "$job"); crc=$?
  check '[ $crc = 0 ]' "cleanup exit 0"
  check '[ "$out" = "agmm cleanup: removed 2 leftover segments of job '"'$job'"'" ]' \
    "cleanup removed the control segment and the dead pid's window: $out"
  check '[ "$(segs "$job")" = "agmm:$uid:$job:$$:w1" ]' "a live pid's segment stays: $(segs "$job")"
  rm -f "/dev/shm/agmm:$uid:$job:$$:w1"
  ;;
badenv)
  out=$(env -u RANK AGMM_RANK=x AGMM_WORLD_SIZE=2 AGMM_JOB=$job "$exe" 2>&1); r=$?
  check '[ $r = 1 ] && echo "$out" | grep -q "AGMM_RANK='"'x'"'"' "bad AGMM_RANK named: $out"
  out=$(env -u RANK AGMM_RANK=0 AGMM_WORLD_SIZE=2 "$exe" 2>&1); r=$?
  check '[ $r = 1 ] && echo "$out" | grep -q "AGMM_JOB is not set"' "missing AGMM_JOB named: $out"
  out=$(env -u RANK AGMM_RANK=0 AGMM_WORLD_SIZE=2 AGMM_JOB=a/b "$exe" 2>&1); r=$?
  check '[ $r = 1 ] && echo "$out" | grep -q "has ./. at 1"' "job with / refused: $out"
  long=$(printf 'j%.0s' $(seq 49))
  out=$(env -u RANK AGMM_RANK=0 AGMM_WORLD_SIZE=2 AGMM_JOB=$long "$exe" 2>&1); r=$?
  check '[ $r = 1 ] && echo "$out" | grep -q "job name of 49 characters"' "long job refused: $out"
  out=$(env -u AGMM_RANK RANK=0 WORLD_SIZE=2 MASTER_ADDR=h "$exe" 2>&1); r=$?
  check '[ $r = 1 ] && echo "$out" | grep -q "MASTER_PORT is not set"' "missing MASTER_PORT named: $out"
  out=$("$agmm" cleanup --job a/b 2>&1); r=$?
  check '[ $r = 2 ] && echo "$out" | grep -q "^agmm: --job:"' "cleanup --job a/b exit 2: $out"
  ;;
readme)
  # README's "From your own processes" agmm launch command, as printed (the
  # tool, the program path and the job name made this build's and this
  # case's).
  readme=$(dirname "$0")/../../README.md
  awk '/^## From your own processes/ { m = 1; next }
       m == 1 && /^```sh/ { m = 2; next }
       m == 2 && /^```/ { exit }
       m == 2 { print }' "$readme" >"$tmp/loop.sh"
  check 'grep -q "^build/agmm launch -n 3 --job demo -- build/examples/example_joined_allgather_gemm$" "$tmp/loop.sh"' \
    "README has the agmm launch command: $(cat "$tmp/loop.sh")"
  sed -i -e "s|build/examples/example_joined_allgather_gemm|$exe|" -e "s|--job demo|--job $job|" \
    -e "s|^build/agmm |$agmm |" "$tmp/loop.sh"
  out=$(timeout 120 bash "$tmp/loop.sh" 2>&1); r=$?
  check '[ $r = 0 ] && [ "$(echo "$out" | grep -c "of 3: 9 rounds (fp16, bf16, fp32) match the reference")" = 3 ]' \
    "the README's command runs 3 checked ranks: $out"
  ;;
ulimit)
  # No reservation tied to the machine's memory: both kinds of world run in
  # 4 GB of address space.
  out=$( (ulimit -v 4000000 && "$agmm" run --m-local 32 --k 256 --n 256 --rounds 2) 2>&1); r=$?
  check '[ $r = 0 ]' "agmm run (64 rows) under ulimit -v 4000000: $out"
  (ulimit -v 4000000 && for r in 0 1; do start "$r" 2; done && finish)
  for r in 0 1; do
    check '[ "$(cat "$tmp/rc.$r" 2>/dev/null)" = 0 ]' "joined rank $r under ulimit -v 4000000"
  done
  ;;
valgrind)
  # Memcheck with the full leak check in every process (forked ranks too):
  # 0 definite leaks, no memory errors (exit 3 otherwise). fp32: valgrind's
  # CPU has no AVX-512, which oneDNN's bf16 kernels need.
  vg=(valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=3)
  out=$("${vg[@]}" "$agmm" run --m-local 32 --k 64 --n 64 --rounds 2 --dtype fp32 2>&1); r=$?
  check '[ $r = 0 ]' "agmm run under valgrind exit 0 (got $r)"
  check '[ "$(echo "$out" | grep -c "definitely lost: 0 bytes\|no leaks are possible")" = 3 ]' \
    "launcher and both ranks: no definite leak: $(echo "$out" | grep -E "definitely|ERROR SUM")"
  for r in 0 1; do
    AGMM_RANK=$r AGMM_WORLD_SIZE=2 AGMM_JOB=$job "${vg[@]}" "$exe" --fp32-only \
      >"$tmp/out.$r" 2>"$tmp/err.$r" &
    pids+=($!)
  done
  finish
  for r in 0 1; do
    check '[ "$(rc $r)" = 0 ]' "joined rank $r under valgrind exit 0 (got $(rc $r))"
    check 'grep -q "definitely lost: 0 bytes\|no leaks are possible" "$tmp/err.$r"' \
      "joined rank $r: no definite leak"
  done
  ;;
*)
  echo "joined.sh: unknown case '$case'" >&2
  exit 2
  ;;
esac
clean_after
[ $fail -eq 0 ] || show
echo "joined $case: $pass passed, $fail failed"
[ $fail -eq 0 ]
