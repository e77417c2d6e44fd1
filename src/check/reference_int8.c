/* The int8 (W8A8) test oracles (agmm_ext.h): agmm_reference_int8 (all-
 * gather + GEMM), agmm_reference_rs_int8 and its magnitudes (GEMM +
 * reduce-scatter), and agmm_int8_bound, what a correct result meets.
 * Plain loops: each dot product exact in int64, the scaling in double in
 * the engines' order (acc * w_scale * a_scale, engine.h), the sum over
 * ranks in double, one rounding to fp32 at the end. Nothing shared with
 * the engines (no oneDNN, no epilogue, no tiles). */
#include <math.h>
#include <stdlib.h>

#include "agmm_ext.h"
#include "common/log.h"

/* sum_k a[kk] * w[kk * n + j], exact. */
static int64_t dot(const int8_t *a, const int8_t *w, int64_t k, int64_t n,
                   int64_t j)
{
    int64_t s = 0;
    for (int64_t kk = 0; kk < k; kk++)
        s += (int64_t)a[kk] * (int64_t)w[kk * n + j];
    return s;
}

agmm_status_t agmm_reference_int8(int nranks, const int8_t *const *shards,
                                  const float *const *a_scales,
                                  const int64_t *m_local, int64_t k, int64_t n,
                                  const int8_t *w, const float *w_scale,
                                  float *c)
{
    if (nranks < 1 || !shards || !a_scales || !m_local || !w || !w_scale ||
        !c || k < 1 || n < 1)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "reference_int8: invalid argument");
    for (int r = 0; r < nranks; r++)
        if (m_local[r] < 0 || (m_local[r] > 0 && (!shards[r] || !a_scales[r])))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "reference_int8: shard %d is invalid", r);
    float *out = c;
    for (int r = 0; r < nranks; r++)
        for (int64_t i = 0; i < m_local[r]; i++, out += n) {
            const int8_t *a = shards[r] + i * k;
            for (int64_t j = 0; j < n; j++)
                out[j] = (float)((double)dot(a, w, k, n, j) *
                                 (double)w_scale[j] * (double)a_scales[r][i]);
        }
    return AGMM_OK;
}

/* The rs oracle (mag 0) or its magnitudes (mag 1: |each rank's term|). */
static agmm_status_t rs_int8(int nranks, const int8_t *const *a,
                             const float *const *a_scale,
                             const int8_t *const *w,
                             const float *const *w_scale,
                             const int64_t *k_local, int64_t M, int64_t n,
                             int64_t row0, int64_t rows, float *c, int mag)
{
    if (nranks < 1 || !a || !a_scale || !w || !w_scale || !k_local || n < 1 ||
        rows < 0 || row0 < 0 || row0 + rows > M || (rows > 0 && !c))
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "reference_rs_int8: invalid argument");
    for (int r = 0; r < nranks; r++)
        if (k_local[r] > 0 && (!a[r] || !a_scale[r] || !w[r] || !w_scale[r]))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "reference_rs_int8: rank %d's inputs are NULL",
                              r);
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
            double sum = 0.0;
            for (int r = 0; r < nranks; r++) {
                int64_t k = k_local[r];
                if (k <= 0) continue;
                double t = (double)dot(a[r] + (row0 + i) * k, w[r], k, n, j) *
                           (double)w_scale[r][j] * (double)a_scale[r][row0 + i];
                sum += mag ? fabs(t) : t;
            }
            c[i * n + j] = (float)sum;
        }
    return AGMM_OK;
}

agmm_status_t agmm_reference_rs_int8(
    int nranks, const int8_t *const *a, const float *const *a_scale,
    const int8_t *const *w, const float *const *w_scale, const int64_t *k_local,
    int64_t M, int64_t n, int64_t row0, int64_t rows, float *c)
{
    return rs_int8(nranks, a, a_scale, w, w_scale, k_local, M, n, row0, rows, c,
                   0);
}

agmm_status_t agmm_reference_rs_int8_mag(
    int nranks, const int8_t *const *a, const float *const *a_scale,
    const int8_t *const *w, const float *const *w_scale, const int64_t *k_local,
    int64_t M, int64_t n, int64_t row0, int64_t rows, float *mag)
{
    return rs_int8(nranks, a, a_scale, w, w_scale, k_local, M, n, row0, rows,
                   mag, 1);
}

double agmm_int8_bound(int nparts, double mag)
{
    /* (nparts + 3) units of 2^-24, and 2^-20 of that for the second-order
     * terms and mag being the fp32 rounding of the exact magnitude. */
    double u = ldexp(1.0, -24);
    return (double)(nparts + 3) * u * (1.0 + ldexp(1.0, -20)) * fabs(mag);
}
