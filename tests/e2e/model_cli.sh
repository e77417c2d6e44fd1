#!/usr/bin/env bash
# `agmm model` (issue 25; docs/cli.md, "agmm model"):
#   - a described machine (rates given): both schedules, their ratio and
#     the last tile's arrival printed; the header says the rates were given;
#   - --json: one object with the documented members, parsed by python3;
#   - a slower link gives a slower fused and a slower baseline round on a
#     link-bound shape (2 hosts, few columns);
#   - with rates given nothing runs: under strace (when it can trace here)
#     no process is forked (threads of a library's pool may start at load)
#     and nothing under /dev/shm is opened; without strace that assertion
#     is skipped, said so;
#   - this host measured (no GEMM rate given): the header says so, --json
#     has rates_measured true and rates sorted by rows; no fork either;
#   - no /dev/shm segment left (tests/e2e/shm_left.sh);
#   - bad input: exit 2, one line on stderr naming the option, nothing on
#     stdout.
#
# usage: tests/e2e/model_cli.sh AGMM_BINARY
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 AGMM_BINARY (an executable agmm)" >&2
    exit 2
fi
AGMM=$1
# shellcheck source=tests/e2e/proc_tag.sh
. "$(dirname "$0")/proc_tag.sh"
# shellcheck source=tests/e2e/shm_left.sh
. "$(dirname "$0")/shm_left.sh"
TMP=$(mktemp -d "${TMPDIR:-/tmp}/model_cli.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }

# A described machine: 2 hosts x 4 ranks over 25 Gbit/s, one GEMM rate.
DESCRIBED=(model --ranks 8 --hosts 2 --link-gbps 25 --link-latency-us 5
           --m-local 256 --k 1024 --n 1024 --gemm-gflops 50)
timeout 60 "$AGMM" "${DESCRIBED[@]}" >"$TMP/out" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ] && [ ! -s "$TMP/err" ]' "described machine: exit $rc, stderr: $(cat "$TMP/err")"
check 'grep -q "^fused  *[0-9.]* ms  bound: " "$TMP/out"' "a fused line: $(cat "$TMP/out")"
check 'grep -q "^baseline  *[0-9.]* ms  bound: " "$TMP/out"' "a baseline line"
check 'grep -q "^fused / baseline: [0-9][0-9.]* " "$TMP/out"' "the ratio"
check 'grep -q "^last remote tile (fused): arrives at [0-9.]* ms, GEMM of the tiles before it [0-9.]* ms" "$TMP/out"' \
      "the last tile's arrival against the GEMM before it"
check 'grep -q "^agmm model: ag-gemm on 8 ranks: 2 hosts x 4 ranks, mpi, relay on" "$TMP/out"' \
      "the machine in the header: $(head -1 "$TMP/out")"
check 'grep -q "^rates: given, nothing measured here: GEMM 50 GFLOP/s" "$TMP/out"' \
      "the header says the rates were given: $(grep '^rates' "$TMP/out")"

# --json: the members model_check.py and model_project.py read.
timeout 60 "$AGMM" "${DESCRIBED[@]}" --json >"$TMP/json" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "--json: exit $rc: $(cat "$TMP/err")"
check 'python3 - "$TMP/json" <<"EOF"
import json, sys
d = json.load(open(sys.argv[1]))
m, p = d["machine"], d["problem"]
assert m["transport"] == "mpi" and m["hosts"] == 2 and m["ranks_per_host"] == 4, m
assert m["relay"] is True and m["link_gbps"] == 25 and m["link_latency_us"] == 5, m
assert p["op"] == "ag-gemm" and p["ranks"] == 8 and p["m_total"] == 2048, p
assert p["k"] == 1024 and p["n"] == 1024 and len(p["m_local"]) == 8, p
for s in ("fused", "baseline"):
    x = d[s]
    for key in ("time_ms", "gemm_ms", "comm_ms", "exposed_ms"):
        assert isinstance(x[key], (int, float)) and x[key] >= 0, (s, key, x)
    assert x["time_ms"] > 0 and x["bound"] in ("gemm", "link", "relay", "copy", "reduce", "overhead"), x
assert abs(d["ratio"] - d["fused"]["time_ms"] / d["baseline"]["time_ms"]) < 1e-3 * d["ratio"], d["ratio"]
assert d["last_arrival_ms"] >= 0 and d["gemm_before_last_ms"] >= 0
assert d["rates_measured"] is False and d["rates"] == [[1, 50]], d["rates"]
assert d["sources"]["gemm"] == "given" and d["sources"]["copy_gbs"] == "default", d["sources"]
EOF' "--json members: $(head -c 400 "$TMP/json")"

# --tile-us: taken (machine.tile_us, sources.tile_us "given"; "default"
# without it), and charged to the fused round only: more of it, a slower
# fused round, the same baseline (4 ranks on shm, 1 tile each).
tile_ms() {
    "$AGMM" model --ranks 4 --m-local 1 --k 64 --n 64 --gemm-gflops 100 \
        --tile-us "$1" --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["machine"]["tile_us"] == float(sys.argv[1]) and d["sources"]["tile_us"] == "given", d; print(d["fused"]["time_ms"], d["baseline"]["time_ms"])' "$1"
}
read -r ft0 bt0 <<<"$(tile_ms 0)"
read -r ft50 bt50 <<<"$(tile_ms 50)"
check 'python3 -c "import sys; f0,b0,f5,b5=map(float,sys.argv[1:]); sys.exit(not (f5 >= f0 + 0.14 and b5 == b0))" "$ft0" "$bt0" "$ft50" "$bt50"' \
      "--tile-us 50 vs 0: fused +3 x 50 us, baseline the same (fused $ft50 vs $ft0 ms, baseline $bt50 vs $bt0 ms)"
check 'python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d[\"sources\"][\"tile_us\"] == \"default\" and d[\"machine\"][\"tile_us\"] > 0))" "$TMP/json"' \
      "tile_us from the defaults without --tile-us"

# A slower link: a slower round of both schedules (link-bound: 2 hosts, 1
# rank each, 64 columns: 2 k bytes a row on the wire vs 128 k flops).
link_ms() {
    "$AGMM" model --hosts 2 --ranks-per-host 1 --m-local 2048 --k 1024 --n 64 \
        --gemm-gflops 100 --link-gbps "$1" --json |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print(d["fused"]["time_ms"], d["baseline"]["time_ms"])'
}
read -r f10 b10 <<<"$(link_ms 10)"
read -r f1 b1 <<<"$(link_ms 1)"
check 'python3 -c "import sys; f10,b10,f1,b1=map(float,sys.argv[1:]); sys.exit(not (f1 > f10 and b1 > b10))" "$f10" "$b10" "$f1" "$b1"' \
      "1 Gbit/s slower than 10 (fused $f1 vs $f10 ms, baseline $b1 vs $b10 ms)"

# Nothing runs with the rates given: no fork, no /dev/shm (under strace).
# A process is a fork/vfork, or a clone that does not share our memory
# (no CLONE_VM) or is a vfork-style spawn (CLONE_VFORK); a clone sharing
# our memory that is not a thread is a sanitizer's helper (LeakSanitizer
# clones one with CLONE_VM|CLONE_FS|CLONE_FILES|CLONE_UNTRACED to stop
# the threads at exit), not a rank.
procs() { # strace output file: the lines that start a process
    grep -E '(fork|vfork)\(|clone3?\(' "$1" | grep -v CLONE_THREAD |
        awk '/fork\(/ || /CLONE_VFORK/ || !/CLONE_VM/'
}
if strace -f -o /dev/null true 2>/dev/null; then
    strace -f -qq -e trace=fork,vfork,clone,clone3,openat,open -o "$TMP/trace" \
        "$AGMM" "${DESCRIBED[@]}" >/dev/null 2>&1
    # A library's thread pool may start at load (OpenBLAS's); a process,
    # a rank, may not.
    check '[ -z "$(procs "$TMP/trace")" ]' \
          "rates given: no process forked: $(procs "$TMP/trace" | head -3)"
    check '! grep -q "/dev/shm" "$TMP/trace"' "rates given: /dev/shm untouched: $(grep /dev/shm "$TMP/trace" | head -3)"
else
    echo "model_cli: strace cannot trace here: the no-fork/no-/dev/shm assertion is skipped"
fi

# This host measured: small shape, short budget.
MEASURED=(model --ranks 2 --m-local 64 --k 256 --n 256 --measure-budget 0.3)
timeout 60 "$AGMM" "${MEASURED[@]}" >"$TMP/mout" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "measured: exit $rc: $(cat "$TMP/err")"
check 'grep -q "^rates: measured on this host in [0-9.]* s" "$TMP/mout"' \
      "the header says the rates were measured: $(grep '^rates' "$TMP/mout")"
timeout 60 "$AGMM" "${MEASURED[@]}" --json >"$TMP/mjson" 2>"$TMP/err"
check 'python3 - "$TMP/mjson" <<"EOF"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["rates_measured"] is True, d["rates_measured"]
rows = [r for r, g in d["rates"]]
assert rows and rows == sorted(set(rows)) and rows[0] == 1, rows
assert all(g > 0 for r, g in d["rates"]), d["rates"]
assert 64 in rows and 128 in rows, rows  # a shard, all M rows
assert d["sources"]["copy_gbs"] == "measured" and d["machine"]["copy_gbs"] > 0
# 0.3 s asked; engine start-up and a loaded machine add to it
assert d["measure_s"] is not None and d["measure_s"] < 20, d["measure_s"]
assert d["problem"]["gemm_path"] in ("native", "f32"), d["problem"]
EOF' "measured --json: $(head -c 600 "$TMP/mjson")"
if strace -f -o /dev/null true 2>/dev/null; then
    strace -f -qq -e trace=fork,vfork,clone,clone3 -o "$TMP/mtrace" \
        "$AGMM" "${MEASURED[@]}" >/dev/null 2>&1
    # Threads (an engine's pool) may start; a process may not.
    check '[ -z "$(procs "$TMP/mtrace")" ]' \
          "measured: no process forked: $(procs "$TMP/mtrace" | head -3)"
fi

left=$(shm_left)
check '[ -z "$left" ]' "no /dev/shm segment left: $left"

# Bad input: exit 2, one line naming the option, nothing on stdout.
rows=(
    "--hosts 0                                     | --hosts: "
    "--hosts 2 --ranks-per-host 2 --ranks 6        | --hosts/--ranks-per-host: 2 x 2 = 4 ranks but --ranks is 6"
    "--hosts 3 --ranks 4                           | --hosts: 3 does not divide --ranks 4"
    "--ranks-per-host 3 --ranks 4                  | --ranks-per-host: 3 does not divide --ranks 4"
    "--hosts 64 --ranks-per-host 32                | --hosts/--ranks-per-host: 64 x 32 = 2048 ranks"
    "--gemm-rates 128:50,1:3                       | --gemm-rates: "
    "--gemm-rates 1:3,x                            | --gemm-rates: "
    "--gemm-rates 1:0                              | --gemm-rates: "
    "--gemm-rates 1:3,,8:9                         | --gemm-rates: "
    "--gemm-gflops 5 --gemm-rates 1:5              | --gemm-rates: give --gemm-gflops or --gemm-rates, not both"
    "--gemm-gflops 0                               | --gemm-gflops: "
    "--transport link --hosts 2 --link-gbps 10     | --transport: link is one host"
    "--transport shm --hosts 2 --link-gbps 10      | --transport: shm is one host"
    "--transport link                              | --transport: link needs --link-gbps"
    "--transport tcp                               | --transport: one of shm, link, mpi"
    "--hosts 2                                     | --link-gbps: needed with --transport mpi and --hosts 2"
    "--transport shm --link-gbps 5                 | --link-gbps: --transport shm has no link"
    "--link-latency-us 5                           | --link-latency-us: needs --link-gbps"
    "--relay maybe                                 | --relay: one of on, off"
    "--convert-gbs 3 --dtype fp32                  | --convert-gbs: nothing is converted"
    "--measure-budget 0                            | --measure-budget: "
    "--rounds 3                                    | --rounds: not an option of agmm model"
    "--bind none                                   | --bind: not an option of agmm model"
    "--copy-gbs -1                                 | --copy-gbs: "
    "--tile-us -1                                  | --tile-us: "
    "--weight-dtype int3                           | --weight-dtype: one of same, int8, int4"
    "--weight-dtype int4 --group-size 48           | --group-size: "
    "--zero-point                                  | --zero-point: only with --weight-dtype int8 or int4"
    "--weight-dtype int4 --dtype int8              | --weight-dtype int4: with --dtype fp32, bf16 or fp16"
    "--weight-dtype int4 --dram-gbs -1             | --dram-gbs: "
)
for row in "${rows[@]}"; do
    args=${row%%|*}
    want=${row#*| }
    # shellcheck disable=SC2086 # the row's words are the arguments
    timeout 30 "$AGMM" model $args --gemm-gflops 10 >"$TMP/bout" 2>"$TMP/berr"
    rc=$?
    # --gemm-gflops is added so a refused row never measures; rows about
    # the rates themselves give theirs before it (first error wins).
    n=$(wc -l <"$TMP/berr")
    check '[ $rc -eq 2 ] && [ "$n" -eq 1 ] && [ ! -s "$TMP/bout" ] && grep -qF -- "agmm: $want" "$TMP/berr"' \
          "model $args: exit $rc, $n line(s): $(cat "$TMP/berr")"
done
# Model-only options are refused elsewhere.
"$AGMM" run --hosts 2 >/dev/null 2>"$TMP/berr"
rc=$?
check '[ $rc -eq 2 ] && grep -qF "agmm: --hosts: only for agmm model" "$TMP/berr"' "run --hosts: $(cat "$TMP/berr")"
"$AGMM" bench --transport link >/dev/null 2>"$TMP/berr"
rc=$?
check '[ $rc -eq 2 ] && grep -qF "agmm: --transport: one of shm, mpi" "$TMP/berr"' "bench --transport link: $(cat "$TMP/berr")"
"$AGMM" model --help >"$TMP/help" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ] && grep -q "^usage: agmm model" "$TMP/help" && [ ! -s "$TMP/err" ]' "model --help"

echo "model_cli: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
