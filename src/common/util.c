/* Clocks, checked arithmetic and aligned allocation; see util.h. */
#include "common/util.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

#include "common/param.h"

double agmm_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t agmm_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

int agmm_mul_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return 0;
    return !__builtin_mul_overflow(a, b, out);
}

int agmm_add_ok(int64_t a, int64_t b, int64_t *out)
{
    if (a < 0 || b < 0) return 0;
    return !__builtin_add_overflow(a, b, out);
}

/* Is a block of `bytes` advised MADV_HUGEPAGE? At AGMM_HUGE_MIN or more,
 * unless AGMM_HUGEPAGES=0 (the Python package's switch too). The
 * environment is read once; a race between first callers reads it twice,
 * with the same answer. */
static int huge_block(size_t bytes)
{
    static _Atomic int on = -1; /* -1: not read yet */
    int v = atomic_load_explicit(&on, memory_order_relaxed);
    if (v < 0) {
        v = agmm_param_bool(AGMM_PARAM_HUGEPAGES);
        atomic_store_explicit(&on, v, memory_order_relaxed);
    }
    return v && bytes >= AGMM_HUGE_MIN;
}

void *agmm_alloc(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    if (bytes > SIZE_MAX - (AGMM_CACHE_LINE - 1)) return NULL;
    size_t rounded = (bytes + AGMM_CACHE_LINE - 1) / AGMM_CACHE_LINE;
    rounded *= AGMM_CACHE_LINE;
    int huge = huge_block(rounded);
    if (huge && rounded > SIZE_MAX - AGMM_HUGE_ALIGN) return NULL;
    void *p = aligned_alloc(huge ? AGMM_HUGE_ALIGN : AGMM_CACHE_LINE,
                            huge ? (rounded + AGMM_HUGE_ALIGN - 1) /
                                       AGMM_HUGE_ALIGN * AGMM_HUGE_ALIGN
                                 : rounded);
    if (!p) return NULL;
    /* Before the first touch (the memset): a hint the kernel may ignore
     * (THP "never"), so its result is not checked. */
    if (huge) (void)madvise(p, rounded, MADV_HUGEPAGE);
    memset(p, 0, rounded);
    return p;
}

void agmm_free(void *p)
{
    free(p);
}
