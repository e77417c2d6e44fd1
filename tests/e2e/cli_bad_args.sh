#!/usr/bin/env bash
# Bad command lines for the agmm tool: every row must exit 2 with exactly one
# line on stderr that contains the expected text (the option it names), and
# nothing on stdout. A few good rows (help, version) must exit 0 with output.
# Afterwards no agmm process and no /dev/shm segment of its runs may be
# left (tests/e2e/shm_left.sh).
#
# usage: tests/e2e/cli_bad_args.sh AGMM_BINARY
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
# The cores this process may use (nproc follows the CPU affinity, as agmm does).
ONLINE=$(nproc 2>/dev/null || getconf _NPROCESSORS_ONLN)
TMP=$(mktemp -d "${TMPDIR:-/tmp}/cli_bad_args.XXXXXX")
trap 'rm -rf "$TMP"' EXIT

pass=0
fail=0

# Each row: "ARGS | EXPECTED STDERR SUBSTRING". ARGS is split like a shell
# command line (quotes allowed); the substring is matched literally.
rows=(
    # commands and option syntax
    "foo                                  | unknown command 'foo'"
    "--ranks 2                            | unknown command '--ranks'"
    "run --foo                            | unknown option '--foo'"
    "bench -x                             | unknown option '-x'"
    "run --ran 1                          | unknown option '--ran'"
    "run --k                              | --k: missing value"
    "bench --json --m-local               | --m-local: missing value"
    "run extra                            | unexpected argument 'extra'"
    "run --json=1                         | --json: takes no value"
    # --ranks
    "run --ranks two                      | --ranks:"
    "run --ranks 0                        | --ranks:"
    "run --ranks -1                       | --ranks:"
    "run --ranks 1025                     | --ranks:"
    "run --ranks 99999999999999999999     | --ranks: out of range"
    "run --ranks ' 2'                     | --ranks:"
    # --m-local
    "run --m-local abc                    | --m-local:"
    "run --m-local -1                     | --m-local:"
    "run --m-local 12x                    | --m-local:"
    "run --m-local 1,,2                   | --m-local: empty value"
    "run --m-local 1,                     | --m-local: empty value"
    "run --m-local ''                     | --m-local:"
    "run --ranks 2 --m-local 1,2,3        | --m-local: 3 values given but --ranks is 2"
    "bench --ranks 4 --m-local 1,2        | --m-local: 2 values given but --ranks is 4"
    "run --m-local 0                      | --m-local: all shards are empty"
    "run --ranks 2 --m-local 0,0          | --m-local: all shards are empty"
    "run --m-local 99999999999999999999   | --m-local: out of range"
    # --k / --n / tiles
    "run --k 0                            | --k:"
    "run --k 12x                          | --k:"
    "run --k 99999999999999999999         | --k: out of range"
    "run --n -5                           | --n:"
    "run --n ''                           | --n:"
    "run --tile-m 0                       | --tile-m:"
    "run --tile-n 1.5                     | --tile-n:"
    "run --k 2147483648                   | --k: out of range"
    "run --n 4000000000                   | --n: out of range"
    # several weights, rows per round
    "run --n 64,0                         | --n: each value an integer from 1"
    "run --n 8,4000000000                 | --n: out of range"
    "run --n 1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17 | --n: at most 16 weights"
    "run --op gemm-rs --n 8,8             | --n: several weights (a list) only with --op ag-gemm"
    "run --m-local 10 --m-local-per-round 4,11 | --m-local-per-round: value 1 is 11, more than the largest --m-local 10"
    "run --m-local-per-round 5,,6         | --m-local-per-round: empty value"
    "run --m-local-per-round -1           | --m-local-per-round:"
    "run --op gemm-ar --n 8,8             | --n: several weights (a list) only with --op ag-gemm; gemm-ar takes one N"
    "run --ranks 2 --m-local 1073741824   | --m-local: the shards add up to 2147483648 rows"
    "run --m-local 2147483647 --k 2147483647 --n 1 --ranks 1 | --m-local/--k/--n: sizes overflow"
    "run --m-local 4611686018427387904,4611686018427387904 | --m-local/--k/--n: sizes overflow"
    # enums
    "run --dtype fp64                     | --dtype: one of fp16, bf16, fp32"
    "run --dtype FP16                     | --dtype:"
    # the epilogue
    "run --activation gelu                | --activation: one of none, relu, gelu-tanh, gelu-erf, silu, silu-mul, gelu-tanh-mul (got 'gelu')"
    "run --activation silu-mul --n 33     | --n: 33 with --activation silu-mul (allowed: even"
    "run --op gemm-rs --activation silu-mul | --activation silu-mul: only with --op ag-gemm"
    "run --op gemm-ar --activation gelu-tanh-mul | --activation gelu-tanh-mul: only with --op ag-gemm"
    "bench --activation                   | --activation: missing value"
    "run --out-dtype int8                 | --out-dtype: one of fp32, bf16, fp16 (got 'int8')"
    "run --out-dtype FP32                 | --out-dtype: one of fp32, bf16, fp16"
    "run --bias=1                         | --bias: takes no value"
    "run --gemm-engine mkl                | --gemm-engine: one of onednn, openblas, wq, auto (got 'mkl')"
    "bench --gemm-engine ''               | --gemm-engine: one of onednn, openblas, wq, auto"
    "bench --weights both                 | --weights: one of shared, per-rank"
    "run --gemm-path fp32                 | --gemm-path: one of auto, native, f32 (got 'fp32')"
    # int8 (W8A8): the scale layouts only with --dtype int8, int8 only on oneDNN
    # quantized weights (--weight-dtype int8|int4)
    "run --weight-dtype int2              | --weight-dtype: one of same, int8, int4 (got 'int2')"
    "run --weight-dtype int4 --group-size 48 | --group-size: one of 128, 64, 32, 0 (got '48')"
    "run --group-size 32                  | --group-size: only with --weight-dtype int8 or int4"
    "run --zero-point                     | --zero-point: only with --weight-dtype int8 or int4"
    "run --a-quant int8                   | --a-quant int8: only with --weight-dtype int8 or int4"
    "run --weight-dtype int4 --a-quant int4 | --a-quant: one of none, int8 (got 'int4')"
    "run --weight-dtype int4 --dtype int8 | --weight-dtype int4: with --dtype fp32, bf16 or fp16"
    "run --weight-dtype int8 --gemm-engine openblas | --gemm-engine openblas: a quantized weight runs on agmm's wq kernels"
    "run --weight-dtype int4 --op gemm-rs --ranks 2 --k 1000 --group-size 32 --k-local 40,960 | --group-size 32: rank 0's k part is 40"
    "run --a-scale tensor                 | --a-scale: only with --dtype int8 (int8 A's scales: row or tensor; --dtype is fp16)"
    "run --dtype fp16 --a-scale row       | --a-scale: only with --dtype int8"
    "bench --dtype bf16 --w-scale tensor  | --w-scale: only with --dtype int8 (int8 W's scales: col or tensor; --dtype is bf16)"
    "run --a-scale bogus                  | --a-scale: one of row, tensor (got 'bogus')"
    "run --dtype int8 --a-scale bogus     | --a-scale: one of row, tensor (got 'bogus')"
    "run --dtype int8 --w-scale row       | --w-scale: one of col, tensor (got 'row')"
    "run --dtype int8 --a-scale col       | --a-scale: one of row, tensor (got 'col')"
    "run --dtype int8 --gemm-engine openblas | --dtype int8: needs the onednn GEMM engine (openblas has no int8 GEMM; drop --gemm-engine openblas)"
    "bench --op gemm-rs --dtype int8 --gemm-engine openblas | --dtype int8: needs the onednn GEMM engine"
    "run --dtype int8 --k 65537           | --k: 65537 with --dtype int8 (allowed 1..65536"
    "run --gemm-path native --gemm-engine openblas --dtype bf16 | --gemm-path native: the openblas engine has no native bf16 kernel"
    # cores
    "run --comm-cores -1                  | --comm-cores:"
    "run --comm-cores x                   | --comm-cores:"
    "run --gemm-cores 0                   | --gemm-cores:"
    "run --gemm-cores 99999999999999999999 | --gemm-cores: out of range"
    # too many threads: bench refuses (run only warns: tests/e2e/tool_cores.sh)
    "bench --ranks 2 --comm-cores $ONLINE --gemm-cores 1 | --comm-cores/--gemm-cores:"
    "bench --ranks 2 --comm-cores 0 --gemm-cores $ONLINE | --comm-cores/--gemm-cores:"
    # run control
    "run --timeout 0                      | --timeout:"
    "run --timeout -1                     | --timeout:"
    "run --timeout nan                    | --timeout:"
    "run --timeout inf                    | --timeout:"
    "run --timeout 1e999                  | --timeout:"
    "run --timeout 86401                  | --timeout:"
    "run --timeout 5s                     | --timeout:"
    "bench --rounds 0                     | --rounds:"
    "bench --rounds many                  | --rounds:"
    "bench --warmup -1                    | --warmup:"
    "run --seed -1                        | --seed:"
    "run --seed 18446744073709551616      | --seed: out of range"
    "run --seed 0x10                      | --seed:"
    # trace outputs: checked before any rank starts
    "run --trace ''                       | --trace: give a file name"
    "run --trace /nonexistent-agmm-dir/t.json | --trace: cannot write"
    "bench --trace-svg /                  | --trace-svg: '/' is a directory"
    "run --trace t.json --trace-svg t.json | --trace/--trace-svg: give two different files"
    # transport
    "run --transport tcp                  | --transport: one of shm, mpi"
    "run --transport                      | --transport: missing value"
    # --op and --k-local (gemm-rs)
    "run --op rs                          | --op: one of ag-gemm, gemm-rs, gemm-ar (got 'rs')"
    "bench --op ''                        | --op: one of ag-gemm, gemm-rs, gemm-ar"
    "run --op gemm-ar --k 4 --k-local 1,2 | --k-local: the values add up to 3 but --k is 4"
    "run --k-local 1,1                    | --k-local: only with --op gemm-rs"
    "run --op gemm-rs --k 4 --k-local 1,2 | --k-local: the values add up to 3 but --k is 4"
    "run --op gemm-rs --k 4 --k-local 4   | --k-local: 1 value given but --ranks is 2"
    "run --op gemm-rs --k 4 --k-local 5,0 | --k-local: value 0 is 5, more than --k 4"
    "run --op gemm-rs --k-local 1,-1      | --k-local: out of range; give each value an integer"
    "run --op gemm-rs --k-local 1,,3      | --k-local: empty value"
    # schedule, bench modes, link emulator
    "run --schedule fast                  | --schedule: one of fused, baseline, auto"
    "bench --schedule ''                  | --schedule: one of fused, baseline, auto"
    "run --schedule                       | --schedule: missing value"
    "bench --mode everything              | --mode: a comma-separated list of all, fused, baseline, auto, gemm-only, comm-only"
    "bench --mode fused,                  | --mode: a comma-separated list"
    "bench --mode ,fused                  | --mode: a comma-separated list"
    "run --mode fused                     | --mode: only for agmm bench"
    "bench --mode fused --schedule baseline | --schedule: conflicts with --mode"
    "run --link-gbps 0                    | --link-gbps: out of range"
    "run --link-gbps -1                   | --link-gbps:"
    "run --link-gbps fast                 | --link-gbps:"
    "run --link-gbps inf                  | --link-gbps:"
    "run --link-gbps 10001                | --link-gbps: out of range"
    "run --link-gbps 1 --link-latency-us -1 | --link-latency-us: out of range"
    "run --link-gbps 1 --link-latency-us 20us | --link-latency-us:"
    "run --link-latency-us 20             | --link-latency-us: needs --link-gbps"
    "run --transport mpi --link-gbps 1    | --link-gbps: the link emulator is part of the shared-memory"
    "bench --transport mpi --mode fused,gemm-only | --mode: gemm-only needs the shared-memory"
    # each kind of the option table (tools/agmm/cli/options.c) once more
    "run --help=1                         | --help: takes no value (got '--help=1')"
    "run --oversubscribe=1                | --oversubscribe: takes no value"
    "run --dtype=                         | --dtype: one of fp16, bf16, fp32, int8 (got '')"
    "bench --weights=                     | --weights: one of shared, per-rank (got '')"
    "run --transport=                     | --transport: one of shm, mpi (got '')"
    "bench --mode fused,bogus             | --mode: a comma-separated list of all, fused, baseline, auto, gemm-only, comm-only (got 'fused,bogus')"
    "run --mode=                          | --mode: only for agmm bench (agmm run takes --schedule)"
    "bench --schedule auto --mode fused   | --schedule: conflicts with --mode"
    "run --tile-m 9223372036854775808     | --tile-m: out of range; give an integer from 1 to 9223372036854775807"
    "run --tile-n 0                       | --tile-n: out of range; give an integer from 1 to"
    "run --rounds 2147483648              | --rounds: out of range; give an integer from 1 to 2147483647"
    "run --warmup 2147483648              | --warmup: out of range; give an integer from 0 to 2147483647"
    "run --comm-cores 1025                | --comm-cores: out of range; give an integer from 0 to 1024"
    "run --gemm-cores 2000 --oversubscribe | --gemm-cores: out of range; give an integer from 1 to 1024"
    "run --seed +-1                       | --seed: give a decimal integer from 0 to 18446744073709551615"
    "run --timeout 86400.5                | --timeout: out of range; give a number of seconds > 0 and <= 86400"
    "run --link-gbps 1 --link-latency-us 1000001 | --link-latency-us: out of range; give a number of microseconds >= 0"
    "run --trace-s x.svg                  | unknown option '--trace-s' (did you mean --trace-svg?"
    "run -vx                              | unknown option '-x'"
    "run -- extra                         | unexpected argument 'extra'"
    # memory: rejected by the caller's check (agmm_cli_check_memory)
    "run --m-local 3000000 --k 200000     | --m-local/--k/--n: the plan needs"
    # bench --weight-sets L: a plan per set, within memory
    "bench --weight-sets 0                | --weight-sets: out of range; give an integer from 1 to 64 (got '0')"
    "bench --weight-sets 65               | --weight-sets: out of range; give an integer from 1 to 64"
    "bench --weight-sets x                | --weight-sets:"
    "run --weight-sets 2                  | --weight-sets: only for agmm bench"
    "bench --weight-sets 2 --n 8,8        | --weight-sets: more than 1 only with one weight (--n N), fixed rows"
    "bench --weight-sets 2 --m-local-per-round 4,8 | --weight-sets: more than 1 only with one weight"
    "bench --weight-sets 2 --trace /tmp/x.json | --weight-sets: more than 1 only with one weight"
    "bench --weight-sets 64 --m-local 8 --k 200000 --n 200000 | --m-local/--k/--n/--weight-sets: the plans need"
)
# The default core split cannot fit when there are more ranks than cores
# (bench refuses; run warns and goes on).
if [ $((ONLINE + 1)) -le 1024 ]; then
    rows+=("bench --ranks $((ONLINE + 1)) --m-local 1 | --comm-cores/--gemm-cores:")
fi
# A build without oneDNN refuses the engine by name.
if ! "$AGMM" --version | grep -q '^gemm engines:.*onednn'; then
    rows+=("run --gemm-engine onednn | --gemm-engine: onednn is not built in")
    rows+=("run --dtype int8 | --dtype int8: needs the onednn GEMM engine (openblas has no int8 GEMM; this agmm has openblas only")
fi

run_row() { # expected_rc args... ; fills $TMP/out, $TMP/err, $rc
    timeout 60 "$AGMM" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
}

for row in "${rows[@]}"; do
    args=${row%%|*}
    want=${row#*|}
    args=${args%"${args##*[![:space:]]}"}
    want=${want#"${want%%[![:space:]]*}"}
    want=${want%"${want##*[![:space:]]}"}
    eval "set -- $args"
    run_row "$@"
    lines=$(wc -l <"$TMP/err")
    why=""
    if [ "$rc" -ne 2 ]; then
        why="exit $rc, want 2"
    elif ! grep -qF -- "$want" "$TMP/err" &&
        # a build without MPI refuses --transport mpi before anything else
        ! { [[ "$args" == *"--transport mpi"* ]] &&
            grep -qF "built without MPI" "$TMP/err"; }; then
        why="stderr lacks '$want'"
    elif [ "$lines" -ne 1 ]; then
        why="stderr has $lines lines, want 1"
    elif ! head -n1 "$TMP/err" | grep -q '^agmm: '; then
        why="stderr does not start with 'agmm: '"
    elif [ -s "$TMP/out" ]; then
        why="stdout not empty"
    fi
    if [ -n "$why" ]; then
        fail=$((fail + 1))
        echo "FAIL: agmm $args: $why; stderr: $(head -c 300 "$TMP/err" | tr '\n' '~')"
    else
        pass=$((pass + 1))
    fi
done

# Good rows: parse only, print to stdout, exit 0.
good=(
    "--help"
    "-h"
    "--version"
    "run --help"
    "bench --help"
    "run --ranks 4 --help"
)
for args in "${good[@]}"; do
    eval "set -- $args"
    run_row "$@"
    why=""
    if [ "$rc" -ne 0 ]; then
        why="exit $rc, want 0"
    elif [ ! -s "$TMP/out" ]; then
        why="stdout empty"
    elif [ -s "$TMP/err" ]; then
        why="stderr not empty"
    fi
    if [ -n "$why" ]; then
        fail=$((fail + 1))
        echo "FAIL: agmm $args: $why"
    else
        pass=$((pass + 1))
    fi
done
# --version names the version; run --help resolves the core defaults.
if "$AGMM" --version 2>/dev/null | head -n1 | grep -qE '^agmm [0-9]+\.[0-9]+\.[0-9]+$'; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: agmm --version: first line is not 'agmm X.Y.Z'"
fi
if "$AGMM" run --help 2>/dev/null | grep -q 'default here:'; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: agmm run --help: no resolved core default ('default here:')"
fi

# A list of shards implies --ranks (README's --m-local 1000,777,1).
if timeout 60 "$AGMM" run --m-local 5,3,1 --k 8 --n 8 --oversubscribe >"$TMP/out" 2>"$TMP/err" \
        </dev/null && grep -q "^agmm run: 3 ranks " "$TMP/out" && grep -q "PASS" "$TMP/out"; then
    pass=$((pass + 1))
else
    fail=$((fail + 1)); echo "FAIL: run --m-local 5,3,1 does not run 3 ranks: $(head -c 300 "$TMP/out" "$TMP/err")"
fi

# Nothing left behind.
left_pids=$(tagged_pids)
if [ -n "$left_pids" ]; then
    fail=$((fail + 1)); echo "FAIL: agmm processes left: $left_pids"
else
    pass=$((pass + 1))
fi
left=$(shm_left)
if [ -n "$left" ]; then
    fail=$((fail + 1)); echo "FAIL: shared-memory objects left: $(echo "$left" | tr '\n' ' ')"
else
    pass=$((pass + 1))
fi

echo "cli_bad_args: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
