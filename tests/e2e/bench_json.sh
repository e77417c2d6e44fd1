#!/usr/bin/env bash
# agmm bench --json: one JSON object with the documented keys, positive
# medians, and a ratio equal to fused/baseline medians; the measured peak
# and each mode's fraction of it (positive, below a loose 1.5, and equal to
# the mode's TFLOP/s per GEMM core over the peak). The peak is the GEMM
# path's that ran (peak_path = gemm.path, its instruction by the rule of
# src/gemm/peak.h: TDPBF16PS for a native bf16 kernel naming AMX, the fp32
# FMA for the f32 path), and "peaks" has one per candidate the plan
# measured (native, then f32), else the one that ran. int8 adds the VNNI
# peak (peak_vnni_gops_per_core: VPDPBUSD zmm, positive where the CPU has
# avx512_vnni, 0 for other dtypes) and each mode's fraction_of_vnni_peak
# (null where that peak is 0).
# The DRAM read rate of one core (dram_read_gbps_per_core, positive; the
# probe's loop, buffer and the LLC in dram_probe), the weight bytes a rank
# holds (weight_bytes_per_rank: K (split-k ops: K / ranks) x the weights'
# N x the dtype's size), and each mode's weight_gbps (those bytes per
# median round, the mean one with rows per round) and fraction_of_dram
# (weight_gbps / the DRAM rate).
# weight_sets (--weight-sets) and weights_fit_llc echoed.
# With --n N,N,... and --m-local-per-round: the separate and exact modes.
# usage: bench_json.sh AGMM [--op OP [more bench options]]: "op" is checked
# (and --weight-sets L anywhere among the options).
set -u
agmm=$1
shift
op=ag-gemm
[ "${1:-}" = --op ] && op=$2
sets=1
args=" $* "
case $args in *" --weight-sets "*) sets=${args#* --weight-sets }; sets=${sets%% *} ;; esac
out=$("$agmm" bench --ranks 2 --m-local 96 --k 64 --n 80 --tile-m 16 \
      --tile-n 32 --rounds 5 --warmup 1 --json "$@")
rc=$?
[ $rc -eq 0 ] || { echo "bench exited $rc"; echo "bench_json: 0 passed, 1 failed"; exit 1; }
python3 - "$out" "$op" "$sets" <<'PY'
import json, sys
ok = fail = 0
def check(cond, what):
    global ok, fail
    if cond: ok += 1
    else:
        fail += 1; print("FAILED:", what)
d = json.loads(sys.argv[1])
for mode in ("fused", "baseline"):
    m = d["modes"][mode]
    for key in ("min_us", "median_us", "mean_us", "max_us", "stdev_us", "tflops"):
        check(key in m, f"modes.{mode}.{key}")
    check(0 < m["min_us"] <= m["median_us"] <= m["max_us"], f"{mode} order")
r = d["modes"]["fused"]["median_us"] / d["modes"]["baseline"]["median_us"]
check(abs(d["ratio_fused_over_baseline"] - r) < 1e-3 * max(1, r), "ratio")
check(d["blas"]["kernel"] != "", "kernel named")
peak = d.get("peak_gflops_per_core")
check(isinstance(peak, (int, float)) and peak > 0, f"peak_gflops_per_core {peak}")
check(isinstance(d.get("peak_instr"), str) and d["peak_instr"] != "", "peak_instr named")
g = d["gemm"]
import os  # the oneDNN CMake configured (tests/CMakeLists.txt), when set
want_ver = os.environ.get("AGMM_TEST_ONEDNN_VERSION", "")
if want_ver and g["engine"] == "onednn":
    check(g["version"] == want_ver, f"gemm.version {g['version']} vs configured oneDNN {want_ver}")
check(g.get("epilogue_isa") in ("x86-64-v4", "x86-64-v3", "x86-64"), f"gemm.epilogue_isa {g.get('epilogue_isa')}")
check(d.get("peak_path") == g["path"], f"peak_path {d.get('peak_path')} vs gemm.path {g['path']}")
peaks = d.get("peaks") or []
want_paths = [c["path"] for c in g["candidates"]] if len(g["candidates"]) == 2 else [g["path"]]
check([p.get("path") for p in peaks] == want_paths, f"peaks {peaks} vs paths {want_paths}")
for p in peaks:
    check(isinstance(p.get("gflops"), (int, float)) and p["gflops"] > 0 and p.get("instr"),
          f"peaks entry {p}")
    if p.get("path") == d.get("peak_path"):
        check(p["gflops"] == peak and p["instr"] == d["peak_instr"], f"ran peak {p} vs {peak}")
    if p.get("path") == "f32" or d["dtype"] == "fp32":
        check(p.get("instr", "").startswith("VFMADD231PS") or p.get("instr") == "scalar",
              f"f32 path peak instr {p.get('instr')}")
    impl = [c["impl"] for c in g["candidates"] if c["path"] == p.get("path")] or [g["impl"]]
    if d["dtype"] == "bf16" and p.get("path") == "native" and "amx" in impl[0]:
        check(p.get("instr") == "TDPBF16PS", f"AMX kernel {impl[0]}: peak instr {p.get('instr')}")
for mode in ("fused", "baseline"):
    m = d["modes"][mode]
    f = m.get("fraction_of_peak")
    check(isinstance(f, (int, float)) and 0 < f < 1.5, f"{mode} fraction_of_peak {f}")
    if isinstance(f, (int, float)) and peak:
        want = m["tflops"] * 1e3 / d["gemm_cores"] / peak  # tflops has 4 decimals
        check(abs(f - want) <= 0.02 * want + 5e-5 * 1e3 / peak,
              f"{mode} fraction_of_peak {f} vs tflops {m['tflops']} / peak {peak}")
vnni = d.get("peak_vnni_gops_per_core")
check(isinstance(vnni, (int, float)), f"peak_vnni_gops_per_core {vnni}")
has_vnni = "avx512_vnni" in open("/proc/cpuinfo").read().split()
if d["dtype"] != "int8":
    check(vnni == 0, f"{d['dtype']}: peak_vnni_gops_per_core {vnni} (want 0)")
elif has_vnni:
    check(isinstance(vnni, (int, float)) and vnni > 0, f"int8 peak_vnni_gops_per_core {vnni}")
for mode in ("fused", "baseline"):
    m = d["modes"][mode]
    check("fraction_of_vnni_peak" in m, f"modes.{mode}.fraction_of_vnni_peak")
    f = m.get("fraction_of_vnni_peak")
    if not (isinstance(vnni, (int, float)) and vnni > 0):
        check(f is None, f"{mode} fraction_of_vnni_peak {f} without a VNNI peak")
    else:
        want = m["tflops"] * 1e3 / d["gemm_cores"] / vnni
        check(isinstance(f, (int, float)) and abs(f - want) <= 0.02 * want + 5e-5 * 1e3 / vnni,
              f"{mode} fraction_of_vnni_peak {f} vs tflops {m['tflops']} / {vnni}")
dram = d.get("dram_read_gbps_per_core")
check(isinstance(dram, (int, float)) and dram > 0, f"dram_read_gbps_per_core {dram}")
dp = d.get("dram_probe") or {}
check(dp.get("isa") in ("zmm", "ymm", "scalar"), f"dram_probe.isa {dp.get('isa')}")
check(dp.get("bytes_mib", 0) >= 256 and dp.get("bytes_mib", 0) >= 4 * dp.get("llc_mib", -1),
      f"dram_probe {dp}")
split_k = d["op"] in ("gemm-rs", "gemm-ar")
size = {"fp32": 4, "fp16": 2, "bf16": 2, "int8": 1}[d["dtype"]]
k_rank = d["k"] / (d["ranks"] if split_k else 1)
n_sum = sum(d.get("n_list") or [d["n"]])
wb = k_rank * n_sum * size
if d.get("weight_dtype", "same") != "same":  # the plain layout's bytes
    g = d["group_size"] or k_rank
    wb = k_rank * n_sum * (0.5 if d["weight_dtype"] == "int4" else 1) + \
        -(-k_rank // g) * n_sum * (5 if d["zero_point"] else 4)
check(abs(d.get("weight_bytes_per_rank", -1) - wb) <= 1, f"weight_bytes_per_rank {d.get('weight_bytes_per_rank')} (want {wb})")
for mode in ("fused", "baseline"):
    m = d["modes"][mode]
    us = m["mean_us"] if "m_local_per_round" in d else m["median_us"]
    want = wb / us * 1e-3
    w = m.get("weight_gbps")
    check(isinstance(w, (int, float)) and abs(w - want) <= 1e-3 * want + 1e-6,
          f"{mode} weight_gbps {w} (want {want})")
    f = m.get("fraction_of_dram")
    check(isinstance(f, (int, float)) and isinstance(w, (int, float)) and
          abs(f - w / dram) <= 1e-3 * f + 1e-6, f"{mode} fraction_of_dram {f} vs {w} / {dram}")
# --weight-sets L (1 by default) echoed, and whether every set of both
# ranks fits the last-level cache together.
ws = int(sys.argv[3])
check(d.get("weight_sets") == ws, f"weight_sets {d.get('weight_sets')} (want {ws})")
fit = dp.get("llc_mib", 0) > 0 and wb * ws * d["ranks"] <= dp.get("llc_mib", 0) * 2**20
check(d.get("weights_fit_llc") is fit, f"weights_fit_llc {d.get('weights_fit_llc')} (want {fit})")
if "comm-only" in d["modes"]:
    m = d["modes"]["comm-only"]
    check(m.get("weight_gbps", 0) is None and m.get("fraction_of_dram", 0) is None,
          f"comm-only reads no weight: {m.get('weight_gbps')} {m.get('fraction_of_dram')}")
# Several weights (--n list) and rows per round: the comparison modes,
# their ratios (of medians; exact's rounds of no rows time 0 and are left
# out of the paired one) and the echoed lists.
if "n_list" in d:
    check("separate" in d["modes"], "modes.separate")
    r = d["modes"]["fused"]["median_us"] / d["modes"]["separate"]["median_us"]
    check(abs(d.get("ratio_fused_over_separate", -1) - r) < 1e-3 * max(1, r),
          "ratio_fused_over_separate")
    check(d["paired"].get("fused_over_separate", 0) > 0, "paired.fused_over_separate")
if "m_local_per_round" in d:
    check("exact" in d["modes"], "modes.exact")
    check(d.get("ratio_fused_over_exact", 0) > 0, "ratio_fused_over_exact")
    check(d["paired"].get("fused_over_exact", 0) > 0, "paired.fused_over_exact")
    # Rates over rounds of different sizes: the mean flops of the timed
    # rounds over the mean round (not the median round, which is one of the
    # sizes: that gave fractions of peak above 1).
    per = d["m_local_per_round"]
    rows = [sum(min(per[i % len(per)], m) for m in d["m_local"])
            for i in range(d["rounds"])]
    ncols = sum(d.get("n_list") or [d["n"]])
    for mode in ("fused", "baseline"):
        m = d["modes"][mode]
        want = 2 * (sum(rows) / len(rows)) * d["k"] * ncols / m["mean_us"] * 1e-6
        check(abs(m["tflops"] - want) <= 0.02 * want + 5e-5,
              f"{mode} tflops {m['tflops']} over rows per round (want {want:.4f})")
check(d["ranks"] == 2 and d["rounds"] == 5, "config echoed")
check(d.get("op") == sys.argv[2], f"op {d.get('op')} (want {sys.argv[2]})")
print(f"bench_json: {ok} passed, {fail} failed")
sys.exit(1 if fail else 0)
PY
