/* Deterministic test data for the C tests: value i of stream id, the same
 * in every rank and every run without any state to share (a splitmix64-
 * style hash of (id, i)), uniform in [-1, 1) with 53 random bits before
 * the rounding to float; and buffers of such values, fp32 or converted to
 * a dtype through the library's own conversion. Each buffer has room for
 * at least one element, so n = 0 (an empty row range) is a valid call. */
#ifndef AGMM_TESTS_TEST_DATA_H
#define AGMM_TESTS_TEST_DATA_H

#include <stdint.h>
#include <stdlib.h>

#include "agmm_ext.h"

static inline float test_value(int id, int64_t i)
{
    uint64_t x = (uint64_t)id * 0x9e3779b97f4a7c15ull +
                 (uint64_t)i * 0xbf58476d1ce4e5b9ull;
    x ^= x >> 31;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 29;
    return (float)((double)(x >> 11) * 0x1.0p-53 * 2.0 - 1.0);
}

/* n values of stream id in fp32 (malloc'd; the caller frees). */
static inline float *test_values(int id, int64_t n)
{
    float *f = malloc(sizeof(float) * (size_t)(n > 0 ? n : 1));
    for (int64_t i = 0; f && i < n; i++)
        f[i] = test_value(id, i);
    return f;
}

/* n values of stream id in dtype dt (malloc'd, 4 bytes an element at most;
 * the caller frees). */
static inline void *test_make(agmm_dtype_t dt, int id, int64_t n)
{
    float *f = test_values(id, n);
    void *out = malloc(4 * (size_t)(n > 0 ? n : 1));
    if (f && out) agmm_convert_from_fp32(dt, f, out, (size_t)n);
    free(f);
    return out;
}

#endif /* AGMM_TESTS_TEST_DATA_H */
