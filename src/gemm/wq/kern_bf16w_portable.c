/* The portable bf16-weight kernel (bf16w.h): the same products and fp32
 * sums, in the same order, as the AVX-512 FMA kernel (k ascending, one
 * fused multiply-add per product), for any CPU. */
#include <math.h>
#include <string.h>

#include "gemm/wq/bf16w.h"

static float widen(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

void agmm_bf16w_block_portable(const agmm_bf16w_t *w, const uint16_t *blk,
                               int64_t q0, int64_t q1, int rows, const void *a,
                               int a_f32, int64_t lda, float *out, int64_t ldo)
{
    int64_t k1 = 2 * q1 < w->k ? 2 * q1 : w->k;
    for (int r = 0; r < rows; r++) {
        float acc[AGMM_BF16W_NB] = {0};
        if (q0 > 0) memcpy(acc, out + r * ldo, sizeof acc);
        for (int64_t kk = 2 * q0; kk < k1; kk++) {
            float av = a_f32 ? ((const float *)a)[r * lda + kk]
                             : widen(((const uint16_t *)a)[r * lda + kk]);
            const uint16_t *row = blk + (kk / 2) * (AGMM_BF16W_NB * 2);
            for (int j = 0; j < AGMM_BF16W_NB; j++)
                acc[j] = fmaf(av, widen(row[2 * j + (kk & 1)]), acc[j]);
        }
        memcpy(out + r * ldo, acc, sizeof acc);
    }
}
