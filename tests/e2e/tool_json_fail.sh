#!/usr/bin/env bash
# --json prints one complete object, also on failure (issue 14): a run and
# a bench whose rank 1 is killed (as in kill_rank.sh) print JSON that
# `python3 -m json.tool` parses, with "ok": false, an "error" and
# "failed_rank": 1, and the same header members as a successful run.
#
# usage: tests/e2e/tool_json_fail.sh AGMM_BINARY
set -u
AGMM=$1
. "$(dirname "$0")/proc_tag.sh"
. "$(dirname "$0")/shm_left.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/tool_json_fail.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }

kill_rank1() { # CMD...: start agmm, kill rank 1 once the 3 ranks run
    "$AGMM" "$@" --ranks 3 --oversubscribe --m-local 128 --k 128 --n 128 --json \
        --timeout 60 >"$TMP/out" 2>"$TMP/err" </dev/null &
    local launcher=$!
    SHM_JOBS+=" fork-$launcher"
    for _ in $(seq 100); do
        [ "$(pgrep -P $launcher | wc -l)" -ge 3 ] && break
        sleep 0.05
    done
    sleep 0.5
    local ranks
    mapfile -t ranks < <(pgrep -P $launcher)
    # pgrep lists by pid: the launcher forks rank 0, 1, 2 in order
    kill -KILL "${ranks[1]}"
    wait $launcher
    rc=$?
}

for cmd in "run --rounds 1000000 --no-check" "bench --rounds 1000000 --warmup 0 --mode fused"; do
    # shellcheck disable=SC2086
    kill_rank1 $cmd
    check '[ $rc -ne 0 ]' "$cmd: non-zero exit (got $rc)"
    check 'python3 -m json.tool "$TMP/out" >/dev/null' \
          "$cmd: stdout is one JSON object: $(head -c 300 "$TMP/out")"
    check 'python3 - "$TMP/out" <<"PY"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ok"] is False, d
assert d["failed_rank"] == 1, d
assert "killed" in d["error"], d
for k in ("ranks", "transport", "m", "k", "n", "dtype", "blas", "link", "comm_cores", "gemm_cores",
          "gemm_engine"):
    assert k in d, k
PY' "$cmd: ok false, failed_rank 1, error and header: $(head -c 400 "$TMP/out")"
    check '[ "$(wc -l <"$TMP/out")" -eq 1 ]' "$cmd: exactly one line on stdout"
done

# A successful run and bench say "ok": true and share the header members.
"$AGMM" run --ranks 2 --m-local 64 --k 32 --n 32 --rounds 2 --json >"$TMP/run" 2>/dev/null
"$AGMM" bench --ranks 2 --m-local 64 --k 32 --n 32 --rounds 3 --warmup 0 --mode fused,comm-only \
    --json >"$TMP/bench" 2>/dev/null
check 'python3 - "$TMP/run" "$TMP/bench" <<"PY"
import json, sys
r = json.load(open(sys.argv[1])); b = json.load(open(sys.argv[2]))
assert r["ok"] is True and b["ok"] is True
head = ("ranks", "transport", "link", "m", "k", "n", "m_local", "dtype", "weights", "tile_m",
        "tile_n", "comm_cores", "gemm_cores", "warmup", "blas", "gemm")
timed = ("plan_create_ms", "choose_ms", "candidates")  # measured, not set
for k in head:
    assert k in r and k in b, k
    if k == "gemm":  # the same, but for how long creating the plan took
        assert all(x in r[k] for x in timed), r[k]
        # A path chosen by measuring (a CPU with several) may differ
        # between two processes; the rest may not.
        if r[k]["chosen_by"] == "measured" or b[k]["chosen_by"] == "measured":
            timed += ("path", "impl", "chosen_by")
        r[k] = {x: v for x, v in r[k].items() if x not in timed}
        b[k] = {x: v for x, v in b[k].items() if x not in timed}
    assert r[k] == b[k] or k in ("warmup", "blas") , (k, r[k], b[k])
for m in ("fused", "comm-only"):
    s = b["modes"][m]["samples_us"]
    assert len(s) == 3 and all(x > 0 for x in s), s
    assert min(s) == b["modes"][m]["min_us"], (s, b["modes"][m])
PY' "run and bench --json: ok true, same header, per-round samples"

check '[ -z "$(tagged_pids)" ]' "no agmm process left: $(tagged_pids)"
check '[ -z "$(shm_left)" ]' "no shm segment of our runs left: $(shm_left)"
echo "tool_json_fail: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
