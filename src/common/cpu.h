/* CPU features that the compiler's __builtin_cpu_supports does not report
 * (GCC 12 knows no "avx512bf16"), read from CPUID once per process.
 * CPUID is not cheap everywhere: in a virtual machine it exits to the
 * hypervisor (measured 20 us for the two leaves a check reads, on the
 * shared test VM), so a check made on every GEMM call cost decode more
 * than its arithmetic at small shapes. Thread-safe; never by CPU name. */
#ifndef AGMM_COMMON_CPU_H
#define AGMM_COMMON_CPU_H

/* AVX512_BF16 (CPUID leaf 7, subleaf 1, EAX bit 5): 1 or 0. The caller
 * checks AVX-512F itself (which covers the OS saving zmm state). */
int agmm_cpu_avx512_bf16(void);

#endif /* AGMM_COMMON_CPU_H */
