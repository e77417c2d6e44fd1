/* The weight-quantized GEMM oracle (wq_ref.h): plain loops in double. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check/wq_ref.h"

static int64_t group_rows(const agmm_wq_desc_t *d)
{
    return d->group == 0 ? d->k : d->group;
}

static double scale_of(const agmm_wq_desc_t *d, int64_t idx)
{
    if (d->scales_bf16) {
        uint32_t bits = (uint32_t)((const uint16_t *)d->scales)[idx] << 16;
        float f;
        memcpy(&f, &bits, sizeof f);
        return f;
    }
    return ((const float *)d->scales)[idx];
}

/* q and zero of (kk, j) as the plain layout holds them. */
static void q_zero(const agmm_wq_desc_t *d, int64_t kk, int64_t j, int *q,
                   int *zero)
{
    int64_t gi = (kk / group_rows(d)) * d->n + j;
    *zero = d->symmetric ? 0 : d->zeros[gi];
    if (d->bits == 8) {
        *q = d->symmetric ? ((const int8_t *)d->q)[kk * d->n + j]
                          : ((const uint8_t *)d->q)[kk * d->n + j];
        return;
    }
    int b = ((const uint8_t *)d->q)[(kk / 2) * d->n + j];
    int nib = kk % 2 ? b >> 4 : b & 0xf;
    *q = d->symmetric && nib >= 8 ? nib - 16 : nib;
}

double agmm_wq_ref_value(const agmm_wq_desc_t *d, int64_t kk, int64_t j)
{
    int q, zero;
    q_zero(d, kk, j, &q, &zero);
    return (double)(q - zero) * scale_of(d, (kk / group_rows(d)) * d->n + j);
}

void agmm_wq_ref(const agmm_wq_desc_t *d, int64_t m, const float *a,
                 int64_t lda, double *c, double *bound, int64_t ldc,
                 int out_bf16)
{
    int64_t g = group_rows(d), ng = (d->k + g - 1) / g;
    double nn = (double)(g + ng + 4), u = ldexp(1.0, -24);
    double gamma = nn * u / (1 - nn * u);
    for (int64_t i = 0; i < m; i++)
        for (int64_t j = 0; j < d->n; j++) {
            double sum = 0, mag = 0;
            for (int64_t kk = 0; kk < d->k; kk++) {
                int q, zero;
                q_zero(d, kk, j, &q, &zero);
                double s = scale_of(d, (kk / g) * d->n + j);
                double x = a[i * lda + kk];
                sum += x * (double)(q - zero) * s;
                int uq = q, uz = zero;
                if (d->symmetric && d->bits == 4) {
                    uq = q + 8;
                    uz = 8;
                }
                if (d->bits == 4) { /* a kernel may add the offset */
                    uq += AGMM_WQ_U_OFFSET_BOUND;
                    uz += AGMM_WQ_U_OFFSET_BOUND;
                }
                mag += fabs(x) * fabs(s) * (double)(abs(uq) + abs(uz));
            }
            c[i * ldc + j] = sum;
            if (bound) {
                double b = gamma * mag;
                if (out_bf16) b += ldexp(1.0, -8) * (fabs(sum) + b);
                bound[i * ldc + j] = b;
            }
        }
}

void agmm_wq_ref_quantize_a(int64_t m, int64_t k, const float *a, int64_t lda,
                            double *aq, int64_t ldq)
{
    for (int64_t i = 0; i < m; i++) {
        const float *src = a + i * lda;
        float amax = 0;
        int bad = 0;
        for (int64_t kk = 0; kk < k; kk++) {
            bad |= !isfinite(src[kk]);
            amax = fabsf(src[kk]) > amax ? fabsf(src[kk]) : amax;
        }
        float s = amax > 0 ? amax / 127.0f : 1.0f;
        for (int64_t kk = 0; kk < k; kk++) {
            if (bad) { /* the library's NaN row (gemm.c: quantize_rows) */
                aq[i * ldq + kk] = NAN;
                continue;
            }
            float q = nearbyintf(src[kk] / s);
            q = q > 127 ? 127 : q < -127 ? -127 : q;
            aq[i * ldq + kk] = (double)q * (double)s;
        }
    }
}

void agmm_wq_ref_a8(const agmm_wq_desc_t *d, int64_t m, const float *a,
                    int64_t lda, double *c, double *bound, int64_t ldc,
                    int out_bf16)
{
    int64_t g = group_rows(d), ng = (d->k + g - 1) / g;
    double nn = (double)(ng + 4), u = ldexp(1.0, -24);
    double gamma = nn * u / (1 - nn * u);
    double *aq = malloc(((size_t)d->k + 1) * sizeof(double));
    if (!aq) abort(); /* a test's oracle */
    for (int64_t i = 0; i < m; i++) {
        agmm_wq_ref_quantize_a(1, d->k, a + i * lda, lda, aq, d->k);
        for (int64_t j = 0; j < d->n; j++) {
            double sum = 0, mag = 0;
            for (int64_t kk = 0; kk < d->k; kk++) {
                int q, zero;
                q_zero(d, kk, j, &q, &zero);
                double s = scale_of(d, (kk / g) * d->n + j);
                sum += aq[kk] * (double)(q - zero) * s;
                int uq = q, uz = zero;
                if (d->symmetric) { /* int4: q + 8 and 8; int8: q + 128 */
                    uz = d->bits == 4 ? 8 : 128;
                    uq = q + uz;
                }
                mag += fabs(aq[kk]) * fabs(s) * (double)(abs(uq) + abs(uz));
            }
            c[i * ldc + j] = sum;
            if (bound) {
                double b = gamma * mag;
                if (out_bf16) b += ldexp(1.0, -8) * (fabs(sum) + b);
                bound[i * ldc + j] = b;
            }
        }
    }
    free(aq);
}
