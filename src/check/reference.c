/* The reference operations (the test oracle, in check/ beside the
 * reference GEMM): all-gather + GEMM (agmm_reference: gather, convert,
 * one GEMM) and GEMM + reduce-scatter (agmm_reference_rs: the asked rows
 * of sum_r A_r @ W_r, accumulated in double), with the
 * scalar conversion from fp32 they use (agmm_convert_from_fp32), and the
 * plans' epilogue in double (agmm_reference_epilogue).
 * Deliberately independent of the plan (no windows, tiles, signals or
 * claims). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "agmm_ext.h"
#include "common/log.h"
#include "common/util.h"
#include "gemm/convert.h"
#include "gemm/gemm.h"

agmm_status_t agmm_convert_from_fp32(agmm_dtype_t dtype, const float *src,
                                     void *dst, size_t n)
{
    if (agmm_dtype_size(dtype) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "convert: dtype %d is not valid", (int)dtype);
    if (n && (!src || !dst))
        return agmm_error(AGMM_ERR_INVALID_ARG, "convert: NULL argument");
    agmm_convert_from_f32(dtype, src, dst, n);
    return AGMM_OK;
}

agmm_status_t agmm_convert_to_fp32(agmm_dtype_t dtype, const void *src,
                                   float *dst, size_t n)
{
    if (agmm_dtype_size(dtype) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "convert: dtype %d is not valid", (int)dtype);
    if (n && (!src || !dst))
        return agmm_error(AGMM_ERR_INVALID_ARG, "convert: NULL argument");
    agmm_convert_to_f32_scalar(dtype, src, dst, n);
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

agmm_status_t agmm_reference_rs(int nranks, const void *const *a,
                                const void *const *w, const int64_t *k_local,
                                int64_t M, int64_t n, agmm_dtype_t dtype,
                                int64_t row0, int64_t rows, float *c)
{
    if (nranks < 1 || !a || !w || !k_local || n < 1 || rows < 0 || row0 < 0 ||
        row0 + rows > M || (rows > 0 && !c) || agmm_dtype_size(dtype) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "reference_rs: invalid argument");
    size_t es = agmm_dtype_size(dtype);
    double *acc =
        calloc((size_t)(rows > 0 ? rows : 1) * (size_t)n, sizeof(double));
    float *arow = NULL, *w32 = NULL;
    agmm_status_t st = acc ? AGMM_OK : AGMM_ERR_NO_MEMORY;
    for (int r = 0; st == AGMM_OK && r < nranks; r++) {
        int64_t k = k_local[r];
        if (k <= 0 || rows == 0) continue;
        if (!a[r] || !w[r]) {
            st = agmm_error(AGMM_ERR_INVALID_ARG,
                            "reference_rs: rank %d's inputs are NULL", r);
            break;
        }
        free(arow);
        free(w32);
        arow = malloc((size_t)k * sizeof(float));
        w32 = malloc((size_t)k * (size_t)n * sizeof(float));
        if (!arow || !w32) {
            st = AGMM_ERR_NO_MEMORY;
            break;
        }
        agmm_convert_to_f32_scalar(dtype, w[r], w32, (size_t)(k * n));
        for (int64_t i = 0; i < rows; i++) {
            const unsigned char *src = (const unsigned char *)a[r] +
                                       (size_t)(row0 + i) * (size_t)k * es;
            agmm_convert_to_f32_scalar(dtype, src, arow, (size_t)k);
            double *out = acc + (size_t)i * (size_t)n;
            for (int64_t kk = 0; kk < k; kk++) {
                double av = arow[kk];
                const float *wr = w32 + (size_t)kk * (size_t)n;
                for (int64_t j = 0; j < n; j++)
                    out[j] += av * (double)wr[j];
            }
        }
    }
    for (int64_t i = 0; st == AGMM_OK && i < rows * n; i++)
        c[i] = (float)acc[i];
    free(acc);
    free(arow);
    free(w32);
    if (st == AGMM_ERR_NO_MEMORY)
        return agmm_error(st, "reference_rs: out of memory");
    return st;
}

/* The activation in double (the formulas of agmm.h). */
static double act_f64(agmm_activation_t act, double x)
{
    switch (act) {
    case AGMM_ACT_NONE:
        return x;
    case AGMM_ACT_RELU:
        return x > 0 ? x : 0;
    case AGMM_ACT_GELU_TANH:
        return 0.5 * x *
               (1 + tanh(sqrt(2 / 3.14159265358979323846) *
                         (x + 0.044715 * x * x * x)));
    case AGMM_ACT_GELU_ERF:
        return 0.5 * x * (1 + erf(x / sqrt(2.0)));
    case AGMM_ACT_SILU:
        return x / (1 + exp(-x));
    case AGMM_ACT_SILU_MUL:      /* gated: on the gate (reference_glu) */
    case AGMM_ACT_GELU_TANH_MUL: /* never called with these */
        break;
    }
    return x;
}

double agmm_activation_max_slope(agmm_activation_t act)
{
    switch (act) {
    case AGMM_ACT_NONE:
    case AGMM_ACT_RELU:
        return 1;
    case AGMM_ACT_GELU_TANH: /* max of Phi(x) + x phi(x), at x = sqrt 2 */
    case AGMM_ACT_GELU_ERF:
        return 1.129;
    case AGMM_ACT_SILU: /* at x ~ 2.4 */
    case AGMM_ACT_SILU_MUL:
        return 1.0998;
    case AGMM_ACT_GELU_TANH_MUL:
        return 1.129;
    }
    return 0;
}

/* The gated epilogue of agmm_reference_epilogue: [rows, 2h] into the
 * first rows * h floats of c, in order (row i's results land at or before
 * where its gate values were read, and after every value of rows < i). */
static void reference_glu(int64_t rows, int64_t h, const float *bias,
                          agmm_activation_t gate, float *c)
{
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < h; j++) {
            const float *v = c + (size_t)i * (size_t)(2 * h);
            double g = (double)v[j] + (bias ? (double)bias[j] : 0.0);
            double u = (double)v[h + j] + (bias ? (double)bias[h + j] : 0.0);
            c[(size_t)i * (size_t)h + (size_t)j] =
                (float)(act_f64(gate, g) * u);
        }
}

agmm_status_t agmm_reference_epilogue(int64_t rows, int64_t n,
                                      const float *bias, agmm_activation_t act,
                                      float *c)
{
    if (rows < 0 || n < 1 || (rows > 0 && !c) ||
        agmm_activation_max_slope(act) == 0)
        return agmm_error(AGMM_ERR_INVALID_ARG,
                          "reference_epilogue: invalid argument");
    agmm_activation_t gate = agmm_activation_gate(act);
    if (gate != AGMM_ACT_NONE) {
        if (n % 2)
            return agmm_error(AGMM_ERR_INVALID_ARG,
                              "reference_epilogue: n = %lld with %s (allowed: "
                              "even, [gate | up])",
                              (long long)n, agmm_activation_name(act));
        reference_glu(rows, n / 2, bias, gate, c);
        return AGMM_OK;
    }
    for (int64_t i = 0; i < rows; i++)
        for (int64_t j = 0; j < n; j++) {
            float *v = c + (size_t)i * (size_t)n + (size_t)j;
            double x = (double)*v + (bias ? (double)bias[j] : 0.0);
            *v = (float)act_f64(act, x);
        }
    return AGMM_OK;
}
