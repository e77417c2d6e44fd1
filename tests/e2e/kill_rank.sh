#!/usr/bin/env bash
# Kill one rank with SIGKILL in the middle of a long run: the launcher must
# end the run within a few seconds with a non-zero exit, name the rank and
# the signal, and leave no agmm process behind.
# usage: kill_rank.sh AGMM [EXTRA RUN OPTIONS, e.g. --op gemm-rs]
set -u
agmm=$1
shift
. "$(dirname "$0")/proc_tag.sh"
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass+1)); else fail=$((fail+1)); echo "FAILED: $2"; fi; }
err=$(mktemp)
"$agmm" run --ranks 3 --oversubscribe --m-local 256 --k 256 --n 256 \
  --rounds 1000000 --no-check --timeout 60 "$@" >/dev/null 2>"$err" &
launcher=$!
# Wait for the three rank processes, then let them get going.
for _ in $(seq 100); do
  [ "$(pgrep -P $launcher | wc -l)" -ge 3 ] && break
  sleep 0.05
done
sleep 0.5
ranks=($(pgrep -P $launcher))
check '[ ${#ranks[@]} -eq 3 ]' "three rank processes (saw ${#ranks[@]})"
victim=${ranks[1]}
start=$(date +%s.%N)
kill -KILL "$victim"
# The launcher must finish on its own; give it 20 s before calling it a hang.
for _ in $(seq 200); do kill -0 $launcher 2>/dev/null || break; sleep 0.1; done
if kill -0 $launcher 2>/dev/null; then
  check false "launcher still running 20 s after the kill (hang)"
  kill -KILL $launcher; pkill -KILL -P $launcher
fi
wait $launcher; rc=$?
took=$(awk -v a="$(date +%s.%N)" -v b="$start" "BEGIN{printf \"%.2f\", a-b}")
check '[ $rc -ne 0 ]' "non-zero exit (got $rc)"
check 'grep -q "was killed by signal 9" "$err"' "message names the signal: $(cat "$err")"
check 'grep -Eq "rank [0-9]+ was killed" "$err"' "message names the rank"
check '[ -z "$(tagged_pids)" ]' "no agmm process left: $(tagged_pids)"
for p in "${ranks[@]}"; do check '! kill -0 $p 2>/dev/null' "rank pid $p gone"; done
# This run's segments carry the job fork-<launcher pid> (other sessions on
# the machine may have agmm segments of their own).
check '[ -z "$(ls /dev/shm 2>/dev/null | grep -- ":fork-$launcher:")" ]' "no agmm shm segment of this run"
echo "stderr was:"; cat "$err"; echo "(ended ${took}s after the kill)"
rm -f "$err"
echo "kill_rank: $pass passed, $fail failed"
[ $fail -eq 0 ]
