/* agmm_cpu_*: CPUID read once (cpu.h). The flags are written once under
 * pthread_once, then only read. */
#include "common/cpu.h"

#include <pthread.h>

#if defined(__x86_64__)
#include <cpuid.h>
#endif

static int avx512_bf16;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void read_cpuid(void)
{
#if defined(__x86_64__)
    unsigned a, b, c, d;
    if (__get_cpuid_max(0, NULL) >= 7) {
        __cpuid_count(7, 1, a, b, c, d);
        avx512_bf16 = (a >> 5) & 1;
    }
#endif
}

int agmm_cpu_avx512_bf16(void)
{
    pthread_once(&once, read_cpuid);
    return avx512_bf16;
}
