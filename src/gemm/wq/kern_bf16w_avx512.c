/* The AVX-512 bf16-weight kernels (bf16w.h): one block of 64 columns is
 * four zmm of fp32 sums per row of A, so even one row has four
 * independent chains. Per pair row of k (256 bytes: four zmm of 16
 * columns x 2 k), the weight is loaded once and multiplied into every
 * row's sums:
 *   dpbf16: VDPBF16PS of the zmm by A's bf16 pair broadcast (no
 *           widening: 64 products an instruction), up to 6 rows
 *           (24 sums + 4 weight registers);
 *   fma:    the pair split into its even and odd k, widened to fp32
 *           (a shift, an and: exact), two FMAs; A bf16 widened the same
 *           way, or fp32 broadcast as is; rows in groups of 3.
 * The block is streamed front to back, with no software prefetch: the
 * hardware's streams did better alone (k 4096, 512 columns from L3, one
 * row: 0.060 ms against 0.072 with prefetcht0 1-8 KiB ahead; the same
 * from DRAM, best of 24: 1.5 against 1.6-1.9 ms for 5504 columns).
 * Compiled by function attribute; called only when the CPU has the
 * instructions (bf16w.c checks them: common/cpu.h). */
#include <string.h>

#include "gemm/wq/bf16w.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define ROWB   (AGMM_BF16W_NB * 4) /* bytes of a pair row */
#define INLINE static inline __attribute__((always_inline))
#define T_BF16 __attribute__((target("avx512f,avx512bf16")))
#define T_FMA  __attribute__((target("avx512f,fma")))

/* A's pair q of row r as one dword (bf16 A), the odd tail padded with 0. */
static inline int32_t pair_of(const uint16_t *ar, int64_t q, int64_t k)
{
    int32_t v;
    if (2 * q + 1 < k) {
        memcpy(&v, ar + 2 * q, sizeof v);
    } else {
        v = (int32_t)ar[2 * q];
    }
    return v;
}

T_BF16 INLINE void dp_rows(const agmm_bf16w_t *w, const uint16_t *blk,
                           int64_t q0, int64_t q1, const int nr,
                           const uint16_t *a, int64_t lda, float *out,
                           int64_t ldo)
{
    __m512 acc[AGMM_BF16W_RB][4];
    for (int r = 0; r < nr; r++)
        for (int p = 0; p < 4; p++)
            acc[r][p] = q0 ? _mm512_loadu_ps(out + r * ldo + 16 * p)
                           : _mm512_setzero_ps();
    const char *bp = (const char *)blk + q0 * ROWB;
    for (int64_t q = q0; q < q1; q++, bp += ROWB) {
        __m512bh wv[4];
        for (int p = 0; p < 4; p++)
            wv[p] = (__m512bh)_mm512_load_si512((const void *)(bp + 64 * p));
        for (int r = 0; r < nr; r++) {
            __m512bh av =
                (__m512bh)_mm512_set1_epi32(pair_of(a + r * lda, q, w->k));
            for (int p = 0; p < 4; p++)
                acc[r][p] = _mm512_dpbf16_ps(acc[r][p], av, wv[p]);
        }
    }
    for (int r = 0; r < nr; r++)
        for (int p = 0; p < 4; p++)
            _mm512_storeu_ps(out + r * ldo + 16 * p, acc[r][p]);
}

T_BF16 void agmm_bf16w_block_dpbf16(const agmm_bf16w_t *w, const uint16_t *blk,
                                    int64_t q0, int64_t q1, int rows,
                                    const void *a, int a_f32, int64_t lda,
                                    float *out, int64_t ldo)
{
    (void)a_f32; /* bf16 A only: bf16w.c */
    const uint16_t *ab = a;
    switch (rows) { /* constant row counts: the sums stay in registers */
    case 1:
        dp_rows(w, blk, q0, q1, 1, ab, lda, out, ldo);
        break;
    case 2:
        dp_rows(w, blk, q0, q1, 2, ab, lda, out, ldo);
        break;
    case 3:
        dp_rows(w, blk, q0, q1, 3, ab, lda, out, ldo);
        break;
    case 4:
        dp_rows(w, blk, q0, q1, 4, ab, lda, out, ldo);
        break;
    case 5:
        dp_rows(w, blk, q0, q1, 5, ab, lda, out, ldo);
        break;
    case 6:
        dp_rows(w, blk, q0, q1, 6, ab, lda, out, ldo);
        break;
    default:
        break;
    }
}

T_FMA INLINE void fma_rows(const agmm_bf16w_t *w, const uint16_t *blk,
                           int64_t q0, int64_t q1, const int nr, const void *a,
                           const int a_f32, int64_t lda, float *out,
                           int64_t ldo)
{
    __m512 acc[3][4];
    for (int r = 0; r < nr; r++)
        for (int p = 0; p < 4; p++)
            acc[r][p] = q0 ? _mm512_loadu_ps(out + r * ldo + 16 * p)
                           : _mm512_setzero_ps();
    const __m512i hi = _mm512_set1_epi32((int32_t)0xffff0000u);
    const char *bp = (const char *)blk + q0 * ROWB;
    const float *af = a;
    const uint16_t *ab = a;
    for (int64_t q = q0; q < q1; q++, bp += ROWB) {
        __m512 ae[3], ao[3];
        for (int r = 0; r < nr; r++) {
            if (a_f32) {
                const float *ar = af + r * lda;
                ae[r] = _mm512_set1_ps(ar[2 * q]);
                ao[r] = _mm512_set1_ps(2 * q + 1 < w->k ? ar[2 * q + 1] : 0.0f);
            } else {
                __m512i d = _mm512_set1_epi32(pair_of(ab + r * lda, q, w->k));
                ae[r] = _mm512_castsi512_ps(_mm512_slli_epi32(d, 16));
                ao[r] = _mm512_castsi512_ps(_mm512_and_si512(d, hi));
            }
        }
        for (int p = 0; p < 4; p++) {
            __m512i v = _mm512_load_si512((const void *)(bp + 64 * p));
            __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(v, 16));
            __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(v, hi));
            for (int r = 0; r < nr; r++) {
                acc[r][p] = _mm512_fmadd_ps(ae[r], we, acc[r][p]);
                acc[r][p] = _mm512_fmadd_ps(ao[r], wo, acc[r][p]);
            }
        }
    }
    for (int r = 0; r < nr; r++)
        for (int p = 0; p < 4; p++)
            _mm512_storeu_ps(out + r * ldo + 16 * p, acc[r][p]);
}

T_FMA void agmm_bf16w_block_fma(const agmm_bf16w_t *w, const uint16_t *blk,
                                int64_t q0, int64_t q1, int rows, const void *a,
                                int a_f32, int64_t lda, float *out, int64_t ldo)
{
    size_t es = a_f32 ? sizeof(float) : sizeof(uint16_t);
    for (int r0 = 0; r0 < rows; r0 += 3) {
        const void *ar = (const char *)a + (size_t)(r0 * lda) * es;
        float *o = out + r0 * ldo;
        int n = rows - r0 < 3 ? rows - r0 : 3;
        if (a_f32) {
            if (n == 3)
                fma_rows(w, blk, q0, q1, 3, ar, 1, lda, o, ldo);
            else if (n == 2)
                fma_rows(w, blk, q0, q1, 2, ar, 1, lda, o, ldo);
            else
                fma_rows(w, blk, q0, q1, 1, ar, 1, lda, o, ldo);
        } else {
            if (n == 3)
                fma_rows(w, blk, q0, q1, 3, ar, 0, lda, o, ldo);
            else if (n == 2)
                fma_rows(w, blk, q0, q1, 2, ar, 0, lda, o, ldo);
            else
                fma_rows(w, blk, q0, q1, 1, ar, 0, lda, o, ldo);
        }
    }
}
#endif
