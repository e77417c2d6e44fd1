/* The AVX2 kernel (wq_internal.h): a panel of 16 columns is two ymm of
 * fp32. As the AVX-512 one (kern_avx512.c), with 2 sums per half and row
 * (even and odd rows of a quad) and the rows of A two at a time, each pair
 * re-reading the panel from L1/L2 (16 ymm registers: 8 sums, 4 totals,
 * the widened values). Compiled for AVX2 + FMA by function attribute;
 * called only when the CPU has them (gemm.c). */
#include "gemm/wq/wq_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TARGET   __attribute__((target("avx2,fma")))
#define PF_BYTES 1024

TARGET static inline __m256 widen(__m128i b8, int sgn)
{
    return _mm256_cvtepi32_ps(sgn ? _mm256_cvtepi8_epi32(b8)
                                  : _mm256_cvtepu8_epi32(b8));
}

TARGET static inline __attribute__((always_inline)) void
panel_rows(const struct agmm_wq *w, const uint8_t *panel, const int rows,
           const float *a, int64_t lda, const float *asum, float *out)
{
    __m256 tot[2][2];
    for (int r = 0; r < rows; r++)
        tot[r][0] = tot[r][1] = _mm256_setzero_ps();
    const __m256i mask = _mm256_set1_epi32(0xf);
    const uint8_t *p = panel;
    const int int4 = w->bits == 4, sgn = w->bits == 8 && w->symmetric;
    for (int64_t g = 0; g < w->ng; g++) {
        const float *sp = (const float *)p;
        p += 2 * AGMM_WQ_NP * sizeof(float);
        int64_t quads = agmm_wq_quads(w, g);
        __m256 acc[2][2][2]; /* [row][half][even/odd row of the quad] */
        for (int r = 0; r < rows; r++)
            for (int h = 0; h < 2; h++)
                acc[r][h][0] = acc[r][h][1] = _mm256_setzero_ps();
        const float *ag = a + g * w->gq * 4;
        for (int64_t qd = 0; qd < quads; qd++) {
            _mm_prefetch((const char *)p + PF_BYTES, _MM_HINT_T0);
            for (int i = 0; i < 4; i++) {
                __m256 u[2];
                for (int h = 0; h < 2; h++) {
                    if (int4) {
                        /* the octet's dwords 8h..8h+7: a column's
                         * rows (wq_internal.h) */
                        __m256i x = _mm256_loadu_si256(
                            (const __m256i *)(const void *)(p - 32 * (qd % 2) +
                                                            32 * h));
                        x = _mm256_and_si256(
                            _mm256_srli_epi32(
                                x, agmm_wq_nib_shift((int)(qd % 2) * 4 + i)),
                            mask);
                        u[h] = _mm256_cvtepi32_ps(x);
                    } else {
                        u[h] = widen(_mm_loadl_epi64(
                                         (const __m128i *)(p + 16 * i + 8 * h)),
                                     sgn);
                    }
                }
                for (int r = 0; r < rows; r++) {
                    __m256 av = _mm256_set1_ps(ag[r * lda + qd * 4 + i]);
                    for (int h = 0; h < 2; h++)
                        acc[r][h][i % 2] =
                            _mm256_fmadd_ps(av, u[h], acc[r][h][i % 2]);
                }
            }
            p += w->quad_bytes;
        }
        for (int r = 0; r < rows; r++)
            for (int h = 0; h < 2; h++) {
                __m256 t = _mm256_add_ps(acc[r][h][0], acc[r][h][1]);
                if (w->has_zero)
                    t = _mm256_fnmadd_ps(_mm256_loadu_ps(sp + 16 + 8 * h),
                                         _mm256_set1_ps(asum[r * w->ng + g]),
                                         t);
                tot[r][h] =
                    _mm256_fmadd_ps(_mm256_loadu_ps(sp + 8 * h), t, tot[r][h]);
            }
    }
    for (int r = 0; r < rows; r++)
        for (int h = 0; h < 2; h++)
            _mm256_storeu_ps(out + r * AGMM_WQ_NP + 8 * h, tot[r][h]);
}

TARGET void agmm_wq_panel_avx2(const struct agmm_wq *w, const uint8_t *panel,
                               int rows, const float *a, int64_t lda,
                               const float *asum, float *out)
{
    for (int r = 0; r < rows; r += 2) {
        if (rows - r >= 2)
            panel_rows(w, panel, 2, a + r * lda, lda, asum + r * w->ng,
                       out + r * AGMM_WQ_NP);
        else
            panel_rows(w, panel, 1, a + r * lda, lda, asum + r * w->ng,
                       out + r * AGMM_WQ_NP);
    }
}
#endif
