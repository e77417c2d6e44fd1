#!/usr/bin/env bash
# `agmm model` with a quantized weight and the weight-streaming floor
# (docs/model.md, "The weight-streaming floor"; docs/cli.md, "agmm model"):
#   - --weight-dtype int4 (--group-size, --zero-point) is taken: this host
#     measured on the wq engine (the header names it), a "dram floor:" line
#     printed; with --weight-sets 64 the host's weights outgrow any cache,
#     so the floor is the measured DRAM rate and --json's dram_floor says
#     the weight streams, machine.dram_gbs > 0, and both rounds are at
#     least the weight's bytes over that rate;
#   - rates given with --dram-gbs: the floor given, the round at least the
#     weight over it; without --dram-gbs: "dram floor: none (default)";
#   - bad values (--weight-dtype int3, --group-size 48, --zero-point without
#     a quantized weight, --dram-gbs -1, --weight-dtype with --dtype int8):
#     exit 2, one line on stderr naming the option, nothing on stdout.
#
# usage: tests/e2e/model_wq.sh AGMM_BINARY
set -u
if [ $# -ne 1 ] || [ ! -x "$1" ]; then
    echo "usage: $0 AGMM_BINARY (an executable agmm)" >&2
    exit 2
fi
AGMM=$1
TMP=$(mktemp -d "${TMPDIR:-/tmp}/model_wq.XXXXXX")
trap 'rm -rf "$TMP"' EXIT
pass=0 fail=0
check() { if eval "$1"; then pass=$((pass + 1)); else fail=$((fail + 1)); echo "FAIL: $2"; fi; }

# Measured, int4: a decode shape (2 MB of weight per rank), short budget.
WQ=(model --ranks 2 --m-local 1 --k 1024 --n 2048 --dtype bf16
    --weight-dtype int4 --group-size 64 --zero-point --measure-budget 0.3)
timeout 120 "$AGMM" "${WQ[@]}" >"$TMP/out" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ] && [ ! -s "$TMP/err" ]' "int4 measured: exit $rc: $(cat "$TMP/err")"
check 'grep -q "^gemm: wq, bf16 native .*weight int4, group 64, zero points" "$TMP/out"' \
      "the wq engine and the weight in the header: $(grep '^gemm' "$TMP/out")"
check 'grep -q "^dram floor: " "$TMP/out"' "a floor line: $(cat "$TMP/out")"
check 'grep -q "^dram floor: .*weight [0-9.e+]* MB per rank x 2 ranks" "$TMP/out"' \
      "the floor line names the weight: $(grep '^dram' "$TMP/out")"

# 64 sets of it per rank: 2 x 64 x 1.2 MB outgrow any cache: streams.
timeout 120 "$AGMM" "${WQ[@]}" --weight-sets 64 >"$TMP/sout" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "int4 --weight-sets 64: exit $rc: $(cat "$TMP/err")"
check 'grep -q "^dram floor: [0-9.e+]* GB/s (measured): weight .* x 64 sets > cache .*: streams from DRAM$" "$TMP/sout"' \
      "streams: $(grep '^dram' "$TMP/sout")"
timeout 120 "$AGMM" "${WQ[@]}" --weight-sets 64 --json >"$TMP/json" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "--json: exit $rc: $(cat "$TMP/err")"
check 'python3 - "$TMP/json" <<"PY"
import json, sys
d = json.load(open(sys.argv[1]))
p, f, m = d["problem"], d["dram_floor"], d["machine"]
assert p["weight_dtype"] == "int4" and p["group_size"] == 64, p
assert p["zero_point"] is True and p["gemm_engine"] == "wq", p
assert f["streams"] is True and f["weight_sets"] == 64, f
assert m["dram_gbs"] > 0 and f["dram_gbs"] == m["dram_gbs"], (m, f)
# int4 values (k n / 2) and a scale and zero point per group and column
assert 1024 * 2048 / 2 < f["weight_bytes_per_rank"] < 1024 * 2048, f
assert d["sources"]["dram_gbs"] == "measured", d["sources"]
floor_ms = f["weight_bytes_per_rank"] / (m["dram_gbs"] * 1e9) * 1e3
for s in ("fused", "baseline"):
    assert d[s]["time_ms"] >= floor_ms, (s, d[s]["time_ms"], floor_ms)
PY' "--json members: $(head -c 800 "$TMP/json")"

# Rates given: the floor given, or none.
GIVEN=(model --m-local 1 --k 4096 --n 11008 --dtype bf16 --weight-dtype int4
       --gemm-gflops 1000)
timeout 60 "$AGMM" "${GIVEN[@]}" --dram-gbs 20 --json >"$TMP/gjson" 2>"$TMP/err"
rc=$?
check '[ $rc -eq 0 ]' "given --dram-gbs: exit $rc: $(cat "$TMP/err")"
check 'python3 - "$TMP/gjson" <<"PY"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["machine"]["dram_gbs"] == 20 and d["sources"]["dram_gbs"] == "given", d
assert d["dram_floor"] is None, d["dram_floor"]
# 4096 x 11008 int4 with group 128: 25.4 MB at 20 GB/s, 1.27 ms
assert d["baseline"]["time_ms"] >= 1.26, d["baseline"]
PY' "given floor: $(head -c 600 "$TMP/gjson")"
timeout 60 "$AGMM" "${GIVEN[@]}" >"$TMP/nout" 2>"$TMP/err"
check 'grep -qx "dram floor: none (default)" "$TMP/nout"' \
      "no floor when nothing is measured: $(grep '^dram' "$TMP/nout")"

# Bad input (a quantized weight's options, --dram-gbs): model_cli.sh's
# table of refused rows.

echo "model_wq: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
