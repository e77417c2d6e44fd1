/* The AVX-512 kernel (wq_internal.h): one panel of 16 columns is one zmm
 * of fp32. Per quad of 4 rows of k, the stored bytes are widened to 16
 * int32 (int4: the octet's 16 dwords, each holding a column's 8 nibbles,
 * split with shifts and ands; int8: vpmovzxbd / vpmovsxbd),
 * converted to fp32 and multiplied into 4 independent sums per row of A (one
 * per row of the quad: 4 chains hide the FMA latency even for one row); at each
 * group's end the sums are added, the zero term taken off and the scale
 * applied. Up to 4 rows of A per call (20 of the 32 zmm registers). The panel
 * is streamed front to back with a software prefetch PF_BYTES ahead (into the
 * next panel at its end, which is what agmm_wq_gemm reads next). Compiled for
 * AVX-512F by function attribute; called only when the CPU has it (gemm.c). */
#include "gemm/wq/wq_internal.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define TARGET   __attribute__((target("avx512f,avx512bw,fma")))
#define PF_BYTES 1024

TARGET static inline __attribute__((always_inline)) void
panel_rows(const struct agmm_wq *w, const uint8_t *panel, const int rows,
           const float *a, int64_t lda, const float *asum, float *out)
{
    __m512 tot[AGMM_WQ_RB];
    for (int r = 0; r < rows; r++)
        tot[r] = _mm512_setzero_ps();
    const __m512i mask = _mm512_set1_epi32(0xf);
    const uint8_t *p = panel;
    const int int4 = w->bits == 4, sgn = w->bits == 8 && w->symmetric;
    for (int64_t g = 0; g < w->ng; g++) {
        __m512 s = _mm512_loadu_ps((const float *)p);
        __m512 z = _mm512_loadu_ps((const float *)p + AGMM_WQ_NP);
        p += 2 * AGMM_WQ_NP * sizeof(float);
        int64_t quads = agmm_wq_quads(w, g);
        __m512 acc[AGMM_WQ_RB][4];
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < 4; i++)
                acc[r][i] = _mm512_setzero_ps();
        const float *ag = a + g * w->gq * 4;
        for (int64_t qd = 0; qd < quads; qd++) {
            __m512 u[4];
            if (int4) {
                _mm_prefetch((const char *)p + PF_BYTES, _MM_HINT_T0);
                /* dword j of the octet: column j's rows, row r at bit
                 * 16 (r % 2) + 4 (r / 2); this quad's are rows 4h.. */
                const int h = (int)(qd % 2);
                __m512i x = _mm512_srli_epi32(
                    _mm512_loadu_si512((const void *)(p - 32 * h)), 8 * h);
                u[0] = _mm512_cvtepi32_ps(_mm512_and_si512(x, mask));
                u[1] = _mm512_cvtepi32_ps(
                    _mm512_and_si512(_mm512_srli_epi32(x, 16), mask));
                u[2] = _mm512_cvtepi32_ps(
                    _mm512_and_si512(_mm512_srli_epi32(x, 4), mask));
                u[3] = _mm512_cvtepi32_ps(
                    _mm512_and_si512(_mm512_srli_epi32(x, 20), mask));
                p += 32;
            } else {
                _mm_prefetch((const char *)p + PF_BYTES, _MM_HINT_T0);
                for (int i = 0; i < 4; i++) {
                    __m128i b = _mm_loadu_si128((const __m128i *)(p + 16 * i));
                    u[i] = _mm512_cvtepi32_ps(sgn ? _mm512_cvtepi8_epi32(b)
                                                  : _mm512_cvtepu8_epi32(b));
                }
                p += 64;
            }
            for (int r = 0; r < rows; r++) {
                const float *ar = ag + r * lda + qd * 4;
                for (int i = 0; i < 4; i++)
                    acc[r][i] =
                        _mm512_fmadd_ps(_mm512_set1_ps(ar[i]), u[i], acc[r][i]);
            }
        }
        for (int r = 0; r < rows; r++) {
            __m512 t = _mm512_add_ps(_mm512_add_ps(acc[r][0], acc[r][1]),
                                     _mm512_add_ps(acc[r][2], acc[r][3]));
            if (w->has_zero)
                t = _mm512_fnmadd_ps(z, _mm512_set1_ps(asum[r * w->ng + g]), t);
            tot[r] = _mm512_fmadd_ps(s, t, tot[r]);
        }
    }
    for (int r = 0; r < rows; r++)
        _mm512_storeu_ps(out + r * AGMM_WQ_NP, tot[r]);
}

TARGET void agmm_wq_panel_avx512(const struct agmm_wq *w, const uint8_t *panel,
                                 int rows, const float *a, int64_t lda,
                                 const float *asum, float *out)
{
    switch (rows) {
    case 1:
        panel_rows(w, panel, 1, a, lda, asum, out);
        break;
    case 2:
        panel_rows(w, panel, 2, a, lda, asum, out);
        break;
    case 3:
        panel_rows(w, panel, 3, a, lda, asum, out);
        break;
    default:
        panel_rows(w, panel, 4, a, lda, asum, out);
        break;
    }
}
#endif
