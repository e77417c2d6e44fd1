/* TEMPORARY: the int8 oracles of issue 22, which the library side declares
 * in include/agmm_ext.h (implemented in src/check/). Declared here, as
 * given there, until that lands; then this header goes (an identical
 * second declaration is harmless meanwhile). */
#ifndef AGMM_TOOL_INT8_REF_H
#define AGMM_TOOL_INT8_REF_H

#include "agmm_ext.h"

/* C = gather(A) @ W for int8 shards (shards[r] [m_local[r], k], a_scales[r]
 * one per row) and W ([k, n], w_scale one per column): exact int64 dot
 * products, scaled in double, rounded once to fp32. */
agmm_status_t agmm_reference_int8(int nranks, const int8_t *const *shards,
                                  const float *const *a_scales,
                                  const int64_t *m_local, int64_t k, int64_t n,
                                  const int8_t *w, const float *w_scale,
                                  float *c);

/* Rows [row0, row0 + rows) of sum_r A_r @ W_r for int8 A_r [M, k_local[r]]
 * (a_scale[r] one per row) and W_r [k_local[r], n] (w_scale[r] one per
 * column): each rank's exact int64 dot product scaled in double, summed in
 * double, rounded once. */
agmm_status_t agmm_reference_rs_int8(
    int nranks, const int8_t *const *a, const float *const *a_scale,
    const int8_t *const *w, const float *const *w_scale, const int64_t *k_local,
    int64_t M, int64_t n, int64_t row0, int64_t rows, float *c);

#endif
