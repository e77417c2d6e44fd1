/*
 * The DRAM read rate of one core, measured: a loop that reads a buffer
 * several times the last-level cache (4x the largest cache sysfs lists
 * for cpu0, at least 256 MiB) and sums it, timed on the calling thread.
 *
 * What a decode step cannot beat: each step reads every weight a rank
 * holds once, so its floor is the weight bytes over this rate. The loop is
 * AVX-512 (zmm loads), AVX2 (ymm) or portable C, picked at run time; it
 * keeps 8 independent sums so the loads, not the adds, are the limit.
 * The first pass touches the pages (it is not timed), then REPEATS passes
 * are timed in the thread's CPU time (as the peak probe, peak.c: a process
 * sharing the core does not count; a core stalled on memory does) and the
 * fastest counts. About 0.1-0.2 s and the buffer's memory while it runs;
 * agmm_dram_read_gbps measures once per process and caches.
 */
#ifndef AGMM_GEMM_DRAM_H
#define AGMM_GEMM_DRAM_H

#include <stddef.h>

/* The largest cache of cpu0 sysfs lists (index<i>/size, normally the L3),
 * in bytes; 0 when sysfs says nothing. */
size_t agmm_dram_llc_bytes(void);
/* The buffer the probe reads: max(4 x agmm_dram_llc_bytes(), 256 MiB). */
size_t agmm_dram_probe_bytes(void);
/* The cache a weight must outgrow to stream from DRAM: the largest cache
 * (agmm_dram_llc_bytes), or where the OS lists none (VMs without sysfs
 * cache entries) a quarter of the probe's buffer, the largest cache the
 * probe allows for (64 MiB); *assumed (may be NULL) is 1 then, else 0.
 * One rule for the bench's "fits the cache" and the model's DRAM floor. */
size_t agmm_dram_cache_bytes(int *assumed);
/* The loop's name: "zmm", "ymm" or "scalar". */
const char *agmm_dram_probe_isa(void);
/* Measured GB/s (1e9 bytes) one core reads from DRAM: the first call
 * measures, later ones return that rate. 0 when the buffer cannot be
 * allocated. */
double agmm_dram_read_gbps(void);
/* The same over `bytes` (rounded down to 4 KiB, at least 4 KiB), measured
 * afresh (not cached): for tests. */
double agmm_dram_read_measure(size_t bytes);

#endif
