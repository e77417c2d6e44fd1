/* `agmm bench`: the physical peak of the GEMM path that ran, and of the
 * other candidate path when the plan measured two; for int8 also the VNNI
 * peak as a second reference (bench_peak.c). */
#ifndef AGMM_TOOL_BENCH_PEAK_H
#define AGMM_TOOL_BENCH_PEAK_H

#include "tool.h"

/* One path's peak: GFLOP/s of one core with its instruction. */
typedef struct agmm_bench_peak_one {
    agmm_gemm_path_t path;
    double gflops;
    const char *instr;
} agmm_bench_peak_one_t;

/* Measured on rank 0 (gflops 0 elsewhere). */
typedef struct agmm_bench_peak {
    agmm_gemm_path_t path; /* the path that ran (NATIVE or F32) */
    double gflops;         /* its peak: what of_peak divides by */
    const char *instr;
    /* The candidates' peaks in the plan's order (native, then f32) when
     * it measured two, else the path that ran alone. */
    int n;
    agmm_bench_peak_one_t each[2];
    /* int8 only: VPDPBUSD zmm's GOP/s, the reference the int8 targets are
     * stated against whatever kernel ran (AMX here); 0 for another dtype
     * or a CPU without VNNI. */
    double vnni_gops;
    /* One core's DRAM read rate (src/gemm/dram.h), GB/s: what a round's
     * weight bytes are set against (fraction_of_dram). */
    double dram_gbps;
    const char *dram_isa;           /* the read loop: "zmm", "ymm", "scalar" */
    double dram_probe_mib, llc_mib; /* the buffer it read; the LLC */
    int llc_assumed; /* 1: the OS lists no cache, llc_mib is assumed
                        (agmm_dram_cache_bytes) */
} agmm_bench_peak_t;

/* Collective: rank 0 times the peaks (src/gemm/peak.h) between two
 * barriers. 0, or 1 for a failed barrier. */
int agmm_bench_peak_measure(agmm_tool_rank_t *t, agmm_bench_peak_t *pk);
/* The text header line ("peak: ..."), with its newline. */
void agmm_bench_peak_text(const agmm_bench_peak_t *pk, agmm_dtype_t dtype);
/* The JSON members ,"peak_gflops_per_core",... ,"peaks":[...],
 * "peak_vnni_gops_per_core", "dram_read_gbps_per_core", "dram_probe". */
void agmm_bench_peak_json(const agmm_bench_peak_t *pk);

#endif
