/* Packed weight columns to a plain fp32 / bf16 panel (unpack.h). One
 * panel of 16 columns at a time, group by group, front to back as the
 * kernels stream it: in AVX-512 where the wq kernels run it
 * (agmm_wq_kernel(): AGMM_WQ_KERNEL=avx2 or portable keeps the C loops),
 * the same bits either way. */
#include "gemm/wq/unpack.h"

#include <string.h>

#include "gemm/convert.h"
#include "gemm/wq/wq_internal.h"

/* One group's rows r0..r1-1 of one panel's first `nc` (<= 16) columns. */
static void unpack_group(const struct agmm_wq *w, const uint8_t *blk,
                         int64_t r0, int64_t r1, int nc, void *dst, int64_t ldd,
                         int bf16)
{
    float s[AGMM_WQ_NP], z[AGMM_WQ_NP], v[AGMM_WQ_NP];
    memcpy(s, blk, sizeof s);
    memcpy(z, blk + sizeof s, sizeof z);
    const uint8_t *q = blk + sizeof s + sizeof z;
    int signed8 = w->bits == 8 && w->symmetric;
    for (int64_t row = r0; row < r1; row++) {
        int64_t i = row - r0; /* the row in the group: quad i/4, lane i%4 */
        const uint8_t *quad = q + (size_t)(i / 4) * w->quad_bytes;
        int lane = (int)(i % 4);
        if (w->bits == 8) {
            const uint8_t *b = quad + 16 * lane;
            if (signed8)
                for (int j = 0; j < AGMM_WQ_NP; j++)
                    v[j] = ((float)(int8_t)b[j] - z[j]) * s[j];
            else
                for (int j = 0; j < AGMM_WQ_NP; j++)
                    v[j] = ((float)b[j] - z[j]) * s[j];
        } else {
            const uint8_t *oct = q + (size_t)(i / 8) * 64;
            int sh = agmm_wq_nib_shift((int)(i % 8));
            for (int j = 0; j < AGMM_WQ_NP; j++)
                v[j] =
                    ((float)((oct[4 * j + sh / 8] >> (sh % 8)) & 15) - z[j]) *
                    s[j];
        }
        if (bf16) {
            uint16_t *d = (uint16_t *)dst + row * ldd;
            for (int j = 0; j < nc; j++)
                d[j] = agmm_f32_to_bf16_inline(v[j]);
        } else {
            memcpy((float *)dst + row * ldd, v, (size_t)nc * sizeof(float));
        }
    }
}

#if defined(__x86_64__)
#include <immintrin.h>

/* unpack_group in AVX-512 (F, BW): the same operations, 16 columns a
 * vector: the bytes widened to int32, to float (exact), minus zero
 * (exact), times scale (one rounding); bf16 by the integer round to
 * nearest even of agmm_f32_to_bf16_inline (no NaN can arise: scales are
 * finite), so the bits are the scalar loop's. */
__attribute__((target("avx512f,avx512bw"))) static void
unpack_group_avx512(const struct agmm_wq *w, const uint8_t *blk, int64_t r0,
                    int64_t r1, int nc, void *dst, int64_t ldd, int bf16)
{
    __m512 s = _mm512_loadu_ps((const float *)(const void *)blk);
    __m512 z = _mm512_loadu_ps((const float *)(const void *)blk + 16);
    const uint8_t *q = blk + 2 * AGMM_WQ_NP * sizeof(float);
    int signed8 = w->bits == 8 && w->symmetric;
    __mmask16 m = (__mmask16)((1u << nc) - 1);
    const __m512i fifteen = _mm512_set1_epi32(15);
    const __m512i bias = _mm512_set1_epi32(0x7fff), one = _mm512_set1_epi32(1);
    for (int64_t row = r0; row < r1; row++) {
        int64_t i = row - r0;
        const uint8_t *quad = q + (size_t)(i / 4) * w->quad_bytes;
        int lane = (int)(i % 4);
        __m512i u;
        if (w->bits == 8) {
            __m128i b = _mm_loadu_si128(
                (const __m128i *)(const void *)(quad + 16 * lane));
            u = signed8 ? _mm512_cvtepi8_epi32(b) : _mm512_cvtepu8_epi32(b);
        } else {
            /* dword j of the octet: column j's 8 rows (wq_internal.h) */
            __m512i x =
                _mm512_loadu_si512((const void *)(q + (size_t)(i / 8) * 64));
            u = _mm512_and_si512(
                _mm512_srli_epi32(x, agmm_wq_nib_shift((int)(i % 8))), fifteen);
        }
        __m512 v = _mm512_mul_ps(_mm512_sub_ps(_mm512_cvtepi32_ps(u), z), s);
        if (bf16) {
            __m512i x = _mm512_castps_si512(v);
            __m512i r = _mm512_srli_epi32(
                _mm512_add_epi32(
                    _mm512_add_epi32(x, bias),
                    _mm512_and_si512(_mm512_srli_epi32(x, 16), one)),
                16);
            _mm512_mask_cvtepi32_storeu_epi16((uint16_t *)dst + row * ldd, m,
                                              r);
        } else {
            _mm512_mask_storeu_ps((float *)dst + row * ldd, m, v);
        }
    }
}
#endif

void agmm_wq_unpack(const agmm_wq_t *w, int64_t j0, int64_t nc, void *dst,
                    int64_t ldd, int bf16)
{
    void (*group)(const struct agmm_wq *, const uint8_t *, int64_t, int64_t,
                  int, void *, int64_t, int) = unpack_group;
#if defined(__x86_64__)
    if (agmm_wq_kernel() == AGMM_WQ_KERNEL_AVX512) /* AGMM_WQ_KERNEL too */
        group = unpack_group_avx512;
#endif
    size_t es = bf16 ? sizeof(uint16_t) : sizeof(float);
    size_t head = 2 * AGMM_WQ_NP * sizeof(float);
    for (int64_t c = 0; c < nc; c += AGMM_WQ_NP) {
        const uint8_t *blk =
            w->data + (size_t)((j0 + c) / AGMM_WQ_NP) * w->panel_bytes;
        int pc = (int)(nc - c < AGMM_WQ_NP ? nc - c : AGMM_WQ_NP);
        void *pd = (unsigned char *)dst + (size_t)c * es;
        for (int64_t g = 0; g < w->ng; g++) {
            int64_t r0 = g * w->group;
            int64_t r1 = r0 + w->group < w->k ? r0 + w->group : w->k;
            group(w, blk, r0, r1, pc, pd, ldd, bf16);
            blk += head + (size_t)agmm_wq_quads(w, g) * w->quad_bytes;
        }
    }
}
