/* The reference all-gather-GEMM (the test oracle, in check/ beside the
 * reference GEMM): gather, convert (scalar path), one GEMM. Deliberately
 * independent of the plan (no windows, tiles, signals or claims). */
#include <stdlib.h>
#include <string.h>

#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/gemm.h"

agmm_status_t agmm_convert_from_fp32(agmm_dtype_t dtype, const float *src,
                                     void *dst, size_t n)
{
    if (agmm_dtype_size(dtype) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG, "convert: dtype %d is not valid",
                          (int)dtype);
    if (n && (!src || !dst))
        return agmm_error(AGMM_ERR_INVALID_ARG, "convert: NULL argument");
    agmm_convert_from_f32(dtype, src, dst, n);
    return AGMM_OK;
}

agmm_status_t agmm_reference(int nranks, const void *const *shards,
                             const int64_t *m_local, int64_t k, int64_t n,
                             agmm_dtype_t dtype, const void *w, float *c)
{
    if (nranks < 1 || !shards || !m_local || !w || !c || k < 1 || n < 1 ||
        agmm_dtype_size(dtype) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG, "reference: invalid argument");
    int64_t M = 0;
    for (int r = 0; r < nranks; r++) {
        if (m_local[r] < 0 || (m_local[r] > 0 && !shards[r]))
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "reference: shard %d is invalid", r);
        M += m_local[r];
    }
    float *a32 = malloc((size_t)M * (size_t)k * sizeof(float) + 1);
    float *w32 = malloc((size_t)k * (size_t)n * sizeof(float));
    if (!a32 || !w32) {
        free(a32);
        free(w32);
        return agmm_error(AGMM_ERR_NO_MEMORY, "reference: out of memory");
    }
    int64_t row = 0;
    for (int r = 0; r < nranks; r++) {
        agmm_convert_to_f32_scalar(dtype, shards[r], a32 + (size_t)row * k,
                                   (size_t)(m_local[r] * k));
        row += m_local[r];
    }
    agmm_convert_to_f32_scalar(dtype, w, w32, (size_t)(k * n));
    agmm_gemm_f32(M, n, k, a32, k, w32, n, c, n);
    free(a32);
    free(w32);
    return AGMM_OK;
}
