/* The OpenBLAS kernel advice; see blas_advice.h. Only reads the
 * environment (OPENBLAS_CORETYPE): setting it would come too late for
 * this process (OpenBLAS picks its kernel when it is loaded) and is the
 * user's choice. */
#include "gemm/blas_advice.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

#include "agmm_ext.h"
#include "common/log.h"
#include "common/param.h"

/* OpenBLAS's x86 core names (driver/others/dynamic.c's corename[]) whose
 * sgemm has no AVX2: SSE only, or AVX without AVX2 (Sandybridge, and the
 * Bulldozer family, whose sgemm is Bulldozer's or Piledriver's). Every
 * other name (Haswell, Zen, SkylakeX, Cooperlake, SapphireRapids, or one
 * not listed here) gets no advice. */
static const char *const sse_cores[] = {
    "Katmai",       "Coppermine", "Northwood",  "Prescott", "Banias", "Atom",
    "Core2",        "Penryn",     "Dunnington", "Nehalem",  "Athlon", "Opteron",
    "Opteron_SSE3", "Barcelona",  "Nano",       "Bobcat",
};
static const char *const avx_cores[] = {
    "Sandybridge", "Bulldozer", "Piledriver", "Steamroller", "Excavator",
};

static int listed(const char *name, const char *const *list, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!strcasecmp(name, list[i])) return 1;
    return 0;
}

unsigned agmm_cpu_flags(void)
{
    unsigned f = 0;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) f |= AGMM_CPU_AVX2;
    if (__builtin_cpu_supports("fma")) f |= AGMM_CPU_FMA;
    if (__builtin_cpu_supports("avx512f")) f |= AGMM_CPU_AVX512F;
#endif
    return f;
}

int agmm_blas_advice_for(const char *kernel, unsigned cpu, const char *coretype,
                         char *buf, size_t size)
{
    if (size) buf[0] = 0;
    if (!kernel || (coretype && coretype[0])) return 0;
    const char *isa = NULL;
    if (listed(kernel, sse_cores, sizeof sse_cores / sizeof *sse_cores))
        isa = "SSE, no AVX";
    else if (listed(kernel, avx_cores, sizeof avx_cores / sizeof *avx_cores))
        isa = "AVX, no AVX2";
    if (!isa) return 0; /* AVX2 or newer already, or a name not known */
    const char *has, *want;
    if (cpu & AGMM_CPU_AVX512F)
        has = "AVX-512", want = "SkylakeX";
    else if ((cpu & AGMM_CPU_AVX2) && (cpu & AGMM_CPU_FMA))
        has = "AVX2 and FMA", want = "Haswell";
    else
        return 0;
    snprintf(buf, size,
             "OpenBLAS runs its %s kernel (%s) on a CPU with %s: set "
             "OPENBLAS_CORETYPE=%s (several times faster sgemm)",
             kernel, isa, has, want);
    return size > 0;
}

static char advice[256];
static pthread_once_t advice_once = PTHREAD_ONCE_INIT;

static void decide(void)
{
    agmm_blas_advice_for(agmm_blas_kernel(), agmm_cpu_flags(),
                         agmm_param_str(AGMM_PARAM_EXT_OPENBLAS_CORETYPE),
                         advice, sizeof advice);
}

const char *agmm_blas_advice(void)
{
    pthread_once(&advice_once, decide);
    return advice[0] ? advice : NULL;
}

static pthread_once_t warn_once = PTHREAD_ONCE_INIT;

static void warn(void)
{
    const char *a = agmm_blas_advice();
    if (a && agmm_log_rank() <= 0) agmm_warn("%s", a);
}

void agmm_blas_advise_once(void)
{
    pthread_once(&warn_once, warn);
}
