/* Whether the BLAS kernel OpenBLAS picked wastes the CPU (blas_advice.c):
 * an OpenBLAS that does not know a CPU falls back to an old kernel
 * silently (Debian's 0.3.21 runs Prescott, SSE only, on Intel family 6
 * model 207 with AVX-512). agmm_blas_advice() (agmm_ext.h) is the public
 * answer; the decision itself is a pure function, for the unit test. */
#ifndef AGMM_GEMM_BLAS_ADVICE_H
#define AGMM_GEMM_BLAS_ADVICE_H

#include <stddef.h>

/* CPU features the decision looks at. */
enum {
    AGMM_CPU_AVX2 = 1u << 0,
    AGMM_CPU_FMA = 1u << 1,
    AGMM_CPU_AVX512F = 1u << 2,
};

/* This CPU's AGMM_CPU_* flags (0 off x86). */
unsigned agmm_cpu_flags(void);

/* The advice for OpenBLAS kernel `kernel` (openblas_get_corename()) on a
 * CPU with flags `cpu`, OPENBLAS_CORETYPE being `coretype` (NULL or ""
 * when unset). 1 with one line in buf (size bytes) when the kernel is an
 * SSE or AVX (no AVX2) one and the CPU has AVX-512 (advice: SkylakeX) or
 * AVX2 + FMA (advice: Haswell); else 0 and buf empty: the kernel is
 * already AVX2 or newer, its name is not one of OpenBLAS's x86 cores, the
 * CPU has nothing better, or the user chose the kernel (coretype set). */
int agmm_blas_advice_for(const char *kernel, unsigned cpu, const char *coretype,
                         char *buf, size_t size);

/* agmm_warn the advice, if any, once per process, from rank 0 or a
 * process without a rank only (the OpenBLAS engine's prepare calls it). */
void agmm_blas_advise_once(void);

#endif
