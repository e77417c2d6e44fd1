/* `agmm bench`'s peaks (bench_peak.h). The peak is that of the kernel
 * that ran: agmm_peak_gflops_for() of the plan's GEMM path and the
 * implementation string its engine reports (the rule is in
 * src/gemm/peak.h: TDPBF16PS for an AMX bf16 kernel, VDPBF16PS for
 * another native bf16 one, the best fp32 FMA for the f32 path). When the
 * plan measured both paths, the other one's peak is timed too, so a reader
 * can set the candidates' rates (the gemm JSON's candidates) against their
 * own ceilings. An int8 plan also times VPDPBUSD zmm (where the CPU has
 * VNNI) whatever kernel ran: the int8 targets are stated against the VNNI
 * peak, and an AMX kernel's own peak (TDPBSSD) is ~15x higher. Each
 * instruction is timed once per process (peak.c caches), about 0.1 s
 * each. The DRAM read rate (src/gemm/dram.h) is measured beside them,
 * about 0.2 s and 256 MiB (4x the LLC if larger) while it runs. */
#include <stdio.h>
#include <string.h>

#include "bench_peak.h"
#include "gemm/dram.h"
#include "gemm/peak.h"

/* Rank 0 times the probes between two barriers: the other ranks wait in
 * the barrier (on shared memory they sleep in futex after 20 us; MPI's
 * barrier polls), and the probe counts only its own CPU time, so ranks
 * sharing its core do not lower the peak. */
int agmm_bench_peak_measure(agmm_tool_rank_t *t, agmm_bench_peak_t *pk)
{
    memset(pk, 0, sizeof *pk);
    agmm_gemm_info_t g;
    if (agmm_plan_gemm_info(t->plan, &g) != AGMM_OK) {
        /* Not expected for a live plan; the dtype's best then. */
        memset(&g, 0, sizeof g);
        g.path = AGMM_GEMM_PATH_AUTO;
    }
    pk->path = g.path;
    if (agmm_world_barrier(t->world, 0) != AGMM_OK) return 1;
    if (t->rank == 0) {
        int two = g.candidates == 2;
        pk->n = two ? 2 : 1;
        for (int i = 0; i < pk->n; i++) {
            agmm_bench_peak_one_t *o = &pk->each[i];
            o->path = two ? g.candidate[i].path : g.path;
            /* The path that ran: the plan's own impl string. */
            const char *impl = o->path == g.path ? g.impl : g.candidate[i].impl;
            o->gflops =
                agmm_peak_gflops_for(t->cli->dtype, o->path, impl, &o->instr);
            if (o->path == g.path) {
                pk->gflops = o->gflops;
                pk->instr = o->instr;
            }
        }
        if (t->cli->dtype == AGMM_DTYPE_INT8)
            pk->vnni_gops = agmm_peak_kernel_gflops(AGMM_PEAK_K_VNNI_ZMM);
        pk->dram_gbps = agmm_dram_read_gbps();
        pk->dram_isa = agmm_dram_probe_isa();
        pk->dram_probe_mib = (double)agmm_dram_probe_bytes() / (1 << 20);
        pk->llc_mib =
            (double)agmm_dram_cache_bytes(&pk->llc_assumed) / (1 << 20);
    }
    return agmm_world_barrier(t->world, 0) == AGMM_OK ? 0 : 1;
}

void agmm_bench_peak_text(const agmm_bench_peak_t *pk, agmm_dtype_t dtype)
{
    /* "bf16 native", "bf16 via fp32", "fp32" (fp32 has one path) */
    printf("peak: %.1f %s per core (%s, %s%s: the path that ran)", pk->gflops,
           dtype == AGMM_DTYPE_INT8 ? "GOP/s" : "GFLOP/s",
           pk->instr ? pk->instr : "none", agmm_dtype_name(dtype),
           dtype == AGMM_DTYPE_FP32            ? ""
           : pk->path == AGMM_GEMM_PATH_NATIVE ? " native"
           : pk->path == AGMM_GEMM_PATH_F32    ? " via fp32"
                                               : "");
    for (int i = 0; i < pk->n; i++)
        if (pk->each[i].path != pk->path)
            printf("; other candidate: %s %.1f GFLOP/s (%s)",
                   agmm_gemm_path_name(pk->each[i].path), pk->each[i].gflops,
                   pk->each[i].instr ? pk->each[i].instr : "none");
    if (dtype == AGMM_DTYPE_INT8 && pk->vnni_gops > 0)
        printf("; %s %.1f GOP/s", agmm_peak_kernel_instr(AGMM_PEAK_K_VNNI_ZMM),
               pk->vnni_gops);
    printf("; measured on rank 0; of_peak = GEMM rate per GEMM core / peak\n");
    printf("dram: %.1f GB/s read per core (a %s read loop over %.0f MiB, the "
           "largest cache %.0f MiB%s; measured on rank 0); weight GB/s = "
           "weight bytes a rank holds / round, of_dram = that / the DRAM "
           "rate\n",
           pk->dram_gbps, pk->dram_isa ? pk->dram_isa : "none",
           pk->dram_probe_mib, pk->llc_mib,
           pk->llc_assumed ? ", assumed: the OS lists none" : "");
}

void agmm_bench_peak_json(const agmm_bench_peak_t *pk)
{
    printf(",\"peak_gflops_per_core\":%.3f,\"peak_instr\":\"%s\","
           "\"peak_path\":\"%s\",\"peaks\":[",
           pk->gflops, pk->instr ? pk->instr : "",
           agmm_gemm_path_name(pk->path));
    for (int i = 0; i < pk->n; i++)
        printf("%s{\"path\":\"%s\",\"instr\":\"%s\",\"gflops\":%.3f}",
               i ? "," : "", agmm_gemm_path_name(pk->each[i].path),
               pk->each[i].instr ? pk->each[i].instr : "", pk->each[i].gflops);
    printf("],\"peak_vnni_gops_per_core\":%.3f", pk->vnni_gops);
    printf(",\"dram_read_gbps_per_core\":%.3f,\"dram_probe\":{\"isa\":\"%s\","
           "\"bytes_mib\":%.1f,\"llc_mib\":%.1f,\"llc_assumed\":%s}",
           pk->dram_gbps, pk->dram_isa ? pk->dram_isa : "", pk->dram_probe_mib,
           pk->llc_mib, pk->llc_assumed ? "true" : "false");
}
