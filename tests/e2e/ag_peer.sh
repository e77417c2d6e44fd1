#!/usr/bin/env bash
# bench/ag_peer.c under mpirun, tiny shapes: each engine and dtype runs,
# its correctness check passes, and --json has the documented keys. The
# oneDNN engines are skipped (said so) when the build has none. No timing.
#
# usage: tests/e2e/ag_peer.sh AGMM_AG_PEER_BINARY
set -u
PEER=$(readlink -f "$1")
command -v mpirun >/dev/null || { echo "FAIL: mpirun not found (scripts/install-deps.sh)"; exit 1; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none # no CMA in containers
TMP=$(mktemp -d "${TMPDIR:-/tmp}/ag_peer.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0
fail=0
peer() { # NP ARGS...
    local np=$1
    shift
    timeout 60 mpirun --oversubscribe -np "$np" "$PEER" "$@" >"$TMP/out" 2>"$TMP/err" </dev/null
    rc=$?
}
bad() {
    fail=$((fail + 1))
    echo "FAIL: $*"
    sed 's/^/  | /' "$TMP/out" "$TMP/err" | head -20
}

for engine in onednn openblas; do
    for dtype in bf16 fp16 fp32; do
        peer 2 --engine $engine --dtype $dtype --m-local 9 --k 40 --n 24 --rounds 2 --warmup 1
        if [ $engine = onednn ] && [ $rc -eq 2 ] && grep -q "built without oneDNN" "$TMP/err"; then
            echo "skip: $engine (built without oneDNN)"
            break
        fi
        if [ $rc -eq 0 ] && grep -q "^check: .*: PASS$" "$TMP/out" &&
            grep -q "^round " "$TMP/out"; then
            pass=$((pass + 1))
        else
            bad "$engine $dtype (exit $rc)"
        fi
    done
done

# --engine onednn-f32 (bf16/fp16 converted to fp32 each round, one fp32
# matmul): checks pass, and --json names the engine and the conversion.
onednn=1
for dtype in bf16 fp16; do
    peer 2 --engine onednn-f32 --dtype $dtype --m-local 7 --k 33 --n 20 --rounds 2 --warmup 1 --json
    if [ $rc -eq 2 ] && grep -q "built without oneDNN" "$TMP/err"; then
        echo "skip: onednn-f32 (built without oneDNN)"
        onednn=0
        break
    fi
    if [ $rc -eq 0 ] && python3 - "$TMP/out" "$dtype" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
d = json.loads(lines[0])
assert d["engine"] == "onednn-f32" and d["dtype"] == sys.argv[2], d
assert d["what"].startswith("convert %s -> fp32 each round" % sys.argv[2]), d
assert "f32 x f32" in d["what"] and d["impl"], d
assert d["check"]["pass"] is True and d["m"] == 14, d
PY
    then pass=$((pass + 1)); else bad "onednn-f32 $dtype --json (exit $rc)"; fi
done
if [ $onednn -eq 1 ]; then # the text output says the same
    peer 2 --engine onednn-f32 --dtype fp16 --m-local 3 --k 8 --n 5 --rounds 1 --warmup 0
    if [ $rc -eq 0 ] && grep -q "^check: .*: PASS$" "$TMP/out" &&
        grep -q "^engine: onednn-f32 (oneDNN .*), convert fp16 -> fp32 each round" "$TMP/out"; then
        pass=$((pass + 1))
    else
        bad "onednn-f32 fp16 text (exit $rc)"
    fi
fi

# --engine onednn-int8 (W8A8: rows and weight quantized, one s8 matmul
# with per-column output scales, row scales after): its check (exact
# integer dot products) passes; --dtype int8 alone picks it.
for args in "--engine onednn-int8" "--dtype int8 --json"; do
    # shellcheck disable=SC2086
    peer 2 $args --m-local 9 --k 300 --n 24 --rounds 2 --warmup 1
    if [ $rc -eq 2 ] && grep -q "built without oneDNN" "$TMP/err"; then
        echo "skip: onednn-int8 (built without oneDNN)"
        break
    fi
    if [ $rc -eq 0 ] && { grep -q "^check: .*: PASS$" "$TMP/out" ||
        grep -q '"dtype":"int8","engine":"onednn-int8".*"pass":true' "$TMP/out"; }; then
        pass=$((pass + 1))
    else
        bad "onednn-int8 $args (exit $rc)"
    fi
done

# --json on 3 ranks: one object from rank 0 with the documented keys.
peer 3 --engine openblas --dtype fp16 --m-local 5 --k 17 --n 11 --rounds 3 --json
if [ $rc -eq 0 ] && python3 - "$TMP/out" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 1, lines
d = json.loads(lines[0])
for k in ("ranks", "m", "k", "n", "dtype", "engine", "library", "impl", "what",
          "round", "allgather", "gflops_per_core", "check"):
    assert k in d, k
assert d["ranks"] == 3 and d["m"] == 15 and d["check"]["pass"] is True
r = d["round"]
assert 0 < r["min_us"] <= r["median_us"] <= r["max_us"], r
assert d["gflops_per_core"] > 0
PY
then pass=$((pass + 1)); else bad "--json on 3 ranks (exit $rc)"; fi

# --op gemm-ar (GEMM + MPI_Allreduce): its check sums every rank's part of
# K (so a missing all-reduce fails it), on 2 and 3 ranks (K not a multiple
# of 3), each engine built; --json names the op and the all-reduce.
for engine in openblas onednn; do
    for np in 2 3; do
        peer $np --op gemm-ar --engine $engine --dtype bf16 --m-local 6 --k 41 --n 13 --rounds 2 --warmup 1 --json
        if [ $engine = onednn ] && [ $rc -eq 2 ] && grep -q "built without oneDNN" "$TMP/err"; then
            echo "skip: gemm-ar onednn (built without oneDNN)"
            break
        fi
        if [ $rc -eq 0 ] && python3 - "$TMP/out" "$np" <<'PY'
import json, sys
d = json.loads(open(sys.argv[1]).read())
assert d["op"] == "gemm-ar" and d["ranks"] == int(sys.argv[2]), d
assert d["m"] == 6 * d["ranks"] and "allreduce" in d, d
assert d["check"]["pass"] is True, d
PY
        then pass=$((pass + 1)); else bad "gemm-ar $engine on $np ranks (exit $rc)"; fi
    done
done

# Bad usage: exit 2, one line (int8 is the onednn-int8 engine's alone).
for args in "--dtype int8 --engine openblas" "--dtype int4" "--op ar" \
    "--op gemm-ar --k 1"; do
    # shellcheck disable=SC2086
    peer 2 $args
    if [ $rc -eq 2 ] && [ "$(grep -c agmm_ag_peer "$TMP/err")" -eq 1 ]; then
        pass=$((pass + 1))
    else
        bad "$args: want exit 2 and one line (exit $rc)"
    fi
done

echo "ag_peer: $pass passed, $fail failed"
[ $fail -eq 0 ]
