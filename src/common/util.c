/* Clocks, checked arithmetic and aligned allocation; see util.h. */
#include "common/util.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

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

void *agmm_alloc(size_t bytes)
{
    if (bytes == 0) bytes = 1;
    size_t rounded = (bytes + AGMM_CACHE_LINE - 1) / AGMM_CACHE_LINE;
    if (rounded > SIZE_MAX / AGMM_CACHE_LINE) return NULL;
    rounded *= AGMM_CACHE_LINE;
    void *p = aligned_alloc(AGMM_CACHE_LINE, rounded);
    if (p) memset(p, 0, rounded);
    return p;
}

void agmm_free(void *p)
{
    free(p);
}
